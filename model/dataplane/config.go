package dataplane

import (
	"fmt"
	"net"
	"strconv"
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

// Endpoint is one endpoint of the cluster as the client knows it.
type Endpoint struct {
	// Address is "ip:port".
	Address string
	Health  corepb.HealthStatus
	Weight  uint32
	// Backend identifies the server process behind the address (see
	// [Backends]).
	Backend uint32
}

// Config is a channel's configuration: what gRPC's xDS resolver and
// cluster balancers build from a Listener, its RouteConfiguration, the
// Cluster the route names and the Cluster's ClusterLoadAssignment. A
// Config is immutable once built and shared by every client that has the
// same resources.
type Config struct {
	// Cluster is the cluster the route sends RPCs to.
	Cluster string
	// Retry is the route's retry policy (gRFC A44); nil means none.
	Retry *RetryPolicy
	// Session is the stateful-session cookie (gRFC A55); nil means none.
	Session *Session
	// LB is the cluster's load-balancing policy.
	LB LBPolicy
	// OverrideHostStatus is common_lb_config.override_host_status.
	OverrideHostStatus HealthSet
	// Endpoints are the priority-0 endpoints, locality by locality, in
	// the order of the ClusterLoadAssignment.
	Endpoints []Endpoint
}

// BuildConfig builds the channel config of target from its resources, as
// the implementation prof describes builds it; rc is nil when the listener
// inlines its route. backend maps an endpoint (the
// ClusterLoadAssignment's cluster name and the endpoint's address) to its
// backend. The resources are valid: the XdsClient validated them.
func BuildConfig(target string, lis *listenerpb.Listener, rc *routepb.RouteConfiguration, cl *clusterpb.Cluster,
	cla *endpointpb.ClusterLoadAssignment, prof Profile, backend func(cluster, addr string) uint32) (*Config, error) {
	hcm := &hcmpb.HttpConnectionManager{}
	if err := lis.GetApiListener().GetApiListener().UnmarshalTo(hcm); err != nil {
		return nil, fmt.Errorf("dataplane: listener %q: %v", lis.GetName(), err)
	}
	if rc == nil {
		rc = hcm.GetRouteConfig()
	}
	route := firstRoute(target, rc)
	if route == nil {
		return nil, fmt.Errorf("dataplane: route %q: no route for %q", rc.GetName(), target)
	}
	c := &Config{Cluster: route.GetRoute().GetCluster(), OverrideHostStatus: DefaultOverrideHostStatus}
	if rp := route.GetRoute().GetRetryPolicy(); rp != nil {
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
		c.Retry = &p
	}
	c.Session = session(hcm, route)
	switch {
	case hasPickFirst(cl):
		c.LB = PickFirst
	case cl.GetLbPolicy() == clusterpb.Cluster_RING_HASH:
		c.LB = RingHash
	case cl.GetLbPolicy() == clusterpb.Cluster_LEAST_REQUEST:
		c.LB = LeastRequest
	}
	if st := cl.GetCommonLbConfig().GetOverrideHostStatus(); st != nil {
		c.OverrideHostStatus = 0
		for _, h := range st.GetStatuses() {
			if h >= 0 && h < 16 {
				c.OverrideHostStatus |= 1 << h
			}
		}
	}
	// gRPC uses the highest priority (lowest number) with endpoints; the
	// simulator's servers publish one priority.
	best := uint32(0)
	first := true
	for _, loc := range cla.GetEndpoints() {
		if first || loc.GetPriority() < best {
			best, first = loc.GetPriority(), false
		}
	}
	for _, loc := range cla.GetEndpoints() {
		if loc.GetPriority() != best {
			continue
		}
		for _, e := range loc.GetLbEndpoints() {
			sa := e.GetEndpoint().GetAddress().GetSocketAddress()
			addr := net.JoinHostPort(sa.GetAddress(), strconv.Itoa(int(sa.GetPortValue())))
			w := uint32(1)
			if e.GetLoadBalancingWeight() != nil {
				w = e.GetLoadBalancingWeight().GetValue()
			}
			c.Endpoints = append(c.Endpoints, Endpoint{
				Address: addr, Health: e.GetHealthStatus(), Weight: w,
				Backend: backend(cla.GetClusterName(), addr),
			})
		}
	}
	return c, nil
}

// firstRoute returns the first route of the virtual host that matches
// target (an exact domain, else "*"), as gRPC's xDS resolver matches the
// virtual host (gRFC A28) — the simulator's RPCs match a prefix "/" route.
func firstRoute(target string, rc *routepb.RouteConfiguration) *routepb.Route {
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
	for _, r := range vh.GetRoutes() {
		if r.GetRoute() != nil {
			return r
		}
	}
	return nil
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
