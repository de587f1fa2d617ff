package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
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
	"github.com/xdssim/xdssim/stamp"
	"github.com/xdssim/xdssim/sweep"
	"github.com/xdssim/xdssim/viz"
)

var sweepCommand = command{
	name: "sweep", args: "FILE|NAME", scenario: true, runs: true,
	breach:  "the outputs are written, but no setting of the knobs is known to meet the constraints under every swept condition (with --find: no seed crosses the bound, or no bound holds on the seeds)",
	summary: "tune a scenario's knobs over a grid × seeds on every core: the setting that holds under every condition, and how sure it is",
	about: `Run the scenario once per point of a grid of values of some of its keys and
per seed, on a pool of workers (GOMAXPROCS by default), and write sweep.json,
sweep.csv (one row per run) and sweep.html to the output directory. The grid,
the seeds, the metrics, the objectives and the constraints come from the
scenario's [sweep] table; each kind of flag given replaces what the table says
of it, and the output says where the goal came from.

Each swept key is a knob (a policy key: timers, backoffs, retry policy,
fallback servers, control-plane capacity) or a condition (everything else:
fleet size, outage, restarts, profile, load); --role key=knob|condition
overrides that. The recommendation is a setting of the knobs that meets the
constraints under every swept condition, never a condition's value, with the
best setting under each condition beside it.

A constraint "PATH <= N" is judged on every run: a point meets it when the
share of its runs that breach it is below --risk (default 5 %) with 95 %
confidence (an exact binomial bound), breaks it when the share is above
--risk with 95 % confidence, and is undecided otherwise: 0 breaches in 5 runs
is "risk up to 45 %", not safe. "mean PATH <= N" judges the mean's 95 %
interval instead. Among the settings that meet every constraint, the best for
the first objective is picked by Kim and Nelson's ranking-and-selection
procedure, with an indifference zone (--indifference, default 5 % of the
largest mean) and a 95 % probability of correct selection. --seeds is a
start: points whose verdict is undecided, or whose setting cannot yet be told
from the best, get more seeds, round by round (doubling) up to --max-seeds
(default: enough seeds to show the risk with no breach, 59 at 5 %). The
output says which points were decided and on how many seeds. Outputs are
byte-identical whatever the number of workers.

--shard i/n runs only every n-th run of the first seeds from the i-th (i
defaults to JOB_COMPLETION_INDEX, as a Kubernetes Indexed Job sets it) and
writes shard-i-of-n.json; 'xdssim merge' combines the shards into what a
sweep of those seeds writes (no seeds are added). --find key=lo..hi searches,
seed by seed, for the value of key at which the one --constraint stops
holding, refining each seed's bracket below the seed-to-seed spread, and
prints each seed's threshold, their median and the bound that holds on a
share of seeds (--coverage, default 90 %) with 95 % confidence.

The default output directory is ./xdssim-out/<scenario>-sweep for the
[sweep] table as it is, ./xdssim-out/<scenario>-sweep[-seed<N>]-<ID> when a
flag changes the sweep (ID: the first 8 hex digits of its ID in
.xdssim-set.json), and ./xdssim-out/<scenario>-find[-seed<N>]-<ID> for --find. A
directory that holds another run's outputs is refused (exit 2) unless
--overwrite, and so is a shard file of another sweep; the same sweep again
replaces its own. sweep.json, sweep.html, find.json and each shard name the
build of xdssim and the SHA-256 of the resolved scenario.`,
	flags: []flagDoc{
		{name: "param", arg: "key=VALUES", doc: "vary key over v1,v2,… or lo..hi:steps (repeatable; the --param flags replace the [sweep] params)"},
		{name: "role", arg: "key=ROLE", doc: "make a swept key a knob (the sweep may recommend its values) or a condition (the recommendation must hold under each); default by key"},
		{name: "seeds", arg: "N", doc: "seeds every point runs first, from the scenario's seed on (default [sweep] seeds, else 5)"},
		{name: "max-seeds", arg: "N", doc: "the most seeds a point gets while its answer is open (default [sweep] max_seeds, else enough to show --risk with no breach: 59 at 5 %); --seeds: no more"},
		{name: "risk", arg: "R", doc: "the accepted share of runs breaching a constraint, 0.05 or 5% (default [sweep] risk, else 5 %)"},
		{name: "indifference", arg: "D", doc: "the smallest difference of the objective that matters: 12.5 in its unit, or 5% of the largest mean (default [sweep] indifference, else 5%)"},
		{name: "metric", arg: "PATH", doc: "a summary.json path to record and chart (repeatable; default [sweep] metrics, else the headline figures)"},
		{name: "objective", arg: "GOAL", doc: "\"minimize PATH\" or \"maximize PATH\" (repeatable, at most 2; replaces [sweep] objectives)"},
		{name: "constraint", arg: "BOUND", doc: "\"PATH <= N\" (or <, >=, >) on every run, or \"mean PATH <= N\" on the mean (repeatable; replaces [sweep] constraints)"},
		{name: "workers", arg: "N", doc: "runs at once (default GOMAXPROCS)"},
		{name: "out", arg: "DIR", doc: "output directory (default ./xdssim-out/<scenario>-sweep, with -seed<N>-<ID> for another sweep of it; --find: <scenario>-find[-seed<N>]-<ID>)", dir: true},
		flagOverwrite,
		{name: "shard", arg: "i/n", doc: "run shard i of n of the first seeds and write shard-i-of-n.json (i defaults to $JOB_COMPLETION_INDEX)"},
		{name: "find", arg: "key=lo..hi", doc: "bisect key between lo and hi for where the --constraint stops holding, seed by seed"},
		{name: "coverage", arg: "Q", doc: "--find: the share of seeds the safe bound must hold on, 0.9 or 90% (default 90 %)"},
		{name: "resolution", arg: "X", doc: "--find: refine each seed's bracket to X (default a tenth of the seed-to-seed spread)"},
		{name: "steps", arg: "N", doc: "--find: the most bisection steps per seed (default 40)"},
		{name: "quiet", doc: "print no progress and no table, only the recommendation and where the outputs went"},
		flagSeed, flagSet, flagAdd, flagMaxMemory, flagMaxEvents, flagMaxCPU, flagForce, flagExactRPCs,
	},
	exec: cmdSweep,
}

var mergeCommand = command{
	breach: "the outputs are written, but no setting of the knobs is known to meet the constraints under every swept condition",
	name:   "merge", args: "DIR|FILE...",
	summary: "combine the shards of a sweep (shard-*.json) into what one unsharded sweep writes",
	about: `Read the shard files (shard-I-of-N.json) that 'xdssim sweep --shard' wrote, from
the directories or files given, check that they are every shard of one sweep,
and write sweep.json, sweep.csv and sweep.html to the output directory: byte for
byte what one unsharded sweep writes. Like sweep, it prints the best point and
exits 3 when the sweep has constraints that no point meets. The shards must all
name one build of xdssim; sweep.json names it, and the build that merged them
when another. An output directory that holds another run's outputs is refused
(exit 2) unless --overwrite; merging the same shards again replaces its own.`,
	flags: []flagDoc{
		{name: "out", arg: "DIR", doc: "output directory (default: the first DIR)", dir: true},
		flagOverwrite,
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
		spec.Params = append(spec.Params, p) // a key given twice is Resolve's error
	}
	for _, a := range vals["role"] {
		key, role, err := sweep.ParseRole(a)
		if err != nil {
			return spec, inputError{err}
		}
		found := false
		for i := range spec.Params {
			if spec.Params[i].Key == key {
				spec.Params[i].Role, found = role, true
			}
		}
		if !found {
			return spec, badInput("--role %s: %s is not a swept key (give it with --param or in [sweep])", a, key)
		}
	}
	if v, ok := flagGiven(vals, "seeds"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			return spec, badInput("--seeds %s: expected a number of seeds from 1 to 10000", v)
		}
		spec.Seeds = n
		if spec.MaxSeeds > 0 && spec.MaxSeeds < n {
			spec.MaxSeeds = n // the table's bound gives way to the flag's start
		}
	}
	if v, ok := flagGiven(vals, "risk"); ok {
		r, err := scenarios.ParseRisk(v)
		if err != nil {
			return spec, badInput("--risk: %v", err)
		}
		spec.Risk = r
	}
	if v, ok := flagGiven(vals, "max-seeds"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < spec.Seeds || n > 10000 {
			return spec, badInput("--max-seeds %s: expected a number of seeds from --seeds (%d) to 10000", v, spec.Seeds)
		}
		spec.MaxSeeds = n
	}
	if v, ok := flagGiven(vals, "indifference"); ok {
		ind, err := scenarios.ParseIndifference(v)
		if err != nil {
			return spec, badInput("--indifference: %v", err)
		}
		spec.Indifference = ind
	}
	if vals.given("metric") {
		spec.Metrics = vals["metric"]
	}
	if vals.given("objective") {
		spec.Objectives, spec.ObjectivesFrom = nil, "--objective"
		for _, o := range vals["objective"] {
			ob, err := scenarios.ParseObjective(o)
			if err != nil {
				return spec, badInput("--objective: %v", err)
			}
			spec.Objectives = append(spec.Objectives, ob)
		}
	}
	if vals.given("constraint") {
		spec.Constraints, spec.ConstraintsFrom = nil, "--constraint"
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

// flagGiven returns the flag's last value and whether it was given; an
// empty value given is an error of its parser, never the default.
func flagGiven(vals flagValues, name string) (string, bool) {
	if !vals.given(name) {
		return "", false
	}
	return vals.last(name), true
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
	plan, err := sweep.Resolve(src, sets, spec)
	if err != nil {
		return planError(err)
	}
	plan.ExactRPCs = vals.given("exact-rpcs")
	id := sweepIdentity(plan.Header)
	out := vals.last("out")
	if out == "" {
		out = defaultOut(s.Name+"-sweep", id, plainSweep(src), ownSeed(src, s))
	}
	var shard *sweep.Shard
	if v, ok := flagGiven(vals, "shard"); ok {
		sh, err := sweep.ParseShard(v, os.Getenv("JOB_COMPLETION_INDEX"))
		if err != nil {
			return inputError{err}
		}
		shard = &sh
	}
	// The outputs' paths are checked before the runs, not after. A shard
	// is one file, beside the other shards; a sweep's outputs are a set.
	var dir *outDir
	if shard != nil {
		if err := checkShardOut(outFlag(vals.given("out")), out, shard.FileName(), plan.Header, vals.given("overwrite")); err != nil {
			return err
		}
	} else if dir, err = checkOutDir(outFlag(vals.given("out")), out, stderr); err != nil {
		return err
	} else if err := dir.claim(id, vals.given("overwrite")); err != nil {
		return err
	}
	quiet := vals.given("quiet")
	what := ""
	if shard != nil {
		what = fmt.Sprintf(", shard %s: %d of them", shard, shard.Count(plan.Runs()))
	}
	// Said at once: checking a large grid's every point takes a while.
	fmt.Fprintf(stderr, "xdssim: sweep of %s: %d points × %d seeds = %d runs%s, %s\n",
		s.Name, plan.Points(), len(plan.Seeds), plan.Runs(), what, workersText(workers))
	if !quiet && plan.Points() >= bigGrid {
		fmt.Fprintf(stderr, "xdssim: checking the %d points of the grid before any run\n", plan.Points())
	}
	check := newSweepProgress(stderr, quiet)
	check.unit = "points checked"
	err = plan.Check(sweep.Options{Workers: workers, Progress: check.update})
	check.done()
	if err != nil {
		return planError(err)
	}
	for _, p := range plan.Params {
		if p.Label == sweep.WhatIf {
			fmt.Fprintf(stderr, "xdssim: %s is a what-if: %s\n", p.Key, p.Why)
		}
	}
	est := plan.Worst // Check parsed every point
	lim, err := sweepLimits(vals, est, plan.Runs(), workers)
	if err != nil {
		return err
	}
	var indices []int // nil: every run
	if shard != nil {
		indices = shard.Indices(plan.Runs())
	}
	bar := newSweepProgress(stderr, quiet)
	start := time.Now()
	// The bar counts every run so far; rounds of added seeds extend it.
	done := 0
	opts := sweep.Options{Workers: workers, MaxEvents: lim.events, ExactRPCs: plan.ExactRPCs, Build: stamp.Read(),
		Progress: func(d, total int) { bar.update(done+d, done+total) },
		Round: func(sofar, adding int) {
			done = sofar
			if !quiet {
				bar.done()
				fmt.Fprintf(stderr, "xdssim: %d runs so far; %d more for the points whose answer is still open\n", sofar, adding)
			}
		}}
	if shard != nil {
		runs, err := plan.Execute(indices, opts)
		bar.done()
		if err != nil {
			return boundedErr(err, est)
		}
		if !quiet {
			fmt.Fprintf(stderr, "xdssim: %d runs in %s wall\n", len(runs), time.Since(start).Round(time.Millisecond))
		}
		b, err := sweep.ShardJSON(plan.Header, opts.Build, *shard, runs)
		if err != nil {
			return err
		}
		name := filepath.Join(out, shard.FileName())
		if err := writeFile("out", name, writeBytes(b)); err != nil {
			return err
		}
		fmt.Fprintln(stdout, name)
		return nil
	}
	res, err := plan.Run(opts)
	bar.done()
	if err != nil {
		return boundedErr(err, est)
	}
	if !quiet {
		fmt.Fprintf(stderr, "xdssim: %d runs in %s wall\n", len(res.Runs), time.Since(start).Round(time.Millisecond))
	}
	return writeSweep(res, scenarioRef(pos), dir, quiet, stdout, stderr)
}

// consecutiveSeeds returns the n seeds from first on, refusing, before any
// run, seeds past the largest a scenario takes (2^63-1: a TOML integer).
func consecutiveSeeds(first uint64, n int) ([]uint64, error) {
	if first > math.MaxInt64-uint64(n-1) {
		return nil, badInput("seed: %d seeds from %d pass the largest seed, %d", n, first, int64(math.MaxInt64))
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = first + uint64(i)
	}
	return out, nil
}

// bigGrid is the size of a grid whose checking sweep announces.
const bigGrid = 1000

// planError is the exit code's error of a plan refused: the scenario's
// own errors as they are, a point's or the grid's as bad input.
func planError(err error) error {
	var list scenarios.ErrorList
	if errors.As(err, &list) && !errors.As(err, new(sweep.PointError)) {
		return list
	}
	return inputError{err}
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

// writeSweep writes the outputs of a finished sweep, prints its points,
// its recommendation and where they went, and returns a breachedError when
// it has constraints and no setting of the knobs is known to meet them
// under every condition.
func writeSweep(res *sweep.Result, ref string, dir *outDir, quiet bool, stdout, stderr io.Writer) error {
	// One set: a directory never mixes two sweeps.
	if err := dir.publish([]output{
		{name: "sweep.json", write: res.WriteJSON},
		{name: "sweep.csv", write: res.WriteCSV},
		{name: "sweep.html", write: func(w io.Writer) error { return viz.WriteSweep(w, res) }},
	}, nil); err != nil {
		return err
	}
	out := dir.name
	if !quiet {
		printGoal(stdout, res)
		if err := printPoints(stdout, res); err != nil {
			return err
		}
	}
	printRecommendation(stdout, res, ref, quiet)
	if !quiet {
		printExpectations(stdout, res)
	}
	fmt.Fprintln(stdout, filepath.Join(out, "sweep.html"))
	if len(res.Constraints) > 0 && res.Robust.Best < 0 && !res.Feasible() {
		return breachedError{msg: "no setting of the knobs is known to meet every constraint " + res.ConditionsText() + " (" + strings.Join(res.Constraints, "; ") + ")"}
	}
	return nil
}

// printGoal says what the sweep looks for and where that came from.
func printGoal(w io.Writer, res *sweep.Result) {
	var knobs, conds []string
	for _, p := range res.Params {
		if p.Role == scenarios.Knob {
			knobs = append(knobs, p.Key)
		} else {
			conds = append(conds, p.Key)
		}
	}
	fmt.Fprintf(w, "knobs (what the sweep may recommend): %s\n", listOr(knobs, "none: the scenario's own setting"))
	fmt.Fprintf(w, "conditions (what the setting must hold under): %s\n", listOr(conds, "none"))
	for _, o := range res.Objectives {
		fmt.Fprintf(w, "objective: %s, the mean over the seeds and conditions (from %s)\n", o, res.ObjectivesFrom)
	}
	for _, c := range res.Constraints {
		con, _ := scenarios.ParseConstraint(c)
		how := fmt.Sprintf("on every run: met when under %s of runs breach it, with 95 %% confidence", sweep.Percent(res.Risk))
		if con.Mean {
			how = "on the mean: met when its 95 % interval is within the bound"
		}
		fmt.Fprintf(w, "constraint: %s, %s (from %s)\n", c, how, res.ConstraintsFrom)
	}
}

func listOr(xs []string, none string) string {
	if len(xs) == 0 {
		return none
	}
	return strings.Join(xs, ", ")
}

// maxTablePoints bounds the table of points sweep prints.
const maxTablePoints = 60

// printPoints prints a table of the points: each param's value, the seeds
// each ran, each constraint's verdict and each metric's mean and 95 %
// interval.
func printPoints(w io.Writer, res *sweep.Result) error {
	if len(res.Points) > maxTablePoints {
		_, err := fmt.Fprintf(w, "%d points: see sweep.html and sweep.csv\n", len(res.Points))
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	head := []string{"point"}
	for _, p := range res.Params {
		k := p.Key
		if p.Label == sweep.WhatIf {
			k += " (what-if)"
		}
		head = append(head, k)
	}
	head = append(head, "seeds")
	head = append(head, res.Constraints...)
	head = append(head, res.Metrics...)
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, p := range res.Points {
		row := []string{strconv.Itoa(p.Index)}
		row = append(row, p.Values...)
		row = append(row, strconv.Itoa(p.Seeds))
		for i, k := range p.Checks {
			row = append(row, res.CheckText(i, k))
		}
		for _, st := range p.Stats {
			row = append(row, st.Text("-"))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	eliminated, open := res.OpenPoints()
	if len(eliminated) > 0 {
		fmt.Fprintf(w, "undecided, but their settings are worse than one that meets the constraints: points %s (more seeds would not change the answer)\n", intsText(eliminated))
	}
	if len(open) > 0 {
		fmt.Fprintf(w, "undecided after the seeds they got: points %s (raise --max-seeds or --risk to decide them)\n", intsText(open))
	}
	return nil
}

func intsText(xs []int) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = strconv.Itoa(x)
	}
	return strings.Join(out, ", ")
}

// printRecommendation prints the robust pick and, with conditions, the
// best setting under each, each with how sure it is.
func printRecommendation(w io.Writer, res *sweep.Result, ref string, quiet bool) {
	if len(res.Objectives) == 0 && len(res.Constraints) == 0 {
		return
	}
	p := res.Robust
	if p.Best < 0 {
		fmt.Fprintln(w, res.NoPickText(p, res.ConditionsText()))
	} else {
		st := res.Settings[p.Best]
		what := "meets every constraint"
		if len(res.Constraints) == 0 {
			what = "the best objective (no constraint)"
		}
		fmt.Fprintf(w, "recommended: %s: %s %s (%d seeds each)\n", res.SettingText(p.Best), what, res.ConditionsText(), st.Seeds)
		m := res.ObjectiveMetric()
		fmt.Fprintf(w, "  %s = %s", m, p.Objective.Text("-"))
		if res.Conditions() > 1 {
			fmt.Fprint(w, " (seed by seed, the mean over the conditions)")
		}
		fmt.Fprintf(w, "\n  %s\n", res.SureText(p))
		if p.RunnerUp >= 0 && !res.EqualOnEverySeed(p) {
			fmt.Fprintf(w, "  runner-up %s: %s (runner-up − recommended, paired by seed)\n", res.VerdictText(p.RunnerUp), sweep.Signed(p.Diff))
		}
		if len(p.Tied) > 0 && !res.EqualOnEverySeed(p) {
			fmt.Fprintf(w, "  tied with it (the paired interval holds 0): %s\n", res.VerdictsText(p.Tied))
		}
		if len(p.Better) > 0 && !res.OnlyBetterUndecided(p) {
			fmt.Fprintf(w, "  maybe better but not known to meet the constraints (undecided): %s\n", res.SettingsText(p.Better))
		}
		cmd, cond := res.Reproduce(ref)
		hardest := ""
		if res.Conditions() > 1 {
			hardest = " under its hardest condition (" + strings.Join(cond, " ") + ")"
		}
		fmt.Fprintf(w, "  reproduce%s: %s\n", hardest, cmd)
	}
	if quiet || len(res.PerCondition) == 0 {
		return
	}
	fmt.Fprintln(w, "best under each condition:")
	for c, pc := range res.PerCondition {
		head := "  " + strings.Join(res.ConditionSets(c), " ") + ": "
		if pc.Best < 0 {
			fmt.Fprintf(w, "%s%s\n", head, res.NoPickText(pc, "under it"))
			continue
		}
		fmt.Fprintf(w, "%s%s, %s = %s (%d seeds); %s\n", head, res.SettingText(pc.Best), res.ObjectiveMetric(), pc.Objective.Text("-"), pc.Seeds, res.SureText(pc))
	}
}

// printExpectations lists the points at which runs breached the
// scenario's expectations. They describe the scenario as written, not
// what the sweep looks for: a point that changes it may well breach them,
// and says nothing of the recommendation.
func printExpectations(w io.Writer, res *sweep.Result) {
	head := false
	for i, e := range res.Expect {
		var at []string
		for _, p := range res.Points {
			if n := p.Expect[i]; n > 0 {
				at = append(at, fmt.Sprintf("%d (%d of %d runs)", p.Index, n, p.Seeds))
			}
		}
		if len(at) == 0 {
			continue
		}
		if !head {
			fmt.Fprintln(w, "the scenario's own expectations ([[expect]]) describe it as written, not what the sweep looks for; breached:")
			head = true
		}
		points := "point "
		if len(at) > 1 {
			points = "points "
		}
		fmt.Fprintf(w, "  %s at %s%s\n", e, points, strings.Join(at, ", "))
	}
}

func cmdMerge(vals flagValues, pos []string, stdout, stderr io.Writer) error {
	if len(pos) == 0 {
		return badInput("merge: expected the directories (or files) of the shards")
	}
	out := vals.last("out")
	if out == "" {
		out = pos[0]
		if st, _ := os.Stat(out); st != nil && !st.IsDir() {
			out = filepath.Dir(out)
		}
	}
	dir, err := checkOutDir(outFlag(vals.given("out")), out, stderr)
	if err != nil {
		return err // before the shards are read, not after
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
			files = append(files, sweep.ShardFile{Name: n, Read: func() ([]byte, error) { return readShardFile(n) }})
		}
	}
	res, err := sweep.Merge(files)
	if err != nil {
		return inputError{err}
	}
	if b := stamp.Read(); b != res.Build {
		res.MergedBy = &b
	}
	if err := dir.claim(mergedIdentity(res.Header), vals.given("overwrite")); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "xdssim: merged %d shards of the sweep of %s: %d runs\n", len(files), res.Scenario, len(res.Runs))
	return writeSweep(res, res.Scenario, dir, vals.given("quiet"), stdout, stderr)
}

// readShardFile reads a shard's file: a regular file (not a pipe, which
// would hang, nor a device such as /dev/zero, which never ends) of at most
// sweep.MaxShardSize bytes, checked before it is read.
func readShardFile(name string) ([]byte, error) {
	fh, err := openRegular(name)
	if err != nil {
		return nil, fmt.Errorf("%v", unwrapPath(err))
	}
	defer fh.Close()
	if st, err := fh.Stat(); err != nil || st.Size() > sweep.MaxShardSize {
		return nil, fmt.Errorf("larger than %d MiB: split the sweep into more shards", sweep.MaxShardSize>>20)
	}
	b, err := io.ReadAll(io.LimitReader(fh, sweep.MaxShardSize+1))
	if err != nil {
		return nil, fmt.Errorf("%v", unwrapPath(err))
	}
	return b, nil
}

// sweepProgress draws "[=====     ] 12/48 runs, 1m20s left" on stderr when
// it is a terminal and the sweep has taken over a second.
type sweepProgress struct {
	progress
	// unit is what it counts: "runs" unless set.
	unit string
}

func newSweepProgress(w io.Writer, quiet bool) *sweepProgress {
	return &sweepProgress{progress: *newProgress(w, quiet), unit: "runs"}
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
	fmt.Fprintf(p.w, "\r\033[K%s", sweepProgressLine(done, total, p.unit, t.Sub(p.start)))
	p.drawn = true
}

// sweepProgressLine is the bar after done of total runs (or another unit)
// in elapsed wall time, with the time left at the rate so far.
func sweepProgressLine(done, total int, unit string, elapsed time.Duration) string {
	const width = 30
	frac := float64(done) / float64(max(total, 1))
	n := int(frac * width)
	line := fmt.Sprintf("[%s%s] %d/%d %s", strings.Repeat("=", n), strings.Repeat(" ", width-n), done, total, unit)
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

// perSweepRun is what a sweep keeps of each run it has made until it
// writes its outputs: the run's figures and its row of sweep.csv
// (measured: 400 points × 2 seeds of a two-client scenario add 15 MB).
const perSweepRun = 24 << 10

// sweepLimits reads the limits of vals and checks runs of at most worst
// each against them, workers (0: GOMAXPROCS) at a time: every worker may
// hold a run of the costliest point at once, and the sweep keeps
// perSweepRun of each of its runs.
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
	if kept := int64(runs) * perSweepRun; kept > 0 {
		all.Memory += kept
		all.Drivers = append([]scenarios.Driver{{Keys: "sweep params, seeds", What: fmt.Sprintf("%d runs kept", runs), Cost: kept}}, all.Drivers...)
		slices.SortStableFunc(all.Drivers, func(a, b scenarios.Driver) int { return cmp.Compare(b.Cost, a.Cost) })
	}
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

// checkShardOut checks, before the runs, that the shard file name of the
// sweep h can be written in the directory out (made when missing), beside
// the other shards: a file there of that name must be a shard of the same
// sweep (the same header_sha256), which the new one replaces, unless
// overwrite.
func checkShardOut(flag, out, name string, h sweep.Header, overwrite bool) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return badInput("%s: %v", refer(flag, out), unwrapPath(err))
	}
	p := filepath.Join(out, name)
	if err := checkOutputFile(flag, p); err != nil {
		return err
	}
	if _, err := os.Lstat(p); err != nil || overwrite {
		return nil
	}
	want, err := sweep.HeaderSHA256(h)
	if err != nil {
		return err
	}
	var prev struct {
		Schema       string   `json:"schema"`
		HeaderSHA256 string   `json:"header_sha256"`
		Scenario     string   `json:"scenario"`
		Seeds        []uint64 `json:"seeds"`
	}
	what := "a file that is not a shard of this version of xdssim"
	if b, err := readShardFile(p); err == nil && json.Unmarshal(b, &prev) == nil && prev.Schema == sweep.ShardSchema && prev.Scenario != "" && len(prev.Seeds) > 0 {
		if prev.HeaderSHA256 == want {
			return nil // the same shard of the same sweep
		}
		what = fmt.Sprintf("a shard of another sweep, of %s, %s", prev.Scenario, seedsText(prev.Seeds))
	}
	return badInput("%s: %s is %s; this is a sweep of %s, %s, and nothing was run. Write the shards elsewhere with --out DIR, or replace it with --overwrite",
		refer(flag, out), name, what, h.Scenario, seedsText(h.Seeds))
}

// sweepIdentity is the identity of the outputs of the sweep h: its header
// determines them (merged shards of it write the same).
func sweepIdentity(h sweep.Header) runIdentity {
	return newIdentity("sweep", h.Scenario, []string{h.ScenarioSHA256}, h.Seeds, overrideFlags(h.Sets), h)
}

// mergedIdentity is the identity of the merged shards of the sweep h:
// the sweep's own when it adds no seeds, since it then writes what they
// write, and else one of their own: shards never add seeds
// (docs/distributed-sweeps.md), so the unsharded sweep would have run
// more and written another set.
func mergedIdentity(h sweep.Header) runIdentity {
	if h.MaxSeeds <= len(h.Seeds) {
		return sweepIdentity(h)
	}
	return newIdentity("merge", h.Scenario, []string{h.ScenarioSHA256}, h.Seeds, overrideFlags(h.Sets), h)
}

// plainSweep is the ID of the sweep of src's [sweep] table as it is, with
// no flag; "" when the table alone does not make a sweep.
func plainSweep(src *scenarios.Source) string {
	s0, err := scenarios.Parse(src, nil)
	if err != nil {
		return ""
	}
	spec, err := sweep.SpecOf(s0)
	if err != nil {
		return ""
	}
	p, err := sweep.Resolve(src, nil, spec)
	if err != nil {
		return ""
	}
	return sweepIdentity(p.Header).ID
}

// ownSeed is the seed of the scenario src as it is, with no override (s's
// when it does not parse so).
func ownSeed(src *scenarios.Source, s *scenarios.Scenario) uint64 {
	if s0, err := scenarios.Parse(src, nil); err == nil {
		return s0.Seed
	}
	return s.Seed
}
