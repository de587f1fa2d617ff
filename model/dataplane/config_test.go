package dataplane_test

import (
	"testing"
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/grpc/codes"

	"github.com/xdssim/xdssim/model/controlplane"
	"github.com/xdssim/xdssim/model/dataplane"
)

func build(t *testing.T, svc controlplane.Service, prof dataplane.Profile) *dataplane.Config {
	t.Helper()
	m := controlplane.Expand(&svc)
	rc, _ := m[controlplane.RDS].(*routepb.RouteConfiguration)
	var keys []string
	c, err := dataplane.BuildConfig(svc.Name, m[controlplane.LDS].(*listenerpb.Listener), rc, m[controlplane.CDS].(*clusterpb.Cluster),
		m[controlplane.EDS].(*endpointpb.ClusterLoadAssignment), prof, func(cluster, addr string) uint32 {
			keys = append(keys, dataplane.BackendKey(cluster, addr))
			return uint32(len(keys) - 1)
		})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestConfigFollowsTheServicesResources(t *testing.T) {
	draining := dataplane.DefaultOverrideHostStatus | 1<<corepb.HealthStatus_DRAINING
	for _, tc := range []struct {
		name string
		svc  controlplane.Service
		prof dataplane.Profile
		want func(*dataplane.Config) bool
	}{
		{"plain round robin", controlplane.Service{Name: "a", EndpointCount: 3}, dataplane.ProfileByName("spec"),
			func(c *dataplane.Config) bool {
				return c.LB == dataplane.RoundRobin && c.Retry == nil && c.Session == nil && len(c.Endpoints) == 3 &&
					c.Endpoints[0].Address == "10.0.0.1:8080" && c.Cluster == "a-cluster" && c.OverrideHostStatus == dataplane.DefaultOverrideHostStatus
			}},
		{"pick_first from load_balancing_policy", controlplane.Service{Name: "a", EndpointCount: 1, LB: controlplane.PickFirst, InlineRoute: true},
			dataplane.ProfileByName("spec"), func(c *dataplane.Config) bool { return c.LB == dataplane.PickFirst }},
		{"retry policy, capped at 5 attempts (A6)", controlplane.Service{Name: "a", EndpointCount: 1,
			Retry: &controlplane.RetryPolicy{On: []string{"unavailable", "internal"}, NumRetries: 9, BaseInterval: 100 * time.Millisecond}},
			dataplane.ProfileByName("grpc-java"), func(c *dataplane.Config) bool {
				return c.Retry != nil && c.Retry.MaxAttempts == 5 && c.Retry.On.Has(codes.Internal) &&
					c.Retry.InitialBackoff == 100*time.Millisecond && c.Retry.MaxBackoff == time.Second
			}},
		{"grpc-go does not cap xDS retry attempts", controlplane.Service{Name: "a", EndpointCount: 1,
			Retry: &controlplane.RetryPolicy{NumRetries: 9}}, dataplane.ProfileByName("grpc-go"),
			func(c *dataplane.Config) bool { return c.Retry.MaxAttempts == 10 }},
		{"session cookie in the filter, DRAINING allowed by default", controlplane.Service{Name: "a", EndpointCount: 1,
			Session: &controlplane.SessionAffinity{CookieName: "s", CookiePath: "/svc"}}, dataplane.ProfileByName("spec"),
			func(c *dataplane.Config) bool {
				return c.Session != nil && c.Session.Cookie == "s" && c.Session.Path == "/svc" && c.OverrideHostStatus == draining
			}},
		{"session cookie per route", controlplane.Service{Name: "a", EndpointCount: 1,
			Session: &controlplane.SessionAffinity{CookieName: "r", PerRoute: true}}, dataplane.ProfileByName("spec"),
			func(c *dataplane.Config) bool { return c.Session != nil && c.Session.Cookie == "r" }},
		{"explicit override_host_status", controlplane.Service{Name: "a", EndpointCount: 1,
			Session:            &controlplane.SessionAffinity{CookieName: "s"},
			OverrideHostStatus: []corepb.HealthStatus{corepb.HealthStatus_HEALTHY}}, dataplane.ProfileByName("spec"),
			func(c *dataplane.Config) bool { return c.OverrideHostStatus == 1<<corepb.HealthStatus_HEALTHY }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if c := build(t, tc.svc, tc.prof); !tc.want(c) {
				t.Errorf("config = %+v (retry %+v, session %+v)", c, c.Retry, c.Session)
			}
		})
	}
	// Reference: gRFC A44 (retry policy), A55 (session filter, per-route
	// override, override_host_status), A62 (pick_first).
}

func TestCookiePathMatchesAsRFC6265(t *testing.T) {
	for _, tc := range []struct {
		path, method string
		want         bool
	}{
		{"", "/a.B/C", true}, {"/", "/a.B/C", true}, {"/a.B", "/a.B/C", true}, {"/a.B/", "/a.B/C", true},
		{"/a.B/C", "/a.B/C", true}, {"/a.Bx", "/a.B/C", false}, {"/a.B", "/a.BC/D", false},
	} {
		if got := dataplane.PathMatches(tc.path, tc.method); got != tc.want {
			t.Errorf("PathMatches(%q, %q) = %v, want %v", tc.path, tc.method, got, tc.want)
		}
	}
	// Reference: gRFC A55, "StatefulSessionFilter Processing"; RFC 6265
	// section 5.1.4.
}
