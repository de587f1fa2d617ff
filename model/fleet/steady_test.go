package fleet

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat/distuv"
	"google.golang.org/grpc/codes"

	"github.com/xdssim/xdssim/model/controlplane"
	"github.com/xdssim/xdssim/model/dataplane"
	"github.com/xdssim/xdssim/model/network"
	"github.com/xdssim/xdssim/sim"
)

// TestSteadyRPCsAtAConstantRateCountExactly checks the bulk accounting
// against the exact path where both are deterministic: RPCs at a constant
// rate to backends with a constant service time (and, where a backend
// fails half its RPCs, the same draws for the same RPCs). Every count the outputs
// show is the same, the RPCs per sample and the latency quantiles
// included; only the kernel events
// fall, from two per RPC to a few per client. What ends the bulk runs
// ends the RPCs in flight as the exact path does: a backend crash fails
// those in flight to it (the first backend, or all three, for 10 s),
// a client's restart drops those in flight without an outcome. At 500 ms
// of service time five RPCs a client are in flight at any time.
func TestSteadyRPCsAtAConstantRateCountExactly(t *testing.T) {
	for _, event := range []struct {
		name string
		set  func(*Config)
		// replays: the bulk path replays the RPCs while a backend fails
		// some (steady.go replay), which is the exact path in another
		// order: at a constant rate and service time, nothing but those
		// RPCs draws from the clients' streams meanwhile, so it draws the
		// same numbers for the same RPCs.
		replays bool
	}{
		{"all backends crash", func(cfg *Config) {
			cfg.BackendEvents = []BackendEvent{{At: time.Minute, Duration: 10 * time.Second, Action: BackendDown,
				Backends: echoBackends(0, 3), Label: "echo down"}}
		}, false},
		{"one backend crashes", func(cfg *Config) {
			cfg.BackendEvents = []BackendEvent{{At: time.Minute, Duration: 10 * time.Second, Action: BackendDown,
				Backends: echoBackends(0, 1), Label: "echo-0 down"}}
		}, false},
		{"every client restarts", func(cfg *Config) {
			cfg.Restarts = []Restart{{At: time.Minute, Fraction: 1, Spread: time.Second, Downtime: 2 * time.Second}}
		}, false},
		{"one backend fails half its RPCs, retried twice", func(cfg *Config) {
			for i := range cfg.ControlPlanes {
				cfg.ControlPlanes[i].Server.Services[0].Retry = &controlplane.RetryPolicy{NumRetries: 2}
			}
			cfg.BackendEvents = []BackendEvent{{At: time.Minute, Duration: 10 * time.Second, Action: BackendFail,
				ErrorRate: 0.5, ErrorCode: codes.Unavailable, Backends: echoBackends(0, 1), Label: "echo-0 fails"}}
		}, true},
	} {
		for _, service := range []time.Duration{2 * time.Millisecond, 50 * time.Millisecond, 500 * time.Millisecond} {
			t.Run(fmt.Sprintf("%s, %v service time", event.name, service), func(t *testing.T) {
				cfg := rpcConfig(20)
				cfg.Groups[0].RPC.Constant = true
				cfg.DataPlane.Backend.ServiceTime = sim.Constant(service)
				event.set(&cfg)
				exact, err := Run(cfg, Options{ExactRPCs: true})
				if err != nil {
					t.Fatal(err)
				}
				steady, err := Run(cfg, Options{})
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range []string{"rpc.total", "rpc.failed", "rpc.by_code.OK", "rpc.by_code.UNAVAILABLE", "retries.attempts",
					"failure_windows.count", "failure_windows.client_seconds",
					"rpc.latency_seconds.p50", "rpc.latency_seconds.p90", "rpc.latency_seconds.p99", "rpc.latency_seconds.p999"} {
					if a, b := metric(t, exact, m), metric(t, steady, m); a != b {
						t.Errorf("%s: exact %v, steady %v", m, a, b)
					}
				}
				var names []string // every RPC series: rates by code, by cause, clients failing, latency
				for _, s := range exact.Series {
					if strings.HasPrefix(s.Name, "rpc.") {
						names = append(names, s.Name)
					}
				}
				for _, s := range names {
					a, b := series(t, exact, s), series(t, steady, s)
					for i := range a {
						if a[i] != b[i] && !(math.IsNaN(a[i]) && math.IsNaN(b[i])) {
							t.Errorf("%s at sample %d: exact %v, steady %v", s, i, a[i], b[i])
							break
						}
					}
				}
				// 10 s of the failure at 10 RPCs/s from 20 clients: 2 000
				// RPCs, a sixth of whose first attempts fail.
				if retries := metric(t, exact, "retries.attempts"); event.replays && (steady.ReplayedRPCs < 2000 || retries < 200) {
					t.Errorf("%d RPCs replayed, %v retried; want 2 000 or more and 200 or more", steady.ReplayedRPCs, retries)
				} else if !event.replays && steady.ReplayedRPCs != 0 {
					t.Errorf("%d RPCs replayed, want none", steady.ReplayedRPCs)
				}
				if exact.Events < 10*steady.Events {
					t.Errorf("events: exact %d, steady %d; want a tenth or fewer", exact.Events, steady.Events)
				}
			})
		}
	}
	// Reference: model/fleet/steady.go.
}

// TestSkipPicksMovesRoundRobinAsPicksWould checks SkipPicks and
// SkipSessionRPCs against the picks and sessions they stand for.
func TestSkipPicksMovesRoundRobinAsPicksWould(t *testing.T) {
	var backends dataplane.Backends
	backends.Defaults = dataplane.Backend{ServiceTime: sim.Constant(time.Millisecond)}
	cfg := roundRobinConfig(&backends, 5)
	cfg.Clusters[0].Endpoints[2].Health = 3 // DRAINING: not for the child policy
	link := network.LinkConfig{Latency: sim.Constant(time.Millisecond)}
	backoff := network.DefaultBackoffConfig()
	env := dataplane.Env{Now: sim.Time(time.Second), Backends: &backends, Link: &link, Rand: sim.NewStream(1, "c"), Backoff: &backoff}
	for k := range 12 {
		var stepped, skipped dataplane.Channel
		stepped.SetConfig(cfg, 0, nil)
		skipped.SetConfig(cfg, 0, nil)
		stepped.Pick(&env, 0, -1) // connect everything
		skipped.Pick(&env, 0, -1)
		for range k {
			stepped.Pick(&env, 0, -1)
		}
		skipped.SkipPicks(0, k)
		if a, b := stepped.Pick(&env, 0, -1).Endpoint, skipped.Pick(&env, 0, -1).Endpoint; a != b {
			t.Errorf("after %d picks: the next pick is endpoint %d, after SkipPicks(%d) endpoint %d", k, a, k, b)
		}
	}
}

// TestSkipSessionRPCsTakesTheSessionsInTurn checks SkipSessionRPCs
// against k calls of Session and Pick: the same sessions started, and each
// session's cookie on the same host afterwards.
func TestSkipSessionRPCsTakesTheSessionsInTurn(t *testing.T) {
	var backends dataplane.Backends
	backends.Defaults = dataplane.Backend{ServiceTime: sim.Constant(time.Millisecond)}
	cfg := roundRobinConfig(&backends, 4)
	link := network.LinkConfig{Latency: sim.Constant(time.Millisecond)}
	backoff := network.DefaultBackoffConfig()
	env := dataplane.Env{Now: sim.Time(time.Second), Backends: &backends, Link: &link, Rand: sim.NewStream(1, "c"), Backoff: &backoff}
	const sessions, maxRPCs = 3, 5
	for k := range 40 {
		var stepped, skipped dataplane.Channel
		for _, ch := range []*dataplane.Channel{&stepped, &skipped} {
			ch.SetConfig(cfg, 0, nil)
			for range sessions { // every session started and picked once
				idx, _ := ch.Session(env.Now, sessions, 0, maxRPCs)
				ch.Pick(&env, 0, idx)
			}
		}
		startedStepped := 0
		for range k {
			idx, started := stepped.Session(env.Now, sessions, 0, maxRPCs)
			if started {
				startedStepped++
			}
			stepped.Pick(&env, 0, idx)
		}
		if got := skipped.SkipSessionRPCs(&env, 0, k, maxRPCs); got != startedStepped {
			t.Errorf("k=%d: SkipSessionRPCs started %d sessions, the calls %d", k, got, startedStepped)
		}
		for range 2 * sessions {
			a, _ := stepped.Session(env.Now, sessions, 0, maxRPCs)
			b, _ := skipped.Session(env.Now, sessions, 0, maxRPCs)
			if pa, pb := stepped.Pick(&env, 0, a), skipped.Pick(&env, 0, b); a != b || pa.Backend != pb.Backend {
				t.Fatalf("k=%d: next RPC on session %d to backend %d, after the skip session %d to backend %d", k, a, pa.Backend, b, pb.Backend)
			}
		}
	}
}

// roundRobinConfig is a config with one round_robin cluster of n
// endpoints, one locality, one priority, each endpoint its own backend.
func roundRobinConfig(backends *dataplane.Backends, n int) *dataplane.Config {
	c := dataplane.Cluster{Name: "c", LB: dataplane.RoundRobin, OverrideHostStatus: dataplane.DefaultOverrideHostStatus,
		Priorities: 1, Localities: []dataplane.Locality{{Weight: 1, N: n}}}
	for i := range n {
		c.Endpoints = append(c.Endpoints, dataplane.Endpoint{Backend: backends.ID(string(rune('a' + i)))})
	}
	return &dataplane.Config{Routes: []dataplane.Route{{Prefix: "/", Clusters: []dataplane.WeightedCluster{{Cluster: 0, Weight: 1}}}},
		Clusters: []dataplane.Cluster{c}}
}

// TestRunsEndingTogetherAreCountedAsEachAlone checks settleAtEnd, which
// accounts for the bulk runs alike still going when the run ends as one
// Poisson process, against accounting for each alone (settleSteady).
// Half the clients restart in the middle of the run, so that the runs
// began at many times, and the service time is log-normal with no
// deadline, so that RPCs are still in flight at the end and each latency
// is drawn. Each seed runs both ways: everything before the end is the
// same run, so the two differ only by the end's draws, which are
// independent and of the same distribution if settleAtEnd is right. The
// per-seed differences of every RPC figure must then be centred on zero:
// a paired t statistic within 4 and a two-sided sign test above 10⁻³.
func TestRunsEndingTogetherAreCountedAsEachAlone(t *testing.T) {
	const seeds = 40
	cfg := rpcConfig(200)
	cfg.Duration = 2 * time.Minute
	cfg.Groups[0].RPC.Deadline = 0
	cfg.DataPlane.Backend.ServiceTime = sim.LogNormal(50*time.Millisecond, 500*time.Millisecond)
	cfg.Restarts = []Restart{{At: time.Minute, Fraction: 0.5, Spread: 30 * time.Second, Downtime: 2 * time.Second}}
	figures := []string{"rpc.total", "rpc.by_code.OK", "unanswered", "rpc.latency_seconds.p50", "rpc.latency_seconds.p99", "last sample's OK"}
	diffs := make([][]float64, len(figures))
	var total float64
	for seed := range seeds {
		cfg.Seed = uint64(1 + seed)
		var got [2][]float64
		for i, alone := range []bool{true, false} {
			r, err := Run(cfg, Options{settleAlone: alone})
			if err != nil {
				t.Fatal(err)
			}
			ok := metric(t, r, "rpc.by_code.OK")
			if metric(t, r, "rpc.failed") != 0 {
				t.Fatalf("seed %d: %v RPCs failed, want none", cfg.Seed, metric(t, r, "rpc.failed"))
			}
			ends := series(t, r, "rpc.rate.OK")
			got[i] = []float64{metric(t, r, "rpc.total"), ok, metric(t, r, "rpc.total") - ok,
				metric(t, r, "rpc.latency_seconds.p50"), metric(t, r, "rpc.latency_seconds.p99"), ends[len(ends)-1]}
		}
		total += got[0][0]
		for f := range figures {
			diffs[f] = append(diffs[f], got[1][f]-got[0][f])
		}
	}
	t.Logf("%.0f RPCs a seed", total/seeds)
	for f, name := range figures {
		d := diffs[f]
		var mean, ss float64
		pos, nonzero := 0, 0
		for _, x := range d {
			mean += x
			if x != 0 {
				nonzero++
			}
			if x > 0 {
				pos++
			}
		}
		mean /= float64(len(d))
		for _, x := range d {
			ss += (x - mean) * (x - mean)
		}
		se := math.Sqrt(ss/float64(len(d)-1)) / math.Sqrt(float64(len(d)))
		if nonzero < seeds/2 {
			t.Errorf("%s: the two ways differ on %d seeds of %d: the end's draws do not reach it", name, nonzero, seeds)
			continue
		}
		if se > 0 && math.Abs(mean)/se > 4 {
			t.Errorf("%s: together minus alone %.4g on average (standard error %.3g) over %d seeds", name, mean, se, seeds)
		}
		sign := distuv.Binomial{N: float64(nonzero), P: 0.5}
		if p := 2 * min(sign.CDF(float64(pos)), 1-sign.CDF(float64(pos-1))); p < 1e-3 {
			t.Errorf("%s: together above alone on %d of %d seeds: sign test p = %.2g", name, pos, nonzero, p)
		}
	}
}

// TestATracedRunsShareOfTheRunsEndingTogetherIsItsOwn checks the counts
// the trace gives each instance whose bulk run is accounted with others
// at the end of the run (traceShares): every instance traced, RPCs at 10/s
// with a constant 2 ms service time, so that a run that began at s has
// Poisson(10·(end−s)) RPCs that ended (less the 0.02 in flight). Over all
// the runs, the counts' sum and their dispersion ((count−mean)²/mean
// summed, about one a run for Poisson counts) must be those: a share
// drawn as anything but the run's own (an even split, a share of the
// wrong runs) is over- or under-dispersed. The traced run's summary is
// the untraced one's.
func TestATracedRunsShareOfTheRunsEndingTogetherIsItsOwn(t *testing.T) {
	cfg := rpcConfig(200)
	cfg.Duration = time.Minute
	cfg.Restarts = []Restart{{At: 30 * time.Second, Fraction: 0.5, Spread: 20 * time.Second, Downtime: time.Second}}
	end := cfg.Duration
	var dev, expected, chi float64
	runs := 0
	for seed := range 5 {
		cfg.Seed = uint64(1 + seed)
		r, err := Run(cfg, Options{Trace: func(e *TraceEvent) {
			if e.Kind != TraceSteadyRPCs || e.At != end {
				return
			}
			mean := 10 * (end - e.Since).Seconds()
			dev += float64(e.Count) - mean
			expected += mean
			chi += (float64(e.Count) - mean) * (float64(e.Count) - mean) / mean
			runs++
		}})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprintf("%+v", r) != fmt.Sprintf("%+v", run(t, cfg)) {
			t.Errorf("seed %d: the traced run differs from the untraced one", cfg.Seed)
		}
	}
	if runs < 500 {
		t.Fatalf("%d runs traced at the end, want 500 or more", runs)
	}
	if z := dev / math.Sqrt(expected); math.Abs(z) > 4 {
		t.Errorf("%d runs: %.0f RPCs counted against %.0f expected, z = %.1f", runs, expected+dev, expected, z)
	}
	// χ² of runs degrees of freedom: mean runs, sd √(2·runs).
	if d := (chi - float64(runs)) / math.Sqrt(2*float64(runs)); math.Abs(d) > 4 {
		t.Errorf("%d runs: dispersion %.0f, want about %d (%.1f standard deviations off)", runs, chi, runs, d)
	}
}
