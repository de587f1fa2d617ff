package controlplane

import (
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

// Expand returns the resources s describes, indexed by resource type: a
// *listenerpb.Listener, a *routepb.RouteConfiguration (nil when the route
// is inline), a *clusterpb.Cluster and a *endpointpb.ClusterLoadAssignment.
// Every call builds fresh messages; the server marshals each once.
func Expand(s *Service) [NumTypes]proto.Message {
	var out [NumTypes]proto.Message
	rc := expandRoute(s)
	out[LDS] = expandListener(s, rc)
	if !s.InlineRoute {
		out[RDS] = rc
	}
	out[CDS] = expandCluster(s)
	out[EDS] = expandEndpoints(s)
	return out
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
// listener name with one route, prefix "/", to the cluster.
func expandRoute(s *Service) *routepb.RouteConfiguration {
	action := &routepb.RouteAction{
		ClusterSpecifier: &routepb.RouteAction_Cluster{Cluster: s.clusterName()},
	}
	if s.Retry != nil || s.Defect == DefectRouteRetry {
		action.RetryPolicy = expandRetry(s.Retry, s.Defect == DefectRouteRetry)
	}
	r := &routepb.Route{
		Name:   "default",
		Match:  &routepb.RouteMatch{PathSpecifier: &routepb.RouteMatch_Prefix{Prefix: "/"}},
		Action: &routepb.Route_Route{Route: action},
	}
	if s.Session != nil && s.Session.PerRoute {
		r.TypedPerFilterConfig = map[string]*anypb.Any{
			sessionFilterName: mustAny(&sessionpb.StatefulSessionPerRoute{
				Override: &sessionpb.StatefulSessionPerRoute_StatefulSession{StatefulSession: sessionConfig(s.Session)},
			}),
		}
	}
	return &routepb.RouteConfiguration{
		Name: s.routeName(),
		VirtualHosts: []*routepb.VirtualHost{{
			Name:    s.Name,
			Domains: []string{s.listenerName()},
			Routes:  []*routepb.Route{r},
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
	if broken {
		n = 0
	}
	base := q.BaseInterval
	if base <= 0 {
		base = defaultRetryBase
	}
	maxI := q.MaxInterval
	if maxI <= 0 {
		maxI = 10 * base
	}
	return &routepb.RetryPolicy{
		RetryOn:    on,
		NumRetries: wrapperspb.UInt32(n),
		RetryBackOff: &routepb.RetryPolicy_RetryBackOff{
			BaseInterval: durationpb.New(base),
			MaxInterval:  durationpb.New(maxI),
		},
	}
}

// expandCluster builds the EDS cluster with the A55 override_host_status.
func expandCluster(s *Service) *clusterpb.Cluster {
	statuses := s.OverrideHostStatus
	if statuses == nil {
		statuses = []corepb.HealthStatus{corepb.HealthStatus_UNKNOWN, corepb.HealthStatus_HEALTHY}
		if s.Session != nil {
			statuses = append(statuses, corepb.HealthStatus_DRAINING)
		}
	}
	c := &clusterpb.Cluster{
		Name:                 s.clusterName(),
		ClusterDiscoveryType: &clusterpb.Cluster_Type{Type: clusterpb.Cluster_EDS},
		EdsClusterConfig: &clusterpb.Cluster_EdsClusterConfig{
			EdsConfig:   adsSource(),
			ServiceName: s.edsName(),
		},
		CommonLbConfig: &clusterpb.Cluster_CommonLbConfig{
			OverrideHostStatus: &corepb.HealthStatusSet{Statuses: slices.Clone(statuses)},
		},
	}
	switch s.LB {
	case RingHash:
		c.LbPolicy = clusterpb.Cluster_RING_HASH
		c.LbConfig = &clusterpb.Cluster_RingHashLbConfig_{RingHashLbConfig: &clusterpb.Cluster_RingHashLbConfig{
			HashFunction: clusterpb.Cluster_RingHashLbConfig_XX_HASH,
		}}
	case LeastRequest:
		c.LbPolicy = clusterpb.Cluster_LEAST_REQUEST
		c.LbConfig = &clusterpb.Cluster_LeastRequestLbConfig_{LeastRequestLbConfig: &clusterpb.Cluster_LeastRequestLbConfig{
			ChoiceCount: wrapperspb.UInt32(2),
		}}
	case PickFirst:
		c.LoadBalancingPolicy = &clusterpb.LoadBalancingPolicy{Policies: []*clusterpb.LoadBalancingPolicy_Policy{{
			TypedExtensionConfig: &corepb.TypedExtensionConfig{
				Name:        "envoy.load_balancing_policies.pick_first",
				TypedConfig: mustAny(&pickfirstpb.PickFirst{}),
			},
		}}}
	default:
		c.LbPolicy = clusterpb.Cluster_ROUND_ROBIN
	}
	if s.Defect == DefectClusterLBPolicy {
		c.LbPolicy = clusterpb.Cluster_MAGLEV
		c.LbConfig = nil
	}
	return c
}

// expandEndpoints builds the ClusterLoadAssignment: one priority-0
// locality per zone, in zone order, each weighted by the sum of its
// endpoints' weights; endpoints keep their order within a zone.
func expandEndpoints(s *Service) *endpointpb.ClusterLoadAssignment {
	eps := s.endpoints()
	cla := &endpointpb.ClusterLoadAssignment{ClusterName: s.edsName()}
	zones := make([]string, 0, 1)
	for _, e := range eps {
		z := or(e.Zone, "zone-a")
		if !slices.Contains(zones, z) {
			zones = append(zones, z)
		}
	}
	slices.Sort(zones)
	first := true
	for _, z := range zones {
		loc := &endpointpb.LocalityLbEndpoints{
			Locality: &corepb.Locality{Region: "region", Zone: z},
		}
		var sum uint64
		for _, e := range eps {
			if or(e.Zone, "zone-a") != z {
				continue
			}
			w := max(e.Weight, 1)
			if first && s.Defect == DefectEndpointZeroWeight {
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
		loc.LoadBalancingWeight = wrapperspb.UInt32(uint32(min(max(sum, 1), math.MaxUint32)))
		cla.Endpoints = append(cla.Endpoints, loc)
	}
	return cla
}
