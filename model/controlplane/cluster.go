package controlplane

import (
	"fmt"
	"slices"
	"strings"
)

// Cluster is one of a service's clusters when the service splits its
// traffic (a route's weighted_clusters) or routes methods to different
// clusters. Each expands into an EDS-type CDS Cluster and its
// ClusterLoadAssignment; both are named Name.
type Cluster struct {
	// Name is the cluster's name and its EDS service name. Unique among
	// the server's clusters.
	Name string
	// Weight is the cluster's weight in the weighted_clusters of a route
	// that splits traffic between several clusters (gRFC A28); 0 means 1.
	Weight uint32
	// Endpoints, EndpointCount and Localities are the cluster's
	// backends, as [Service] has them for its single cluster.
	Endpoints     []Endpoint
	EndpointCount int
	Localities    []Locality
	// Withhold lists the cluster's resources the server never publishes:
	// CDS, EDS or both (the other types are ignored).
	Withhold TypeSet

	nextAddress int
}

// Locality is a locality of a cluster's ClusterLoadAssignment: the
// endpoints whose Zone and Priority are its own.
type Locality struct {
	// Zone names the locality (region "region", this zone).
	Zone string
	// Priority is the locality's EDS priority (gRFC A27: 0 is used first,
	// the next one when every locality of it fails). A cluster's
	// priorities must be 0 .. N-1.
	Priority uint32
	// Weight is the locality's load_balancing_weight; 0 means the sum of
	// its endpoints' weights.
	Weight uint32
}

// Route is one route of a service's RouteConfiguration. Routes are
// matched in order against an RPC's method path (gRFC A28).
type Route struct {
	// Prefix is the path prefix the route matches; "" means "/", every
	// RPC.
	Prefix string
	// Clusters are the clusters the route sends RPCs to, by name: one is
	// a plain cluster action, more are weighted_clusters with each
	// cluster's Weight. Empty means every cluster of the service.
	Clusters []string
}

// TypeSet is a set of resource types.
type TypeSet uint8

// TypesOf returns the set of ts.
func TypesOf(ts ...ResourceType) TypeSet {
	var s TypeSet
	for _, t := range ts {
		s |= 1 << t
	}
	return s
}

// AllTypes is every resource type.
const AllTypes = TypeSet(1<<NumTypes - 1)

// Has reports whether t is in s.
func (s TypeSet) Has(t ResourceType) bool { return t < NumTypes && s&(1<<t) != 0 }

// kindNames are the names scenarios give the resource types: what a
// service's resource of that type is.
var kindNames = [NumTypes]string{"listener", "route", "cluster", "endpoints"}

// KindName returns the scenario name of t: "listener", "route", "cluster"
// or "endpoints".
func KindName(t ResourceType) string {
	if t < NumTypes {
		return kindNames[t]
	}
	return t.String()
}

// ParseKind returns the type a scenario names "listener", "route",
// "cluster" or "endpoints".
func ParseKind(s string) (ResourceType, error) {
	for t, n := range kindNames {
		if n == s {
			return ResourceType(t), nil
		}
	}
	return 0, fmt.Errorf("controlplane: unknown resource kind %q (want one of %s)", s, strings.Join(kindNames[:], ", "))
}

// String lists the set's kinds, such as "cluster+endpoints".
func (s TypeSet) String() string {
	var parts []string
	for t := LDS; t < NumTypes; t++ {
		if s.Has(t) {
			parts = append(parts, kindNames[t])
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "+")
}

// clusterSpec is one cluster of a service with its defaults applied: the
// service's own single cluster, or one of Service.Clusters.
type clusterSpec struct {
	name, eds  string
	weight     uint32
	endpoints  []Endpoint
	localities []Locality
	withhold   TypeSet
}

// clusters returns the service's clusters, in order.
func (s *Service) clusters() []clusterSpec {
	if len(s.Clusters) == 0 {
		return []clusterSpec{{name: s.clusterName(), eds: s.edsName(), weight: 1, endpoints: s.endpoints(),
			localities: s.Localities, withhold: s.Withhold & TypesOf(CDS, EDS)}}
	}
	out := make([]clusterSpec, len(s.Clusters))
	for i := range s.Clusters {
		c := &s.Clusters[i]
		out[i] = clusterSpec{name: c.Name, eds: c.Name, weight: max(c.Weight, 1),
			endpoints: generated(c.Endpoints, c.EndpointCount), localities: c.Localities,
			withhold: (s.Withhold | c.Withhold) & TypesOf(CDS, EDS)}
	}
	return out
}

// endpointSet is the backends of one of a service's clusters, as the
// endpoint changes edit them: pointers into the service.
type endpointSet struct {
	endpoints *[]Endpoint
	count     *int
	next      *int
}

// list returns the set's endpoints with generated ones filled in.
func (e endpointSet) list() []Endpoint { return generated(*e.endpoints, *e.count) }

// endpointSet returns the backends of the cluster named cluster; ""
// means the service's first cluster.
func (s *Service) endpointSet(cluster string) (endpointSet, error) {
	if len(s.Clusters) == 0 {
		if cluster == "" || cluster == s.clusterName() {
			return endpointSet{&s.Endpoints, &s.EndpointCount, &s.nextAddress}, nil
		}
	}
	for i := range s.Clusters {
		if c := &s.Clusters[i]; cluster == "" || c.Name == cluster {
			return endpointSet{&c.Endpoints, &c.EndpointCount, &c.nextAddress}, nil
		}
	}
	return endpointSet{}, fmt.Errorf("controlplane: service %q has no cluster %q (clusters: %s)", s.Name, cluster, strings.Join(s.ClusterNames(), ", "))
}

// ClusterNames returns the names of the service's clusters, in order.
func (s *Service) ClusterNames() []string {
	var out []string
	for _, c := range s.clusters() {
		out = append(out, c.name)
	}
	return out
}

// routes returns the service's routes, with the default (one route "/"
// to every cluster) when it has none.
func (s *Service) routes() []Route {
	if len(s.Routes) > 0 {
		return s.Routes
	}
	return []Route{{Prefix: "/"}}
}

// ResourceKey names one resource of a server.
type ResourceKey struct {
	Type ResourceType
	Name string
}

// Resources returns every resource the service describes, published or
// withheld, in type order: the listener, the route (unless inline), then
// each cluster's Cluster and ClusterLoadAssignment.
func (s *Service) Resources() []ResourceKey {
	out := []ResourceKey{{LDS, s.listenerName()}}
	if !s.InlineRoute {
		out = append(out, ResourceKey{RDS, s.routeName()})
	}
	cs := s.clusters()
	for _, c := range cs {
		out = append(out, ResourceKey{CDS, c.name})
	}
	for _, c := range cs {
		out = append(out, ResourceKey{EDS, c.eds})
	}
	return out
}

// withheld reports whether the server never publishes (t, name).
func (s *Service) withheld(t ResourceType, name string) bool {
	if t == LDS || t == RDS {
		return s.Withhold.Has(t)
	}
	for _, c := range s.clusters() {
		if (t == CDS && c.name == name) || (t == EDS && c.eds == name) {
			return c.withhold.Has(t)
		}
	}
	return false
}

// validateShape checks the clusters, localities and routes of s.
func (s *Service) validateShape() error {
	seen := map[string]bool{}
	for _, c := range s.Clusters {
		if c.Name == "" {
			return fmt.Errorf("controlplane: service %q: a cluster has no name", s.Name)
		}
		if seen[c.Name] {
			return fmt.Errorf("controlplane: service %q: cluster %q twice", s.Name, c.Name)
		}
		seen[c.Name] = true
		if c.EndpointCount < 0 {
			return fmt.Errorf("controlplane: service %q: cluster %q: endpoint count must be >= 0, got %d", s.Name, c.Name, c.EndpointCount)
		}
	}
	for _, c := range s.clusters() {
		if err := validateLocalities(s.Name, c); err != nil {
			return err
		}
	}
	names := s.ClusterNames()
	for i, r := range s.Routes {
		if r.Prefix != "" && !strings.HasPrefix(r.Prefix, "/") {
			return fmt.Errorf("controlplane: service %q: route %d: prefix %q does not start with /", s.Name, i, r.Prefix)
		}
		for _, n := range r.Clusters {
			if !slices.Contains(names, n) {
				return fmt.Errorf("controlplane: service %q: route %d names cluster %q, which the service does not have (clusters: %s)",
					s.Name, i, n, strings.Join(names, ", "))
			}
		}
	}
	if s.Session != nil && len(names) > 1 {
		return fmt.Errorf("controlplane: service %q: session affinity needs a service with one cluster, it has %d", s.Name, len(names))
	}
	return nil
}

// validateLocalities checks that every endpoint's locality is declared
// (or that none is), once, and that the priorities are 0 .. N-1, as a
// gRPC client requires (grpc-go xdsresource/unmarshal_eds.go).
func validateLocalities(service string, c clusterSpec) error {
	type key struct {
		zone string
		prio uint32
	}
	declared := map[key]bool{}
	maxPrio := uint32(0)
	for _, l := range c.localities {
		k := key{or(l.Zone, defaultZone), l.Priority}
		if declared[k] {
			return fmt.Errorf("controlplane: service %q: cluster %q: locality %s at priority %d twice", service, c.name, k.zone, k.prio)
		}
		declared[k] = true
		maxPrio = max(maxPrio, l.Priority)
	}
	used := map[uint32]bool{}
	for _, e := range c.endpoints {
		k := key{or(e.Zone, defaultZone), e.Priority}
		if len(c.localities) > 0 && !declared[k] {
			return fmt.Errorf("controlplane: service %q: cluster %q: endpoint %s is in locality %s at priority %d, which is not declared",
				service, c.name, e.Address, k.zone, k.prio)
		}
		used[e.Priority] = true
		maxPrio = max(maxPrio, e.Priority)
	}
	for _, l := range c.localities {
		used[l.Priority] = true
	}
	for p := uint32(0); p <= maxPrio && len(used) > 0; p++ {
		if !used[p] {
			return fmt.Errorf("controlplane: service %q: cluster %q: priority %d has no locality; priorities must be 0 to %d (gRFC A27)",
				service, c.name, p, maxPrio)
		}
	}
	return nil
}

// setWithheld withholds (on) or publishes (off) the resources of the
// types in ts: the listener and route of the service, the Cluster and
// ClusterLoadAssignment of the cluster named cluster ("" every cluster).
func (s *Service) setWithheld(ts TypeSet, cluster string, on bool) error {
	if _, err := s.endpointSet(cluster); err != nil {
		return err
	}
	set := func(w *TypeSet, bits TypeSet) {
		if on {
			*w |= bits
		} else {
			*w &^= bits
		}
	}
	set(&s.Withhold, ts&TypesOf(LDS, RDS))
	ct := ts & TypesOf(CDS, EDS)
	if len(s.Clusters) == 0 {
		set(&s.Withhold, ct)
		return nil
	}
	// The service-wide bits move down to every cluster, so that one
	// cluster can be published while the others stay withheld.
	for i := range s.Clusters {
		s.Clusters[i].Withhold |= s.Withhold & TypesOf(CDS, EDS)
	}
	s.Withhold &^= TypesOf(CDS, EDS)
	for i := range s.Clusters {
		if c := &s.Clusters[i]; cluster == "" || c.Name == cluster {
			set(&c.Withhold, ct)
		}
	}
	return nil
}
