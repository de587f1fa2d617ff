package dataplane

import (
	"fmt"
	"slices"
	"testing"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/xdssim/xdssim/sim"
)

// clusterOf is a cluster of one locality whose endpoints are on the
// backends given, in order.
func clusterOf(backends []uint32) Cluster {
	c := Cluster{Name: "c", LB: RoundRobin, OverrideHostStatus: DefaultOverrideHostStatus, Priorities: 1,
		Localities: []Locality{{Weight: 1, N: len(backends)}}}
	for i, b := range backends {
		c.Endpoints = append(c.Endpoints, Endpoint{Address: fmt.Sprintf("10.0.%d.%d:80", i>>8, i&0xff), Health: corepb.HealthStatus_HEALTHY, Backend: b})
	}
	return c
}

// TestAnUpdateKeepsTheFirstStartedSubchannelOfEachBackend: a cluster's
// update carries over, for each endpoint, the first started subchannel
// the old state has to its backend, whether the old state is small
// (scanned) or large (indexed): both give what a scan gives.
func TestAnUpdateKeepsTheFirstStartedSubchannelOfEachBackend(t *testing.T) {
	for _, n := range []int{8, 200} { // 8×8 scanned, 200×200 indexed
		t.Run(fmt.Sprint(n, " endpoints"), func(t *testing.T) {
			// The old state: backends with duplicates, some subchannels
			// not started, each marked by its failures count.
			old := make([]uint32, n)
			for i := range old {
				old[i] = uint32(i * 7 % (n / 2))
			}
			var ch Channel
			ch.SetConfig(&Config{Clusters: []Cluster{clusterOf(old)}}, 0, nil)
			for i := range ch.cls[0].subs {
				ch.cls[0].subs[i].failures = uint8(i)
				if i%3 == 0 {
					ch.cls[0].subs[i].nextAttempt = notStarted
				}
			}
			// A copy: the update reuses the channel's storage.
			prev := clusterLB{subs: slices.Clone(ch.cls[0].subs)}
			// The update: some of the old backends, in another order, and
			// new ones.
			upd := make([]uint32, n)
			for i := range upd {
				upd[i] = uint32((n - i) * 5 % n)
			}
			ch.SetConfig(&Config{Clusters: []Cluster{clusterOf(upd)}}, sim.Time(1), nil)
			for i, b := range upd {
				want := subchannel{backend: b, nextAttempt: sim.Time(1)}
				for _, o := range prev.subs {
					if o.backend == b && o.nextAttempt != notStarted {
						want = o
						break
					}
				}
				if got := ch.cls[0].subs[i]; got != want {
					t.Errorf("endpoint %d (backend %d): %+v, want %+v", i, b, got, want)
				}
			}
		})
	}
}

// BenchmarkUpdateOfALargeCluster measures an EDS update of a cluster of n
// endpoints on a channel that has all of them (one endpoint replaced):
// per endpoint, the cost stays flat as n grows (n log n in all), where the
// old scan of the old subchannels for each new one was n².
func BenchmarkUpdateOfALargeCluster(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			eps := make([]uint32, n)
			for i := range eps {
				eps[i] = uint32(i)
			}
			cfgs := [2]*Config{{Clusters: []Cluster{clusterOf(eps)}}}
			eps[n/2] = uint32(n)
			cfgs[1] = &Config{Clusters: []Cluster{clusterOf(eps)}}
			var ch Channel
			ch.SetConfig(cfgs[0], 0, nil)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				ch.SetConfig(cfgs[(i+1)%2], sim.Time(i+1), nil)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/endpoint")
		})
	}
}

// TestAConfigUpdateAllocatesNothingOnceGrown: a channel that switches
// between configs of the same shape, with a world's scratch, allocates
// nothing, and ends in the state a fresh channel given the same updates
// (without scratch) ends in.
func TestAConfigUpdateAllocatesNothingOnceGrown(t *testing.T) {
	a := &Config{Clusters: []Cluster{clusterOf([]uint32{0, 1, 2, 3, 4, 5}), clusterOf([]uint32{6, 7})}}
	b := &Config{Clusters: []Cluster{clusterOf([]uint32{5, 4, 9, 3, 8, 1}), clusterOf([]uint32{7, 6})}}
	a.Clusters[1].Name, b.Clusters[1].Name = "d", "d"
	cfgAt := func(now sim.Time) *Config {
		if now%2 == 0 {
			return b
		}
		return a
	}
	var ch Channel
	var s Scratch
	r := sim.NewStream(1, "c")
	now := sim.Time(0)
	step := func() {
		now++
		ch.SetConfigWith(cfgAt(now), now, r, &s)
	}
	for range 4 {
		step()
	}
	if n := testing.AllocsPerRun(100, step); n != 0 {
		t.Errorf("a config update allocates %v times, want 0", n)
	}
	var fresh Channel
	rf := sim.NewStream(1, "c")
	for at := sim.Time(1); at <= now; at++ {
		fresh.SetConfig(cfgAt(at), at, rf)
	}
	for ci := range ch.cls {
		got, want := ch.cls[ci], fresh.cls[ci]
		if !slices.Equal(got.subs, want.subs) || !slices.Equal(got.next, want.next) || !slices.Equal(got.prios, want.prios) || got.pf != want.pf {
			t.Errorf("cluster %d: state %+v, a fresh channel's %+v", ci, got, want)
		}
	}
}

// TestEachClusterKeepsItsOwnStateWhereverItLies: a channel keeps its
// first cluster's state, first cursor and first priority in itself and
// the rest on the heap; as configs add, drop and reorder clusters, each
// cluster's state is its own: a cluster present throughout keeps the
// time its priority started, and no two clusters share storage.
func TestEachClusterKeepsItsOwnStateWhereverItLies(t *testing.T) {
	named := func(name string, localities int) Cluster {
		c := clusterOf([]uint32{1, 2, 3, 4})
		c.Name = name
		if localities == 2 {
			c.Localities = []Locality{{Weight: 1, N: 2}, {Weight: 1, N: 2}}
			c.Endpoints[2].Locality, c.Endpoints[3].Locality = 1, 1
		}
		return c
	}
	steps := [][]Cluster{
		{named("c", 1)},
		{named("d", 1), named("c", 1)},
		{named("c", 2)},
		{named("c", 1), named("d", 2), named("e", 1)},
		{named("c", 1)},
		nil,
		{named("d", 1)},
		{named("c", 2), named("d", 1)},
	}
	var ch Channel
	started := map[string]sim.Time{}
	for i, cls := range steps {
		now := sim.Time(i + 1)
		var cfg *Config
		if cls != nil {
			cfg = &Config{Clusters: cls}
		}
		ch.SetConfig(cfg, now, sim.NewStream(1, "c"))
		present := map[string]bool{}
		seen := map[*int]string{}
		seenPrio := map[*priority]string{}
		for k, c := range cls {
			present[c.Name] = true
			st := &ch.cls[k]
			if len(st.next) != len(c.Localities) || len(st.prios) != c.Priorities || len(st.subs) != len(c.Endpoints) {
				t.Fatalf("step %d, %s: %d cursors, %d priorities, %d subchannels, want %d, %d, %d", i, c.Name,
					len(st.next), len(st.prios), len(st.subs), len(c.Localities), c.Priorities, len(c.Endpoints))
			}
			if o, dup := seen[&st.next[0]]; dup {
				t.Errorf("step %d: %s and %s share their cursors", i, o, c.Name)
			}
			if o, dup := seenPrio[&st.prios[0]]; dup {
				t.Errorf("step %d: %s and %s share their priorities", i, o, c.Name)
			}
			seen[&st.next[0]], seenPrio[&st.prios[0]] = c.Name, c.Name
			want, ok := started[c.Name]
			if !ok {
				want = now
				started[c.Name] = now
			}
			if got := st.prios[0].started; got != want {
				t.Errorf("step %d, %s: its priority started at %v, want %v", i, c.Name, got, want)
			}
		}
		for name := range started {
			if !present[name] {
				delete(started, name) // a cluster dropped starts afresh when it comes back
			}
		}
	}
}

// TestAnUnpickedChannelDrawsWhatAPickedOneDraws: a channel that never
// picks keeps no load-balancing state but draws from the client's stream
// what a channel that keeps it draws, config after config (clusters added,
// dropped and renamed, localities added and removed, other policies, no
// config), so that a client's stream is the same whether or not it sends
// RPCs' worth of state.
func TestAnUnpickedChannelDrawsWhatAPickedOneDraws(t *testing.T) {
	cluster := func(name string, lb LBPolicy, perLocality ...int) Cluster {
		c := Cluster{Name: name, LB: lb, OverrideHostStatus: DefaultOverrideHostStatus, Priorities: 1}
		for l, n := range perLocality {
			c.Localities = append(c.Localities, Locality{Weight: 1, N: n})
			for range n {
				c.Endpoints = append(c.Endpoints, Endpoint{Address: fmt.Sprintf("10.%d.0.%d:80", l, len(c.Endpoints)),
					Health: corepb.HealthStatus_HEALTHY, Backend: uint32(len(c.Endpoints)), Locality: l})
			}
		}
		return c
	}
	steps := [][]Cluster{
		{cluster("a", RoundRobin, 3)},
		{cluster("a", RoundRobin, 3, 5)},
		{cluster("a", RoundRobin, 2), cluster("b", RoundRobin, 4, 1, 6)},
		nil,
		{cluster("b", RoundRobin, 4, 2)},
		{cluster("b", PickFirst, 4, 2), cluster("c", LeastRequest, 3)},
		{cluster("c", RoundRobin, 3, 3, 3), cluster("b", RoundRobin, 7)},
	}
	var picked, unpicked Channel
	rp, ru := sim.NewStream(9, "client"), sim.NewStream(9, "client")
	for i, cls := range steps {
		var cfg *Config
		if cls != nil {
			cfg = &Config{Clusters: cls}
		}
		picked.SetConfig(cfg, sim.Time(i+1), rp)
		unpicked.SetConfigUnpicked(cfg, ru)
		if unpicked.Config() != cfg || unpicked.leastRequest != picked.leastRequest || unpicked.cls != nil {
			t.Errorf("step %d: config %p, least_request %v, state %v; want %p, %v, none", i,
				unpicked.Config(), unpicked.leastRequest, unpicked.cls, cfg, picked.leastRequest)
		}
		if p, u := rp.Uint64(), ru.Uint64(); p != u {
			t.Fatalf("step %d: the streams part: %#x after a picked channel's draws, %#x after an unpicked one's", i, p, u)
		}
	}
}
