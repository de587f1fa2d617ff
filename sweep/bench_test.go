package sweep

import (
	"strconv"
	"testing"

	"github.com/xdssim/xdssim/scenarios"
)

// BenchmarkSweep16Runs runs one 16-run sweep (testdata/outage.toml with
// 400 clients: 4 points × 4 seeds) per iteration with 1 and with 2
// workers, and reports runs per second of wall time: two workers should
// reach at least 1.7 times one worker's throughput (issue 15). Run it on
// an otherwise idle machine with at least two cores:
//
//	go test ./sweep -run '^$' -bench Sweep16Runs -benchtime 3x
func BenchmarkSweep16Runs(b *testing.B) {
	src, err := scenarios.Open("testdata/outage.toml")
	if err != nil {
		b.Fatal(err)
	}
	spec := Spec{Seeds: 4, Metrics: []string{"failure_windows.client_seconds"},
		Params: []Param{{Key: "fleet.restart[0].fraction", Values: []string{"0.2", "0.4", "0.6", "0.8"}}}}
	p, err := NewPlan(src, []string{"fleet.group[0].clients=400"}, spec)
	if err != nil {
		b.Fatal(err)
	}
	if p.Runs() != 16 {
		b.Fatalf("%d runs, want 16", p.Runs())
	}
	for _, workers := range []int{1, 2} {
		b.Run("workers="+strconv.Itoa(workers), func(b *testing.B) {
			for b.Loop() {
				if _, err := p.Execute(nil, Options{Workers: workers}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(16*b.N)/b.Elapsed().Seconds(), "runs/s")
		})
	}
}
