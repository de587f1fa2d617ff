package main

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/scenarios"
	"github.com/xdssim/xdssim/shrink"
	"github.com/xdssim/xdssim/viz"
)

var shrinkCommand = command{
	runs: true,
	name: "shrink", args: "FILE|NAME", scenario: true,
	summary: "find a smaller scenario that still breaches an expectation, by delta debugging",
	about: `Run a scenario that breaches an expectation, then look for a smaller one
that still breaches it: fewer groups and clients, fewer faults, changes,
restarts and backend events, fewer targets, a shorter run. Each step tries
candidates in a fixed order (the biggest cuts first), keeps the first that
still breaches and starts over from it, until no smaller one does (delta
debugging); the result is the same on every machine. The smaller scenario,
resolved and with only the expectation kept, is written to --out with the
command that reproduces it.`,
	flags: []flagDoc{
		{name: "expect", arg: "METRIC|N", doc: "the expectation to keep breached: its metric path, or its index among [[expect]] (default: the first breached)"},
		{name: "out", arg: "FILE", doc: "where to write the smaller scenario (default ./<name>-shrunk.toml)", file: true},
		{name: "max-runs", arg: "N", doc: "stop after N runs, with the smallest scenario found by then (default 500)"},
		flagSeed, flagSet, flagAdd, flagMaxMemory, flagMaxEvents, flagMaxCPU, flagForce, flagExactRPCs,
	},
	exec: cmdShrink,
}

func cmdShrink(vals flagValues, pos []string, stdout, stderr io.Writer) error {
	s, lim, err := loadScenario("shrink", vals, pos, true, stderr)
	if err != nil {
		return err
	}
	maxRuns := 500
	if v := vals.last("max-runs"); v != "" {
		if maxRuns, err = strconv.Atoi(v); err != nil || maxRuns < 1 {
			return badInput("--max-runs %s: expected a number of runs >= 1", v)
		}
	}
	if len(s.Expect) == 0 {
		return badInput("shrink: %s has no expectation ([[expect]]) to keep breached", s.Name)
	}
	exact := vals.given("exact-rpcs")
	out := vals.last("out")
	if out == "" {
		out = s.Name + "-shrunk.toml"
	}
	if err := checkOutputFile("out", out); err != nil {
		return err // before the runs, not after
	}
	fmt.Fprintf(stderr, "xdssim: scenario %s, seed %d: shrinking\n", s.Name, s.Seed)
	res, err := runBounded(lim, s, s.FleetConfig(), fleet.Options{ExactRPCs: exact})
	if err != nil {
		return err
	}
	evs := viz.Evaluate(res, s.Expect)
	target, err := shrinkTarget(vals.last("expect"), s.Expect, evs)
	if err != nil {
		return err
	}
	orig := evs[target]
	if orig.Pass {
		return badInput("shrink: expect[%d] (%s %s) holds in this run (%s): nothing to shrink", target, orig.Metric, orig.Bound(), formatValue(orig.Value))
	}
	work := *s
	work.Expect = []scenarios.Expect{s.Expect[target]}
	work.Name = s.Name + "-shrunk"
	c0, g0, e0, d0 := shrink.Size(&work)
	small, st, err := shrink.Shrink(&work, shrink.Options{
		Fails: func(c *scenarios.Scenario) (bool, error) {
			// A candidate stopped at --max-events did not breach: a
			// smaller scenario that loops is no reproduction.
			r, err := runBounded(lim, c, c.FleetConfig(), fleet.Options{ExactRPCs: exact})
			var stopped eventLimitError
			if errors.As(err, &stopped) {
				return false, nil
			}
			if err != nil {
				return false, err
			}
			return !viz.Evaluate(r, c.Expect)[0].Pass, nil
		},
		MaxRuns: maxRuns,
		Workers: runtime.GOMAXPROCS(0),
		Progress: func(step string, c *scenarios.Scenario) {
			fmt.Fprintf(stderr, "xdssim: shrink: %s (%s)\n", step, sizeString(shrink.Size(c)))
		},
	})
	if err != nil {
		return err
	}
	final, err := runBounded(lim, small, small.FleetConfig(), fleet.Options{ExactRPCs: exact})
	if err != nil {
		return err
	}
	got := viz.Evaluate(final, small.Expect)[0]
	c1, g1, e1, d1 := shrink.Size(small)
	sizes := sizeString(c0, g0, e0, d0) + " → " + sizeString(c1, g1, e1, d1)
	header := []string{
		fmt.Sprintf("Shrunk by: %s", exactFlag(scenarios.Command("shrink", scenarioRef(pos), s.Seed, vals["set"]), exact)),
		fmt.Sprintf("It still breaches expect %s %s: %s here, %s in the original.", got.Metric, got.Bound(), formatValue(got.Value), formatValue(orig.Value)),
		fmt.Sprintf("%s, in %d runs.", sizes, st.Runs),
		fmt.Sprintf("Reproduce: %s", exactFlag(scenarios.Command("run", out, small.Seed, nil), exact)),
	}
	if st.Exhausted {
		header = append(header, fmt.Sprintf("Stopped at --max-runs %d: a smaller scenario may still breach it.", maxRuns))
	}
	var b strings.Builder
	for _, h := range header {
		b.WriteString("# " + h + "\n")
	}
	b.WriteString("\n" + small.TOML())
	if err := writeFile("out", out, writeBytes([]byte(b.String()))); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "xdssim: %s, in %d runs\n", sizes, st.Runs)
	if got.Pass {
		// Runs are deterministic: a kept candidate breached, so must this.
		return fmt.Errorf("shrink: the shrunk scenario %s no longer breaches expect %s", out, got.Metric)
	}
	fmt.Fprintln(stdout, out)
	fmt.Fprintln(stdout, exactFlag(scenarios.Command("run", out, small.Seed, nil), exact))
	return nil
}

// shrinkTarget returns the index of the expectation --expect names (its
// metric or index), or of the first breached.
func shrinkTarget(flag string, expect []scenarios.Expect, evs []viz.Expectation) (int, error) {
	if flag == "" {
		for i, e := range evs {
			if !e.Pass {
				return i, nil
			}
		}
		return 0, badInput("shrink: every expectation holds in this run: nothing to shrink")
	}
	if n, err := strconv.Atoi(flag); err == nil {
		if n < 0 || n >= len(expect) {
			return 0, badInput("--expect %d: the scenario has expectations 0 to %d", n, len(expect)-1)
		}
		return n, nil
	}
	if i := slices.IndexFunc(expect, func(e scenarios.Expect) bool { return e.Metric == flag }); i >= 0 {
		return i, nil
	}
	var metrics []string
	for _, e := range expect {
		metrics = append(metrics, e.Metric)
	}
	return 0, badInput("--expect %s: no expectation of the scenario bounds it (metrics: %s)", flag, strings.Join(metrics, ", "))
}

// scenarioRef is the scenario as the command line named it.
func scenarioRef(pos []string) string {
	if len(pos) == 0 {
		return scenarios.DefaultName
	}
	return pos[0]
}

// sizeString says how big a scenario is: "3 clients, 1 group, 2 events, 2m0s".
func sizeString(clients, groups, events int, d time.Duration) string {
	n := func(k int, what string) string {
		if k == 1 {
			return "1 " + what
		}
		return strconv.Itoa(k) + " " + what + "s"
	}
	return n(clients, "client") + ", " + n(groups, "group") + ", " + n(events, "event") + ", " + d.String()
}

// formatValue formats a metric's value for a message.
func formatValue(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
