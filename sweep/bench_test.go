package sweep

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/xdssim/xdssim/scenarios"
)

// benchPlan is a 16-run sweep: testdata/outage.toml with 400 clients, 4
// points × 4 seeds; a run takes some 25 ms of one core.
func benchPlan(b *testing.B) *Plan {
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
	return p
}

// BenchmarkSweep16Runs runs the 16-run sweep per iteration with 1 and with
// 2 workers (GOMAXPROCS as it is) and reports runs per second of wall time.
func BenchmarkSweep16Runs(b *testing.B) {
	p := benchPlan(b)
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

// BenchmarkSweepScaling measures what issue 15 asks of the pool: the
// throughput of a 16-run sweep with 2 workers on 2 cores against 1 worker
// on 1 core (the pool is sized by GOMAXPROCS, so GOMAXPROCS=1 and 2). Each
// iteration runs both, one after the other, so that a machine shared with
// other work slows both alike; it reports each one's runs/s and the ratio,
// which should be at least 1.7. It also reports 1 worker with GOMAXPROCS=2,
// where the garbage collector takes the idle core: that one worker then
// uses more than one core. Run it on a machine with at least two cores:
//
//	go test ./sweep -run '^$' -bench SweepScaling -benchtime 5x
func BenchmarkSweepScaling(b *testing.B) {
	if runtime.NumCPU() < 2 {
		b.Skip("needs two cores")
	}
	p := benchPlan(b)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var one, two, oneOnTwo time.Duration
	run := func(procs, workers int) time.Duration {
		runtime.GOMAXPROCS(procs)
		runtime.GC()
		start := time.Now()
		if _, err := p.Execute(nil, Options{Workers: workers}); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	for b.Loop() {
		one += run(1, 0)
		two += run(2, 0)
		oneOnTwo += run(2, 1)
	}
	rate := func(d time.Duration) float64 { return float64(16*b.N) / d.Seconds() }
	b.ReportMetric(rate(one), "runs/s-1worker-1core")
	b.ReportMetric(rate(two), "runs/s-2workers-2cores")
	b.ReportMetric(rate(oneOnTwo), "runs/s-1worker-2cores")
	b.ReportMetric(rate(two)/rate(one), "speedup")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkPlanCheck1000Points resolves and checks a grid of 100 × 10
// points of testdata/outage.toml: every point parsed and validated before
// any run, on GOMAXPROCS workers. Issue 27 measured 2.2 ms a point; on
// 2 cores it took 1254 µs a point before the scenario was decoded once per
// source, the metric hints computed only for a missing metric and the
// points checked in parallel, and 111 µs after (123 µs on one core).
func BenchmarkPlanCheck1000Points(b *testing.B) {
	src, err := scenarios.Open("testdata/outage.toml")
	if err != nil {
		b.Fatal(err)
	}
	var clients, workers []string
	for i := 1; i <= 100; i++ {
		clients = append(clients, strconv.Itoa(i))
	}
	for i := 1; i <= 10; i++ {
		workers = append(workers, strconv.Itoa(i))
	}
	spec := Spec{Seeds: 1, MaxSeeds: 1, Params: []Param{{Key: "fleet.group[0].clients", Values: clients}, {Key: "control_plane[0].workers", Values: workers}}}
	for b.Loop() {
		if _, err := NewPlan(src, nil, spec); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(1000*b.N), "µs/point")
}
