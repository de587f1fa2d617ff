package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/scenarios"
	"github.com/xdssim/xdssim/sweep"
	"github.com/xdssim/xdssim/viz"
)

var sweepCommand = command{
	name: "sweep", args: "FILE|NAME", scenario: true,
	summary: "run a scenario over a grid of values × seeds on every core, and chart the figures against the values",
	about: `Run the scenario once per point of a grid of values of some of its keys and
per seed, on a pool of workers (GOMAXPROCS by default), and write sweep.json,
sweep.csv (one row per run) and sweep.html (each metric against each param,
mean and 95 % interval over the seeds) to the output directory. The grid, the
seeds, the metrics, the objectives and the constraints come from the
scenario's [sweep] table; each kind of flag given replaces what the table says
of it. With an objective, the best point that meets every constraint is
printed with the --set overrides that reproduce it; with constraints that no
point meets, the sweep exits 3. Outputs are byte-identical whatever the number
of workers.

--shard i/n runs only every n-th run from the i-th (i defaults to
JOB_COMPLETION_INDEX, as a Kubernetes Indexed Job sets it) and writes
shard-i-of-n.json; 'xdssim merge' combines the shards into what one sweep
writes. --find key=lo..hi searches, seed by seed, for the value of key at
which the metric of the one --constraint stops holding, and prints the
threshold with its 95 % interval.`,
	flags: []flagDoc{
		{name: "param", arg: "key=VALUES", doc: "vary key over v1,v2,… or lo..hi:steps (repeatable; the --param flags replace the [sweep] params)"},
		{name: "seeds", arg: "N", doc: "seeds per point, from the scenario's seed on (default [sweep] seeds, else 5)"},
		{name: "metric", arg: "PATH", doc: "a summary.json path to record and chart (repeatable; default [sweep] metrics, else the headline figures)"},
		{name: "objective", arg: "GOAL", doc: "\"minimize PATH\" or \"maximize PATH\" (repeatable, at most 2; replaces [sweep] objectives)"},
		{name: "constraint", arg: "BOUND", doc: "\"PATH <= N\" (or <, >=, >) on the mean over seeds (repeatable; replaces [sweep] constraints)"},
		{name: "workers", arg: "N", doc: "runs at once (default GOMAXPROCS)"},
		{name: "out", arg: "DIR", doc: "output directory (default ./xdssim-out/<scenario>-sweep)", dir: true},
		{name: "shard", arg: "i/n", doc: "run shard i of n and write shard-i-of-n.json (i defaults to $JOB_COMPLETION_INDEX)"},
		{name: "find", arg: "key=lo..hi", doc: "bisect key between lo and hi for where the --constraint stops holding, seed by seed"},
		{name: "steps", arg: "N", doc: "bisection steps of --find (default 8)"},
		{name: "quiet", doc: "print no progress and no table, only the best point and where the outputs went"},
		flagSeed, flagSet, flagMaxMemory, flagMaxEvents, flagForce,
	},
	exec: cmdSweep,
}

var mergeCommand = command{
	name: "merge", args: "DIR|FILE...",
	summary: "combine the shards of a sweep (shard-*.json) into what one unsharded sweep writes",
	about: `Read the shard files (shard-I-of-N.json) that 'xdssim sweep --shard' wrote, from
the directories or files given, check that they are every shard of one sweep,
and write sweep.json, sweep.csv and sweep.html to the output directory: byte for
byte what one unsharded sweep writes. Like sweep, it prints the best point and
exits 3 when the sweep has constraints that no point meets.`,
	flags: []flagDoc{
		{name: "out", arg: "DIR", doc: "output directory (default: the first DIR)", dir: true},
		{name: "quiet", doc: "print no table, only the best point and where the outputs went"},
	},
	exec: cmdMerge,
}

// sweepSpec reads the spec of the scenario's [sweep] table with the flags
// applied.
func sweepSpec(s *scenarios.Scenario, vals flagValues) (sweep.Spec, error) {
	spec, err := sweep.SpecOf(s)
	if err != nil {
		return spec, inputError{err}
	}
	if vals.given("param") {
		spec.Params = nil // the flags' grid replaces the table's
	}
	for _, a := range vals["param"] {
		p, err := sweep.ParseParam(a)
		if err != nil {
			return spec, inputError{err}
		}
		spec.Params = append(spec.Params, p) // a key given twice is NewPlan's error
	}
	if v := vals.last("seeds"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			return spec, badInput("--seeds %s: expected a number of seeds from 1 to 10000", v)
		}
		spec.Seeds = n
	}
	if vals.given("metric") {
		spec.Metrics = vals["metric"]
	}
	if vals.given("objective") {
		spec.Objectives = nil
		for _, o := range vals["objective"] {
			ob, err := scenarios.ParseObjective(o)
			if err != nil {
				return spec, badInput("--objective: %v", err)
			}
			spec.Objectives = append(spec.Objectives, ob)
		}
	}
	if vals.given("constraint") {
		spec.Constraints = nil
		for _, c := range vals["constraint"] {
			con, err := scenarios.ParseConstraint(c)
			if err != nil {
				return spec, badInput("--constraint: %v", err)
			}
			spec.Constraints = append(spec.Constraints, con)
		}
	}
	return spec, nil
}

// sweepSource opens the scenario of pos and returns it, its overrides
// (--set, then --seed) and the scenario resolved with them; its warnings
// go to stderr, once.
func sweepSource(cmd string, vals flagValues, pos []string, stderr io.Writer) (*scenarios.Source, []string, *scenarios.Scenario, error) {
	switch {
	case len(pos) == 0:
		return nil, nil, nil, badInput("%s: expected a scenario file or library name", cmd)
	case len(pos) > 1:
		return nil, nil, nil, badInput("%s: expected one scenario, found %d: %s", cmd, len(pos), strings.Join(pos, " "))
	}
	src, err := scenarios.Open(pos[0])
	if err != nil {
		return nil, nil, nil, inputError{err}
	}
	sets, err := seedOverride(vals.given("seed"), vals.last("seed"), vals["set"])
	if err != nil {
		return nil, nil, nil, err
	}
	s, err := scenarios.Parse(src, sets)
	if err != nil {
		return nil, nil, nil, err
	}
	printWarnings(stderr, s.Warnings())
	return src, sets, s, nil
}

// workersFlag reads --workers; 0 means GOMAXPROCS.
func workersFlag(vals flagValues) (int, error) {
	v := vals.last("workers")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, badInput("--workers %s: expected a number of workers >= 1", v)
	}
	return n, nil
}

func cmdSweep(vals flagValues, pos []string, stdout, stderr io.Writer) error {
	src, sets, s, err := sweepSource("sweep", vals, pos, stderr)
	if err != nil {
		return err
	}
	spec, err := sweepSpec(s, vals)
	if err != nil {
		return err
	}
	workers, err := workersFlag(vals)
	if err != nil {
		return err
	}
	if vals.given("find") {
		if vals.given("shard") || vals.given("param") {
			return badInput("--find searches one key on its own: it takes no --shard and no --param")
		}
		return cmdFind(src, sets, s, spec, vals, workers, stdout, stderr)
	}
	plan, err := sweep.NewPlan(src, sets, spec)
	if err != nil {
		var list scenarios.ErrorList
		if errors.As(err, &list) && !errors.As(err, new(sweep.PointError)) {
			return list
		}
		return inputError{err}
	}
	est := plan.Worst // NewPlan parsed every point
	lim, err := sweepLimits(vals, est, plan.Runs(), workers)
	if err != nil {
		return err
	}
	out := vals.last("out")
	if out == "" {
		out = filepath.Join("xdssim-out", s.Name+"-sweep")
	}
	if err := checkWritable("out", out, true); err != nil {
		return err // before the runs, not after
	}
	var shard *sweep.Shard
	if v := vals.last("shard"); v != "" {
		sh, err := sweep.ParseShard(v, os.Getenv("JOB_COMPLETION_INDEX"))
		if err != nil {
			return inputError{err}
		}
		shard = &sh
	}
	quiet := vals.given("quiet")
	var indices []int // nil: every run
	what := ""
	if shard != nil {
		indices = shard.Indices(plan.Runs())
		what = fmt.Sprintf(", shard %s: %d of them", shard, len(indices))
	}
	fmt.Fprintf(stderr, "xdssim: sweep of %s: %d points × %d seeds = %d runs%s, %s\n",
		s.Name, plan.Points(), len(plan.Seeds), plan.Runs(), what, workersText(workers))
	for _, p := range plan.Params {
		if p.Label == sweep.WhatIf {
			fmt.Fprintf(stderr, "xdssim: %s is a what-if: %s\n", p.Key, p.Why)
		}
	}
	bar := newSweepProgress(stderr, quiet)
	start := time.Now()
	runs, err := plan.Execute(indices, sweep.Options{Workers: workers, Progress: bar.update, MaxEvents: lim.events})
	bar.done()
	if err != nil {
		return boundedErr(err, est)
	}
	if !quiet {
		fmt.Fprintf(stderr, "xdssim: %d runs in %s wall\n", len(runs), time.Since(start).Round(time.Millisecond))
	}
	if shard != nil {
		b, err := sweep.ShardJSON(plan.Header, *shard, runs)
		if err != nil {
			return err
		}
		name := filepath.Join(out, shard.FileName())
		if err := writeFile(name, func(w io.Writer) error { _, err := w.Write(b); return err }); err != nil {
			return err
		}
		fmt.Fprintln(stdout, name)
		return nil
	}
	res, err := sweep.Summarize(plan.Header, runs)
	if err != nil {
		return err
	}
	return writeSweep(res, scenarioRef(pos), out, quiet, stdout, stderr)
}

func workersText(n int) string {
	if n == 0 {
		return "GOMAXPROCS workers"
	}
	if n == 1 {
		return "1 worker"
	}
	return strconv.Itoa(n) + " workers"
}

// writeSweep writes the outputs of a finished sweep, prints its points and
// best point, and returns a breachedError when no point meets the
// constraints.
func writeSweep(res *sweep.Result, ref, out string, quiet bool, stdout, stderr io.Writer) error {
	if err := checkWritable("out", out, true); err != nil {
		return err
	}
	// One set, sweep.html last: a directory never mixes two sweeps.
	if err := writeSet(
		[]string{filepath.Join(out, "sweep.json"), filepath.Join(out, "sweep.csv"), filepath.Join(out, "sweep.html")},
		[]func(io.Writer) error{res.WriteJSON, res.WriteCSV, func(w io.Writer) error { return viz.WriteSweep(w, res) }},
	); err != nil {
		return err
	}
	if !quiet {
		if err := printPoints(stdout, res); err != nil {
			return err
		}
	}
	if res.Best >= 0 {
		p := res.Points[res.Best]
		fmt.Fprintf(stdout, "best: point %d (%s)", p.Index, strings.Join(res.Points[res.Best].Values, ", "))
		for i, m := range res.Metrics {
			if strings.HasSuffix(res.Objectives[0], " "+m) {
				fmt.Fprintf(stdout, ": %s = %s", m, p.Stats[i].Text(fmtNum, "-"))
			}
		}
		fmt.Fprintf(stdout, "\nreproduce: %s\n", scenarios.Command("run", ref, res.Seeds[0], res.BestSets()))
	}
	fmt.Fprintln(stdout, filepath.Join(out, "sweep.html"))
	if len(res.Constraints) > 0 && !res.Feasible() {
		return breachedError{msg: fmt.Sprintf("no point of the sweep meets every constraint (%s)", strings.Join(res.Constraints, "; "))}
	}
	return nil
}

// maxTablePoints bounds the table of points sweep prints.
const maxTablePoints = 60

// printPoints prints a table of the points: each param's value and each
// metric's mean and 95 % interval, "*" by the points that break a
// constraint.
func printPoints(w io.Writer, res *sweep.Result) error {
	if len(res.Points) > maxTablePoints {
		_, err := fmt.Fprintf(w, "%d points: see sweep.html and sweep.csv\n", len(res.Points))
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	var head []string
	head = append(head, "point")
	for _, p := range res.Params {
		k := p.Key
		if p.Label == sweep.WhatIf {
			k += " (what-if)"
		}
		head = append(head, k)
	}
	head = append(head, res.Metrics...)
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, p := range res.Points {
		row := []string{strconv.Itoa(p.Index)}
		if !p.Feasible {
			row[0] += "*"
		}
		row = append(row, p.Values...)
		for _, st := range p.Stats {
			row = append(row, st.Text(fmtNum, "-"))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if slices.ContainsFunc(res.Points, func(p sweep.Point) bool { return !p.Feasible }) {
		fmt.Fprintf(w, "* breaks a constraint: %s\n", strings.Join(res.Constraints, "; "))
	}
	return nil
}

// fmtNum writes v with 4 significant digits.
func fmtNum(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

func cmdMerge(vals flagValues, pos []string, stdout, stderr io.Writer) error {
	if len(pos) == 0 {
		return badInput("merge: expected the directories (or files) of the shards")
	}
	var files []sweep.ShardFile
	for _, p := range pos {
		st, err := os.Stat(p)
		if err != nil {
			return badInput("merge: %v", err)
		}
		names := []string{p}
		if st.IsDir() {
			names, _ = filepath.Glob(filepath.Join(p, "shard-*-of-*.json"))
			if len(names) == 0 {
				return badInput("merge: %s holds no shard-*-of-*.json", p)
			}
		}
		for _, n := range names {
			b, err := os.ReadFile(n)
			if err != nil {
				return badInput("merge: %v", err)
			}
			files = append(files, sweep.ShardFile{Name: n, Data: b})
		}
	}
	res, err := sweep.Merge(files)
	if err != nil {
		return inputError{err}
	}
	out := vals.last("out")
	if out == "" {
		out = pos[0]
		if st, _ := os.Stat(out); st != nil && !st.IsDir() {
			out = filepath.Dir(out)
		}
	}
	fmt.Fprintf(stderr, "xdssim: merged %d shards of the sweep of %s: %d runs\n", len(files), res.Scenario, len(res.Runs))
	return writeSweep(res, res.Scenario, out, vals.given("quiet"), stdout, stderr)
}

// sweepProgress draws "[=====     ] 12/48 runs, 1m20s left" on stderr when
// it is a terminal and the sweep has taken over a second.
type sweepProgress struct{ progress }

func newSweepProgress(w io.Writer, quiet bool) *sweepProgress {
	return &sweepProgress{*newProgress(w, quiet)}
}

func (p *sweepProgress) update(done, total int) {
	if !p.enabled {
		return
	}
	t := time.Now()
	if t.Sub(p.start) < time.Second || (t.Sub(p.last) < 100*time.Millisecond && done < total) {
		return
	}
	p.last = t
	fmt.Fprintf(p.w, "\r\033[K%s", sweepProgressLine(done, total, t.Sub(p.start)))
	p.drawn = true
}

// sweepProgressLine is the bar after done of total runs in elapsed wall
// time, with the time left at the rate so far.
func sweepProgressLine(done, total int, elapsed time.Duration) string {
	const width = 30
	frac := float64(done) / float64(max(total, 1))
	n := int(frac * width)
	line := fmt.Sprintf("[%s%s] %d/%d runs", strings.Repeat("=", n), strings.Repeat(" ", width-n), done, total)
	if done > 0 && done < total {
		left := time.Duration(float64(elapsed) / float64(done) * float64(total-done))
		line += ", " + left.Round(time.Second).String() + " left"
	}
	return line
}

// worstEstimate parses the points of a scenario (point pt resolved with
// sets(pt)) and returns the largest estimate of one run.
func worstEstimate(src *scenarios.Source, points int, sets func(int) []string) (scenarios.Estimate, error) {
	var worst scenarios.Estimate
	for pt := range points {
		s, err := scenarios.Parse(src, sets(pt))
		if err != nil {
			return worst, err
		}
		worst = worst.Max(s.Estimate())
	}
	return worst, nil
}

// sweepLimits reads the limits of vals and checks runs of at most worst
// each against them, workers (0: GOMAXPROCS) at a time: every worker may
// hold a run of the costliest point at once.
func sweepLimits(vals flagValues, worst scenarios.Estimate, runs, workers int) (limits, error) {
	lim, err := parseLimits(limitFlags(vals))
	if err != nil {
		return lim, err
	}
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	all := worst
	all.Memory *= int64(max(1, min(workers, runs)))
	return lim, lim.check(all)
}

// boundedErr turns a run stopped at --max-events into the exit 4 that run
// gives; other errors are returned as they are.
func boundedErr(err error, est scenarios.Estimate) error {
	var stopped *fleet.EventLimitError
	if errors.As(err, &stopped) {
		return eventLimitError{limit: stopped.Limit, at: stopped.At, end: stopped.End, est: est.Events}
	}
	return err
}

// runErr is boundedErr for the runs of compare and --find, whose other
// errors come from the variants' overrides: bad input.
func runErr(err error, est scenarios.Estimate) error {
	if errors.As(err, new(*fleet.EventLimitError)) {
		return boundedErr(err, est)
	}
	return inputError{err}
}
