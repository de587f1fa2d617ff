package dataplane

import (
	"cmp"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	sessionpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/stateful_session/v3"
	hcmpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	cookiepb "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/cookie/v3"
	pickfirstpb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/pick_first/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdssim/xdssim/sim"
)

// Names gRFC A55 gives the stateful-session filter and its cookie state.
const (
	sessionFilterName = "envoy.filters.http.stateful_session"
	cookieStateType   = "envoy.extensions.http.stateful_session.cookie.v3.CookieBasedSessionState"
)

// LBPolicy is the load-balancing policy a channel runs over a cluster's
// endpoints.
type LBPolicy uint8

// Policies. gRPC builds them from the cluster's lb_policy or
// load_balancing_policy (gRFC A42, A48, A52, A62).
const (
	RoundRobin   LBPolicy = iota // ROUND_ROBIN, the default
	PickFirst                    // load_balancing_policy pick_first (A62)
	RingHash                     // RING_HASH; with no hash policy each RPC hashes at random (A42)
	LeastRequest                 // LEAST_REQUEST: the less loaded of two random endpoints (A48)
)

var lbNames = [...]string{"round_robin", "pick_first", "ring_hash", "least_request"}

// String names the policy.
func (p LBPolicy) String() string {
	if int(p) < len(lbNames) {
		return lbNames[p]
	}
	return "LBPolicy(" + strconv.Itoa(int(p)) + ")"
}

// HealthSet is a set of EDS health statuses (bit i is
// corepb.HealthStatus(i)).
type HealthSet uint16

// Has reports whether h is in the set.
func (s HealthSet) Has(h corepb.HealthStatus) bool { return h >= 0 && h < 16 && s&(1<<h) != 0 }

// usable are the health statuses a load-balancing policy picks from
// (see childUsable).
const usable = HealthSet(1<<corepb.HealthStatus_UNKNOWN | 1<<corepb.HealthStatus_HEALTHY)

// overridable are the health statuses override_host_status may name
// (gRFC A55).
const overridable = HealthSet(1<<corepb.HealthStatus_UNKNOWN | 1<<corepb.HealthStatus_HEALTHY | 1<<corepb.HealthStatus_DRAINING)

// DefaultOverrideHostStatus is what override_host_status means when the
// cluster does not set it: UNKNOWN and HEALTHY (gRFC A55,
// OverrideHostLoadBalancingPolicyConfig).
const DefaultOverrideHostStatus = HealthSet(1<<corepb.HealthStatus_UNKNOWN | 1<<corepb.HealthStatus_HEALTHY)

// Session is a route's gRFC A55 cookie configuration.
type Session struct {
	Cookie string
	Path   string
	TTL    time.Duration
}

// Endpoint is one endpoint of a cluster as the client knows it.
type Endpoint struct {
	// Address is "ip:port".
	Address string
	Health  corepb.HealthStatus
	Weight  uint32
	// Backend identifies the server process behind the address (see
	// [Backends]).
	Backend uint32
	// Locality indexes the cluster's Localities.
	Locality int
}

// Locality is a locality of a cluster's ClusterLoadAssignment: its
// endpoints are Endpoints[First : First+N].
type Locality struct {
	// Name is "region/zone", with "/sub_zone" when it has one.
	Name     string
	Priority uint32
	Weight   uint32
	First, N int
	// ID numbers the locality among every cluster's in a run (the
	// fleet's routing counts); 0 unless the fleet sets it.
	ID int32
}

// Cluster is one cluster of a channel's config: what gRPC's cds and
// xds_cluster_resolver balancers build from a Cluster and its
// ClusterLoadAssignment, or the error that took one of them away.
type Cluster struct {
	// Name is the cluster's name; EDS the name of its
	// ClusterLoadAssignment.
	Name, EDS string
	// ID numbers the cluster among the run's (the fleet's routing
	// counts); 0 unless the fleet sets it.
	ID int32
	// Failed is set when a resource error (a deletion, a NACK of an
	// uncached resource, a does-not-exist timer, a TP3 error) took the
	// cluster away: the cluster's child policy is in TRANSIENT_FAILURE and
	// the RPCs routed to it fail with Cause (gRFC A74: the XdsConfig
	// carries a per-cluster error; A88). The fields below are unset.
	Failed bool
	Cause  Cause
	// LB is the cluster's load-balancing policy.
	LB LBPolicy
	// OverrideHostStatus is common_lb_config.override_host_status.
	OverrideHostStatus HealthSet
	// Endpoints are the cluster's endpoints, locality by locality in the
	// order of the ClusterLoadAssignment, the localities sorted by
	// priority.
	Endpoints  []Endpoint
	Localities []Locality
	// Priorities is the number of EDS priorities (gRFC A27).
	Priorities int
	// prios are the priorities' localities and endpoints, by priority.
	prios []prioSpan
	// byBackend lists the endpoints by backend, then position: a session
	// override finds its host without a scan of the cluster.
	byBackend []backendEndpoint
}

type backendEndpoint struct {
	backend uint32
	ep      int32
}

// prioSpan is where one priority's localities [firstLoc, lastLoc] and
// endpoints [lo, hi) are in a Cluster.
type prioSpan struct {
	firstLoc, lastLoc int
	lo, hi            int
}

// index fills c.prios from its localities, which are sorted by priority.
func (c *Cluster) index() {
	c.prios = make([]prioSpan, c.Priorities)
	for p := range c.prios {
		c.prios[p] = prioSpan{firstLoc: -1, lastLoc: -1}
	}
	for l, loc := range c.Localities {
		ps := &c.prios[loc.Priority]
		if ps.firstLoc < 0 {
			ps.firstLoc, ps.lo = l, loc.First
		}
		ps.lastLoc, ps.hi = l, loc.First+loc.N
	}
	c.byBackend = make([]backendEndpoint, len(c.Endpoints))
	for i, e := range c.Endpoints {
		c.byBackend[i] = backendEndpoint{e.Backend, int32(i)}
	}
	slices.SortFunc(c.byBackend, func(a, b backendEndpoint) int {
		return cmp.Or(cmp.Compare(a.backend, b.backend), cmp.Compare(a.ep, b.ep))
	})
}

// endpointsOf returns the positions of backend's endpoints, in order, as
// a span of c.byBackend.
func (c *Cluster) endpointsOf(backend uint32) []backendEndpoint {
	if c.prios == nil {
		c.index() // a Config built by hand
	}
	i, _ := slices.BinarySearchFunc(c.byBackend, backend, func(e backendEndpoint, b uint32) int { return cmp.Compare(e.backend, b) })
	j := i
	for j < len(c.byBackend) && c.byBackend[j].backend == backend {
		j++
	}
	return c.byBackend[i:j]
}

// Route is one route of a channel's config.
type Route struct {
	// Name is the route's name in its RouteConfiguration.
	Name string
	// Prefix and Path are the route's match: a path prefix, or an exact
	// path when Path is set; or Regex, a safe_regex the whole path must
	// match. Matching is case-sensitive unless case_sensitive is false.
	Prefix     string
	Path       string
	Regex      string
	exact      bool
	regex      *regexp.Regexp
	ignoreCase bool
	// Headers are the route's header matchers; all must match.
	Headers []HeaderMatcher
	// HashPolicies are the route's hash policies for ring_hash (gRFC A42).
	HashPolicies []HashPolicy
	// Clusters are the clusters the route sends RPCs to with their
	// weights: indexes into Config.Clusters. One cluster takes every RPC.
	Clusters []WeightedCluster
	total    uint64
	// Retry is the route's retry policy (gRFC A44); nil means none.
	Retry *RetryPolicy
	// Session is the route's stateful-session cookie (gRFC A55); nil
	// means none.
	Session *Session
}

// WeightedCluster is a cluster of a route and its weight.
type WeightedCluster struct {
	Cluster int
	Weight  uint32
}

// Config is a channel's configuration: what gRPC's xDS resolver and
// cluster balancers build from a Listener, its RouteConfiguration, the
// Clusters its routes name and their ClusterLoadAssignments (gRFC A74's
// XdsConfig). A Config is immutable once built and shared by every client
// that has the same resources.
type Config struct {
	// Routes are the routes of the virtual host matching the target, in
	// order; the first that matches an RPC's method takes it (gRFC A28).
	Routes []Route
	// Clusters are the clusters the routes name.
	Clusters []Cluster
}

// ClusterResources is one cluster of a channel's config as the XdsClient
// has it: its Cluster and ClusterLoadAssignment, or the error that took
// one of them away.
type ClusterResources struct {
	Name    string
	Cluster *clusterpb.Cluster
	CLA     *endpointpb.ClusterLoadAssignment
	// Failed: an error took the cluster away; Cause says why.
	Failed bool
	Cause  Cause
}

// RouteFor returns the route that takes an RPC to method with headers hdrs,
// the first whose match fits it, or nil when none does (the RPC fails, as grpc-go's
// config selector fails it: "no matching route").
func (c *Config) RouteFor(method string, hdrs []Header) *Route {
	for i := range c.Routes {
		if r := &c.Routes[i]; r.Matches(method, hdrs) {
			return r
		}
	}
	return nil
}

// PickCluster picks the cluster of a new RPC on route r: the only one, or
// one drawn at random by weight, as gRPC's xDS config selector does
// (gRFC A28; grpc-go xds/internal/resolver serviceconfig.go, a random
// WRR). It draws from rnd only when the route has several clusters.
func (r *Route) PickCluster(rnd *sim.Rand) int {
	if len(r.Clusters) == 1 {
		return r.Clusters[0].Cluster
	}
	x := uint64(rnd.Float64() * float64(r.total))
	for _, wc := range r.Clusters {
		if x < uint64(wc.Weight) {
			return wc.Cluster
		}
		x -= uint64(wc.Weight)
	}
	return r.Clusters[len(r.Clusters)-1].Cluster
}

// BuildConfig builds the channel config of target from its resources, as
// the implementation prof builds it; rc is nil when the listener inlines
// its route, and clusters hold every cluster the routes name. backend maps
// an endpoint (the ClusterLoadAssignment's cluster name and the endpoint's
// address) to its backend. The resources are valid: the XdsClient
// validated them.
func BuildConfig(target string, lis *listenerpb.Listener, rc *routepb.RouteConfiguration, clusters []ClusterResources,
	prof Profile, backend func(cluster, addr string) uint32) (*Config, error) {
	hcm := &hcmpb.HttpConnectionManager{}
	if err := lis.GetApiListener().GetApiListener().UnmarshalTo(hcm); err != nil {
		return nil, fmt.Errorf("dataplane: listener %q: %v", lis.GetName(), err)
	}
	if rc == nil {
		rc = hcm.GetRouteConfig()
	}
	vh := virtualHost(target, rc)
	c := &Config{}
	index := map[string]int{}
	for _, r := range vh.GetRoutes() {
		action := r.GetRoute()
		if action == nil {
			continue
		}
		route := Route{Name: r.GetName()}
		if !routeMatch(r.GetMatch(), &route) {
			continue // a match kind gRPC ignores (query parameters) or a template
		}
		for _, hp := range action.GetHashPolicy() {
			switch p := hp.GetPolicySpecifier().(type) {
			case *routepb.RouteAction_HashPolicy_Header_:
				route.HashPolicies = append(route.HashPolicies, HashPolicy{Header: strings.ToLower(p.Header.GetHeaderName()), Terminal: hp.GetTerminal()})
			case *routepb.RouteAction_HashPolicy_FilterState_:
				if p.FilterState.GetKey() == "io.grpc.channel_id" {
					route.HashPolicies = append(route.HashPolicies, HashPolicy{ChannelID: true, Terminal: hp.GetTerminal()})
				}
			}
		}
		add := func(name string, w uint32) error {
			k, ok := index[name]
			if !ok {
				cr := findCluster(clusters, name)
				if cr == nil {
					return fmt.Errorf("dataplane: route %q names cluster %q, which the config lacks", rc.GetName(), name)
				}
				k = len(c.Clusters)
				index[name] = k
				c.Clusters = append(c.Clusters, buildCluster(cr, prof, backend))
			}
			route.Clusters = append(route.Clusters, WeightedCluster{Cluster: k, Weight: w})
			route.total += uint64(w)
			return nil
		}
		switch cs := action.GetClusterSpecifier().(type) {
		case *routepb.RouteAction_Cluster:
			if err := add(cs.Cluster, 1); err != nil {
				return nil, err
			}
		case *routepb.RouteAction_WeightedClusters:
			for _, wc := range cs.WeightedClusters.GetClusters() {
				if w := wc.GetWeight().GetValue(); w > 0 {
					if err := add(wc.GetName(), w); err != nil {
						return nil, err
					}
				}
			}
		default:
			continue // a cluster specifier plugin: not modelled
		}
		rp := action.GetRetryPolicy()
		if rp == nil {
			// A route without a retry policy takes its virtual host's
			// (gRFC A44, "the route's policy overrides the virtual
			// host's").
			rp = vh.GetRetryPolicy()
		}
		if rp != nil {
			var n *uint32
			if rp.GetNumRetries() != nil {
				v := rp.GetNumRetries().GetValue()
				n = &v
			}
			p := PolicyFromXDS(rp.GetRetryOn(), n, rp.GetRetryBackOff().GetBaseInterval().AsDuration(),
				rp.GetRetryBackOff().GetMaxInterval().AsDuration())
			if !prof.CapXDSAttempts {
				p.MaxAttempts = 2
				if n != nil {
					p.MaxAttempts = int(*n) + 1
				}
			}
			route.Retry = &p
		}
		if prof.A55 {
			// grpc-go and grpc-java skip an optional session filter
			// (a required one was NACKed): no cookie, no session.
			route.Session = session(hcm, r)
		}
		c.Routes = append(c.Routes, route)
	}
	if len(c.Routes) == 0 {
		return nil, fmt.Errorf("dataplane: route %q: no route for %q", rc.GetName(), target)
	}
	return c, nil
}

// routeMatch converts a route's match into r: the path matcher
// (case_sensitive defaults to true) and the header matchers (gRFC A28).
// It reports false for a match gRPC never takes: one with query
// parameters (grpc-go unmarshal_rds.go skips such routes), or a kind the
// XdsClient would have NACKed.
func routeMatch(m *routepb.RouteMatch, r *Route) bool {
	if len(m.GetQueryParameters()) != 0 {
		return false
	}
	r.ignoreCase = m.GetCaseSensitive() != nil && !m.GetCaseSensitive().GetValue()
	switch p := m.GetPathSpecifier().(type) {
	case *routepb.RouteMatch_Prefix:
		r.Prefix = p.Prefix
	case *routepb.RouteMatch_Path:
		r.Path, r.exact = p.Path, true
	case *routepb.RouteMatch_SafeRegex:
		expr := "^(?:" + p.SafeRegex.GetRegex() + ")$"
		if r.ignoreCase {
			expr = "(?i)" + expr
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return false
		}
		r.Regex, r.regex = p.SafeRegex.GetRegex(), re
	default:
		return false
	}
	for _, h := range m.GetHeaders() {
		hm, ok := headerMatcher(h)
		if !ok {
			return false
		}
		r.Headers = append(r.Headers, hm)
	}
	return true
}

func findCluster(cs []ClusterResources, name string) *ClusterResources {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

// buildCluster builds one cluster: its policy, override_host_status and
// endpoints, every priority of them (gRFC A27).
func buildCluster(cr *ClusterResources, prof Profile, backend func(cluster, addr string) uint32) Cluster {
	c := Cluster{Name: cr.Name, OverrideHostStatus: DefaultOverrideHostStatus}
	if cr.Failed {
		c.Failed, c.Cause = true, cr.Cause
		return c
	}
	cl, cla := cr.Cluster, cr.CLA
	c.EDS = cla.GetClusterName()
	switch {
	case hasPickFirst(cl):
		c.LB = PickFirst
	case cl.GetLbPolicy() == clusterpb.Cluster_RING_HASH:
		c.LB = RingHash
	case cl.GetLbPolicy() == clusterpb.Cluster_LEAST_REQUEST:
		c.LB = LeastRequest
	}
	if st := cl.GetCommonLbConfig().GetOverrideHostStatus(); st != nil {
		// Only UNKNOWN, HEALTHY and DRAINING mean anything to a client:
		// gRFC A55 ("ignore all other values"); C-core's CDS parser keeps
		// what XdsHealthStatus::FromUpb knows and drops the rest
		// (xds_cluster_parser.cc CdsResourceParse).
		c.OverrideHostStatus = 0
		for _, h := range st.GetStatuses() {
			if overridable.Has(h) {
				c.OverrideHostStatus |= 1 << h
			}
		}
		if c.OverrideHostStatus == 0 && prof.EmptyOverrideHostStatusIsDefault {
			c.OverrideHostStatus = DefaultOverrideHostStatus
		}
	}
	// Localities in priority order, each keeping its place in the
	// ClusterLoadAssignment within its priority; a locality of weight 0 is
	// ignored (grpc-go unmarshal_eds.go).
	locs := slices.Clone(cla.GetEndpoints())
	locs = slices.DeleteFunc(locs, func(l *endpointpb.LocalityLbEndpoints) bool { return l.GetLoadBalancingWeight().GetValue() == 0 })
	slices.SortStableFunc(locs, func(a, b *endpointpb.LocalityLbEndpoints) int { return cmp.Compare(a.GetPriority(), b.GetPriority()) })
	for _, loc := range locs {
		id := loc.GetLocality()
		name := id.GetRegion() + "/" + id.GetZone()
		if id.GetSubZone() != "" {
			name += "/" + id.GetSubZone()
		}
		l := Locality{Name: name,
			Priority: loc.GetPriority(), Weight: loc.GetLoadBalancingWeight().GetValue(), First: len(c.Endpoints)}
		for _, e := range loc.GetLbEndpoints() {
			sa := e.GetEndpoint().GetAddress().GetSocketAddress()
			addr := net.JoinHostPort(sa.GetAddress(), strconv.Itoa(int(sa.GetPortValue())))
			w := uint32(1)
			if e.GetLoadBalancingWeight() != nil {
				w = e.GetLoadBalancingWeight().GetValue()
			}
			c.Endpoints = append(c.Endpoints, Endpoint{
				Address: addr, Health: e.GetHealthStatus(), Weight: w,
				Backend: backend(cla.GetClusterName(), addr), Locality: len(c.Localities),
			})
		}
		l.N = len(c.Endpoints) - l.First
		c.Localities = append(c.Localities, l)
		c.Priorities = max(c.Priorities, int(l.Priority)+1)
	}
	c.index()
	return c
}

// virtualHost returns the virtual host that matches target (an exact
// domain, else "*"), as gRPC's xDS resolver matches it (gRFC A28), else
// the first.
func virtualHost(target string, rc *routepb.RouteConfiguration) *routepb.VirtualHost {
	var vh *routepb.VirtualHost
	for _, v := range rc.GetVirtualHosts() {
		for _, d := range v.GetDomains() {
			if d == target {
				vh = v
			} else if d == "*" && vh == nil {
				vh = v
			}
		}
	}
	if vh == nil && len(rc.GetVirtualHosts()) > 0 {
		vh = rc.GetVirtualHosts()[0]
	}
	return vh
}

// session returns the stateful-session cookie that applies to route: the
// route's typed_per_filter_config override if any (gRFC A55, "Filter
// Config Overrides"), else the HttpConnectionManager filter's config.
func session(hcm *hcmpb.HttpConnectionManager, route *routepb.Route) *Session {
	var cfg *sessionpb.StatefulSession
	present := false
	for _, f := range hcm.GetHttpFilters() {
		if f.GetName() != sessionFilterName {
			continue
		}
		present = true
		s := &sessionpb.StatefulSession{}
		if f.GetTypedConfig().UnmarshalTo(s) == nil {
			cfg = s
		}
	}
	if !present {
		return nil
	}
	if raw := route.GetTypedPerFilterConfig()[sessionFilterName]; raw != nil {
		per := &sessionpb.StatefulSessionPerRoute{}
		if raw.UnmarshalTo(per) == nil {
			if per.GetDisabled() {
				return nil
			}
			cfg = per.GetStatefulSession()
		}
	}
	st := cfg.GetSessionState()
	if st == nil || string(st.GetTypedConfig().MessageName()) != cookieStateType {
		return nil // an empty StatefulSession does nothing
	}
	ck := &cookiepb.CookieBasedSessionState{}
	if st.GetTypedConfig().UnmarshalTo(ck) != nil || ck.GetCookie().GetName() == "" {
		return nil
	}
	return &Session{Cookie: ck.GetCookie().GetName(), Path: ck.GetCookie().GetPath(), TTL: ck.GetCookie().GetTtl().AsDuration()}
}

func hasPickFirst(cl *clusterpb.Cluster) bool {
	for _, p := range cl.GetLoadBalancingPolicy().GetPolicies() {
		if p.GetTypedExtensionConfig().GetTypedConfig().MessageName() == proto.MessageName(&pickfirstpb.PickFirst{}) {
			return true
		}
	}
	return false
}

// PathMatches reports whether an RPC's method path is within a cookie
// path, as RFC 6265 section 5.1.4 matches paths (gRFC A55: RPCs outside
// the cookie's path get no affinity).
func PathMatches(cookiePath, method string) bool {
	if cookiePath == "" || cookiePath == "/" || cookiePath == method {
		return true
	}
	if len(method) > len(cookiePath) && method[:len(cookiePath)] == cookiePath {
		return cookiePath[len(cookiePath)-1] == '/' || method[len(cookiePath)] == '/'
	}
	return false
}
