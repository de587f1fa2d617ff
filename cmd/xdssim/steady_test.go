package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/scenarios"
	"github.com/xdssim/xdssim/viz"
)

// steadyMetrics are the figures a bulk run of steady RPCs must leave
// unchanged in distribution: how many RPCs, how they ended and how many
// had no outcome (unanswered: in flight when their client stopped or the
// run ended), failures and retries, the failure windows they make, and
// the RPCs' latency quantiles.
var steadyMetrics = []string{
	"rpc.total", "rpc.failed", "rpc.by_code.OK", unanswered, "retries.attempts", "retries.throttled", "sessions.started",
	"failure_windows.count", "failure_windows.client_seconds",
	"rpc.latency_seconds.p50", "rpc.latency_seconds.p90", "rpc.latency_seconds.p99", "rpc.latency_seconds.p999",
}

// unanswered is rpc.total less the RPCs of every code.
const unanswered = "rpc.total − rpc.by_code.*"

// steadyCase is a scenario the bulk path must match the exact one on:
// seeds runs each way, on disjoint seeds (the same seed would correlate
// the two sides and hide a difference).
type steadyCase struct {
	name  string
	src   *scenarios.Source
	sets  []string
	seeds int
	// ks also compares the per-seed figures' distributions and the failure
	// windows' durations (two-sample Kolmogorov–Smirnov), which needs
	// more seeds than the means do.
	ks bool
	// replays: the bulk side replays (fleet.Results.ReplayedRPCs) at least
	// this share of its RPCs; 0: none (a case that needs no replay must
	// not take one). The library scenarios are not checked.
	replays float64
	library bool
}

// steadyScenario is the fleet of the in-flight and partial-failure
// cases: 25 s of clients (starting over 5 s) whose RPCs go to the three
// backends of service "echo". Its arguments: the name, what the service
// adds (%[2]s), the group (%[3]s), its rpc table's keys (%[4]s), the
// service time (%[5]s) and TOML at the end (%[6]s).
const steadyScenario = `name = "%[1]s"
seed = 1
duration = "25s"

[[control_plane]]
name = "cp"

[[control_plane.service]]
name = "echo"
endpoints = 3
%[2]s

[[fleet.group]]
start_spread = "5s"
%[3]s
rpc = { %[4]s }

[data_plane]
service_time = %[5]s
%[6]s`

// The in-flight cases are a fleet whose RPCs are accounted in bulk until,
// at 15 s, something ends the RPCs in flight: one of the three backends
// crashes, or every client restarts. The exact path fails the RPCs in
// flight to the crashed backend, and drops without an outcome those of a
// client that stops; the bulk path must do the same.

// inFlightEvents are what ends the RPCs in flight at 15 s.
var inFlightEvents = map[string]string{
	"crash": `
[[backend]]
at = "15s"
action = "down"
service = "echo"
`,
	"restart": `
[[fleet.restart]]
at = "15s"
fraction = 1.0
spread = "1s"
downtime = "2s"
`,
}

// inFlightServices are the service times of the in-flight cases, with the
// RPC load: at 2 ms the clients send 10 RPCs/s, not 1, so that about 3
// RPCs are in flight to the crashed backend and a bulk path that loses
// them shows; a log-normal service time (no deadline, for an unbounded
// one to be steady) has RPCs in flight long after most have ended.
var inFlightServices = []struct{ name, dist, rpc string }{
	{"2ms", `{ dist = "constant", value = "2ms" }`, "rate = 10"},
	{"50ms", `{ dist = "constant", value = "50ms" }`, "rate = 1"},
	{"500ms", `{ dist = "constant", value = "500ms" }`, "rate = 1"},
	{"lognormal", `{ dist = "lognormal", median = "50ms", p99 = "500ms" }`, `rate = 1, deadline = "0s"`},
}

// partialFailure is what the partial-failure cases add to steadyScenario:
// one of the three backends fails a share of the RPCs (%[1]s) from 8 s,
// for 12 s or to the end of the run (%[2]s), with UNAVAILABLE, which the
// route retries twice (num_retries 2), with or without gRFC A55 sessions
// (the route's session and the RPCs' sessions, which pin a session's
// retries to its host and end after a lifetime), under the default 1 s
// deadline. The bulk path replays the RPCs of each instance while the
// backend fails (model/fleet/steady.go replay); the exact path takes them
// as kernel events.
const partialFailure = `
[[backend]]
at = "8s"
%[2]s
action = "fail"
service = "echo"
first = 1
count = 1
error_rate = %[1]s
`

// partialCases are the partial-failure cases: error rates 0.5 (for 12 s)
// and 0.1 (to the end of the run), with and without sessions, at the
// service times of the in-flight cases' 2 ms (10 RPCs/s) and 500 ms (1
// RPC/s: RPCs in flight and retries overlap the failure's start and end).
func partialCases() []steadyCase {
	var cases []steadyCase
	for _, rate := range []struct{ name, rate, duration string }{
		{"0.5", "0.5", `duration = "12s"`}, {"0.1", "0.1", ""},
	} {
		for _, sessions := range []bool{false, true} {
			for _, st := range inFlightServices[:3] {
				if st.name == "50ms" {
					continue
				}
				name := "partial-" + rate.name + "-" + st.name
				route, rpc := `retry = { on = ["unavailable"], num_retries = 2 }`, st.rpc
				if sessions {
					name += "-sessions"
					route += "\n" + `session = { cookie = "echo-session" }`
					rpc += `, sessions = 2, session_lifetime = "6s"`
				}
				data := fmt.Sprintf(steadyScenario, name, route, "clients = 300\nprofile = \"grpc-core\"", rpc, st.dist,
					fmt.Sprintf(partialFailure, rate.rate, rate.duration))
				src := &scenarios.Source{File: name + ".toml", Name: name, Data: []byte(data)}
				cases = append(cases, steadyCase{name: name, src: src, seeds: 20, ks: true, replays: 0.3})
			}
		}
	}
	// And a retry throttle (gRFC A6; a what-if on an xDS channel), which
	// the failures drain: retries stop while it has half its tokens or
	// fewer.
	name := "partial-0.5-2ms-throttle"
	data := fmt.Sprintf(steadyScenario, name, `retry = { on = ["unavailable"], num_retries = 2 }`,
		`clients = 300`+"\n"+`profile = "grpc-core"`, `rate = 10, throttle_max_tokens = 10, throttle_token_ratio = 0.1`,
		inFlightServices[0].dist, fmt.Sprintf(partialFailure, "0.5", `duration = "12s"`))
	src := &scenarios.Source{File: name + ".toml", Name: name, Data: []byte(data)}
	return append(cases, steadyCase{name: name, src: src, sets: []string{"what_if=true"}, seeds: 20, ks: true, replays: 0.3})
}

// steadyCases are the library scenarios (at the reduced size of
// TestLibraryScenariosAtReducedSize), the in-flight scenarios and the
// partial-failure ones.
func steadyCases(t *testing.T) []steadyCase {
	var cases []steadyCase
	for _, e := range scenarios.Library() {
		src, _, sets := openReduced(t, e.Name)
		cases = append(cases, steadyCase{name: e.Name, src: src, sets: sets, seeds: 6, library: true})
	}
	for _, event := range []string{"crash", "restart"} {
		for _, st := range inFlightServices {
			name := event + "-" + st.name
			cases = append(cases, steadyCase{name: name, src: inFlightSource(name, event, st.dist, st.rpc, ""), seeds: 20, ks: true})
		}
	}
	return append(cases, partialCases()...)
}

// inFlightSource is the in-flight case's steadyScenario with the event,
// the service time and the rpc table's keys, and extra TOML at the end.
func inFlightSource(name, event, dist, rpc, extra string) *scenarios.Source {
	data := fmt.Sprintf(steadyScenario, "in-flight-"+name, "", "clients = 500", rpc, dist, inFlightEvents[event]) + extra
	return &scenarios.Source{File: name + ".toml", Name: name, Data: []byte(data)}
}

// ksAlpha is the significance below which a Kolmogorov–Smirnov test
// fails: 10⁻⁴, so that the few dozen tests of the in-flight cases would
// all pass on equal distributions but for a chance of about 0.5 %.
const ksAlpha = 1e-4

// TestSteadyRPCsAreStatisticallyTheExactOnes runs each case with steady
// RPCs accounted in bulk and with every RPC taken one by one
// (fleet.Options.ExactRPCs), on disjoint seeds, and checks each headline
// figure of the RPCs: the two means must not differ by more than 5 of the
// difference's standard errors (Welch's t), and a figure that does not
// vary between seeds must be equal. The in-flight cases, on more seeds,
// also compare the figures' distributions and the pooled failure-window
// durations with the two-sample Kolmogorov–Smirnov test (ksTest), which
// fails below ksAlpha. The runs are deterministic, so the test is too.
// Reference: issue 18 ("a bulk or batched path whose results are
// statistically indistinguishable: prove it with a test over the
// library"), issue 24 (RPCs in flight when a backend crashes or a client
// restarts); model/fleet/steady.go.
func TestSteadyRPCsAreStatisticallyTheExactOnes(t *testing.T) {
	for _, tc := range steadyCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			type side struct {
				exact   bool
				figures [][]float64
				windows []float64 // durations, seconds
				latency []int64   // every run's RPC latencies, by bucket
				// replayed and rpcs are the RPCs replayed in bulk runs
				// and all RPCs, over the seeds.
				replayed int
				rpcs     float64
			}
			sides := [2]side{{exact: true}, {exact: false}}
			for i := range sides {
				sd := &sides[i]
				sd.figures = make([][]float64, len(steadyMetrics))
				for k := range tc.seeds {
					seed := 1 + k
					if !sd.exact {
						seed += tc.seeds // disjoint from the exact side's
					}
					s, err := scenarios.Parse(tc.src, append(slices.Clone(tc.sets), fmt.Sprintf("seed=%d", seed)))
					if err != nil {
						t.Fatal(err)
					}
					res, err := fleet.Run(s.FleetConfig(), fleet.Options{ExactRPCs: sd.exact})
					if err != nil {
						t.Fatal(err)
					}
					sd.replayed += res.ReplayedRPCs
					sd.rpcs += steadyFigure(res, "rpc.total")
					for m, name := range steadyMetrics {
						sd.figures[m] = append(sd.figures[m], steadyFigure(res, name))
					}
					for _, in := range res.Intervals {
						if _, ok := in.WindowCause(); ok {
							sd.windows = append(sd.windows, (in.End - in.Start).Seconds())
						}
					}
					if sd.latency == nil {
						sd.latency = make([]int64, len(res.RPCLatency.Counts()))
					}
					for i, n := range res.RPCLatency.Counts() {
						sd.latency[i] += n
					}
				}
			}
			exact, bulk := &sides[0], &sides[1]
			if exact.replayed != 0 {
				t.Errorf("the exact path replayed %d RPCs", exact.replayed)
			}
			share := float64(bulk.replayed) / bulk.rpcs
			t.Logf("bulk: %.2f of the RPCs replayed; exact, a seed's mean: %.0f RPCs, %.0f failed, %.0f retries, %.0f throttled; %d failure windows in all",
				share, mean(exact.figures[0]), mean(exact.figures[1]), mean(exact.figures[4]), mean(exact.figures[5]), len(exact.windows))
			switch {
			case tc.library:
			case tc.replays == 0 && bulk.replayed != 0:
				t.Errorf("the bulk path replayed %d RPCs where no backend fails some", bulk.replayed)
			case share < tc.replays:
				t.Errorf("the bulk path replayed %d of %.0f RPCs (%.2f), want at least %.2f", bulk.replayed, bulk.rpcs, share, tc.replays)
			}
			for m, name := range steadyMetrics {
				e, b := exact.figures[m], bulk.figures[m]
				me, se := meanSD(e)
				mb, sb := meanSD(b)
				switch {
				case se == 0 && sb == 0:
					if me != mb {
						t.Errorf("%s: %v in every exact run, %v in every bulk one", name, me, mb)
					}
					continue
				case welch(e, b) > 5:
					t.Errorf("%s: exact mean %.4g (sd %.3g), bulk %.4g (sd %.3g) over %d seeds each: more than 5 standard errors apart",
						name, me, se, mb, sb, tc.seeds)
				}
				if tc.ks {
					if d, p := ksTest(e, b); p < ksAlpha {
						t.Errorf("%s: exact mean %.4g (sd %.3g), bulk %.4g (sd %.3g) over %d seeds each: Kolmogorov–Smirnov D = %.3f, p = %.2g",
							name, me, se, mb, sb, tc.seeds, d, p)
					}
				}
			}
			if tc.ks && (len(exact.windows) > 0 || len(bulk.windows) > 0) {
				if d, p := ksTest(exact.windows, bulk.windows); p < ksAlpha {
					t.Errorf("failure window durations: %d exact, %d bulk: Kolmogorov–Smirnov D = %.3f, p = %.2g",
						len(exact.windows), len(bulk.windows), d, p)
				}
			}
			if tc.ks {
				if d, p, ne, nb := ksBinned(exact.latency, bulk.latency); p < ksAlpha {
					t.Errorf("RPC latencies: %d exact, %d bulk: Kolmogorov–Smirnov D = %.4f, p = %.2g", ne, nb, d, p)
				}
			}
		})
	}
}

// steadyFigure is the summary figure name of res, or unanswered.
func steadyFigure(res *fleet.Results, name string) float64 {
	if name != unanswered {
		v, _ := viz.Lookup(res, name)
		return v
	}
	v, _ := viz.Lookup(res, "rpc.total")
	for _, m := range res.Metrics {
		if strings.HasPrefix(m.Path, "rpc.by_code.") {
			v -= m.Value
		}
	}
	return v
}

func mean(xs []float64) float64 {
	m, _ := meanSD(xs)
	return m
}

func meanSD(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)-1))
}

// welch returns |t| of Welch's test of two samples' means.
func welch(a, b []float64) float64 {
	ma, sa := meanSD(a)
	mb, sb := meanSD(b)
	se := math.Sqrt(sa*sa/float64(len(a)) + sb*sb/float64(len(b)))
	if se == 0 {
		return 0
	}
	return math.Abs(ma-mb) / se
}

// ksTest is the two-sample Kolmogorov–Smirnov test of a and b: D, the
// largest distance between their empirical distribution functions
// (gonum stat.KolmogorovSmirnov, which takes tied values together), and
// the p-value of the Kolmogorov distribution at (√n + 0.12 + 0.11/√n)·D,
// n = |a||b|/(|a|+|b|), Stephens' approximation for small samples
// (Numerical Recipes, 3rd ed., §14.3.3). With tied values (counts) the
// p-value is conservative. An empty sample against a non-empty one is as
// far apart as they can be.
func ksTest(a, b []float64) (d, p float64) {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	d = stat.KolmogorovSmirnov(a, nil, b, nil)
	if len(a) == 0 || len(b) == 0 {
		return d, 0
	}
	return d, ksP(d, len(a), len(b))
}

// ksP is the two-sample Kolmogorov–Smirnov p-value of D for samples of
// na and nb values (ksTest).
func ksP(d float64, na, nb int) float64 {
	ne := math.Sqrt(float64(na) * float64(nb) / float64(na+nb))
	return kolmogorovQ((ne + 0.12 + 0.11/ne) * d)
}

// ksBinned is ksTest of two samples given as counts in the same bins
// (fleet.LatencyHistogram.Counts): D is the largest distance between
// their cumulative shares at the bins' bounds, which is ksTest's D of the
// values with each bin's values tied; na and nb are the samples' sizes.
func ksBinned(a, b []int64) (d, p float64, na, nb int64) {
	for i := range a {
		na += a[i]
		nb += b[i]
	}
	if na == 0 || nb == 0 {
		return 1, 0, na, nb
	}
	var ca, cb int64
	for i := range a {
		ca += a[i]
		cb += b[i]
		d = max(d, math.Abs(float64(ca)/float64(na)-float64(cb)/float64(nb)))
	}
	return d, ksP(d, int(na), int(nb)), na, nb
}

// kolmogorovQ is the Kolmogorov distribution's upper tail,
// Q(λ) = 2 Σ_{k≥1} (−1)^{k−1} exp(−2k²λ²).
func kolmogorovQ(lambda float64) float64 {
	if lambda < 0.2 {
		return 1 // the series converges too slowly there; Q(0.2) ≈ 1 − 10⁻¹¹
	}
	var sum float64
	sign := 1.0
	for k := 1; k <= 100; k++ {
		term := sign * math.Exp(-2*float64(k*k)*lambda*lambda)
		sum += term
		if math.Abs(term) < 1e-12*math.Abs(sum) {
			break
		}
		sign = -sign
	}
	return min(1, max(0, 2*sum))
}

// TestKSTestHasTheKolmogorovDistribution checks ksTest's p-value against
// the Kolmogorov distribution's tabled quantiles (Q(λ) = α at the
// critical values 1.2238, 1.3581, 1.6276, 1.9495 for α = 0.1, 0.05,
// 0.01, 0.001), and the statistic on samples whose D is known.
func TestKSTestHasTheKolmogorovDistribution(t *testing.T) {
	for _, tt := range []struct{ lambda, q float64 }{
		{1.2238, 0.10}, {1.3581, 0.05}, {1.6276, 0.01}, {1.9495, 0.001},
	} {
		if got := kolmogorovQ(tt.lambda); math.Abs(got-tt.q) > 0.002*tt.q+1e-5 {
			t.Errorf("Q(%v) = %.5f, want %v", tt.lambda, got, tt.q)
		}
	}
	for _, tt := range []struct {
		name   string
		a, b   []float64
		d      float64
		pBelow float64 // p must be below this (0: no bound)
		pAbove float64 // and above this
	}{
		{"the same sample", []float64{1, 2, 3, 4}, []float64{4, 3, 2, 1}, 0, 0, 0.99},
		{"disjoint", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, []float64{11, 12, 13, 14, 15, 16, 17, 18, 19, 20}, 1, 1e-3, 0},
		{"ties: zeros against ones and zeros", []float64{0, 0, 0, 0}, []float64{0, 0, 1, 1}, 0.5, 0, 0.3},
		{"empty against non-empty", nil, []float64{0}, 1, 1e-300, -1},
	} {
		d, p := ksTest(tt.a, tt.b)
		if math.Abs(d-tt.d) > 1e-12 || tt.pBelow > 0 && p >= tt.pBelow || p <= tt.pAbove {
			t.Errorf("%s: D = %v, p = %v; want D = %v, p in (%v, %v)", tt.name, d, p, tt.d, tt.pAbove, tt.pBelow)
		}
		// The same values counted in bins of width 1 (whole numbers
		// from 0 to 20), as ksBinned takes them, give the same test.
		if len(tt.a) == 0 || len(tt.b) == 0 {
			continue
		}
		var ba, bb [21]int64
		for _, x := range tt.a {
			ba[int(x)]++
		}
		for _, x := range tt.b {
			bb[int(x)]++
		}
		if bd, bp, _, _ := ksBinned(ba[:], bb[:]); math.Abs(bd-d) > 1e-12 || math.Abs(bp-p) > 1e-12 {
			t.Errorf("%s in bins: D = %v, p = %v; the values' D = %v, p = %v", tt.name, bd, bp, d, p)
		}
	}
}
