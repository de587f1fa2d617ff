package sweep

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/scenarios"
)

// Run is the outcome of one run of a sweep: the value of each of the
// sweep's metrics, NaN where the run reported none.
type Run struct {
	Index  int
	Point  int
	Seed   uint64
	Values []float64
	// Events is the number of kernel events the run processed.
	Events uint64
}

// Options says how to execute runs.
type Options struct {
	// Workers is the number of runs at once; 0 means GOMAXPROCS.
	Workers int
	// Progress, if set, is called after each run with the number of runs
	// done and the number to do. Calls do not overlap.
	Progress func(done, total int)
	// MaxEvents, if not 0, stops a run that has handled that many events:
	// the sweep fails with its *fleet.EventLimitError.
	MaxEvents uint64
	// ExactRPCs takes every RPC of every run one by one
	// (fleet.Options.ExactRPCs).
	ExactRPCs bool
}

// workers returns the pool size o asks for.
func (o Options) workers() int {
	if o.Workers > 0 {
		return o.Workers
	}
	return runtime.GOMAXPROCS(0)
}

// Execute runs the given run indices of the plan (every run when indices
// is nil) on a pool of workers and returns their outcomes in the order of
// indices, whatever order they finished in. A run that fails is an error;
// when several do, the one of the lowest index is returned.
func (p *Plan) Execute(indices []int, o Options) ([]Run, error) {
	if indices == nil {
		indices = make([]int, p.Runs())
		for i := range indices {
			indices[i] = i
		}
	}
	out := make([]Run, len(indices))
	err := forEach(len(indices), o, func(k int) error {
		r := indices[k]
		if r < 0 || r >= p.Runs() {
			return fmt.Errorf("sweep: run %d is out of range (0 to %d)", r, p.Runs()-1)
		}
		sets := p.runSets(r)
		res, err := runScenario(p.src, sets, o)
		if err != nil {
			return fmt.Errorf("sweep run %d (%v): %w", r, sets, err)
		}
		pt, seed := p.RunOf(r)
		out[k] = Run{Index: r, Point: pt, Seed: seed, Values: values(res, p.Metrics), Events: res.Events}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// runScenario resolves and runs the scenario with the overrides, stopping
// at o.MaxEvents (0: no bound), its RPCs exact if o says so. The world the
// run built is garbage once it returns; only its Results live on.
func runScenario(src *scenarios.Source, sets []string, o Options) (*fleet.Results, error) {
	s, err := scenarios.Parse(src, sets)
	if err != nil {
		return nil, err
	}
	return fleet.Run(s.FleetConfig(), fleet.Options{MaxEvents: o.MaxEvents, ExactRPCs: o.ExactRPCs})
}

// values returns the run's value of each metric, NaN where it has none.
func values(r *fleet.Results, metrics []string) []float64 {
	out := make([]float64, len(metrics))
	for i, m := range metrics {
		v, ok := r.Value(m)
		if !ok {
			v = math.NaN()
		}
		out[i] = v
	}
	return out
}

// forEach calls job(0) … job(n-1) on a pool of o.workers() goroutines,
// each taking the next index as it finishes one, and returns the error of
// the lowest index that failed. After a failure no new job starts.
func forEach(n int, o Options, job func(i int) error) error {
	workers := min(o.workers(), n)
	errs := make([]error, n)
	var next atomic.Int64
	var failed atomic.Bool
	var mu sync.Mutex
	done := 0
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if errs[i] = job(i); errs[i] != nil {
					failed.Store(true)
				}
				if o.Progress != nil {
					mu.Lock()
					done++
					o.Progress(done, n)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
