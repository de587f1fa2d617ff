package controlplane

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	sessionpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/stateful_session/v3"
	hcmpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	cookiepb "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/cookie/v3"
	pickfirstpb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/pick_first/v3"
	httpv3pb "github.com/envoyproxy/go-control-plane/envoy/type/http/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Filter and extension names, as Envoy and gRFC A55 spell them.
const (
	routerFilterName  = "envoy.filters.http.router"
	sessionFilterName = "envoy.filters.http.stateful_session"
	cookieStateName   = "envoy.http.stateful_session.cookie"
)

// Defaults of a retry policy (Envoy route_components.proto; gRFC A44).
const (
	defaultRetryBase = 25 * time.Millisecond
	defaultRetryOn   = "unavailable"
)

// Expand returns the listener, the route and the first cluster's
// resources s describes, indexed by resource type: a *listenerpb.Listener,
// a *routepb.RouteConfiguration (nil when the route is inline), a
// *clusterpb.Cluster and a *endpointpb.ClusterLoadAssignment. Every call
// builds fresh messages. [ExpandAll] returns every resource.
func Expand(s *Service) [NumTypes]proto.Message {
	var out [NumTypes]proto.Message
	first := s.clusters()[0]
	for _, r := range ExpandAll(s) {
		switch {
		case r.Type == LDS || r.Type == RDS,
			r.Type == CDS && r.Name == first.name,
			r.Type == EDS && r.Name == first.eds:
			out[r.Type] = r.Message
		}
	}
	return out
}

// Resource is one resource a service expands to.
type Resource struct {
	ResourceKey
	Message proto.Message
}

// ExpandAll returns every resource s describes, in the order of
// [Service.Resources], withheld ones included. Every call builds fresh
// messages; the server marshals each once.
func ExpandAll(s *Service) []Resource {
	rc := expandRoute(s)
	out := []Resource{{ResourceKey{LDS, s.listenerName()}, expandListener(s, rc)}}
	if !s.InlineRoute {
		out = append(out, Resource{ResourceKey{RDS, s.routeName()}, rc})
	}
	cs := s.clusters()
	for i, c := range cs {
		out = append(out, Resource{ResourceKey{CDS, c.name}, expandCluster(s, c, s.defective(i, c))})
	}
	for i, c := range cs {
		out = append(out, Resource{ResourceKey{EDS, c.eds}, expandEndpoints(s, c, s.defective(i, c))})
	}
	return out
}

// defective reports whether cluster i, c, carries the service's Cluster
// or ClusterLoadAssignment defect.
func (s *Service) defective(i int, c clusterSpec) bool {
	if s.DefectCluster == "" {
		return i == 0
	}
	return c.name == s.DefectCluster
}

// mustAny wraps m in an Any. Marshalling a message this package built
// cannot fail; if it does, that is a bug.
func mustAny(m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		panic("controlplane: marshalling " + string(proto.MessageName(m)) + ": " + err.Error())
	}
	return a
}

func adsSource() *corepb.ConfigSource {
	return &corepb.ConfigSource{
		ResourceApiVersion:    corepb.ApiVersion_V3,
		ConfigSourceSpecifier: &corepb.ConfigSource_Ads{Ads: &corepb.AggregatedConfigSource{}},
	}
}

// sessionConfig is the gRFC A55 StatefulSession with a cookie session state.
func sessionConfig(a *SessionAffinity) *sessionpb.StatefulSession {
	c := &httpv3pb.Cookie{Name: a.CookieName, Path: a.CookiePath}
	if a.TTL > 0 {
		c.Ttl = durationpb.New(a.TTL)
	}
	return &sessionpb.StatefulSession{
		SessionState: &corepb.TypedExtensionConfig{
			Name:        cookieStateName,
			TypedConfig: mustAny(&cookiepb.CookieBasedSessionState{Cookie: c}),
		},
	}
}

// expandListener builds the API listener: an HttpConnectionManager with
// the stateful-session filter when configured, then the router (gRFC A39:
// the router is last).
func expandListener(s *Service, rc *routepb.RouteConfiguration) *listenerpb.Listener {
	hcm := &hcmpb.HttpConnectionManager{StatPrefix: s.Name}
	if s.InlineRoute {
		hcm.RouteSpecifier = &hcmpb.HttpConnectionManager_RouteConfig{RouteConfig: rc}
	} else {
		hcm.RouteSpecifier = &hcmpb.HttpConnectionManager_Rds{Rds: &hcmpb.Rds{
			ConfigSource:    adsSource(),
			RouteConfigName: s.routeName(),
		}}
	}
	if s.Session != nil {
		cfg := &sessionpb.StatefulSession{}
		if !s.Session.PerRoute {
			cfg = sessionConfig(s.Session)
		}
		hcm.HttpFilters = append(hcm.HttpFilters, &hcmpb.HttpFilter{
			Name:       sessionFilterName,
			ConfigType: &hcmpb.HttpFilter_TypedConfig{TypedConfig: mustAny(cfg)},
			IsOptional: s.Session.Optional,
		})
	}
	if s.Defect != DefectListenerNoRouter {
		hcm.HttpFilters = append(hcm.HttpFilters, &hcmpb.HttpFilter{
			Name:       routerFilterName,
			ConfigType: &hcmpb.HttpFilter_TypedConfig{TypedConfig: mustAny(&routerpb.Router{})},
		})
	} else {
		hcm.HttpFilters = nil
	}
	return &listenerpb.Listener{
		Name:        s.listenerName(),
		ApiListener: &listenerpb.ApiListener{ApiListener: mustAny(hcm)},
	}
}

// expandRoute builds the RouteConfiguration: one virtual host for the
// listener name with the service's routes, in order, each a prefix match
// to one cluster or to weighted_clusters (gRFC A28).
func expandRoute(s *Service) *routepb.RouteConfiguration {
	cs := s.clusters()
	var routes []*routepb.Route
	for i, sr := range s.routes() {
		action := &routepb.RouteAction{}
		var targets []clusterSpec
		for _, c := range cs {
			if len(sr.Clusters) == 0 || slices.Contains(sr.Clusters, c.name) {
				targets = append(targets, c)
			}
		}
		if len(targets) == 1 {
			action.ClusterSpecifier = &routepb.RouteAction_Cluster{Cluster: targets[0].name}
		} else {
			wc := &routepb.WeightedCluster{}
			for _, c := range targets {
				wc.Clusters = append(wc.Clusters, &routepb.WeightedCluster_ClusterWeight{Name: c.name, Weight: wrapperspb.UInt32(c.weight)})
			}
			action.ClusterSpecifier = &routepb.RouteAction_WeightedClusters{WeightedClusters: wc}
		}
		if s.Retry != nil || s.Defect == DefectRouteRetry {
			action.RetryPolicy = expandRetry(s.Retry, s.Defect == DefectRouteRetry)
		}
		name := "default"
		if len(s.Routes) > 0 {
			name = fmt.Sprintf("route-%d", i)
		}
		r := &routepb.Route{
			Name:   name,
			Match:  &routepb.RouteMatch{PathSpecifier: &routepb.RouteMatch_Prefix{Prefix: or(sr.Prefix, "/")}},
			Action: &routepb.Route_Route{Route: action},
		}
		if s.Session != nil && s.Session.PerRoute {
			r.TypedPerFilterConfig = map[string]*anypb.Any{
				sessionFilterName: mustAny(&sessionpb.StatefulSessionPerRoute{
					Override: &sessionpb.StatefulSessionPerRoute_StatefulSession{StatefulSession: sessionConfig(s.Session)},
				}),
			}
		}
		routes = append(routes, r)
	}
	return &routepb.RouteConfiguration{
		Name: s.routeName(),
		VirtualHosts: []*routepb.VirtualHost{{
			Name:    s.Name,
			Domains: []string{s.listenerName()},
			Routes:  routes,
		}},
	}
}

func expandRetry(p *RetryPolicy, broken bool) *routepb.RetryPolicy {
	var q RetryPolicy
	if p != nil {
		q = *p
	}
	on := defaultRetryOn
	if len(q.On) > 0 {
		on = strings.Join(q.On, ",")
	}
	n := max(q.NumRetries, 1)
	base := q.BaseInterval
	if base <= 0 {
		base = defaultRetryBase
	}
	maxI := q.MaxInterval
	if maxI <= 0 {
		maxI = 10 * base
	}
	rp := &routepb.RetryPolicy{
		RetryOn:    on,
		NumRetries: wrapperspb.UInt32(n),
		RetryBackOff: &routepb.RetryPolicy_RetryBackOff{
			BaseInterval: durationpb.New(base),
			MaxInterval:  durationpb.New(maxI),
		},
	}
	if broken {
		// No base_interval: every implementation NACKs it (see
		// DefectRouteRetry).
		rp.RetryBackOff.BaseInterval = nil
	}
	return rp
}

// expandCluster builds cluster c, EDS, with the A55 override_host_status;
// broken gives it the service's Cluster defect.
func expandCluster(s *Service, c clusterSpec, broken bool) *clusterpb.Cluster {
	statuses := s.OverrideHostStatus
	if statuses == nil {
		statuses = []corepb.HealthStatus{corepb.HealthStatus_UNKNOWN, corepb.HealthStatus_HEALTHY}
		if s.Session != nil {
			statuses = append(statuses, corepb.HealthStatus_DRAINING)
		}
	}
	cl := &clusterpb.Cluster{
		Name:                 c.name,
		ClusterDiscoveryType: &clusterpb.Cluster_Type{Type: clusterpb.Cluster_EDS},
		EdsClusterConfig: &clusterpb.Cluster_EdsClusterConfig{
			EdsConfig:   adsSource(),
			ServiceName: c.eds,
		},
		CommonLbConfig: &clusterpb.Cluster_CommonLbConfig{
			OverrideHostStatus: &corepb.HealthStatusSet{Statuses: slices.Clone(statuses)},
		},
	}
	switch s.LB {
	case RingHash:
		cl.LbPolicy = clusterpb.Cluster_RING_HASH
		cl.LbConfig = &clusterpb.Cluster_RingHashLbConfig_{RingHashLbConfig: &clusterpb.Cluster_RingHashLbConfig{
			HashFunction: clusterpb.Cluster_RingHashLbConfig_XX_HASH,
		}}
	case LeastRequest:
		cl.LbPolicy = clusterpb.Cluster_LEAST_REQUEST
		cl.LbConfig = &clusterpb.Cluster_LeastRequestLbConfig_{LeastRequestLbConfig: &clusterpb.Cluster_LeastRequestLbConfig{
			ChoiceCount: wrapperspb.UInt32(2),
		}}
	case PickFirst:
		cl.LoadBalancingPolicy = &clusterpb.LoadBalancingPolicy{Policies: []*clusterpb.LoadBalancingPolicy_Policy{{
			TypedExtensionConfig: &corepb.TypedExtensionConfig{
				Name:        "envoy.load_balancing_policies.pick_first",
				TypedConfig: mustAny(&pickfirstpb.PickFirst{}),
			},
		}}}
	default:
		cl.LbPolicy = clusterpb.Cluster_ROUND_ROBIN
	}
	if broken && s.Defect == DefectClusterLBPolicy {
		cl.LbPolicy = clusterpb.Cluster_MAGLEV
		cl.LbConfig = nil
	}
	return cl
}

// expandEndpoints builds cluster c's ClusterLoadAssignment: one locality
// per (zone, priority), in priority and then zone order, each weighted by
// its declared weight or the sum of its endpoints' weights; endpoints keep
// their order within a locality. broken gives it the service's
// ClusterLoadAssignment defect.
func expandEndpoints(s *Service, c clusterSpec, broken bool) *endpointpb.ClusterLoadAssignment {
	eps := c.endpoints
	cla := &endpointpb.ClusterLoadAssignment{ClusterName: c.eds}
	locs := slices.Clone(c.localities)
	for _, e := range eps {
		l := Locality{Zone: or(e.Zone, defaultZone), Priority: e.Priority}
		if !slices.ContainsFunc(locs, func(k Locality) bool { return or(k.Zone, defaultZone) == l.Zone && k.Priority == l.Priority }) {
			locs = append(locs, l)
		}
	}
	slices.SortStableFunc(locs, func(a, b Locality) int {
		return cmp.Or(cmp.Compare(a.Priority, b.Priority), cmp.Compare(or(a.Zone, defaultZone), or(b.Zone, defaultZone)))
	})
	first := true
	for _, l := range locs {
		zone := or(l.Zone, defaultZone)
		loc := &endpointpb.LocalityLbEndpoints{
			Locality: &corepb.Locality{Region: "region", Zone: zone},
			Priority: l.Priority,
		}
		var sum uint64
		for _, e := range eps {
			if or(e.Zone, defaultZone) != zone || e.Priority != l.Priority {
				continue
			}
			w := max(e.Weight, 1)
			if first && broken && s.Defect == DefectEndpointZeroWeight {
				w = 0
			}
			first = false
			sum += uint64(w)
			loc.LbEndpoints = append(loc.LbEndpoints, &endpointpb.LbEndpoint{
				HostIdentifier: &endpointpb.LbEndpoint_Endpoint{Endpoint: &endpointpb.Endpoint{
					Address: &corepb.Address{Address: &corepb.Address_SocketAddress{SocketAddress: &corepb.SocketAddress{
						Address:       e.Address,
						PortSpecifier: &corepb.SocketAddress_PortValue{PortValue: s.port(e)},
					}}},
				}},
				HealthStatus:        e.Health,
				LoadBalancingWeight: wrapperspb.UInt32(w),
			})
		}
		if l.Weight > 0 {
			sum = uint64(l.Weight)
		}
		loc.LoadBalancingWeight = wrapperspb.UInt32(uint32(min(max(sum, 1), math.MaxUint32)))
		cla.Endpoints = append(cla.Endpoints, loc)
	}
	return cla
}
