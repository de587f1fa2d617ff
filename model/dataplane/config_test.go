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

// build builds the config of every resource svc expands to.
func build(t *testing.T, svc controlplane.Service, prof dataplane.Profile) *dataplane.Config {
	t.Helper()
	var keys []string
	return buildWith(t, svc, prof, func(cluster, addr string) uint32 {
		keys = append(keys, dataplane.BackendKey(cluster, addr))
		return uint32(len(keys) - 1)
	}, nil)
}

// buildWith builds the config of every resource svc expands to, with
// backend ids from backend; the clusters failed names are taken away by
// an error with their cause.
func buildWith(t *testing.T, svc controlplane.Service, prof dataplane.Profile, backend func(cluster, addr string) uint32,
	failed map[string]dataplane.Cause) *dataplane.Config {
	t.Helper()
	var lis *listenerpb.Listener
	var rc *routepb.RouteConfiguration
	var cls []dataplane.ClusterResources
	for _, r := range controlplane.ExpandAll(&svc) {
		switch m := r.Message.(type) {
		case *listenerpb.Listener:
			lis = m
		case *routepb.RouteConfiguration:
			rc = m
		case *clusterpb.Cluster:
			cls = append(cls, dataplane.ClusterResources{Name: r.Name, Cluster: m})
		case *endpointpb.ClusterLoadAssignment:
			for i := range cls {
				if cls[i].Cluster.GetEdsClusterConfig().GetServiceName() == r.Name {
					cls[i].CLA = m
				}
			}
		}
	}
	for i := range cls {
		if cause, ok := failed[cls[i].Name]; ok {
			cls[i] = dataplane.ClusterResources{Name: cls[i].Name, Failed: true, Cause: cause}
		}
	}
	c, err := dataplane.BuildConfig(svc.Name, lis, rc, cls, prof, backend)
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
		want func(*dataplane.Config, *dataplane.Route, *dataplane.Cluster) bool
	}{
		{"plain round robin", controlplane.Service{Name: "a", EndpointCount: 3}, dataplane.ProfileByName("spec"),
			func(_ *dataplane.Config, r *dataplane.Route, c *dataplane.Cluster) bool {
				return c.LB == dataplane.RoundRobin && r.Retry == nil && r.Session == nil && len(c.Endpoints) == 3 &&
					c.Endpoints[0].Address == "10.0.0.1:8080" && c.Name == "a-cluster" && c.OverrideHostStatus == dataplane.DefaultOverrideHostStatus
			}},
		{"pick_first from load_balancing_policy", controlplane.Service{Name: "a", EndpointCount: 1, LB: controlplane.PickFirst, InlineRoute: true},
			dataplane.ProfileByName("spec"), func(_ *dataplane.Config, r *dataplane.Route, c *dataplane.Cluster) bool {
				return c.LB == dataplane.PickFirst
			}},
		{"retry policy, capped at 5 attempts (A6)", controlplane.Service{Name: "a", EndpointCount: 1,
			Retry: &controlplane.RetryPolicy{On: []string{"unavailable", "internal"}, NumRetries: 9, BaseInterval: 100 * time.Millisecond}},
			dataplane.ProfileByName("grpc-java"), func(_ *dataplane.Config, r *dataplane.Route, c *dataplane.Cluster) bool {
				return r.Retry != nil && r.Retry.MaxAttempts == 5 && r.Retry.On.Has(codes.Internal) &&
					r.Retry.InitialBackoff == 100*time.Millisecond && r.Retry.MaxBackoff == time.Second
			}},
		{"grpc-go does not cap xDS retry attempts", controlplane.Service{Name: "a", EndpointCount: 1,
			Retry: &controlplane.RetryPolicy{NumRetries: 9}}, dataplane.ProfileByName("grpc-go"),
			func(_ *dataplane.Config, r *dataplane.Route, c *dataplane.Cluster) bool {
				return r.Retry.MaxAttempts == 10
			}},
		{"session cookie in the filter, DRAINING allowed by default", controlplane.Service{Name: "a", EndpointCount: 1,
			Session: &controlplane.SessionAffinity{CookieName: "s", CookiePath: "/svc"}}, dataplane.ProfileByName("spec"),
			func(_ *dataplane.Config, r *dataplane.Route, c *dataplane.Cluster) bool {
				return r.Session != nil && r.Session.Cookie == "s" && r.Session.Path == "/svc" && c.OverrideHostStatus == draining
			}},
		{"session cookie per route", controlplane.Service{Name: "a", EndpointCount: 1,
			Session: &controlplane.SessionAffinity{CookieName: "r", PerRoute: true}}, dataplane.ProfileByName("spec"),
			func(_ *dataplane.Config, r *dataplane.Route, c *dataplane.Cluster) bool {
				return r.Session != nil && r.Session.Cookie == "r"
			}},
		{"grpc-java and grpc-go skip an optional session filter: no session", controlplane.Service{Name: "a", EndpointCount: 1,
			Session: &controlplane.SessionAffinity{CookieName: "s", Optional: true}}, dataplane.ProfileByName("grpc-java"),
			func(_ *dataplane.Config, r *dataplane.Route, c *dataplane.Cluster) bool {
				return r.Session == nil
			}},
		{"C-core keeps an optional session filter", controlplane.Service{Name: "a", EndpointCount: 1,
			Session: &controlplane.SessionAffinity{CookieName: "s", Optional: true}}, dataplane.ProfileByName("grpc-core"),
			func(_ *dataplane.Config, r *dataplane.Route, c *dataplane.Cluster) bool {
				return r.Session != nil && r.Session.Cookie == "s"
			}},
		{"override_host_status beyond UNKNOWN, HEALTHY and DRAINING is ignored", controlplane.Service{Name: "a", EndpointCount: 1,
			Session: &controlplane.SessionAffinity{CookieName: "s"},
			OverrideHostStatus: []corepb.HealthStatus{corepb.HealthStatus_UNHEALTHY, corepb.HealthStatus_HEALTHY,
				corepb.HealthStatus_DEGRADED, corepb.HealthStatus_TIMEOUT, corepb.HealthStatus_DRAINING}}, dataplane.ProfileByName("grpc-core"),
			func(_ *dataplane.Config, r *dataplane.Route, c *dataplane.Cluster) bool {
				return c.OverrideHostStatus == 1<<corepb.HealthStatus_HEALTHY|1<<corepb.HealthStatus_DRAINING
			}},
		{"C-core: an empty override_host_status overrides nothing", controlplane.Service{Name: "a", EndpointCount: 1,
			Session: &controlplane.SessionAffinity{CookieName: "s"}, OverrideHostStatus: []corepb.HealthStatus{}},
			dataplane.ProfileByName("grpc-core"), func(_ *dataplane.Config, r *dataplane.Route, c *dataplane.Cluster) bool {
				return c.OverrideHostStatus == 0
			}},
		{"C-core: override_host_status of ignored values only overrides nothing", controlplane.Service{Name: "a", EndpointCount: 1,
			Session: &controlplane.SessionAffinity{CookieName: "s"}, OverrideHostStatus: []corepb.HealthStatus{corepb.HealthStatus_UNHEALTHY, corepb.HealthStatus_DEGRADED}},
			dataplane.ProfileByName("grpc-core"), func(_ *dataplane.Config, r *dataplane.Route, c *dataplane.Cluster) bool {
				return c.OverrideHostStatus == 0
			}},
		{"spec: an empty override_host_status is the default", controlplane.Service{Name: "a", EndpointCount: 1,
			Session: &controlplane.SessionAffinity{CookieName: "s"}, OverrideHostStatus: []corepb.HealthStatus{}},
			dataplane.ProfileByName("spec"), func(_ *dataplane.Config, r *dataplane.Route, c *dataplane.Cluster) bool {
				return c.OverrideHostStatus == dataplane.DefaultOverrideHostStatus
			}},
		{"spec: override_host_status of ignored values only is the default", controlplane.Service{Name: "a", EndpointCount: 1,
			Session: &controlplane.SessionAffinity{CookieName: "s"}, OverrideHostStatus: []corepb.HealthStatus{corepb.HealthStatus_UNHEALTHY, corepb.HealthStatus_DEGRADED}},
			dataplane.ProfileByName("spec"), func(_ *dataplane.Config, r *dataplane.Route, c *dataplane.Cluster) bool {
				return c.OverrideHostStatus == dataplane.DefaultOverrideHostStatus
			}},
		{"explicit override_host_status", controlplane.Service{Name: "a", EndpointCount: 1,
			Session:            &controlplane.SessionAffinity{CookieName: "s"},
			OverrideHostStatus: []corepb.HealthStatus{corepb.HealthStatus_HEALTHY}}, dataplane.ProfileByName("spec"),
			func(_ *dataplane.Config, r *dataplane.Route, c *dataplane.Cluster) bool {
				return c.OverrideHostStatus == 1<<corepb.HealthStatus_HEALTHY
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := build(t, tc.svc, tc.prof)
			r, cl := c.RouteFor("/xdssim.Echo/Call", nil), &c.Clusters[0]
			if !tc.want(c, r, cl) {
				t.Errorf("config = %+v (route %+v)", c, r)
			}
		})
	}
	// Reference: gRFC A44 (retry policy), A55 (session filter, per-route
	// override, override_host_status: "ignore all other values", and the
	// xds_override_host config's "Default is [UNKNOWN, HEALTHY]"; C-core
	// xds_cluster_parser.cc CdsResourceParse (XdsHealthStatus::FromUpb,
	// the default only when the field is unset) and xds_override_host.cc
	// XdsOverrideHostLb::UpdateLocked), A62 (pick_first); grpc-go
	// processHTTPFilters and grpc-java parseHttpFilter skip an optional
	// filter they lack.
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
