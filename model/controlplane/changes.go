package controlplane

import (
	"fmt"
	"slices"
	"strconv"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdssim/xdssim/sim"
)

// Config changes. Each method is one scenario event: it changes the
// server's state of the world at now, commits the change to the cache
// (one update per changed type, in type order) and returns the responses
// pushed to the streams whose subscriptions it touches, sorted by stream
// and type. An error means nothing changed.

// SetService adds the service svc or replaces the service of that name;
// only resources whose bytes change are updated, and resources the old
// version had and the new one does not are deleted.
func (s *Server) SetService(now sim.Time, svc Service) ([]Response, error) {
	s.advance(now)
	if err := s.stageService(svc); err != nil {
		return nil, err
	}
	return s.commit(), nil
}

// stageService stages svc's resources: its published ones are put, its
// withheld ones and those the old version had and it has not are removed.
func (s *Server) stageService(svc Service) error {
	if err := svc.validate(); err != nil {
		return err
	}
	svc = svc.clone()
	res := ExpandAll(&svc)
	for _, r := range res {
		if _, ok := s.raw[r.Type][r.Name]; ok {
			return fmt.Errorf("controlplane: server %q: service %q: %v resource %q is one of the server's own resources",
				s.name, svc.Name, r.Type, r.Name)
		}
		if o, ok := s.owner[r.Type][r.Name]; ok && o != svc.Name {
			return fmt.Errorf("controlplane: server %q: service %q: %v resource %q belongs to service %q",
				s.name, svc.Name, r.Type, r.Name, o)
		}
	}
	if old := s.services[svc.Name]; old != nil {
		for _, k := range old.Resources() {
			if !slices.ContainsFunc(res, func(r Resource) bool { return r.ResourceKey == k }) {
				s.remove(k.Type, k.Name)
				delete(s.owner[k.Type], k.Name)
			}
		}
	}
	for _, r := range res {
		s.owner[r.Type][r.Name] = svc.Name
		if svc.withheld(r.Type, r.Name) {
			s.remove(r.Type, r.Name)
		} else {
			s.put(r.Type, r.Name, r.Message)
		}
	}
	s.services[svc.Name] = &svc
	return nil
}

// DeleteService deletes the service named name and its resources.
func (s *Server) DeleteService(now sim.Time, name string) ([]Response, error) {
	s.advance(now)
	svc := s.services[name]
	if svc == nil {
		return nil, s.noService(name)
	}
	for _, k := range svc.Resources() {
		s.remove(k.Type, k.Name)
		delete(s.owner[k.Type], k.Name)
	}
	delete(s.services, name)
	return s.commit(), nil
}

// Service returns a copy of the service named name as the server holds
// it now.
func (s *Server) Service(name string) (Service, bool) {
	svc := s.services[name]
	if svc == nil {
		return Service{}, false
	}
	return svc.clone(), true
}

// ServiceNames returns the names of the server's services, sorted.
func (s *Server) ServiceNames() []string {
	out := make([]string, 0, len(s.services))
	for n := range s.services {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func (s *Server) noService(name string) error {
	return fmt.Errorf("controlplane: server %q has no service %q (services: %v)", s.name, name, s.ServiceNames())
}

// changeService applies f to a copy of the service named name and stages
// the result.
func (s *Server) changeService(now sim.Time, name string, f func(*Service) error) ([]Response, error) {
	s.advance(now)
	old := s.services[name]
	if old == nil {
		return nil, s.noService(name)
	}
	svc := old.clone()
	if err := f(&svc); err != nil {
		return nil, err
	}
	if err := s.stageService(svc); err != nil {
		return nil, err
	}
	return s.commit(), nil
}

// PublishInvalid republishes the service named name with defect d: a
// resource every gRPC client NACKs; a Cluster or ClusterLoadAssignment
// defect breaks the cluster named cluster ("" the first). NoDefect
// restores valid resources.
func (s *Server) PublishInvalid(now sim.Time, name, cluster string, d Defect) ([]Response, error) {
	return s.changeService(now, name, func(svc *Service) error {
		if _, err := svc.endpointSet(cluster); err != nil {
			return err
		}
		svc.Defect, svc.DefectCluster = d, cluster
		return nil
	})
}

// ScaleEndpoints sets the number of endpoints of the cluster named cluster
// ("" the first) of the service named name to n: it keeps the first n, or
// adds HEALTHY generated endpoints (at the first unused
// [GeneratedAddress]es) up to n.
func (s *Server) ScaleEndpoints(now sim.Time, name, cluster string, n int) ([]Response, error) {
	if n < 0 {
		return nil, fmt.Errorf("controlplane: server %q: service %q: endpoint count must be >= 0, got %d", s.name, name, n)
	}
	return s.changeEndpoints(now, name, cluster, func(set endpointSet) error {
		eps := slices.Clone(set.list())
		if n <= len(eps) {
			eps = eps[:n]
		} else {
			used := make(map[string]bool, len(eps))
			for _, e := range eps {
				used[e.Address] = true
			}
			// New endpoints join the last one's locality.
			var loc Endpoint
			if len(eps) > 0 {
				loc = eps[len(eps)-1]
			}
			for i := 0; len(eps) < n; i++ {
				if a := GeneratedAddress(i); !used[a] {
					eps = append(eps, Endpoint{Address: a, Health: corepb.HealthStatus_HEALTHY, Zone: loc.Zone, Priority: loc.Priority})
				}
			}
		}
		*set.endpoints, *set.count = eps, n
		return nil
	})
}

// changeEndpoints applies f to the endpoints of the cluster named cluster
// ("" the first) of a copy of the service named name, and stages the
// result.
func (s *Server) changeEndpoints(now sim.Time, name, cluster string, f func(endpointSet) error) ([]Response, error) {
	return s.changeService(now, name, func(svc *Service) error {
		set, err := svc.endpointSet(cluster)
		if err != nil {
			return err
		}
		return f(set)
	})
}

// ReplaceEndpoints gives count endpoints of the cluster named cluster (""
// the first) of the service named name, from index first, new addresses
// (the lowest generated addresses the cluster has never used), as a
// rolling deploy replaces pods and their IPs. The replaced endpoints keep
// their place, weight, locality and health.
func (s *Server) ReplaceEndpoints(now sim.Time, name, cluster string, first, count int) ([]Response, error) {
	return s.changeEndpoints(now, name, cluster, func(set endpointSet) error {
		eps := slices.Clone(set.list())
		if first < 0 || count < 0 || first+count > len(eps) {
			return fmt.Errorf("controlplane: server %q: service %q: endpoints [%d, %d) out of range: it has %d",
				s.name, name, first, first+count, len(eps))
		}
		// inUse counts the endpoints at each address, as eps changes:
		// one look-up per candidate address, not a scan of eps.
		inUse := make(map[string]int, len(eps))
		for _, e := range eps {
			inUse[e.Address]++
		}
		j := max(*set.next, len(eps))
		for i := first; i < first+count; i++ {
			addr := GeneratedAddress(j)
			for inUse[addr] > 0 {
				j++
				addr = GeneratedAddress(j)
			}
			inUse[eps[i].Address]--
			inUse[addr]++
			eps[i].Address = addr
			j++
		}
		*set.next = j
		*set.endpoints = eps
		return nil
	})
}

// SetEndpointHealth sets the EDS health status of count endpoints of the
// cluster named cluster ("" the first) of the service named name, from
// index first.
func (s *Server) SetEndpointHealth(now sim.Time, name, cluster string, first, count int, h corepb.HealthStatus) ([]Response, error) {
	return s.changeEndpoints(now, name, cluster, func(set endpointSet) error {
		eps := slices.Clone(set.list())
		if first < 0 || count < 0 || first+count > len(eps) {
			return fmt.Errorf("controlplane: server %q: service %q: endpoints [%d, %d) out of range: it has %d",
				s.name, name, first, first+count, len(eps))
		}
		for i := first; i < first+count; i++ {
			eps[i].Health = h
		}
		*set.endpoints = eps
		return nil
	})
}

// DrainEndpoints marks the last n endpoints of the cluster named cluster
// ("" the first) of the service named name DRAINING (gRFC A55: a draining
// backend keeps its sessions but takes no new ones).
func (s *Server) DrainEndpoints(now sim.Time, name, cluster string, n int) ([]Response, error) {
	svc := s.services[name]
	if svc == nil {
		s.advance(now)
		return nil, s.noService(name)
	}
	set, err := svc.endpointSet(cluster)
	if err != nil {
		s.advance(now)
		return nil, err
	}
	k := len(set.list())
	if n < 0 || n > k {
		return nil, fmt.Errorf("controlplane: server %q: service %q: cannot drain %d of %d endpoints", s.name, name, n, k)
	}
	return s.SetEndpointHealth(now, name, cluster, k-n, n, corepb.HealthStatus_DRAINING)
}

// WithholdResources stops publishing the resources of the types in ts of
// the service named name, as deleting them from the control plane would:
// the listener, the route, and the Cluster and ClusterLoadAssignment of
// the cluster named cluster ("" every cluster). SotW tells LDS and CDS
// clients of the deletion; RDS and EDS clients hear nothing, unless the
// server sends TP3 errors. The service keeps them: [Server.PublishResources]
// publishes them again.
func (s *Server) WithholdResources(now sim.Time, name string, ts TypeSet, cluster string) ([]Response, error) {
	return s.changeService(now, name, func(svc *Service) error { return svc.setWithheld(ts, cluster, true) })
}

// PublishResources publishes again the withheld resources of the types in
// ts of the service named name (of the cluster named cluster for CDS and
// EDS, "" every cluster), and drops the service's [Defect] if it breaks
// one of them: the resources are valid again, as the service otherwise
// describes them.
func (s *Server) PublishResources(now sim.Time, name string, ts TypeSet, cluster string) ([]Response, error) {
	return s.changeService(now, name, func(svc *Service) error {
		if t := svc.Defect.Type(svc.InlineRoute); svc.Defect != NoDefect && ts.Has(t) {
			broken := or(svc.DefectCluster, svc.ClusterNames()[0])
			if (t != CDS && t != EDS) || cluster == "" || cluster == broken {
				svc.Defect, svc.DefectCluster = NoDefect, ""
			}
		}
		return svc.setWithheld(ts, cluster, false)
	})
}

// typeOf returns the resource type and name of an envoy resource message.
func typeOf(m proto.Message) (ResourceType, string, error) {
	var t ResourceType
	switch m.(type) {
	case *listenerpb.Listener:
		t = LDS
	case *routepb.RouteConfiguration:
		t = RDS
	case *clusterpb.Cluster:
		t = CDS
	case *endpointpb.ClusterLoadAssignment:
		t = EDS
	default:
		return 0, "", fmt.Errorf("controlplane: %s is not an LDS, RDS, CDS or EDS resource", proto.MessageName(m))
	}
	name := cachev3.GetResourceName(m)
	if name == "" {
		return 0, "", fmt.Errorf("controlplane: %v resource has no name", t)
	}
	return t, name, nil
}

// SetResource adds or replaces one resource, given as its envoy message
// (*listenerpb.Listener, *routepb.RouteConfiguration, *clusterpb.Cluster
// or *endpointpb.ClusterLoadAssignment). The server keeps msg: the caller
// must not modify it afterwards. A service that generated a resource of
// that name regenerates it on its next change.
func (s *Server) SetResource(now sim.Time, msg proto.Message) ([]Response, error) {
	s.advance(now)
	t, name, err := typeOf(msg)
	if err != nil {
		return nil, err
	}
	s.put(t, name, msg)
	return s.commit(), nil
}

// DeleteResource deletes resource (t, name). SotW can tell LDS and CDS
// clients of a deletion (the name is missing from the next response); RDS
// and EDS clients hear nothing, unless the server sends TP3 errors.
func (s *Server) DeleteResource(now sim.Time, t ResourceType, name string) ([]Response, error) {
	s.advance(now)
	if t >= NumTypes {
		return nil, fmt.Errorf("controlplane: unknown resource type %d", t)
	}
	if e := s.res[t][name]; e == nil || e.msg == nil {
		return nil, fmt.Errorf("controlplane: server %q has no %v resource %q", s.name, t, name)
	}
	s.remove(t, name)
	return s.commit(), nil
}

// SetResourceError withholds resource (t, name), which need not exist, and
// makes the server report st for it (xRFC TP3): NOT_FOUND or
// PERMISSION_DENIED are data errors to a gRPC client, any other code a
// transient one (gRFC A88). Without Config.ResourceErrors the name is
// only withheld, as a server without TP3 would.
func (s *Server) SetResourceError(now sim.Time, t ResourceType, name string, st Status) ([]Response, error) {
	s.advance(now)
	if t >= NumTypes {
		return nil, fmt.Errorf("controlplane: unknown resource type %d", t)
	}
	if st.Code == codes.OK {
		return nil, fmt.Errorf("controlplane: server %q: %v resource %q: a resource error needs a code other than OK", s.name, t, name)
	}
	e := s.res[t][name]
	if e == nil {
		e = &entry{}
		s.res[t][name] = e
	}
	if e.served() {
		s.stage(t, name, nil)
	}
	e.err = &st
	s.touch(t, name)
	return s.commit(), nil
}

// ClearResourceError serves resource (t, name) again, if it exists, and
// stops reporting an error for it.
func (s *Server) ClearResourceError(now sim.Time, t ResourceType, name string) ([]Response, error) {
	s.advance(now)
	if t >= NumTypes {
		return nil, fmt.Errorf("controlplane: unknown resource type %d", t)
	}
	e := s.res[t][name]
	if e == nil || e.err == nil {
		return nil, fmt.Errorf("controlplane: server %q: %v resource %q has no error set", s.name, t, name)
	}
	e.err = nil
	if e.msg != nil {
		s.stage(t, name, e.msg)
	} else {
		delete(s.res[t], name)
	}
	s.touch(t, name)
	return s.commit(), nil
}

func resourceError(name string, st Status) *discoverypb.ResourceError {
	return &discoverypb.ResourceError{
		ResourceName: &discoverypb.ResourceName{Name: name},
		ErrorDetail:  &statuspb.Status{Code: int32(st.Code), Message: st.Message},
	}
}

// Ground truth, for the fleet's root-cause labels and for tests.

// Cache returns the go-control-plane cache that holds s's state of the
// world, so that a real gRPC server (go-control-plane pkg/server/v3) can
// serve it: validate/ does, to run real grpc-go clients against the same
// config the simulation serves. The cache is safe for concurrent use; s
// is not, so its config-change methods must still be called from one
// goroutine at a time.
func (s *Server) Cache() cachev3.Cache { return s.back }

// Version returns the version the server serves for t.
func (s *Server) Version(t ResourceType) string { return s.back.version(t) }

// Lookup returns the served resource (t, name): the shared marshalled
// message every response carries. ok is false when the server does not
// serve it (unknown, deleted or withheld).
func (s *Server) Lookup(t ResourceType, name string) (res *anypb.Any, ok bool) {
	if t >= NumTypes {
		return nil, false
	}
	e := s.res[t][name]
	if !e.served() {
		return nil, false
	}
	return e.any, true
}

// ResourceNames returns the names of the resources of type t the server
// serves, sorted.
func (s *Server) ResourceNames(t ResourceType) []string {
	var out []string
	for name, e := range s.res[t] {
		if e.served() {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// AckState is what the server knows of one stream's type: the last
// response sent and the client's answers to it.
type AckState struct {
	// Nonce is the nonce of the last response sent for the type.
	Nonce string
	// Version is the version_info of the last ACK.
	Version string
	// ACKs and NACKs count the responses acknowledged and rejected.
	ACKs, NACKs int
	// NACKed is true when the last answer was a NACK, with ErrorDetail.
	NACKed      bool
	ErrorDetail Status
	// Subscribed are the names the stream subscribes to, sorted.
	Subscribed []string
}

// StreamState returns the ACK state of type t on stream id; ok is false
// for a stream that is not open.
func (s *Server) StreamState(id StreamID, t ResourceType) (a AckState, ok bool) {
	st := s.streams[id]
	if st == nil || t >= NumTypes {
		return AckState{}, false
	}
	ts := &st.types[t]
	a = AckState{Version: s.versions.version(ts.acked), ACKs: int(ts.acks)}
	if ts.rare != nil {
		a.NACKs = int(ts.rare.nacks)
	}
	if ts.nonce != 0 {
		a.Nonce = strconv.FormatUint(uint64(ts.nonce), 10)
	}
	if r := ts.rare; r != nil && r.nacked {
		a.NACKed, a.ErrorDetail = true, r.nackErr
	}
	if ts.active {
		for name := range ts.sub.SubscribedResources() {
			a.Subscribed = append(a.Subscribed, name)
		}
		slices.Sort(a.Subscribed)
	}
	return a, true
}

// Totals returns the server's counters so far.
func (s *Server) Totals() Totals { return s.m.totals }

// QueueDepth returns the number of requests waiting for a worker at now.
func (s *Server) QueueDepth(now sim.Time) int {
	s.advance(now)
	return s.work.depth(now)
}

// Sample returns the time-series point at now and starts a new interval.
func (s *Server) Sample(now sim.Time) Sample {
	s.advance(now)
	return s.m.sample(now, s.work.depth(now))
}
