package controlplane_test

import (
	"slices"
	"testing"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	cp "github.com/xdssim/xdssim/model/controlplane"
	"github.com/xdssim/xdssim/model/xdsclient"
)

// shapeVariants are services with the config shapes real control planes
// send: weighted clusters, several routes, endpoint and locality weights,
// EDS priorities.
func shapeVariants() []cp.Service {
	return []cp.Service{
		{Name: "split", Clusters: []cp.Cluster{{Name: "v1", Weight: 90, EndpointCount: 2}, {Name: "v2", Weight: 10, EndpointCount: 1}}},
		{Name: "routes", Clusters: []cp.Cluster{{Name: "cart", EndpointCount: 1}, {Name: "rest", EndpointCount: 2}},
			Routes: []cp.Route{{Prefix: "/shop.Cart/", Clusters: []string{"cart"}}, {Clusters: []string{"rest"}}}},
		{Name: "weights", LB: cp.RingHash, Endpoints: []cp.Endpoint{
			{Address: "10.0.0.1", Weight: 5, Health: corepb.HealthStatus_HEALTHY},
			{Address: "10.0.0.2", Weight: 1, Health: corepb.HealthStatus_HEALTHY}}},
		{Name: "failover", Localities: []cp.Locality{{Zone: "a", Weight: 3}, {Zone: "b", Weight: 1}, {Zone: "c", Priority: 1}},
			Endpoints: []cp.Endpoint{
				{Address: "10.0.0.1", Zone: "a"}, {Address: "10.0.0.2", Zone: "b"},
				{Address: "10.0.0.3", Zone: "c", Priority: 1}}},
	}
}

// TestShapesPassClientValidation expands every shape and checks that a
// gRPC client accepts every resource (model/xdsclient mirrors grpc-go
// xdsresource/unmarshal_*.go) and finds what was meant: the route's
// clusters and weights, the localities' priorities and weights.
func TestShapesPassClientValidation(t *testing.T) {
	for _, sv := range shapeVariants() {
		t.Run(sv.Name, func(t *testing.T) {
			var keys []cp.ResourceKey
			for _, r := range cp.ExpandAll(&sv) {
				keys = append(keys, r.ResourceKey)
				d := xdsclient.MustDecoded(xdsclient.ResourceType(r.Type), r.Message)
				if d.Err != nil || d.Name != r.Name {
					t.Errorf("%v %s: %q %v", r.Type, r.Name, d.Name, d.Err)
				}
				switch m := r.Message.(type) {
				case *routepb.RouteConfiguration:
					if !slices.Equal(d.Clusters, sv.ClusterNames()) {
						t.Errorf("route names clusters %v, want %v", d.Clusters, sv.ClusterNames())
					}
					checkRoutes(t, &sv, m)
				case *endpointpb.ClusterLoadAssignment:
					checkLocalities(t, &sv, m)
				}
			}
			if !slices.Equal(keys, sv.Resources()) {
				t.Errorf("expanded %v, want %v", keys, sv.Resources())
			}
		})
	}
}

func checkRoutes(t *testing.T, sv *cp.Service, rc *routepb.RouteConfiguration) {
	t.Helper()
	routes := rc.GetVirtualHosts()[0].GetRoutes()
	switch sv.Name {
	case "split":
		wc := routes[0].GetRoute().GetWeightedClusters().GetClusters()
		if len(wc) != 2 || wc[0].GetName() != "v1" || wc[0].GetWeight().GetValue() != 90 || wc[1].GetWeight().GetValue() != 10 {
			t.Errorf("weighted clusters %v", wc)
		}
	case "routes":
		if len(routes) != 2 || routes[0].GetMatch().GetPrefix() != "/shop.Cart/" || routes[0].GetRoute().GetCluster() != "cart" ||
			routes[1].GetMatch().GetPrefix() != "/" || routes[1].GetRoute().GetCluster() != "rest" {
			t.Errorf("routes %v", routes)
		}
	}
}

func checkLocalities(t *testing.T, sv *cp.Service, cla *endpointpb.ClusterLoadAssignment) {
	t.Helper()
	type loc struct {
		zone     string
		prio, w  uint32
		weights  []uint32
		nEndpoin int
	}
	var got []loc
	for _, l := range cla.GetEndpoints() {
		g := loc{zone: l.GetLocality().GetZone(), prio: l.GetPriority(), w: l.GetLoadBalancingWeight().GetValue(), nEndpoin: len(l.GetLbEndpoints())}
		for _, e := range l.GetLbEndpoints() {
			g.weights = append(g.weights, e.GetLoadBalancingWeight().GetValue())
		}
		got = append(got, g)
	}
	switch sv.Name {
	case "weights":
		if len(got) != 1 || !slices.Equal(got[0].weights, []uint32{5, 1}) || got[0].w != 6 {
			t.Errorf("localities %+v", got)
		}
	case "failover":
		if len(got) != 3 || got[0].zone != "a" || got[0].w != 3 || got[1].w != 1 || got[2].zone != "c" || got[2].prio != 1 {
			t.Errorf("localities %+v", got)
		}
	}
}

// TestShapeErrors: a route naming an unknown cluster, a priority gap, an
// endpoint in an undeclared locality and session affinity over several
// clusters are refused.
func TestShapeErrors(t *testing.T) {
	for name, sv := range map[string]cp.Service{
		"unknown cluster": {Name: "x", Clusters: []cp.Cluster{{Name: "a"}}, Routes: []cp.Route{{Clusters: []string{"b"}}}},
		"priority gap":    {Name: "x", Endpoints: []cp.Endpoint{{Address: "10.0.0.1", Priority: 1}}},
		"undeclared":      {Name: "x", Localities: []cp.Locality{{Zone: "a"}}, Endpoints: []cp.Endpoint{{Address: "10.0.0.1", Zone: "b"}}},
		"two sessions":    {Name: "x", Session: &cp.SessionAffinity{CookieName: "c"}, Clusters: []cp.Cluster{{Name: "a"}, {Name: "b"}}},
		"duplicate":       {Name: "x", Clusters: []cp.Cluster{{Name: "a"}, {Name: "a"}}},
		"bad prefix":      {Name: "x", Routes: []cp.Route{{Prefix: "shop"}}},
	} {
		if _, err := cp.New(cp.Config{Name: "p", Services: []cp.Service{sv}}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
