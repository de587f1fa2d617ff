package dataplane_test

import (
	"math"
	"testing"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/xdssim/xdssim/model/controlplane"
	"github.com/xdssim/xdssim/model/dataplane"
	"github.com/xdssim/xdssim/model/network"
	"github.com/xdssim/xdssim/sim"
)

// pickWorld is a channel on the config a service expands to, with a 1 ms
// link and a backend per endpoint.
type pickWorld struct {
	bs   dataplane.Backends
	cfg  *dataplane.Config
	ch   dataplane.Channel
	env  dataplane.Env
	link network.LinkConfig
	bo   network.BackoffConfig
}

func newPickWorld(t *testing.T, svc controlplane.Service) *pickWorld {
	t.Helper()
	w := &pickWorld{link: network.LinkConfig{Latency: sim.Constant(time.Millisecond)}, bo: network.DefaultBackoffConfig()}
	w.bs.Defaults.ServiceTime = sim.Constant(time.Millisecond)
	w.cfg = buildWith(t, svc, dataplane.ProfileByName("spec"), func(cluster, addr string) uint32 {
		return w.bs.ID(dataplane.BackendKey(cluster, addr))
	}, nil)
	w.env = dataplane.Env{Backends: &w.bs, Backoff: &w.bo, Link: &w.link, Rand: sim.NewStream(1, "test"), Profile: dataplane.ProfileByName("spec")}
	w.ch.SetConfig(w.cfg, 0, nil)
	return w
}

func (w *pickWorld) pick(at time.Duration, cluster int) dataplane.Pick {
	w.env.Now = sim.Time(0).Add(at)
	return w.ch.Pick(&w.env, cluster, -1)
}

// shares picks n times at 1 s and returns each backend's share.
func (w *pickWorld) shares(n int, cluster int) map[uint32]float64 {
	out := map[uint32]float64{}
	for i := range n {
		p := w.pick(time.Second+time.Duration(i), cluster)
		out[p.Backend] += 1 / float64(n)
	}
	return out
}

func near(got, want float64) bool { return math.Abs(got-want) < 0.03 }

// TestWeightedClustersSplitRPCs: a route with weighted_clusters sends each
// RPC to a cluster drawn by weight.
func TestWeightedClustersSplitRPCs(t *testing.T) {
	w := newPickWorld(t, controlplane.Service{Name: "s", Clusters: []controlplane.Cluster{
		{Name: "stable", Weight: 90, EndpointCount: 1}, {Name: "canary", Weight: 10, EndpointCount: 1}}})
	r := w.cfg.RouteFor("/xdssim.Echo/Call", nil)
	if r == nil || len(r.Clusters) != 2 {
		t.Fatalf("route = %+v", r)
	}
	canary := w.cfg.ClusterIndex("canary")
	n, got := 20000, 0
	for range n {
		if r.PickCluster(w.env.Rand) == canary {
			got++
		}
	}
	if share := float64(got) / float64(n); !near(share, 0.10) {
		t.Errorf("canary share = %.3f, want 0.10", share)
	}
	// Reference: gRFC A28, "weighted_clusters"; grpc-go
	// xds/internal/resolver serviceconfig.go (a random WRR per RPC).
}

// TestRoutesByMethodPrefix: the first route whose prefix matches the
// method takes the RPC.
func TestRoutesByMethodPrefix(t *testing.T) {
	w := newPickWorld(t, controlplane.Service{Name: "s",
		Clusters: []controlplane.Cluster{{Name: "cart", EndpointCount: 1}, {Name: "rest", EndpointCount: 1}},
		Routes:   []controlplane.Route{{Prefix: "/shop.Cart/", Clusters: []string{"cart"}}, {Clusters: []string{"rest"}}}})
	for method, want := range map[string]string{"/shop.Cart/Add": "cart", "/shop.Catalog/List": "rest"} {
		r := w.cfg.RouteFor(method, nil)
		if got := w.cfg.Clusters[r.PickCluster(w.env.Rand)].Name; got != want {
			t.Errorf("%s went to %s, want %s", method, got, want)
		}
	}
	// Reference: gRFC A28, "Route Matching" (first match wins).
}

// TestAFailedClusterFailsOnlyItsRPCs: an error that took one cluster away
// fails the RPCs routed to it with its cause; the other cluster serves.
func TestAFailedClusterFailsOnlyItsRPCs(t *testing.T) {
	svc := controlplane.Service{Name: "s", Clusters: []controlplane.Cluster{
		{Name: "stable", Weight: 90, EndpointCount: 1}, {Name: "canary", Weight: 10, EndpointCount: 1}}}
	w := &pickWorld{link: network.LinkConfig{Latency: sim.Constant(time.Millisecond)}, bo: network.DefaultBackoffConfig()}
	w.cfg = buildWith(t, svc, dataplane.ProfileByName("grpc-go"), func(c, a string) uint32 { return w.bs.ID(dataplane.BackendKey(c, a)) },
		map[string]dataplane.Cause{"canary": dataplane.ResourceDeleted})
	w.env = dataplane.Env{Backends: &w.bs, Backoff: &w.bo, Link: &w.link, Rand: sim.NewStream(1, "test")}
	w.ch.SetConfig(w.cfg, 0, nil)
	if p := w.pick(time.Second, w.cfg.ClusterIndex("canary")); p.Result != dataplane.Failed || !p.ClusterFailed || p.Cause != dataplane.ResourceDeleted {
		t.Errorf("pick on the deleted cluster = %+v", p)
	}
	if p := w.pick(time.Second, w.cfg.ClusterIndex("stable")); p.Result != dataplane.Picked {
		t.Errorf("pick on the other cluster = %+v", p)
	}
	// Reference: gRFC A74 (the XdsConfig carries each cluster's error; the
	// cluster's cds child fails its picks); gRFC A88.
}

// TestLocalityWeightsSplitRoundRobin: round_robin under weighted_target
// sends each locality its weight's share; endpoint weights do not change
// round_robin (it ignores them) but do change ring_hash.
func TestLocalityWeightsSplitRoundRobin(t *testing.T) {
	w := newPickWorld(t, controlplane.Service{Name: "s",
		Localities: []controlplane.Locality{{Zone: "a", Weight: 3}, {Zone: "b", Weight: 1}},
		Endpoints: []controlplane.Endpoint{{Address: "10.0.0.1", Zone: "a", Weight: 9, Health: corepb.HealthStatus_HEALTHY},
			{Address: "10.0.0.2", Zone: "b", Health: corepb.HealthStatus_HEALTHY}}})
	w.pick(0, 0)
	sh := w.shares(20000, 0)
	if !near(sh[0], 0.75) || !near(sh[1], 0.25) {
		t.Errorf("round_robin shares = %v, want 0.75 / 0.25", sh)
	}
	r := newPickWorld(t, controlplane.Service{Name: "r", LB: controlplane.RingHash,
		Endpoints: []controlplane.Endpoint{{Address: "10.0.0.1", Weight: 3, Health: corepb.HealthStatus_HEALTHY},
			{Address: "10.0.0.2", Weight: 1, Health: corepb.HealthStatus_HEALTHY}}})
	r.pick(0, 0)
	sh = r.shares(20000, 0)
	if !near(sh[0], 0.75) || !near(sh[1], 0.25) {
		t.Errorf("ring_hash shares = %v, want 0.75 / 0.25", sh)
	}
	// Reference: gRFC A52 (xds_wrr_locality: locality weights to
	// weighted_target; round_robin ignores endpoint weights), A42
	// (ring_hash: endpoint weight times locality weight).
}

// failoverService has one endpoint at priority 0 and one at priority 1.
func failoverService() controlplane.Service {
	return controlplane.Service{Name: "s",
		Localities: []controlplane.Locality{{Zone: "a"}, {Zone: "b", Priority: 1}},
		Endpoints: []controlplane.Endpoint{{Address: "10.0.0.1", Zone: "a", Health: corepb.HealthStatus_HEALTHY},
			{Address: "10.0.0.2", Zone: "b", Priority: 1, Health: corepb.HealthStatus_HEALTHY}}}
}

// TestPriorityFailover: priority 0's backends are down; once its child is
// in TRANSIENT_FAILURE the priority policy starts priority 1 and RPCs go
// there; when priority 0's backend is back and reconnects, RPCs return to
// it.
func TestPriorityFailover(t *testing.T) {
	w := newPickWorld(t, failoverService())
	if p := w.pick(time.Second, 0); p.Result != dataplane.Picked || p.Backend != 0 {
		t.Fatalf("pick with priority 0 up = %+v", p)
	}
	w.bs.Crash(0, sim.Time(0).Add(2*time.Second))
	// The crash is noticed at the next pick: priority 0 reconnects, is
	// refused, fails; priority 1 starts and connects (two round trips).
	p := w.pick(3*time.Second, 0)
	if p.Result != dataplane.Queued || p.Backend != 1 {
		t.Fatalf("pick after priority 0 failed = %+v, want queued on priority 1", p)
	}
	if p := w.pick(4*time.Second, 0); p.Result != dataplane.Picked || p.Backend != 1 {
		t.Errorf("pick on priority 1 = %+v", p)
	}
	w.bs.Start(0, sim.Time(0).Add(5*time.Second))
	if p := w.pick(10*time.Minute, 0); p.Result != dataplane.Picked || p.Backend != 0 {
		t.Errorf("pick after priority 0 recovered = %+v, want backend 0", p)
	}
	// Reference: gRFC A27, "Priority LB policy" (failover on
	// TRANSIENT_FAILURE, back to a higher priority once READY).
}

// TestPriorityFailoverTimer: a priority still CONNECTING 10 s after it
// started is failed over (gRFC A27's failover timer), and a queued RPC
// goes with whichever priority becomes READY first.
func TestPriorityFailoverTimer(t *testing.T) {
	w := newPickWorld(t, failoverService())
	// A connect takes two round trips of 12 s: 24 s.
	w.link.Latency = sim.Constant(6 * time.Second)
	w.ch.SetConfig(nil, 0, nil)
	w.ch.SetConfig(w.cfg, 0, nil)
	if p := w.pick(time.Second, 0); p.Result != dataplane.Queued || p.Backend != 0 {
		t.Fatalf("first pick = %+v, want queued on priority 0", p)
	}
	// Past the 10 s timer: priority 1 starts at 11 s; priority 0 is ready
	// at 24 s, before priority 1 (35 s), so the RPC waits for it.
	p := w.pick(11*time.Second, 0)
	if p.Result != dataplane.Queued || p.Backend != 0 || p.At != sim.Time(0).Add(24*time.Second) {
		t.Errorf("pick after the failover timer = %+v, want queued for priority 0 at 24 s", p)
	}
	if p := w.pick(30*time.Second, 0); p.Result != dataplane.Picked || p.Backend != 0 {
		t.Errorf("pick once priority 0 is ready = %+v", p)
	}
	// Reference: gRFC A27 (failover timer of 10 s); grpc-go
	// balancer/priority DefaultPriorityInitTimeout.
}
