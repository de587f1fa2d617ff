package main

import (
	"fmt"
	"math"
	"testing"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/scenarios"
	"github.com/xdssim/xdssim/viz"
)

// steadySeeds is how many seeds each side of the comparison runs.
const steadySeeds = 6

// steadyMetrics are the figures a bulk run of steady RPCs must leave
// unchanged in distribution: how many RPCs, failures and retries, and the
// failure windows they make.
var steadyMetrics = []string{
	"rpc.total", "rpc.failed", "retries.attempts", "sessions.started",
	"failure_windows.count", "failure_windows.client_seconds",
}

// TestSteadyRPCsAreStatisticallyTheExactOnes runs every library scenario
// (at the reduced size of TestLibraryScenariosAtReducedSize) on several
// seeds with steady RPCs accounted in bulk and with every RPC taken one by
// one (fleet.Options.ExactRPCs), and checks each headline figure of the
// RPCs: the two means must not differ by more than 5 of the difference's
// standard errors (Welch), and a figure that does not vary between seeds
// must be equal. The runs are deterministic, so the test is too.
// Reference: issue 18 ("a bulk or batched path whose results are
// statistically indistinguishable: prove it with a test over the
// library"); model/fleet/steady.go.
func TestSteadyRPCsAreStatisticallyTheExactOnes(t *testing.T) {
	for _, e := range scenarios.Library() {
		t.Run(e.Name, func(t *testing.T) {
			t.Parallel()
			src, err := scenarios.Open(e.Name)
			if err != nil {
				t.Fatal(err)
			}
			full, err := scenarios.Parse(src, nil)
			if err != nil {
				t.Fatal(err)
			}
			var sets []string
			if !keepsFullSize(t, src.Data) {
				sets = reduced(full)
			}
			exact, steady := make([][]float64, len(steadyMetrics)), make([][]float64, len(steadyMetrics))
			for seed := 1; seed <= steadySeeds; seed++ {
				s, err := scenarios.Parse(src, append(sets, fmt.Sprintf("seed=%d", seed)))
				if err != nil {
					t.Fatal(err)
				}
				for _, side := range []struct {
					exact bool
					into  [][]float64
				}{{true, exact}, {false, steady}} {
					res, err := fleet.Run(s.FleetConfig(), fleet.Options{ExactRPCs: side.exact})
					if err != nil {
						t.Fatal(err)
					}
					for i, m := range steadyMetrics {
						v, _ := viz.Lookup(res, m)
						side.into[i] = append(side.into[i], v)
					}
				}
			}
			for i, m := range steadyMetrics {
				me, se := meanSD(exact[i])
				ms, ss := meanSD(steady[i])
				switch {
				case se == 0 && ss == 0:
					if me != ms {
						t.Errorf("%s: %v in every exact run, %v in every steady one", m, me, ms)
					}
				case welch(exact[i], steady[i]) > 5:
					t.Errorf("%s: exact mean %.4g (sd %.3g), steady %.4g (sd %.3g) over %d seeds: more than 5 standard errors apart",
						m, me, se, ms, ss, steadySeeds)
				}
			}
		})
	}
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
