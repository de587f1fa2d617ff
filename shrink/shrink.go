// Package shrink finds a smaller scenario that still fails a test, by
// delta debugging over the scenario's parts (Zeller and Hildebrandt,
// "Simplifying and Isolating Failure-Inducing Input", 2002): it tries
// scenarios with fewer groups, fewer clients, fewer faults, changes,
// restarts and backend events, fewer targets and a shorter duration, keeps
// the first that still fails, and starts over from it, until no smaller
// one fails. xdssim's test is "this expectation is breached"; the caller
// gives it.
//
// Shrinking is deterministic: the runs are, the candidates are tried in a
// fixed order, and although a batch of candidates runs in parallel, the
// one kept is always the first in order that fails, whatever finishes
// first, and the runs counted against the budget are those one worker
// would make: the result and its count of runs do not depend on the
// number of workers.
package shrink

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/xdssim/xdssim/scenarios"
)

// Options configure a Shrink.
type Options struct {
	// Fails is the test: whether a run of the scenario still fails the
	// way the original does. It is called from several goroutines at once,
	// each with its own scenario.
	Fails func(*scenarios.Scenario) (bool, error)
	// MaxRuns bounds the runs (0: 1000).
	MaxRuns int
	// Workers is how many candidates run at once (0: 1).
	Workers int
	// Progress, if set, is told each smaller scenario kept, with what
	// shrank.
	Progress func(step string, s *scenarios.Scenario)
}

// Stats say what a Shrink did.
type Stats struct {
	// Runs is how many scenarios it ran; Steps how many smaller ones it
	// kept.
	Runs, Steps int
	// Exhausted says it stopped at MaxRuns, not because no smaller
	// scenario fails.
	Exhausted bool
}

// candidate is a smaller scenario to try and what made it smaller.
type candidate struct {
	s    *scenarios.Scenario
	step string
}

// Shrink returns the smallest scenario it finds that still fails, starting
// from s, which must fail. s is not changed.
func Shrink(s *scenarios.Scenario, opt Options) (*scenarios.Scenario, Stats, error) {
	if opt.MaxRuns <= 0 {
		opt.MaxRuns = 1000
	}
	opt.Workers = max(opt.Workers, 1)
	var st Stats
	cur, err := clone(s)
	if err != nil {
		return nil, st, err
	}
	for {
		progress := false
		for _, reduce := range reductions {
			cands := reduce(cur)
			next, runs, err := firstFailing(cands, opt, opt.MaxRuns-st.Runs)
			st.Runs += runs
			if err != nil {
				return nil, st, err
			}
			if next != nil {
				cur = next.s
				st.Steps++
				if opt.Progress != nil {
					opt.Progress(next.step, cur)
				}
				progress = true
				break // start over from the smaller scenario
			}
			if st.Runs >= opt.MaxRuns {
				st.Exhausted = true
				return cur, st, nil
			}
		}
		if !progress {
			return cur, st, nil
		}
	}
}

// firstFailing tries the candidates in order and returns the first that
// fails, with the runs it counts: the candidates up to and including that
// one (all of them when none fails), at most budget. Batches of
// opt.Workers run at once, but a candidate after the first failing one in
// its batch was run only ahead of time and is not counted: what is tried,
// counted and kept is what one worker would, so that shrinking does not
// depend on the number of cores.
func firstFailing(cands []candidate, opt Options, budget int) (*candidate, int, error) {
	cands = cands[:min(len(cands), max(budget, 0))]
	for lo := 0; lo < len(cands); lo += opt.Workers {
		hi := min(lo+opt.Workers, len(cands))
		fails := make([]bool, hi-lo)
		errs := make([]error, hi-lo)
		var wg sync.WaitGroup
		for i := lo; i < hi; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				fails[i-lo], errs[i-lo] = opt.Fails(cands[i].s)
			}()
		}
		wg.Wait()
		for i := range fails {
			if errs[i] != nil {
				return nil, lo + i + 1, errs[i]
			}
			if fails[i] {
				return &cands[lo+i], lo + i + 1, nil
			}
		}
	}
	return nil, len(cands), nil
}

// clone returns an independent copy of s, read back from its resolved
// TOML, so that a change to the copy shares nothing with s; it fails for
// a scenario that does not validate.
func clone(s *scenarios.Scenario) (*scenarios.Scenario, error) {
	return scenarios.Parse(&scenarios.Source{File: s.Name + " (shrinking)", Name: s.Name, Data: []byte(s.TOML())}, nil)
}

// variant returns a copy of s changed by change, or nil when the copy is
// not a valid scenario (it named something the change removed).
func variant(s *scenarios.Scenario, change func(*scenarios.Scenario)) *scenarios.Scenario {
	c, err := clone(s)
	if err != nil {
		return nil
	}
	change(c)
	if c, err = clone(c); err != nil {
		return nil
	}
	return c
}

// reductions make the candidates smaller than a scenario, each kind in
// the order they are tried: the biggest cuts first.
var reductions = []func(*scenarios.Scenario) []candidate{
	dropGroups, fewerClients, dropListItems, shorter, dropTargets,
}

func add(out []candidate, s *scenarios.Scenario, step string, change func(*scenarios.Scenario)) []candidate {
	if c := variant(s, change); c != nil {
		out = append(out, candidate{c, step})
	}
	return out
}

// dropGroups tries the scenario without each group, and without what
// named it alone: its restarts, and faults that were for it only.
func dropGroups(s *scenarios.Scenario) []candidate {
	var out []candidate
	if len(s.Fleet.Groups) < 2 {
		return nil
	}
	for i, g := range s.Fleet.Groups {
		out = add(out, s, fmt.Sprintf("without group %s", g.Name), func(c *scenarios.Scenario) {
			c.Fleet.Groups = slices.Delete(c.Fleet.Groups, i, i+1)
			c.Fleet.Restarts = slices.DeleteFunc(c.Fleet.Restarts, func(r scenarios.Restart) bool { return r.Group == g.Name })
			// A fault for this group alone goes; one for it and others
			// stays for the others. (A fault with no groups is for every
			// client: it must not become one.)
			c.Faults = slices.DeleteFunc(c.Faults, func(f scenarios.Fault) bool {
				return len(f.Groups) > 0 && !slices.ContainsFunc(f.Groups, func(n string) bool { return n != g.Name })
			})
			for k := range c.Faults {
				c.Faults[k].Groups = slices.DeleteFunc(c.Faults[k].Groups, func(n string) bool { return n == g.Name })
			}
		})
	}
	return out
}

// fewerClients tries each group with 1, an eighth, a quarter and half of
// its clients, fewest first.
func fewerClients(s *scenarios.Scenario) []candidate {
	var out []candidate
	for i, g := range s.Fleet.Groups {
		var tried []int
		for _, n := range []int{1, g.Clients / 8, g.Clients / 4, g.Clients / 2} {
			if n < 1 || n >= g.Clients || slices.Contains(tried, n) {
				continue
			}
			tried = append(tried, n)
			out = add(out, s, fmt.Sprintf("group %s: %d clients instead of %d", g.Name, n, g.Clients), func(c *scenarios.Scenario) {
				c.Fleet.Groups[i].Clients = n
			})
		}
	}
	return out
}

// dropListItems tries the scenario without all, half, and each one of its
// faults, changes, restarts and backend events (ddmin's subsets and
// complements, coarsest first).
func dropListItems(s *scenarios.Scenario) []candidate {
	var out []candidate
	lists := []struct {
		name string
		n    int
		drop func(c *scenarios.Scenario, keep func(int) bool)
	}{
		{"fault", len(s.Faults), func(c *scenarios.Scenario, keep func(int) bool) { c.Faults = filter(c.Faults, keep) }},
		{"change", len(s.Changes), func(c *scenarios.Scenario, keep func(int) bool) { c.Changes = filter(c.Changes, keep) }},
		{"fleet.restart", len(s.Fleet.Restarts), func(c *scenarios.Scenario, keep func(int) bool) {
			c.Fleet.Restarts = filter(c.Fleet.Restarts, keep)
		}},
		{"backend", len(s.Backends), func(c *scenarios.Scenario, keep func(int) bool) { c.Backends = filter(c.Backends, keep) }},
	}
	for _, l := range lists {
		if l.n == 0 {
			continue
		}
		for _, cut := range subsets(l.n) {
			step := fmt.Sprintf("without %s %s", l.name, cut.what)
			out = add(out, s, step, func(c *scenarios.Scenario) { l.drop(c, func(i int) bool { return i < cut.lo || i >= cut.hi }) })
		}
	}
	return out
}

// span is a run [lo, hi) of a list's items to drop.
type span struct {
	lo, hi int
	what   string
}

// subsets are the runs of a list of n items ddmin drops: all of them,
// each half, then each one.
func subsets(n int) []span {
	out := []span{{0, n, "(all)"}}
	if n > 2 {
		h := n / 2
		out = append(out, span{0, h, fmt.Sprintf("[0..%d]", h-1)}, span{h, n, fmt.Sprintf("[%d..%d]", h, n-1)})
	}
	if n > 1 {
		for i := range n {
			out = append(out, span{i, i + 1, fmt.Sprintf("[%d]", i)})
		}
	}
	return out
}

func filter[T any](items []T, keep func(int) bool) []T {
	var out []T
	for i, it := range items {
		if keep(i) {
			out = append(out, it)
		}
	}
	return out
}

// shorter tries a quarter, half and three quarters of the duration,
// shortest first, in whole sample intervals. A cut that leaves an event
// outside the run makes an invalid scenario, which is not tried.
func shorter(s *scenarios.Scenario) []candidate {
	var out []candidate
	for _, f := range []float64{0.25, 0.5, 0.75} {
		d := time.Duration(f * float64(s.Duration)).Truncate(s.SampleInterval)
		if d < s.SampleInterval || d >= s.Duration {
			continue
		}
		out = add(out, s, fmt.Sprintf("duration %s instead of %s", d, s.Duration), func(c *scenarios.Scenario) { c.Duration = d })
	}
	return out
}

// dropTargets tries each group without each of its targets, when it has
// more than one.
func dropTargets(s *scenarios.Scenario) []candidate {
	var out []candidate
	for i, g := range s.Fleet.Groups {
		if len(g.Targets) < 2 {
			continue
		}
		for k, t := range g.Targets {
			out = add(out, s, fmt.Sprintf("group %s without target %s", g.Name, t), func(c *scenarios.Scenario) {
				c.Fleet.Groups[i].Targets = slices.Delete(c.Fleet.Groups[i].Targets, k, k+1)
			})
		}
	}
	return out
}

// Size is the scenario's clients, groups, and scenario events (faults,
// changes, restarts, backend events), and its duration: what shrinking
// makes smaller.
func Size(s *scenarios.Scenario) (clients, groups, events int, d time.Duration) {
	for _, g := range s.Fleet.Groups {
		clients += g.Clients
	}
	return clients, len(s.Fleet.Groups), len(s.Faults) + len(s.Changes) + len(s.Fleet.Restarts) + len(s.Backends), s.Duration
}
