package fleet

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat"
	"google.golang.org/grpc/codes"

	"github.com/xdssim/xdssim/model/controlplane"
	"github.com/xdssim/xdssim/model/network"
	"github.com/xdssim/xdssim/sim"
)

// TestLatencyBucketsAreAtMostASixtyFourthWide checks the bucket layout:
// every duration falls in the bucket whose bounds hold it, buckets are
// contiguous and in order, and none is wider than 1/64 of its lower bound
// (below 128 ns, one per nanosecond).
func TestLatencyBucketsAreAtMostASixtyFourthWide(t *testing.T) {
	prev := time.Duration(0)
	for i := range latBuckets {
		lo, hi := latBounds(i)
		if lo != prev {
			t.Fatalf("bucket %d starts at %v, the one before ends at %v", i, lo, prev)
		}
		if w := hi - lo; w > 1 && 64*w > lo {
			t.Fatalf("bucket %d [%v, %v) is wider than 1/64 of its lower bound", i, lo, hi)
		}
		for _, d := range []time.Duration{lo, lo + (hi-lo)/2, hi - 1} {
			if got := latBucket(d); got != i {
				t.Fatalf("%v is in bucket %d, want %d [%v, %v)", d, got, i, lo, hi)
			}
		}
		prev = hi
	}
	if got := latBucket(-time.Second); got != 0 {
		t.Errorf("a negative duration is in bucket %d, want 0", got)
	}
	if got := latBucket(1 << 62); got != latBuckets-1 {
		t.Errorf("2^62 ns is in bucket %d, want the last, %d", got, latBuckets-1)
	}
}

// TestLatencyQuantilesAreWithinTheBucketError checks Quantile against
// gonum's empirical quantile (stat.Empirical) of the same latencies: within
// 1/64 of it (a bucket) for spread-out latencies, and exact when the
// quantile's bucket holds a single value (a constant service time, a
// deadline).
func TestLatencyQuantilesAreWithinTheBucketError(t *testing.T) {
	ms := time.Millisecond
	for _, tt := range []struct {
		name  string
		draw  func(r *sim.Rand) time.Duration
		exact bool
	}{
		{"constant 2ms", func(*sim.Rand) time.Duration { return 2 * ms }, true},
		{"2ms, and 3% at a 1s deadline", func(r *sim.Rand) time.Duration {
			if r.Float64() < 0.03 {
				return time.Second
			}
			return 2 * ms
		}, true},
		{"lognormal 5ms, p99 80ms", func(r *sim.Rand) time.Duration { return sim.LogNormal(5*ms, 80*ms).Sample(r) }, false},
		{"uniform 0 to 300ns", func(r *sim.Rand) time.Duration { return time.Duration(r.IntN(300)) }, false},
		{"exponential 30s", func(r *sim.Rand) time.Duration { return sim.Exponential(30 * time.Second).Sample(r) }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := sim.NewStream(1, "latency")
			var h LatencyHistogram
			xs := make([]float64, 20_000)
			for i := range xs {
				d := tt.draw(r)
				h.add(latBucket(d), d, 1)
				xs[i] = float64(d)
			}
			slices.Sort(xs)
			if h.Count() != int64(len(xs)) {
				t.Fatalf("Count = %d, want %d", h.Count(), len(xs))
			}
			for _, q := range latencyQuantiles {
				want := stat.Quantile(q.p, stat.Empirical, xs, nil)
				got := float64(h.Quantile(q.p))
				switch {
				case tt.exact && got != want:
					t.Errorf("%s = %v, want exactly %v", q.name, time.Duration(got), time.Duration(want))
				case math.Abs(got-want) > want/64+1:
					t.Errorf("%s = %v, want %v within 1/64", q.name, time.Duration(got), time.Duration(want))
				}
			}
		})
	}
	var empty LatencyHistogram
	if q := empty.Quantile(0.5); q != 0 {
		t.Errorf("an empty histogram's median is %v, want 0", q)
	}
}

// TestRPCLatencyRunsFromStartToFinalStatus checks, RPC by RPC in traced
// runs taken one RPC at a time, what an RPC's latency holds: the service
// time of a backend that answers at once; the deadline, for an RPC that
// waits for a config that never comes or whose backend answers too late;
// the wait for the first config; and every attempt with the retry backoff
// between them. It checks the quantiles of summary.json against the
// latencies the trace tells.
func TestRPCLatencyRunsFromStartToFinalStatus(t *testing.T) {
	ms := time.Millisecond
	type rpcEnd struct {
		at, latency time.Duration
		code        codes.Code
		delays      time.Duration // the retry backoff it waited
		attempts    int
	}
	for _, tc := range []struct {
		name  string
		set   func(*Config)
		check func(t *testing.T, first rpcEnd, rest []rpcEnd)
	}{
		{"a READY backend's answer takes its service time",
			func(cfg *Config) {
				cfg.DataPlane.Backend.ServiceTime = sim.Constant(5 * ms)
				cfg.Groups[0].RPC.RandomStart = true // after the first config
			},
			func(t *testing.T, _ rpcEnd, rest []rpcEnd) {
				for _, e := range rest {
					if e.code != codes.OK || e.latency != 5*ms {
						t.Fatalf("RPC ended %v in %v at %v, want OK in the 5ms service time", e.code, e.latency, e.at)
					}
				}
			}},
		{"an answer after the deadline takes the deadline",
			func(cfg *Config) { cfg.DataPlane.Backend.ServiceTime = sim.Constant(3 * time.Second) },
			func(t *testing.T, _ rpcEnd, rest []rpcEnd) {
				for _, e := range rest {
					if e.code != codes.DeadlineExceeded || e.latency != time.Second {
						t.Fatalf("RPC ended %v in %v at %v, want DEADLINE_EXCEEDED in the 1s deadline", e.code, e.latency, e.at)
					}
				}
			}},
		{"waiting for a config that never comes takes the deadline",
			func(cfg *Config) {
				// Until the connect attempt gives up, at 20 s.
				cfg.Duration = 19 * time.Second
				cfg.Faults = []network.Fault{{Kind: network.Blackhole, Start: 0, Duration: network.Forever}}
			},
			func(t *testing.T, first rpcEnd, rest []rpcEnd) {
				for _, e := range append(rest, first) {
					if e.code != codes.DeadlineExceeded || e.latency != time.Second {
						t.Fatalf("RPC ended %v in %v at %v, want DEADLINE_EXCEEDED in the 1s deadline", e.code, e.latency, e.at)
					}
				}
			}},
		{"the first RPC waits for the first config",
			func(cfg *Config) {
				// Every request takes the control plane 300 ms: the
				// first config takes four of them, one per resource.
				cfg.ControlPlanes[0].Server.Capacity = controlplane.Capacity{ServiceTime: sim.Constant(300 * ms)}
				cfg.Groups[0].RPC.Deadline = 0
			},
			func(t *testing.T, first rpcEnd, _ []rpcEnd) {
				// It began with its client, at 0.
				if first.code != codes.OK || first.latency != first.at || first.latency < 1200*ms {
					t.Errorf("the first RPC ended %v at %v in %v, want OK, its latency its end (it began at 0), after 4 × 300ms", first.code, first.at, first.latency)
				}
			}},
		{"retries add every attempt and the backoff",
			failingWithRetries(2, 25*ms),
			func(t *testing.T, _ rpcEnd, rest []rpcEnd) {
				for _, e := range rest {
					if want := 3*2*ms + e.delays; e.attempts != 3 || e.code != codes.Unavailable || e.latency != want {
						t.Fatalf("RPC ended %v after %d attempts in %v, want UNAVAILABLE after 3 in 3 × 2ms + its %v of backoff",
							e.code, e.attempts, e.latency, e.delays)
					}
				}
			}},
		{"a deadline in the retry backoff ends the RPC at the deadline",
			failingWithRetries(4, 300*ms),
			func(t *testing.T, _ rpcEnd, rest []rpcEnd) {
				deadline := 0
				for _, e := range rest {
					switch {
					case e.code == codes.DeadlineExceeded && e.latency == time.Second:
						deadline++
					case e.code == codes.DeadlineExceeded:
						t.Fatalf("RPC ended DEADLINE_EXCEEDED in %v, want in the 1s deadline", e.latency)
					case e.latency != time.Duration(e.attempts)*2*ms+e.delays:
						t.Fatalf("RPC ended %v after %d attempts in %v, want in %d × 2ms + its %v of backoff",
							e.code, e.attempts, e.latency, e.attempts, e.delays)
					}
				}
				if deadline == 0 {
					t.Errorf("no RPC ran out of its deadline in a backoff of 300ms, 600ms, 1.2s")
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := rpcConfig(5)
			cfg.Duration = 20 * time.Second
			cfg.Groups[0].StartSpread = 0
			tc.set(&cfg)
			attempts := map[uint64]int{}
			delays := map[uint64]time.Duration{}
			firsts := map[string]rpcEnd{}
			var rest, all []rpcEnd
			r, err := Run(cfg, Options{ExactRPCs: true, Trace: func(e *TraceEvent) {
				switch e.Kind {
				case TraceAttempt:
					attempts[e.RPC]++
				case TraceRetry:
					delays[e.RPC] += e.Delay
				case TraceRPC:
					end := rpcEnd{at: e.At, latency: e.Latency, code: e.Code, delays: delays[e.RPC], attempts: attempts[e.RPC]}
					all = append(all, end)
					if _, ok := firsts[e.Client]; !ok {
						firsts[e.Client] = end
						return
					}
					rest = append(rest, end)
				}
			}})
			if err != nil {
				t.Fatal(err)
			}
			if len(rest) < 100 {
				t.Fatalf("%d RPCs after each client's first, want more than 100", len(rest))
			}
			for client, first := range firsts {
				t.Run(client, func(t *testing.T) { tc.check(t, first, rest) })
			}
			// summary.json's quantiles are those of the latencies traced.
			xs := make([]float64, len(all))
			for i, e := range all {
				xs[i] = e.latency.Seconds()
			}
			slices.Sort(xs)
			for _, q := range latencyQuantiles {
				got := metric(t, r, "rpc.latency_seconds."+q.name)
				if want := stat.Quantile(q.p, stat.Empirical, xs, nil); math.Abs(got-want) > want/64 {
					t.Errorf("rpc.latency_seconds.%s = %v, the traced RPCs' %v", q.name, got, want)
				}
			}
		})
	}
	// Reference: gRFC A6 "Maximum Number of Retries" (the deadline applies
	// across all attempts); grpc-go picker_wrapper.go (an RPC waits in the
	// channel for its first picker).
}

// failingWithRetries makes every backend fail every RPC UNAVAILABLE and
// the route retry it n times, from a backoff of base, the RPCs starting
// once the clients have their config.
func failingWithRetries(n uint32, base time.Duration) func(*Config) {
	return func(cfg *Config) {
		cfg.ControlPlanes[0].Server.Services[0].Retry = &controlplane.RetryPolicy{NumRetries: n, BaseInterval: base}
		cfg.Groups[0].RPC.RandomStart = true
		cfg.DataPlane.Backend.ErrorRate, cfg.DataPlane.Backend.ErrorCode = 1, codes.Unavailable
	}
}

// TestRPCLatencySeriesIsTheSamplesQuantiles checks the latency series:
// at a constant service time and no failure, every sample's p50 and p99
// are the service time, in milliseconds, on both the exact and the bulk
// path; a sample in which no RPC ended has none (NaN).
func TestRPCLatencySeriesIsTheSamplesQuantiles(t *testing.T) {
	for _, exact := range []bool{true, false} {
		t.Run(fmt.Sprintf("exact=%v", exact), func(t *testing.T) {
			cfg := rpcConfig(20)
			cfg.Duration = 30 * time.Second
			cfg.Groups[0].RPC.RandomStart = true
			cfg.Groups[0].StartAt, cfg.Groups[0].StartSpread = 5*time.Second, 0
			cfg.DataPlane.Backend.ServiceTime = sim.Constant(7 * time.Millisecond)
			r, err := Run(cfg, Options{ExactRPCs: exact})
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"rpc.latency_p50", "rpc.latency_p99"} {
				s := series(t, r, name)
				for k, v := range s {
					switch {
					case k <= 5 && !math.IsNaN(v):
						t.Errorf("%s at sample %d = %v, want NaN: the clients start at 5s", name, k, v)
					case k > 6 && v != 7:
						t.Errorf("%s at sample %d = %v, want 7 ms", name, k, v)
					}
				}
			}
		})
	}
}

// TestSampleTableKeepsEveryBucketOfEverySample adds latencies to the
// per-sample table, through several growths, and checks what sorted
// returns against the same latencies summed in a map: every (sample,
// bucket) once, in order, with its count and sum.
func TestSampleTableKeepsEveryBucketOfEverySample(t *testing.T) {
	type key struct{ sample, bucket int }
	want := map[key]sampleLatency{}
	var tab sampleTable
	r := sim.NewStream(1, "table")
	for range 20_000 {
		sample, k := r.IntN(300), 1+r.IntN(3)
		d := sim.LogNormal(2*time.Millisecond, 200*time.Millisecond).Sample(r)
		i := latBucket(d)
		tab.add(sample, i, d, k)
		w := want[key{sample, i}]
		w.key, w.n, w.sum = uint64(sample)<<32|uint64(i), w.n+int64(k), w.sum+float64(k)*float64(d)
		want[key{sample, i}] = w
	}
	got := tab.sorted()
	if len(got) != len(want) || tab.used != len(want) {
		t.Fatalf("%d entries (%d used), want %d", len(got), tab.used, len(want))
	}
	for j, s := range got {
		if j > 0 && got[j-1].key >= s.key {
			t.Fatalf("entry %d (key %x) after key %x: not in order", j, s.key, got[j-1].key)
		}
		if w := want[key{int(s.key >> 32), int(s.key & (1<<32 - 1))}]; s != w {
			t.Fatalf("entry %d = %+v, want %+v", j, s, w)
		}
	}
}
