package controlplane_test

import (
	"slices"
	"testing"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"

	cp "github.com/xdssim/xdssim/model/controlplane"
	"github.com/xdssim/xdssim/model/xdsclient"
)

// watcher is a client subscribed to every resource of services a and b
// and to "c" (not yet published), with everything ACKed.
func watcher(t *testing.T, s *cp.Server) *client {
	t.Helper()
	c := newClient(t, s, 1)
	c.ackAll(c.subscribe(cp.LDS, "a", "b", "c"))
	c.ackAll(c.subscribe(cp.RDS, "a-route", "b-route", "c-route"))
	c.ackAll(c.subscribe(cp.CDS, "a-cluster", "b-cluster", "c-cluster"))
	c.ackAll(c.subscribe(cp.EDS, "a-cluster", "b-cluster", "c-cluster"))
	return c
}

// pushed indexes a change's responses by type, checking each decodes.
func pushed(t *testing.T, rs []cp.Response, err error) map[cp.ResourceType]*xdsclient.DecodedResponse {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	out := map[cp.ResourceType]*xdsclient.DecodedResponse{}
	for _, r := range rs {
		if _, dup := out[r.Type]; dup {
			t.Fatalf("two %v responses", r.Type)
		}
		out[r.Type] = xdsclient.DecodeResponse(r.Message)
	}
	return out
}

func decodedNames(d *xdsclient.DecodedResponse) []string {
	var out []string
	for _, r := range d.Resources {
		out = append(out, r.Name)
	}
	return out
}

func endpointsOf(t *testing.T, d *xdsclient.DecodedResponse, name string) []*endpointpb.LbEndpoint {
	t.Helper()
	for _, r := range d.Resources {
		if r.Name == name {
			var out []*endpointpb.LbEndpoint
			for _, l := range r.Message.(*endpointpb.ClusterLoadAssignment).GetEndpoints() {
				out = append(out, l.GetLbEndpoints()...)
			}
			return out
		}
	}
	t.Fatalf("no EDS resource %q in %v", name, decodedNames(d))
	return nil
}

// TestConfigChanges applies each kind of config change to a server with
// one fully subscribed client and checks what is pushed.
func TestConfigChanges(t *testing.T) {
	for _, k := range cacheKinds {
		t.Run(k.String(), func(t *testing.T) { testConfigChanges(t, k) })
	}
}

func testConfigChanges(t *testing.T, k cp.CacheKind) {
	linear := k == cp.LinearCaches
	// types is how many types a change of n types pushes: with one version
	// per snapshot, every type is re-sent.
	types := func(n int) int {
		if k == cp.SnapshotCache {
			return 4
		}
		return n
	}
	s := mustNew(t, cp.Config{Name: "p", Cache: k, Services: twoServices()})
	c := watcher(t, s)
	step := func(name string, f func() ([]cp.Response, error)) map[cp.ResourceType]*xdsclient.DecodedResponse {
		t.Helper()
		rs, err := f()
		p := pushed(t, rs, err)
		for typ, d := range p {
			for _, r := range d.Resources {
				if r.Err != nil && name != "publish-invalid" {
					t.Errorf("%s: %v %s: %v", name, typ, r.Name, r.Err)
				}
			}
		}
		c.ackAll(rs)
		return p
	}

	// Add a service: all four types are pushed; LDS and CDS in full.
	p := step("add", func() ([]cp.Response, error) { return s.SetService(0, svc("c", 1)) })
	if len(p) != 4 || !slices.Equal(decodedNames(p[cp.LDS]), []string{"a", "b", "c"}) ||
		!slices.Equal(decodedNames(p[cp.CDS]), []string{"a-cluster", "b-cluster", "c-cluster"}) {
		t.Fatalf("add: %v", p)
	}
	if linear && !slices.Equal(decodedNames(p[cp.EDS]), []string{"c-cluster"}) {
		t.Errorf("add: EDS %v", decodedNames(p[cp.EDS]))
	}

	// Update a service: only the changed resource (the cluster's policy).
	upd := svc("c", 1)
	upd.LB = cp.RingHash
	p = step("update", func() ([]cp.Response, error) { return s.SetService(0, upd) })
	if len(p) != types(1) || p[cp.CDS] == nil {
		t.Fatalf("update pushed %d types", len(p))
	}
	for _, r := range p[cp.CDS].Resources {
		if r.Name == "c-cluster" && r.Message.(*clusterpb.Cluster).GetLbPolicy() != clusterpb.Cluster_RING_HASH {
			t.Error("update: policy not changed")
		}
	}

	// Scale: EDS only, with the new count.
	p = step("scale", func() ([]cp.Response, error) { return s.ScaleEndpoints(0, "a", "", 5) })
	if len(p) != types(1) || len(endpointsOf(t, p[cp.EDS], "a-cluster")) != 5 {
		t.Fatalf("scale: %v", p)
	}
	p = step("scale-down", func() ([]cp.Response, error) { return s.ScaleEndpoints(0, "a", "", 3) })
	if eps := endpointsOf(t, p[cp.EDS], "a-cluster"); len(eps) != 3 {
		t.Fatalf("scale down: %d endpoints", len(eps))
	}

	// Drain the last two endpoints.
	p = step("drain", func() ([]cp.Response, error) { return s.DrainEndpoints(0, "a", "", 2) })
	eps := endpointsOf(t, p[cp.EDS], "a-cluster")
	for i, e := range eps {
		want := corepb.HealthStatus_HEALTHY
		if i >= 1 {
			want = corepb.HealthStatus_DRAINING
		}
		if e.GetHealthStatus() != want {
			t.Errorf("drain: endpoint %d is %v, want %v", i, e.GetHealthStatus(), want)
		}
	}

	// Health change of one endpoint.
	p = step("health", func() ([]cp.Response, error) {
		return s.SetEndpointHealth(0, "a", "", 0, 1, corepb.HealthStatus_UNHEALTHY)
	})
	if e := endpointsOf(t, p[cp.EDS], "a-cluster")[0]; e.GetHealthStatus() != corepb.HealthStatus_UNHEALTHY {
		t.Errorf("health: %v", e.GetHealthStatus())
	}

	// An invalid EDS resource: the client NACKs it.
	rs, err := s.PublishInvalid(0, "b", "", cp.DefectEndpointZeroWeight)
	p = pushed(t, rs, err)
	bad := false
	for _, r := range p[cp.EDS].Resources {
		bad = bad || r.Err != nil && r.Err.Rule == xdsclient.RuleEDSEndpointZeroWeight
	}
	if !bad {
		t.Errorf("publish-invalid: no zero-weight NACK in %v", decodedNames(p[cp.EDS]))
	}
	c.ackAll(rs)
	if st, _ := s.StreamState(1, cp.EDS); !st.NACKed {
		t.Errorf("publish-invalid: not NACKed: %+v", st)
	}
	step("fix", func() ([]cp.Response, error) { return s.PublishInvalid(0, "b", "", cp.NoDefect) })

	// A raw resource: a cluster replaced by hand.
	raw := cp.Expand(&cp.Service{Name: "b", LB: cp.LeastRequest})[cp.CDS]
	p = step("set-resource", func() ([]cp.Response, error) { return s.SetResource(0, raw) })
	if len(p) != types(1) || !slices.Equal(decodedNames(p[cp.CDS]), []string{"a-cluster", "b-cluster", "c-cluster"}) {
		t.Fatalf("set-resource: %v", p)
	}

	// Deleting one CDS resource: the full-state response lacks it.
	p = step("delete-resource", func() ([]cp.Response, error) { return s.DeleteResource(0, cp.CDS, "b-cluster") })
	if !slices.Equal(decodedNames(p[cp.CDS]), []string{"a-cluster", "c-cluster"}) {
		t.Fatalf("delete-resource: %v", decodedNames(p[cp.CDS]))
	}

	// Deleting a whole service: LDS and CDS lose it; RDS and EDS clients
	// hear nothing (SotW cannot say so without TP3).
	p = step("delete-service", func() ([]cp.Response, error) { return s.DeleteService(0, "c") })
	if !slices.Equal(decodedNames(p[cp.LDS]), []string{"a", "b"}) || !slices.Equal(decodedNames(p[cp.CDS]), []string{"a-cluster"}) {
		t.Fatalf("delete-service: LDS %v CDS %v", decodedNames(p[cp.LDS]), decodedNames(p[cp.CDS]))
	}
	if linear && (p[cp.RDS] != nil || p[cp.EDS] != nil) {
		t.Errorf("delete-service pushed RDS/EDS: %v", p)
	}
	if _, ok := s.Lookup(cp.EDS, "c-cluster"); ok {
		t.Error("deleted service still served")
	}
	if got := s.ServiceNames(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("services = %v", got)
	}
}

// TestConfigChangeErrors: a rejected change changes nothing.
func TestConfigChangeErrors(t *testing.T) {
	s := mustNew(t, cp.Config{Name: "p", Services: twoServices()})
	v := s.Version(cp.CDS)
	conflict := cp.Service{Name: "x", ClusterName: "a-cluster"}
	checks := []struct {
		name string
		err  error
	}{
		{"unknown service", second(s.ScaleEndpoints(0, "zzz", "", 1))},
		{"delete unknown service", second(s.DeleteService(0, "zzz"))},
		{"name conflict", second(s.SetService(0, conflict))},
		{"no name", second(s.SetService(0, cp.Service{}))},
		{"no cookie", second(s.SetService(0, cp.Service{Name: "y", Session: &cp.SessionAffinity{}}))},
		{"drain too many", second(s.DrainEndpoints(0, "a", "", 3))},
		{"health out of range", second(s.SetEndpointHealth(0, "a", "", 1, 2, corepb.HealthStatus_DRAINING))},
		{"delete unknown resource", second(s.DeleteResource(0, cp.EDS, "zzz"))},
		{"not a resource", second(s.SetResource(0, &corepb.Node{}))},
		{"clear without error", second(s.ClearResourceError(0, cp.EDS, "a-cluster"))},
		{"duplicate address", second(s.SetService(0, cp.Service{Name: "d", Endpoints: []cp.Endpoint{{Address: "10.0.0.1"}, {Address: "10.0.0.1"}}}))},
	}
	for _, c := range checks {
		if c.err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	if s.Version(cp.CDS) != v || !slices.Equal(s.ServiceNames(), []string{"a", "b"}) {
		t.Errorf("a rejected change changed the server: %s %v", s.Version(cp.CDS), s.ServiceNames())
	}
}

func second(_ []cp.Response, err error) error { return err }

// TestRenamedResourcesAreReplaced: changing a service's cluster name
// deletes the old cluster and adds the new one.
func TestRenamedResourcesAreReplaced(t *testing.T) {
	s := mustNew(t, cp.Config{Name: "p", Services: twoServices()})
	sv := svc("a", 2)
	sv.ClusterName = "a2"
	if _, err := s.SetService(0, sv); err != nil {
		t.Fatal(err)
	}
	if got := s.ResourceNames(cp.CDS); !slices.Equal(got, []string{"a2", "b-cluster"}) {
		t.Errorf("clusters = %v", got)
	}
	if got := s.ResourceNames(cp.EDS); !slices.Equal(got, []string{"a2", "b-cluster"}) {
		t.Errorf("EDS = %v", got)
	}
}

// TestServersServeDifferentConfigs: a fallback server holds its own,
// older state of the world.
func TestServersServeDifferentConfigs(t *testing.T) {
	primary := mustNew(t, cp.Config{Name: "primary", Services: []cp.Service{svc("a", 5)}})
	fallback := mustNew(t, cp.Config{Name: "fallback", Services: []cp.Service{svc("a", 2)}})
	pa, _ := primary.Lookup(cp.EDS, "a-cluster")
	fa, _ := fallback.Lookup(cp.EDS, "a-cluster")
	if pa == fa || primary.Version(cp.EDS) == fallback.Version(cp.EDS) {
		t.Error("servers share state")
	}
	d := xdsclient.Decode(xdsclient.EDS, fa)
	if n := len(d.Message.(*endpointpb.ClusterLoadAssignment).GetEndpoints()[0].GetLbEndpoints()); n != 2 {
		t.Errorf("fallback has %d endpoints", n)
	}
}

// TestReplaceEndpointsGivesNewAddresses checks that a rolling deploy
// replaces addresses with ones the service never used, keeping the rest.
func TestReplaceEndpointsGivesNewAddresses(t *testing.T) {
	s := mustNew(t, cp.Config{Name: "cp", Services: []cp.Service{svc("echo", 3)}})
	if _, err := s.ReplaceEndpoints(0, "echo", "", 0, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReplaceEndpoints(0, "echo", "", 2, 1); err != nil {
		t.Fatal(err)
	}
	sv, _ := s.Service("echo")
	var got []string
	for _, e := range sv.Endpoints {
		got = append(got, e.Address)
	}
	want := []string{cp.GeneratedAddress(3), cp.GeneratedAddress(4), cp.GeneratedAddress(5)}
	if !slices.Equal(got, want) {
		t.Errorf("addresses after two replacements = %v, want %v", got, want)
	}
	if _, err := s.ReplaceEndpoints(0, "echo", "", 2, 2); err == nil {
		t.Error("replacing past the last endpoint succeeded")
	}
}
