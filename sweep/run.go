package sweep

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/scenarios"
	"github.com/xdssim/xdssim/stamp"
)

// Run is the outcome of one run of a sweep: the value of each of the
// sweep's metrics, NaN where the run reported none.
type Run struct {
	// Index numbers the runs in the order the sweep made them: the first
	// seeds of every point, point by point (what shards split), then each
	// round of added seeds.
	Index  int
	Point  int
	Seed   uint64
	Values []float64
	// Events is the number of kernel events the run processed.
	Events uint64
	// Breached lists the expectations ([[expect]], by index) the run
	// breached.
	Breached []int
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
	// Round, if set, is called before each round of added seeds with the
	// runs made so far and the runs the round adds.
	Round func(done, adding int)
	// ExactRPCs takes every RPC of every run one by one
	// (fleet.Options.ExactRPCs).
	ExactRPCs bool
	// Build is the build of xdssim that makes the runs (stamp.Read): the
	// Result, Comparison or FindResult names it.
	Build stamp.Build
}

// workers returns the pool size o asks for.
func (o Options) workers() int {
	if o.Workers > 0 {
		return o.Workers
	}
	return runtime.GOMAXPROCS(0)
}

// Execute runs the given run indices of the plan's first seeds (every
// such run when indices is nil) on a pool of workers and returns their
// outcomes in the order of indices, whatever order they finished in. A
// run that fails is an error; when several do, the one of the lowest index
// is returned.
func (p *Plan) Execute(indices []int, o Options) ([]Run, error) {
	if indices == nil {
		indices = make([]int, p.Runs())
		for i := range indices {
			indices[i] = i
		}
	}
	jobs := make([]job, len(indices))
	for k, r := range indices {
		if r < 0 || r >= p.Runs() {
			return nil, fmt.Errorf("sweep: run %d is out of range (0 to %d)", r, p.Runs()-1)
		}
		pt, seed := p.RunOf(r)
		jobs[k] = job{index: r, point: pt, seed: seed}
	}
	return p.execute(jobs, o)
}

// Run runs the sweep: every point on the first seeds, then, round by
// round, more seeds for the points whose answer is still open (an
// undecided constraint, or a setting the selection cannot yet tell from
// the best), each round's points going to the next number of seeds of the
// schedule (doubling, up to MaxSeeds), until every answer is decided or
// the seeds are spent. What a round adds depends only on the runs before
// it, so the result does not depend on the number of workers.
func (p *Plan) Run(o Options) (*Result, error) {
	first, err := p.Execute(nil, o)
	if err != nil {
		return nil, err
	}
	res, err := adapt(p.Header, first, func(jobs []job) ([]Run, error) {
		if o.Round != nil {
			o.Round(jobs[0].index, len(jobs))
		}
		return p.execute(jobs, o)
	})
	if err != nil {
		return nil, err
	}
	res.Build = o.Build
	return res, nil
}

// adapt judges the runs so far and, while some point needs more seeds and
// can have them, makes the next round of runs with run.
func adapt(h Header, runs []Run, run func([]job) ([]Run, error)) (*Result, error) {
	for {
		res, need, err := judge(h, runs)
		if err != nil {
			return nil, err
		}
		var jobs []job
		for _, pt := range need {
			n := res.Points[pt].Seeds
			for k := n; k < nextLook(res.looks, n); k++ {
				jobs = append(jobs, job{index: len(runs) + len(jobs), point: pt, seed: h.SeedAt(k)})
			}
		}
		if len(jobs) == 0 {
			return res, nil
		}
		more, err := run(jobs)
		if err != nil {
			return nil, err
		}
		runs = append(runs, more...)
	}
}

// job is one run to make: of point on seed, numbered index.
type job struct {
	index, point int
	seed         uint64
}

// execute makes the runs of jobs on the pool, returning them in the order
// of jobs.
func (p *Plan) execute(jobs []job, o Options) ([]Run, error) {
	out := make([]Run, len(jobs))
	err := forEach(len(jobs), o, func(k int) error {
		j := jobs[k]
		sets := p.runSets(j.point, j.seed)
		res, breached, err := runScenario(p.src, sets, o)
		if err != nil {
			return fmt.Errorf("sweep run %d (%v): %w", j.index, sets, err)
		}
		out[k] = Run{Index: j.index, Point: j.point, Seed: j.seed, Values: values(res, p.Metrics), Events: res.Events, Breached: breached}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// runScenario resolves and runs the scenario with the overrides, stopping
// at o.MaxEvents (0: no bound), its RPCs exact if o says so, and returns
// its Results and the indices of the scenario's expectations it
// breached. The world the run built is garbage once it returns; only its
// Results live on.
func runScenario(src *scenarios.Source, sets []string, o Options) (*fleet.Results, []int, error) {
	s, err := scenarios.Parse(src, sets)
	if err != nil {
		return nil, nil, err
	}
	r, err := fleet.Run(s.FleetConfig(), fleet.Options{MaxEvents: o.MaxEvents, ExactRPCs: o.ExactRPCs})
	if err != nil {
		return nil, nil, err
	}
	var breached []int
	for i, e := range s.Expect {
		if v, ok := r.Value(e.Metric); !ok || !e.Holds(v) {
			breached = append(breached, i)
		}
	}
	return r, breached, nil
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
