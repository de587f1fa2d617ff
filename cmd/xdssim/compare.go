package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/xdssim/xdssim/scenarios"
	"github.com/xdssim/xdssim/stamp"
	"github.com/xdssim/xdssim/sweep"
	"github.com/xdssim/xdssim/viz"
)

var compareCommand = command{
	runs:   true,
	breach: "the outputs are written, but a run of a variant breached an expectation ([[expect]]) of its scenario",
	name:   "compare", args: "A [B]", scenario: true,
	summary: "run two variants on the same seeds and report every headline figure's paired difference",
	about: `Run two variants on the same seeds (common random numbers) and report, for
every headline figure, each variant's mean over the seeds and the difference
B − A paired by seed with its 95 % interval (a bootstrap-t interval; when it
holds 0 the runs show no difference), beside the interval unpaired runs would
give (Welch's t). Each mean's interval stays inside the metric's support. The variants are two scenarios (compare A B), or one scenario with
--a and --b overrides (compare FILE --b key=value), or one scenario run by two
profiles (compare FILE --profiles grpc-go,grpc-java). --set applies to both.
Writes compare.json and compare.html (the table, and the timelines of the
first seed of both overlaid) to the output directory. How many runs of each
variant breached each expectation ([[expect]]) of its scenario is printed and
written; any breach exits 3 after the outputs are written.

The default output directory is ./xdssim-out/compare-<A>-<B>[-seed<N>]-<ID>
(-seed<N> when --seed is not the scenario's own), ID the first 8 hex digits
of the comparison's ID (.xdssim-set.json), which both variants' resolved
scenarios, the seeds and the metrics make: two comparisons never share one. A directory that holds the outputs of another
run is refused (exit 2) unless --overwrite; the same comparison again
replaces its own. compare.json and compare.html name the build of xdssim
and the SHA-256 of each variant's resolved scenario.`,
	flags: []flagDoc{
		{name: "a", arg: "key=value", doc: "an override of variant A only (repeatable)"},
		{name: "b", arg: "key=value", doc: "an override of variant B only (repeatable)"},
		{name: "profiles", arg: "P,Q", doc: "run every group of A with profile P and of B with profile Q"},
		{name: "seeds", arg: "N", doc: "seeds, from the scenario's seed on (default 10)"},
		{name: "metric", arg: "PATH", doc: "a summary.json path to compare (repeatable; default the headline figures)"},
		{name: "workers", arg: "N", doc: "runs at once (default GOMAXPROCS)"},
		{name: "out", arg: "DIR", doc: "output directory (default ./xdssim-out/compare-<A>-<B>[-seed<N>]-<ID>)", dir: true},
		flagOverwrite,
		{name: "quiet", doc: "print only where the report went"},
		flagSeed, flagSet, flagAdd, flagMaxMemory, flagMaxEvents, flagMaxCPU, flagForce, flagExactRPCs,
	},
	exec: cmdCompare,
}

func cmdCompare(vals flagValues, pos []string, stdout, stderr io.Writer) error {
	if len(pos) == 0 || len(pos) > 2 {
		return badInput("compare: expected two scenarios, or one with --a, --b or --profiles; found %d", len(pos))
	}
	if len(pos) == 1 && !vals.given("a") && !vals.given("b") && !vals.given("profiles") {
		return badInput("compare: with one scenario, give --a, --b or --profiles to make two variants")
	}
	base, err := seedOverride(vals.given("seed"), vals.last("seed"), vals["set"])
	if err != nil {
		return err
	}
	for _, side := range []string{"a", "b"} {
		for _, o := range vals[side] {
			if setsSeed(o) {
				return badInput("--%s %s: compare runs both variants on the same seeds (--seed, --seeds): a variant has no seed of its own", side, o)
			}
		}
	}
	refs := []string{pos[0], pos[len(pos)-1]}
	var variants [2]sweep.Variant
	var resolved [2]*scenarios.Scenario
	var profiles []string
	if v := vals.last("profiles"); v != "" {
		profiles = strings.Split(v, ",")
		if len(profiles) != 2 || profiles[0] == "" || profiles[1] == "" {
			return badInput("--profiles %s: expected two profiles, P,Q", v)
		}
	}
	for i, side := range []string{"a", "b"} {
		src, err := scenarios.Open(refs[i])
		if err != nil {
			return inputError{err}
		}
		sets := append(append([]string{}, base...), vals[side]...)
		s, err := scenarios.Parse(src, sets)
		if err != nil {
			return err
		}
		printWarnings(stderr, s.Warnings())
		if profiles != nil {
			for g := range s.Fleet.Groups {
				sets = append(sets, fmt.Sprintf("fleet.group[%d].profile=%q", g, profiles[i]))
			}
			if s, err = scenarios.Parse(src, sets); err != nil {
				return err
			}
		}
		resolved[i] = s
		name := refs[i]
		for _, o := range sets {
			flag, arg := scenarios.OverrideFlag(o)
			name += " " + flag + " " + scenarios.ShellQuote(arg)
		}
		variants[i] = sweep.Variant{Name: name, Src: src, Sets: sets}
	}
	seeds := 10
	if v := vals.last("seeds"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			return badInput("--seeds %s: expected a number of seeds from 1 to 10000", v)
		}
		seeds = n
	}
	workers, err := workersFlag(vals)
	if err != nil {
		return err
	}
	var lim limits
	var est scenarios.Estimate
	for i, r := range resolved {
		e := r.Estimate()
		if lim, err = sweepLimits(vals, e, 2*seeds, workers); err != nil {
			return fmt.Errorf("variant %s: %w", []string{"A", "B"}[i], err)
		}
		est = est.Max(e)
	}
	seedList, err := consecutiveSeeds(resolved[0].Seed, seeds)
	if err != nil {
		return err
	}
	exact := vals.given("exact-rpcs")
	hashes := []string{resolved[0].SHA256(), resolved[1].SHA256()}
	overrides := overrideFlags(base)
	for _, side := range []string{"a", "b"} {
		for _, o := range vals[side] {
			overrides = append(overrides, "--"+side+" "+scenarios.ShellQuote(o))
		}
	}
	if profiles != nil {
		overrides = append(overrides, "--profiles "+strings.Join(profiles, ","))
	}
	id := newIdentity("compare", resolved[0].Name+" vs "+resolved[1].Name, hashes, seedList, overrides, struct {
		ScenarioSHA256 []string
		Seeds          []uint64
		Metrics        []string
		ExactRPCs      bool
	}{hashes, seedList, vals["metric"], exact})
	out := vals.last("out")
	if out == "" {
		out = defaultOut("compare-"+resolved[0].Name+"-"+resolved[1].Name, id, "", ownSeed(variants[0].Src, resolved[0]))
	}
	dir, err := checkOutDir(outFlag(vals.given("out")), out, stderr)
	if err != nil {
		return err // before the runs, not after
	}
	if err := dir.claim(id, vals.given("overwrite")); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "xdssim: compare on %d seeds from %d, %s\nxdssim: A = %s\nxdssim: B = %s\n",
		seeds, seedList[0], workersText(workers), variants[0].Name, variants[1].Name)
	bar := newSweepProgress(stderr, vals.given("quiet"))
	start := time.Now()
	c, err := sweep.Compare(variants[0], variants[1], seedList, vals["metric"], sweep.Options{Workers: workers, Progress: bar.update, MaxEvents: lim.events,
		ExactRPCs: exact, Build: stamp.Read()})
	bar.done()
	if err != nil {
		return runErr(err, est)
	}
	if !vals.given("quiet") {
		fmt.Fprintf(stderr, "xdssim: %d runs in %s wall\n", 2*seeds, time.Since(start).Round(time.Millisecond))
	}
	b, err := c.JSON()
	if err != nil {
		return err
	}
	report := filepath.Join(out, "compare.html")
	if err := dir.publish([]output{
		{name: "compare.json", write: writeBytes(b)},
		{name: "compare.html", write: func(w io.Writer) error { return viz.WriteCompare(w, c) }},
	}, nil); err != nil {
		return err
	}
	if !vals.given("quiet") {
		tw := tabwriter.NewWriter(stdout, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "metric\tA\tB\tB − A paired\tunpaired\t")
		for _, r := range c.Rows {
			verdict := ""
			if r.Paired.N >= 2 && r.Paired.Contains(0) {
				verdict = "no difference shown"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Metric, r.A.Text("-"), r.B.Text("-"), sweep.Signed(r.Paired), sweep.Signed(r.Unpaired), verdict)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	breached := 0
	for i, es := range c.Expect {
		for _, e := range es {
			if e.Breached == 0 {
				continue
			}
			if breached == 0 {
				fmt.Fprintln(stdout, "the scenarios' own expectations ([[expect]]) describe them as written, and a variant that changes one may breach them; breached:")
			}
			breached++
			fmt.Fprintf(stdout, "  %s of %s in %d of %d runs\n", e.Expect, []string{"A", "B"}[i], e.Breached, e.Runs)
		}
	}
	fmt.Fprintln(stdout, report)
	if breached > 0 {
		return breachedError{msg: fmt.Sprintf("%d expectations of the variants' scenarios breached (the outputs are written)", breached)}
	}
	return nil
}
