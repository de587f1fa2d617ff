package dataplane

import (
	"fmt"
	"testing"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/xdssim/xdssim/model/network"
	"github.com/xdssim/xdssim/sim"
)

// world is a channel over n endpoints, each with its own backend, with a
// 1 ms link (a connect takes 4 ms: two round trips).
type world struct {
	bs   Backends
	cfg  *Config
	env  Env
	ch   Channel
	link network.LinkConfig
	bo   network.BackoffConfig
}

func newWorld(n int, prof Profile) *world {
	w := &world{link: network.LinkConfig{Latency: sim.Constant(time.Millisecond)}, bo: network.DefaultBackoffConfig()}
	w.bs.Defaults.ServiceTime = sim.Constant(time.Millisecond)
	c := Cluster{Name: "c", LB: RoundRobin, OverrideHostStatus: DefaultOverrideHostStatus, Priorities: 1,
		Localities: []Locality{{Weight: uint32(max(n, 1)), N: n}}}
	for i := range n {
		addr := string(rune('a'+i)) + ":80"
		c.Endpoints = append(c.Endpoints, Endpoint{Address: addr, Health: corepb.HealthStatus_HEALTHY,
			Backend: w.bs.ID(BackendKey("c", addr))})
	}
	w.cfg = &Config{Routes: []Route{{Prefix: "/", Clusters: []WeightedCluster{{Cluster: 0, Weight: 1}}}}, Clusters: []Cluster{c}}
	w.env = Env{Backends: &w.bs, Backoff: &w.bo, Link: &w.link, Rand: sim.NewStream(1, "test"), Profile: prof}
	w.ch.SetConfig(w.cfg, 0, nil)
	return w
}

func (w *world) pick(at time.Duration, session int) Pick {
	w.env.Now = sim.Time(0).Add(at)
	return w.ch.Pick(&w.env, 0, session)
}

// cluster is the world's one cluster.
func (w *world) cluster() *Cluster { return &w.cfg.Clusters[0] }

func TestRoundRobinQueuesUntilConnectedThenRotates(t *testing.T) {
	w := newWorld(3, ProfileByName("grpc-go"))
	if p := w.pick(0, -1); p.Result != Queued || p.At != sim.Time(0).Add(4*time.Millisecond) {
		t.Fatalf("first pick = %+v, want queued until the 4 ms handshake", p)
	}
	var got []uint32
	for i := range 4 {
		p := w.pick(10*time.Millisecond+time.Duration(i), -1)
		if p.Result != Picked {
			t.Fatalf("pick %d = %+v, want picked", i, p)
		}
		got = append(got, p.Backend)
	}
	if got[0] == got[1] || got[1] == got[2] || got[0] != got[3] {
		t.Errorf("round_robin picked %v, want a rotation over 3 backends", got)
	}
	// Reference: gRFC A61 (round_robin over pick_first children); grpc-go
	// balancer/roundrobin.
}

// TestRoundRobinStartsAtARandomEndpoint checks that each channel's
// round_robin starts its rotation at a random endpoint: a fleet's first
// picks spread over the endpoints instead of every client beginning with
// the first one, so that a fleet whose clients move in step does not load
// some backends and never others.
func TestRoundRobinStartsAtARandomEndpoint(t *testing.T) {
	const channels, n = 2000, 10
	counts := make([]int, n)
	for i := range channels {
		w := newWorld(n, ProfileByName("grpc-go"))
		w.env.Rand = sim.NewStream(uint64(i), "round_robin start")
		w.ch.Reset()
		w.ch.SetConfig(w.cfg, 0, w.env.Rand)
		if p := w.pick(10*time.Millisecond, -1); p.Result == Picked {
			counts[p.Backend]++
		}
	}
	// Each endpoint expects channels/n first picks; the binomial's
	// standard deviation is 13.4, so ±60 is 4.5 of them.
	for b, got := range counts {
		if want := channels / n; got < want-60 || got > want+60 {
			t.Errorf("backend %d had %d of %d first picks, want %d ± 60: %v", b, got, channels, want, counts)
			break
		}
	}
	// Reference: grpc-go balancer/endpointsharding/endpointsharding.go
	// (updateStateLocked: next = randIntN(len(pickers)); rotateEndpoints);
	// C-core round_robin.cc RoundRobin::Picker (last_picked_index_ drawn
	// uniformly); grpc-java RoundRobinLoadBalancer (sequence = new
	// Random().nextInt()).
}

// TestRoundRobinKeepsItsSpreadAcrossAnUpdate: an EDS update that shrinks
// a locality or adds one leaves a fleet's first picks spread over the
// endpoints, as in every real client (grpc-java's sequence is kept and
// taken modulo the new size; grpc-go and C-core draw again for every
// picker), instead of sending every channel back to the first endpoint.
func TestRoundRobinKeepsItsSpreadAcrossAnUpdate(t *testing.T) {
	const channels, n = 2000, 10
	for _, tt := range []struct {
		name   string
		update func(w *world, c Cluster) Cluster
		picks  int // endpoints the first picks should spread over
		slack  int // 5 binomial standard deviations
	}{
		{"shrink 10 to 5", func(w *world, c Cluster) Cluster {
			c.Endpoints = append([]Endpoint(nil), c.Endpoints[:5]...)
			c.Localities = []Locality{{Weight: 1, N: 5}}
			return c
		}, 5, 90},
		{"add a locality of 10", func(w *world, c Cluster) Cluster {
			c.Endpoints = append([]Endpoint(nil), c.Endpoints...)
			for j := range n {
				addr := fmt.Sprintf("10.1.0.%d:80", j)
				c.Endpoints = append(c.Endpoints, Endpoint{Address: addr, Health: c.Endpoints[0].Health, Backend: w.bs.ID(BackendKey("c", addr)), Locality: 1})
			}
			c.Localities = []Locality{{Weight: 1, N: n}, {Weight: 1, First: n, N: n}}
			return c
		}, 2 * n, 50},
	} {
		t.Run(tt.name, func(t *testing.T) {
			counts := make([]int, tt.picks)
			for i := range channels {
				w := newWorld(n, ProfileByName("grpc-java"))
				w.env.Rand = sim.NewStream(uint64(i), "round_robin start")
				w.ch.Reset()
				w.ch.SetConfig(w.cfg, 0, w.env.Rand)
				cfg := &Config{Routes: w.cfg.Routes, Clusters: []Cluster{tt.update(w, *w.cluster())}}
				w.ch.SetConfig(cfg, 0, w.env.Rand)
				w.cfg = cfg
				if p := w.pick(10*time.Millisecond, -1); p.Result == Picked {
					counts[p.Endpoint]++
				}
			}
			want := channels / tt.picks
			for e, got := range counts {
				if got < want-tt.slack || got > want+tt.slack {
					t.Fatalf("endpoint %d had %d of %d first picks after the update, want %d ± %d: %v", e, got, channels, want, tt.slack, counts)
				}
			}
		})
	}
}

func TestRoundRobinSkipsADeadBackendAndFailsWhenAllAreDown(t *testing.T) {
	w := newWorld(2, ProfileByName("grpc-go"))
	w.pick(0, -1)
	w.bs.Crash(0, sim.Time(0).Add(time.Second))
	for i := range 3 {
		if p := w.pick(2*time.Second+time.Duration(i), -1); p.Result != Picked || p.Backend != 1 {
			t.Fatalf("pick with backend 0 down = %+v, want backend 1", p)
		}
	}
	w.bs.Crash(1, sim.Time(0).Add(3*time.Second))
	if p := w.pick(4*time.Second, -1); p.Result != Failed || p.NoEndpoint {
		t.Errorf("pick with every backend down = %+v, want failed (TRANSIENT_FAILURE)", p)
	}
	// Backend 0 comes back; the subchannel reconnects at its next backoff
	// attempt, not at once.
	w.bs.Start(0, sim.Time(0).Add(5*time.Second))
	if p := w.pick(5*time.Second+time.Millisecond, -1); p.Result != Failed {
		t.Errorf("pick right after the restart = %+v, want failed until the backoff ends", p)
	}
	if p := w.pick(3*time.Minute, -1); p.Result != Picked || p.Backend != 0 {
		t.Errorf("pick after the backoff = %+v, want backend 0", p)
	}
	// Reference: grpc doc/connection-backoff.md; gRFC A62 (pick_first
	// leaves in TRANSIENT_FAILURE are skipped by round_robin).
}

func TestNoUsableEndpointFailsTheRPC(t *testing.T) {
	w := newWorld(2, ProfileByName("spec"))
	for i := range w.cluster().Endpoints {
		w.cluster().Endpoints[i].Health = corepb.HealthStatus_DRAINING
	}
	if p := w.pick(0, -1); p.Result != Failed || !p.NoEndpoint {
		t.Errorf("pick over draining endpoints = %+v, want failed with no endpoint", p)
	}
	// Reference: gRFC A55, "LB Policy for Stateful Session Affinity": the
	// override-host policy removes DRAINING endpoints before its child.
}

// TestSessionAffinityToADrainingHost checks the override-host pick when
// the session's backend becomes DRAINING.
func TestSessionAffinityToADrainingHost(t *testing.T) {
	all := DefaultOverrideHostStatus | 1<<corepb.HealthStatus_DRAINING
	for _, tc := range []struct {
		name       string
		profile    string
		statuses   HealthSet
		wantBroken bool
	}{
		{"sticks when DRAINING is in override_host_status", "spec", all, false},
		{"re-picked when override_host_status lacks DRAINING", "spec", DefaultOverrideHostStatus, true},
		{"grpc-go drops DRAINING endpoints whatever the status set", "grpc-go", all, true},
		{"grpc-java marks DRAINING unhealthy whatever the status set", "grpc-java", all, true},
		{"C-core sticks when DRAINING is in override_host_status", "grpc-core", all, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(3, ProfileByName(tc.profile))
			w.cluster().OverrideHostStatus = tc.statuses
			idx, started := w.ch.Session(0, 1, 0, 0)
			if !started {
				t.Fatal("the first session did not start")
			}
			first := w.pick(10*time.Millisecond, idx)
			if first.Result != Picked {
				t.Fatalf("first pick = %+v", first)
			}
			next := w.pick(11*time.Millisecond, idx)
			if next.Backend != first.Backend || next.AffinityBroken {
				t.Fatalf("second pick of the session = %+v, want backend %d again", next, first.Backend)
			}
			drained := *w.cfg
			drained.Clusters = []Cluster{*w.cluster()}
			drained.Clusters[0].Endpoints = append([]Endpoint(nil), w.cluster().Endpoints...)
			drained.Clusters[0].Endpoints[first.Endpoint].Health = corepb.HealthStatus_DRAINING
			w.ch.SetConfig(&drained, sim.Time(0).Add(12*time.Millisecond), nil)
			p := w.pick(13*time.Millisecond, idx)
			if p.AffinityBroken != tc.wantBroken || (p.Backend == first.Backend) == tc.wantBroken {
				t.Errorf("pick after the host drains = %+v, want broken=%v", p, tc.wantBroken)
			}
			// A new RPC without a session never goes to the draining host.
			for i := range 4 {
				if q := w.pick(14*time.Millisecond+time.Duration(i), -1); q.Backend == first.Backend {
					t.Errorf("a sessionless RPC went to the draining backend")
				}
			}
		})
	}
	// Reference: gRFC A55, "Load Balancer Configuration Containing
	// override_host_status" and the picker pseudo-code; for grpc-go,
	// internal/xds/balancer/cdsbalancer/configbuilder.go
	// priorityLocalitiesToClusterImpl.
}

func TestSessionWhoseHostIsDownIsRepicked(t *testing.T) {
	w := newWorld(2, ProfileByName("spec"))
	idx, _ := w.ch.Session(0, 1, 0, 0)
	first := w.pick(10*time.Millisecond, idx)
	w.bs.Crash(first.Backend, sim.Time(0).Add(time.Second))
	p := w.pick(2*time.Second, idx)
	if p.Result != Picked || !p.AffinityBroken || p.Backend == first.Backend {
		t.Errorf("pick after the session's backend crashed = %+v, want another backend, affinity broken", p)
	}
	if q := w.pick(2*time.Second+1, idx); q.AffinityBroken || q.Backend != p.Backend {
		t.Errorf("the next pick = %+v, want the new cookie's backend, unbroken", q)
	}
	// Reference: gRFC A55, picker pseudo-code ("override_host not set or
	// did not find a matching subchannel, so delegate to the child
	// picker"), and the response path that sets a new cookie.
}

func TestSessionsRenewAfterTheirRPCsOrLifetime(t *testing.T) {
	var ch Channel
	starts := 0
	for i := range 10 {
		if _, started := ch.Session(sim.Time(0).Add(time.Duration(i)*time.Second), 2, 0, 3); started {
			starts++
		}
	}
	if starts != 4 { // 2 sessions × ceil(5 RPCs / 3)
		t.Errorf("sessions started = %d, want 4", starts)
	}
	ch = Channel{}
	starts = 0
	for i := range 10 {
		if _, started := ch.Session(sim.Time(0).Add(time.Duration(i)*time.Second), 1, 4*time.Second, 0); started {
			starts++
		}
	}
	if starts != 3 { // at 0, 4 and 8 s
		t.Errorf("sessions started with a 4 s lifetime = %d, want 3", starts)
	}
}

func TestPickWithoutAConfigFails(t *testing.T) {
	w := newWorld(2, ProfileByName("spec"))
	w.ch.SetConfig(nil, 0, nil)
	if p := w.pick(time.Second, -1); p.Result != Failed || !p.NoConfig {
		t.Errorf("pick on a channel without config = %+v, want failed with NoConfig", p)
	}
	// Reference: grpc-go picker_wrapper.go (a TRANSIENT_FAILURE picker
	// fails non-wait-for-ready RPCs).
}
