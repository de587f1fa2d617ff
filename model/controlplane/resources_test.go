package controlplane_test

import (
	"testing"
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	sessionpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/stateful_session/v3"
	hcmpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	cookiepb "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/cookie/v3"
	"google.golang.org/protobuf/types/known/anypb"

	cp "github.com/xdssim/xdssim/model/controlplane"
	"github.com/xdssim/xdssim/model/xdsclient"
)

// serviceVariants covers every option of a Service.
func serviceVariants() []cp.Service {
	retry := &cp.RetryPolicy{On: []string{"unavailable", "cancelled", "deadline-exceeded", "internal", "resource-exhausted"},
		NumRetries: 4, BaseInterval: 100 * time.Millisecond, MaxInterval: time.Second}
	return []cp.Service{
		{Name: "plain", EndpointCount: 3},
		{Name: "inline", InlineRoute: true, EndpointCount: 2, Retry: retry},
		{Name: "retry-defaults", Retry: &cp.RetryPolicy{}, EndpointCount: 1},
		{Name: "session", Session: &cp.SessionAffinity{CookieName: "global-session-cookie", CookiePath: "/Package1.Service2/Method3", TTL: 120 * time.Second}, EndpointCount: 4},
		{Name: "session-per-route", Session: &cp.SessionAffinity{CookieName: "c", PerRoute: true}, LB: cp.RingHash, EndpointCount: 2},
		{Name: "session-inline", InlineRoute: true, Session: &cp.SessionAffinity{CookieName: "c", PerRoute: true}, EndpointCount: 2},
		{Name: "least-request", LB: cp.LeastRequest, EndpointCount: 2},
		{Name: "named", ListenerName: "xds-target", RouteName: "r", ClusterName: "c", EDSName: "e", Port: 443, EndpointCount: 1},
		{Name: "zones", Endpoints: []cp.Endpoint{
			{Address: "10.0.0.1", Weight: 3, Zone: "b", Health: corepb.HealthStatus_HEALTHY},
			{Address: "10.0.0.2", Zone: "a", Health: corepb.HealthStatus_DRAINING},
			{Address: "10.0.0.3", Port: 9000, Zone: "a", Health: corepb.HealthStatus_UNHEALTHY},
			{Address: "10.0.0.4", Health: corepb.HealthStatus_UNKNOWN},
		}},
		{Name: "empty"},
		{Name: "override", OverrideHostStatus: []corepb.HealthStatus{corepb.HealthStatus_HEALTHY}, EndpointCount: 1},
	}
}

// TestExpandedResourcesPassClientValidation checks that every resource a
// service expands to, in every variant, decodes and validates as a gRPC
// client would (model/xdsclient, which mirrors grpc-go
// xdsresource/unmarshal_*.go).
func TestExpandedResourcesPassClientValidation(t *testing.T) {
	for _, sv := range serviceVariants() {
		res := cp.Expand(&sv)
		for typ, m := range res {
			if m == nil {
				if typ != int(cp.RDS) || !sv.InlineRoute {
					t.Errorf("%s: no %v resource", sv.Name, cp.ResourceType(typ))
				}
				continue
			}
			d := xdsclient.MustDecoded(xdsclient.ResourceType(typ), m)
			if d.Err != nil {
				t.Errorf("%s: %v resource rejected: %v", sv.Name, cp.ResourceType(typ), d.Err)
			}
			if want := sv.ResourceNames()[typ]; d.Name != want {
				t.Errorf("%s: %v resource named %q, want %q", sv.Name, cp.ResourceType(typ), d.Name, want)
			}
		}
		d := xdsclient.MustDecoded(xdsclient.CDS, res[cp.CDS])
		if want := sv.ResourceNames()[cp.EDS]; d.EDSServiceName != want {
			t.Errorf("%s: cluster names EDS %q, want %q", sv.Name, d.EDSServiceName, want)
		}
		l := xdsclient.MustDecoded(xdsclient.LDS, res[cp.LDS])
		if !sv.InlineRoute && l.RouteConfigName != sv.ResourceNames()[cp.RDS] {
			t.Errorf("%s: listener names route %q", sv.Name, l.RouteConfigName)
		}
	}
}

// TestServedResourcesPassClientValidation decodes every resource of
// every response a server sends for all variants with xdsclient.Decode.
func TestServedResourcesPassClientValidation(t *testing.T) {
	s := mustNew(t, cp.Config{Name: "primary", Services: serviceVariants()})
	c := newClient(t, s, 1)
	n := 0
	for typ := cp.LDS; typ < cp.NumTypes; typ++ {
		for _, r := range c.subscribe(typ, s.ResourceNames(typ)...) {
			for _, d := range xdsclient.DecodeResponse(r.Message).Resources {
				n++
				if d.Err != nil {
					t.Errorf("%v %s: %v", typ, d.Name, d.Err)
				}
			}
		}
	}
	if n != 4*len(serviceVariants())-2 {
		t.Errorf("decoded %d resources, want %d", n, 4*len(serviceVariants())-2)
	}
}

// TestServiceExpansion pins down the shape of the expanded protos: the
// HCM filter chain, the A55 filter and per-route override, the retry
// policy, override_host_status and EDS health and weights.
func TestServiceExpansion(t *testing.T) {
	sv := cp.Service{
		Name:    "svc",
		Retry:   &cp.RetryPolicy{On: []string{"unavailable", "cancelled"}, NumRetries: 3, BaseInterval: 50 * time.Millisecond},
		Session: &cp.SessionAffinity{CookieName: "sc", CookiePath: "/p", TTL: time.Minute, PerRoute: true},
		Endpoints: []cp.Endpoint{
			{Address: "10.1.0.1", Weight: 2, Health: corepb.HealthStatus_HEALTHY},
			{Address: "10.1.0.2", Health: corepb.HealthStatus_DRAINING},
		},
	}
	res := cp.Expand(&sv)

	lis := res[cp.LDS].(*listenerpb.Listener)
	hcm := &hcmpb.HttpConnectionManager{}
	if err := lis.GetApiListener().GetApiListener().UnmarshalTo(hcm); err != nil {
		t.Fatal(err)
	}
	if got := hcm.GetRds().GetRouteConfigName(); got != "svc-route" {
		t.Errorf("rds route_config_name = %q", got)
	}
	fs := hcm.GetHttpFilters()
	if len(fs) != 2 || fs[0].GetName() != "envoy.filters.http.stateful_session" || fs[1].GetName() != "envoy.filters.http.router" {
		t.Fatalf("http_filters = %v", fs)
	}
	hcmSession := &sessionpb.StatefulSession{}
	if err := fs[0].GetTypedConfig().UnmarshalTo(hcmSession); err != nil {
		t.Fatal(err)
	}
	if hcmSession.GetSessionState() != nil {
		t.Errorf("per-route session: HCM filter should be empty, got %v", hcmSession)
	}

	rc := res[cp.RDS].(*routepb.RouteConfiguration)
	route := rc.GetVirtualHosts()[0].GetRoutes()[0]
	rp := route.GetRoute().GetRetryPolicy()
	if rp.GetRetryOn() != "unavailable,cancelled" || rp.GetNumRetries().GetValue() != 3 ||
		rp.GetRetryBackOff().GetBaseInterval().AsDuration() != 50*time.Millisecond ||
		rp.GetRetryBackOff().GetMaxInterval().AsDuration() != 500*time.Millisecond {
		t.Errorf("retry policy = %v", rp)
	}
	per := &sessionpb.StatefulSessionPerRoute{}
	if err := route.GetTypedPerFilterConfig()["envoy.filters.http.stateful_session"].UnmarshalTo(per); err != nil {
		t.Fatal(err)
	}
	ss := per.GetStatefulSession().GetSessionState()
	cookie := &cookiepb.CookieBasedSessionState{}
	if ss.GetName() != "envoy.http.stateful_session.cookie" {
		t.Errorf("session_state name = %q", ss.GetName())
	}
	if err := ss.GetTypedConfig().UnmarshalTo(cookie); err != nil {
		t.Fatal(err)
	}
	if c := cookie.GetCookie(); c.GetName() != "sc" || c.GetPath() != "/p" || c.GetTtl().AsDuration() != time.Minute {
		t.Errorf("cookie = %v", c)
	}

	cl := res[cp.CDS].(*clusterpb.Cluster)
	want := []corepb.HealthStatus{corepb.HealthStatus_UNKNOWN, corepb.HealthStatus_HEALTHY, corepb.HealthStatus_DRAINING}
	if got := cl.GetCommonLbConfig().GetOverrideHostStatus().GetStatuses(); !equalStatuses(got, want) {
		t.Errorf("override_host_status = %v, want %v", got, want)
	}
	if cl.GetType() != clusterpb.Cluster_EDS || cl.GetEdsClusterConfig().GetEdsConfig().GetAds() == nil {
		t.Errorf("cluster is not EDS over ADS: %v", cl)
	}

	cla := res[cp.EDS].(*endpointpb.ClusterLoadAssignment)
	loc := cla.GetEndpoints()[0]
	if loc.GetLoadBalancingWeight().GetValue() != 3 || len(loc.GetLbEndpoints()) != 2 {
		t.Fatalf("locality = %v", loc)
	}
	if e := loc.GetLbEndpoints()[1]; e.GetHealthStatus() != corepb.HealthStatus_DRAINING || e.GetLoadBalancingWeight().GetValue() != 1 {
		t.Errorf("second endpoint = %v", e)
	}
	d := xdsclient.MustDecoded(xdsclient.LDS, lis)
	if d.Err != nil {
		t.Error(d.Err)
	}
}

func equalStatuses(a, b []corepb.HealthStatus) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestDefectsAreNACKed checks that each Defect makes exactly the intended
// resource fail the client rule it names, and nothing else.
func TestDefectsAreNACKed(t *testing.T) {
	cases := []struct {
		d    cp.Defect
		typ  cp.ResourceType
		rule xdsclient.Rule
		sv   cp.Service
	}{
		{cp.DefectClusterLBPolicy, cp.CDS, xdsclient.RuleCDSLBPolicy, svc("a", 2)},
		{cp.DefectEndpointZeroWeight, cp.EDS, xdsclient.RuleEDSEndpointZeroWeight, svc("a", 2)},
		{cp.DefectRouteRetry, cp.RDS, xdsclient.RuleRDSRetryPolicy, svc("a", 2)},
		{cp.DefectRouteRetry, cp.LDS, xdsclient.RuleLDSInlineRoute, cp.Service{Name: "a", InlineRoute: true, EndpointCount: 1}},
		{cp.DefectListenerNoRouter, cp.LDS, xdsclient.RuleLDSNoFilters, svc("a", 2)},
		{cp.DefectListenerNoRouter, cp.LDS, xdsclient.RuleLDSNoFilters, cp.Service{Name: "a", Session: &cp.SessionAffinity{CookieName: "c"}}},
	}
	for _, c := range cases {
		t.Run(c.d.String()+"/"+c.typ.String(), func(t *testing.T) {
			sv := c.sv
			sv.Defect = c.d
			res := cp.Expand(&sv)
			for typ, m := range res {
				if m == nil {
					continue
				}
				d := xdsclient.MustDecoded(xdsclient.ResourceType(typ), m)
				// Every implementation rejects a defect, whatever
				// filters it has.
				for _, fs := range []xdsclient.FilterSet{xdsclient.FiltersGRPCGo, xdsclient.FiltersGRPCJava, xdsclient.FiltersGRPCCore, xdsclient.FiltersSpec} {
					err := d.ErrIn(fs)
					switch {
					case cp.ResourceType(typ) == c.typ && (err == nil || err.Rule != c.rule):
						t.Errorf("%v in %v: got %v, want rule %s", cp.ResourceType(typ), fs, err, c.rule)
					case cp.ResourceType(typ) != c.typ && err != nil:
						t.Errorf("%v in %v: unexpected %v", cp.ResourceType(typ), fs, err)
					}
				}
			}
		})
	}
	if d, err := cp.ParseDefect("endpoint-zero-weight"); err != nil || d != cp.DefectEndpointZeroWeight {
		t.Errorf("ParseDefect = %v, %v", d, err)
	}
}

// TestResourcesAreSharedAcrossStreams checks that every stream receiving
// a version of a resource gets the same *anypb.Any, marshalled once.
func TestResourcesAreSharedAcrossStreams(t *testing.T) {
	for _, k := range cacheKinds {
		t.Run(k.String(), func(t *testing.T) {
			s := mustNew(t, cp.Config{Name: "p", Cache: k, Services: []cp.Service{svc("a", 3)}})
			var got []*anypb.Any
			for id := cp.StreamID(1); id <= 3; id++ {
				c := newClient(t, s, id)
				r := only(t, c.subscribe(cp.EDS, "a-cluster"))
				got = append(got, r.Message.GetResources()[0])
			}
			want, ok := s.Lookup(cp.EDS, "a-cluster")
			if !ok {
				t.Fatal("Lookup: not served")
			}
			for i, a := range got {
				if a != want {
					t.Errorf("stream %d got a different *anypb.Any", i+1)
				}
			}
		})
	}
}

// TestNamesRoundTrip: the names scenarios use parse back to their values.
func TestNamesRoundTrip(t *testing.T) {
	for p := cp.RoundRobin; p <= cp.LeastRequest; p++ {
		if q, err := cp.ParseLBPolicy(p.String()); err != nil || q != p {
			t.Errorf("LB policy %v: %v %v", p, q, err)
		}
	}
	for d := cp.NoDefect; d <= cp.DefectListenerNoRouter; d++ {
		if e, err := cp.ParseDefect(d.String()); err != nil || e != d {
			t.Errorf("defect %v: %v %v", d, e, err)
		}
	}
	for _, k := range cacheKinds {
		if j, err := cp.ParseCacheKind(k.String()); err != nil || j != k {
			t.Errorf("cache %v: %v %v", k, j, err)
		}
	}
	for typ := cp.LDS; typ < cp.NumTypes; typ++ {
		if u, ok := cp.TypeFromURL(typ.TypeURL()); !ok || u != typ || xdsclient.ResourceType(typ).TypeURL() != typ.TypeURL() {
			t.Errorf("type %v", typ)
		}
	}
	if _, err := cp.ParseLBPolicy("maglev"); err == nil {
		t.Error("maglev parsed")
	}
}
