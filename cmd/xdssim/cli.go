package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/scenarios"
	"github.com/xdssim/xdssim/stamp"
	"github.com/xdssim/xdssim/viz"
)

// Exit codes.
const (
	exitOK       = 0
	exitInternal = 1
	exitInput    = 2
	exitBreached = 3 // the run breached an expectation of the scenario
)

// inputError is a problem with what the user gave: exit code 2.
type inputError struct{ err error }

func (e inputError) Error() string { return e.err.Error() }

func badInput(format string, args ...any) error {
	return inputError{fmt.Errorf(format, args...)}
}

// breachedError says a run breached some of its scenario's expectations:
// exit code 3. The run itself succeeded and its outputs are written.
// A sweep with no point that meets its constraints is one too, with msg.
type breachedError struct {
	breached, total int
	msg             string
}

func (e breachedError) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return fmt.Sprintf("%d of %d expectations breached", e.breached, e.total)
}

// Main runs the command line args and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	return exitCode(stderr, func() error { return dispatch(args, stdout, stderr) })
}

// dispatch runs the subcommand args name.
func dispatch(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, mainUsage())
		return inputError{errNoCommand}
	}
	switch cmd, rest := args[0], args[1:]; {
	case cmd == "help" || cmd == "-h" || cmd == "-help" || cmd == "--help":
		return helpCommand(rest, stdout)
	case findCommand(cmd) == nil:
		return badInput("unknown command %q (commands: %s)", cmd, strings.Join(commandNames(), ", "))
	case wantsHelp(rest):
		_, err := io.WriteString(stdout, findCommand(cmd).usage())
		return err
	default:
		return findCommand(cmd).invoke(rest, stdout, stderr)
	}
}

// errNoCommand is xdssim run without a subcommand: the usage is printed,
// and the exit code is 2.
var errNoCommand = errors.New("")

// exitCode runs cmd, prints its error and returns its exit code. A panic
// is our bug, never the user's: it is recovered here, printed with its
// stack and a request to report it, and exits 1.
func exitCode(stderr io.Writer, cmd func() error) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "xdssim: internal error: panic: %v\n\n%s\n%s\n", r, debug.Stack(), reportRequest)
			code = exitInternal
		}
	}()
	err := cmd()
	if err == nil {
		return exitOK
	}
	var in inputError
	var list scenarios.ErrorList
	var breached breachedError
	var stopped eventLimitError
	var ioErr ioError
	switch {
	case errors.Is(err, errNoCommand):
		return exitInput
	case errors.As(err, &stopped):
		fmt.Fprintf(stderr, "xdssim: %v\n", err)
		return exitEventLimit
	case errors.As(err, &breached):
		fmt.Fprintf(stderr, "xdssim: %v\n", err)
		return exitBreached
	case errors.As(err, &list):
		for _, e := range list {
			fmt.Fprintf(stderr, "xdssim: %v\n", e)
		}
		return exitInput
	case errors.As(err, &in):
		fmt.Fprintf(stderr, "xdssim: %v\n", err)
		return exitInput
	case errors.As(err, &ioErr):
		fmt.Fprintf(stderr, "xdssim: %v (the file system refused the output; %s)\n", err, ioErr.kept)
		return exitInternal
	default:
		fmt.Fprintf(stderr, "xdssim: internal error: %v\n%s\n", err, reportRequest)
		return exitInternal
	}
}

// reportRequest follows every internal error: it is a bug of xdssim.
const reportRequest = "xdssim: this is a bug in xdssim, not a problem with your input: please report it with the command line, the scenario and the output above"

var runCommand = command{
	name: "run", args: "[FILE|NAME]", scenario: true, runs: true,
	breach:  "the outputs are written, but the run breached an expectation ([[expect]]) of the scenario",
	summary: "run a scenario (default: the library's \"default\") and write its report",
	about: `Run a scenario (default: the library's "default") and write report.html,
series.csv and summary.json to the output directory. The seed and where the
report went are printed; when the scenario has expectations ([[expect]]), a
pass/FAIL table of them is printed on stdout, even with --quiet, and a
breached one exits 3 with the command that reproduces the run.

The default output directory is ./xdssim-out/<scenario> for the scenario as
it is; a run with another seed, an override or --exact-rpcs writes to
./xdssim-out/<scenario>[-seed<N>]-<ID>, ID the first 8 hex digits of the
run's ID (.xdssim-set.json). A directory that holds the outputs of another
run is refused (exit 2) unless --overwrite; the same run again replaces its
own. summary.json, report.html and --metrics name the build of xdssim and
the SHA-256 of the resolved scenario.`,
	flags: []flagDoc{flagSeed, flagSet, flagAdd,
		{name: "out", arg: "DIR", doc: "output directory (default ./xdssim-out/<scenario>, with -seed<N>-<ID> for another run of it)", dir: true},
		flagOverwrite,
		{name: "quiet", doc: "print only the seed, the report path and the expectations"},
		{name: "metrics", arg: "FILE", doc: "also write the gRFC A78 XdsClient metrics as OpenMetrics text with timestamps", file: true},
		{name: "metrics-start", arg: "TIME", doc: "the wall-clock time virtual time 0 stands for in --metrics (RFC 3339; default 1970-01-01T00:00:00Z)"},
		{name: "cpuprofile", arg: "FILE", doc: "write a CPU profile of the run to FILE", file: true},
		{name: "memprofile", arg: "FILE", doc: "write a heap profile at the end of the run to FILE", file: true},
		flagMaxMemory, flagMaxEvents, flagMaxCPU, flagForce, flagExactRPCs,
	},
	run: cmdRun,
}

// The flags that bound a run's cost (docs/limits.md).
var (
	flagMaxMemory = flagDoc{name: "max-memory", arg: "SIZE", doc: "refuse a run whose estimated peak memory is above SIZE, such as 8GiB (default: 75% of the machine's or cgroup's memory; 0: no bound; never above the cgroup's limit or what fits in RLIMIT_AS, ulimit -v)"}
	flagMaxEvents = flagDoc{name: "max-events", arg: "N", doc: "refuse a run estimated above N events, and stop one that reaches N with exit code 4 (default 1000000000; 0: no bound)"}
	flagMaxCPU    = flagDoc{name: "max-cpu", arg: "DURATION", doc: "stop the command once it has used DURATION of CPU time, such as 10m, within 0.1 s, with exit code 4 and no outputs (default: no bound)"}
	flagForce     = flagDoc{name: "force", doc: "run even when the estimate is above --max-memory or --max-events (it never replaces another run's outputs: --overwrite does)"}
)

// flagOverwrite lets a command replace the outputs of another run
// (identity.go); --force, which runs past the estimate, never does.
var flagOverwrite = flagDoc{name: "overwrite", doc: "replace the outputs of another run in the output directory (without it, such a directory is refused)"}

var validateCommand = command{
	name: "validate", args: "FILE|NAME", scenario: true,
	stopped: "checking reached --max-cpu and stopped; nothing is printed",
	summary: "check a scenario and print it with every default filled in",
	about: `Check a scenario and print it with every default filled in. The estimate
of a run's peak memory and events is printed on stderr; a scenario whose
estimate is above --max-memory or --max-events is refused (exit 2), as run
would refuse it.`,
	flags: []flagDoc{flagSeed, flagSet, flagAdd, flagMaxMemory, flagMaxEvents, flagMaxCPU, flagForce},
	run:   cmdValidate,
}

var listCommand = command{
	name: "list", summary: "list the scenarios embedded in the binary (--long: and what each shows)",
	flags: []flagDoc{{name: "long", doc: "print what each scenario shows: its situation, source and what to look at"}},
	run:   func(args []string, stdout, _ io.Writer) error { return cmdList(args, stdout) },
}

var explainCommand = command{
	name: "explain", args: "NAME", scenario: true,
	summary: "print what a library scenario shows: its situation, source and what to look at",
	run:     func(args []string, stdout, _ io.Writer) error { return cmdExplain(args, stdout) },
}

// runFlags are the flags of run and validate.
type runFlags struct {
	seed       string
	sets       []string
	out        string
	quiet      bool
	cpuprofile string
	memprofile string
	// metrics and metricsStart are run's --metrics and --metrics-start.
	metrics, metricsStart string
	args                  []string // positional arguments
	// given holds the flags given on the command line, even with an
	// empty value.
	given map[string]bool
	// maxMemory, maxEvents, maxCPU and force bound the run's cost.
	maxMemory, maxEvents, maxCPU string
	force                        bool
	// exactRPCs is run's --exact-rpcs, overwrite its --overwrite.
	exactRPCs, overwrite bool
}

type setFlag struct{ sets *[]string }

func (s setFlag) String() string     { return "" }
func (s setFlag) Set(v string) error { *s.sets = append(*s.sets, v); return nil }

// addFlag takes --add key={...} as the override "key+={...}", which
// scenarios.Parse reads as appending an element to the array of tables.
// addFlag is --add: each value given is passed to raw as it is, and to add
// as the override it stands for.
type addFlag struct{ add, raw func(string) }

func (a addFlag) String() string { return "" }
func (a addFlag) Set(v string) error {
	a.raw(v)
	key, val, _ := strings.Cut(v, "=") // a missing table is Parse's error, naming the --add
	a.add(strings.TrimSpace(key) + "+=" + val)
	return nil
}

// parseFlags parses flags that may stand before, between or after the
// positional arguments.
func parseFlags(name string, args []string, run bool) (*runFlags, error) {
	f := &runFlags{}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.seed, "seed", "", "")
	fs.Var(setFlag{&f.sets}, "set", "")
	var adds []string
	fs.Var(addFlag{add: func(v string) { f.sets = append(f.sets, v) }, raw: func(v string) { adds = append(adds, v) }}, "add", "")
	fs.StringVar(&f.cpuprofile, "cpuprofile", "", "")
	fs.StringVar(&f.memprofile, "memprofile", "", "")
	fs.StringVar(&f.maxMemory, "max-memory", "", "")
	fs.StringVar(&f.maxEvents, "max-events", "", "")
	fs.StringVar(&f.maxCPU, "max-cpu", "", "")
	fs.BoolVar(&f.force, "force", false, "")
	if run {
		fs.StringVar(&f.out, "out", "", "")
		fs.BoolVar(&f.quiet, "quiet", false, "")
		fs.StringVar(&f.metrics, "metrics", "", "")
		fs.StringVar(&f.metricsStart, "metrics-start", "", "")
		fs.BoolVar(&f.exactRPCs, "exact-rpcs", false, "")
		fs.BoolVar(&f.overwrite, "overwrite", false, "")
	}
	for {
		if err := fs.Parse(args); err != nil {
			return nil, badInput("%s: %v (see 'xdssim help')", name, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		f.args = append(f.args, args[0])
		args = args[1:]
	}
	f.given = map[string]bool{}
	var empty string
	fs.Visit(func(fl *flag.Flag) {
		f.given[fl.Name] = true
		if _, isBool := fl.Value.(interface{ IsBoolFlag() bool }); !isBool && fl.Value.String() == "" && fl.Name != "set" && fl.Name != "add" && empty == "" {
			empty = fl.Name
		}
	})
	if slices.Contains(f.sets, "") {
		empty = "set"
	}
	if slices.Contains(adds, "") && empty == "" {
		empty = "add"
	}
	// An empty value is never the default.
	switch empty {
	case "":
	case "out", "cpuprofile", "memprofile", "metrics":
		return nil, badInput("--%s: expected a path, found an empty value", empty)
	default:
		return nil, badInput("--%s: expected a value, found an empty one", empty)
	}
	if err := startCPUWatch(f.given["max-cpu"], f.maxCPU); err != nil {
		return nil, err
	}
	sets, err := seedOverride(f.given["seed"], f.seed, f.sets)
	if err != nil {
		return nil, err
	}
	f.sets = sets
	return f, nil
}

// seedOverride turns --seed N into the override seed=N after the --set
// overrides. --seed and --set seed=M together are refused: which one wins
// would be a guess. A seed is a TOML integer: from 0 to 2^63-1.
func seedOverride(given bool, seed string, sets []string) ([]string, error) {
	if !given {
		return sets, nil
	}
	n, err := strconv.ParseUint(seed, 10, 64)
	if err != nil || n > math.MaxInt64 {
		return nil, badInput("--seed %q: expected an integer from 0 to %d", seed, int64(math.MaxInt64))
	}
	for _, o := range sets {
		if setsSeed(o) {
			return nil, badInput("--seed %s and --set %s both set the seed: give one", seed, o)
		}
	}
	return append(slices.Clone(sets), "seed="+strconv.FormatUint(n, 10)), nil
}

// setsSeed reports whether the override o sets the seed, however its key
// is spelled ("seed", " seed ", "\"seed\"").
func setsSeed(o string) bool {
	key, _, _ := strings.Cut(o, "=")
	norm, err := scenarios.CanonicalKey(strings.TrimSpace(key))
	return err == nil && norm == "seed"
}

// load finds and parses the scenario named by the positional arguments,
// and prints its warnings (an older format's changed keys) on stderr.
func (f *runFlags) load(cmd string, required bool, stderr io.Writer) (*scenarios.Scenario, error) {
	_, s, err := f.loadSource(cmd, required, stderr)
	return s, err
}

// loadSource is load that returns the scenario's source too.
func (f *runFlags) loadSource(cmd string, required bool, stderr io.Writer) (*scenarios.Source, *scenarios.Scenario, error) {
	ref := scenarios.DefaultName
	switch {
	case len(f.args) > 1:
		return nil, nil, badInput("%s: expected one scenario, found %d: %s", cmd, len(f.args), strings.Join(f.args, " "))
	case len(f.args) == 1:
		ref = f.args[0]
	case required:
		return nil, nil, badInput("%s: expected a scenario file or library name", cmd)
	}
	src, err := scenarios.Open(ref)
	if err != nil {
		return nil, nil, inputError{err}
	}
	s, err := scenarios.Parse(src, f.sets)
	if err != nil {
		return nil, nil, err
	}
	printWarnings(stderr, s.Warnings())
	return src, s, nil
}

// printWarnings writes each warning of a scenario on its own line, as
// errors are written, after "warning: ".
func printWarnings(w io.Writer, warns scenarios.ErrorList) {
	for _, e := range warns {
		fmt.Fprintf(w, "xdssim: warning: %s\n", e)
	}
}

func cmdValidate(args []string, stdout, stderr io.Writer) error {
	f, err := parseFlags("validate", args, false)
	if err != nil {
		return err
	}
	lim, err := parseLimits(f)
	if err != nil {
		return err
	}
	s, err := f.load("validate", true, stderr)
	if err != nil {
		return err
	}
	est := s.Estimate()
	printEstimate(stderr, est, lim)
	if err := lim.check(est); err != nil {
		return err
	}
	// What the simulator does not use or model of a user's own files is
	// said, never dropped silently.
	for _, n := range s.MeshNotes() {
		fmt.Fprintf(stderr, "xdssim: %s\n", n)
	}
	beginWriting() // --max-cpu no longer stops a half-printed scenario
	_, err = io.WriteString(stdout, s.TOML()+s.ProfileComment())
	return err
}

func cmdList(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("list", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	long := fs.Bool("long", false, "")
	if err := fs.Parse(args); err != nil {
		return badInput("list: %v (see 'xdssim help')", err)
	}
	if fs.NArg() > 0 {
		return badInput("list: unexpected argument %q", fs.Arg(0))
	}
	if *long {
		for i, e := range scenarios.Library() {
			if i > 0 {
				fmt.Fprintln(stdout)
			}
			fmt.Fprintf(stdout, "%s: %s\n\n", e.Name, e.Description)
			for _, line := range strings.Split(strings.TrimRight(e.Header, "\n"), "\n") {
				if line == "" {
					fmt.Fprintln(stdout)
					continue
				}
				fmt.Fprintf(stdout, "    %s\n", line)
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 8, 2, ' ', 0)
	for _, e := range scenarios.Library() {
		fmt.Fprintf(tw, "%s\t%s\n", e.Name, e.Description)
	}
	return tw.Flush()
}

// cmdExplain prints a library scenario's header comment: the situation it
// reproduces, the gRFC section or issue it comes from, and what to look at
// in its report.
func cmdExplain(args []string, stdout io.Writer) error {
	switch {
	case len(args) == 0:
		return badInput("explain: expected the name of a library scenario (see 'xdssim list')")
	case len(args) > 1:
		return badInput("explain: expected one library scenario, found %d: %s", len(args), strings.Join(args, " "))
	}
	lib := scenarios.Library()
	names := make([]string, len(lib))
	for i, e := range lib {
		if e.Name == args[0] {
			_, err := io.WriteString(stdout, e.Header)
			return err
		}
		names[i] = e.Name
	}
	return badInput("explain: no library scenario is named %q (library: %s)", args[0], strings.Join(names, ", "))
}

func cmdRun(args []string, stdout, stderr io.Writer) error {
	f, err := parseFlags("run", args, true)
	if err != nil {
		return err
	}
	src, s, err := f.loadSource("run", false, stderr)
	if err != nil {
		return err
	}
	metricsStart, err := parseMetricsStart(f.metricsStart)
	if err != nil {
		return err
	}
	lim, err := parseLimits(f)
	if err != nil {
		return err
	}
	est := s.Estimate()
	if err := lim.check(est); err != nil {
		return err
	}
	id := runIdentityOf(s, f.sets, f.exactRPCs)
	out := f.out
	if !f.given["out"] {
		// The scenario as it is, with no override: its own run.
		plain, own := "", s.Seed
		if s0, err := scenarios.Parse(src, nil); err == nil {
			plain, own = runIdentityOf(s0, nil, false).ID, s0.Seed
		}
		out = defaultOut(s.Name, id, plain, own)
	}
	// Every output path is checked before the run, not after it.
	dir, err := checkOutDir(outFlag(f.given["out"]), out, stderr)
	if err != nil {
		return err
	}
	if err := dir.claim(id, f.overwrite); err != nil {
		return err
	}
	set := []output{{name: "report.html"}, {name: "series.csv"}, {name: "summary.json"}}
	// --metrics in the output directory is a file of the set; elsewhere,
	// a file of its own, written once the set is published.
	var external []output
	outs := []namedPath{{"", filepath.Join(out, "report.html")}, {"", filepath.Join(out, "series.csv")}, {"", filepath.Join(out, "summary.json")}, {"", filepath.Join(out, manifestName)}}
	if f.given["metrics"] {
		outs = append(outs, namedPath{"metrics", f.metrics})
		if name, ok := dir.contains(f.metrics); ok {
			set = append(set, output{name: name})
		} else if err := checkOutputFile("metrics", f.metrics); err != nil {
			return err
		} else {
			external = append(external, output{flag: "metrics", name: f.metrics})
		}
	}
	for _, o := range []struct{ flag, name string }{{"memprofile", f.memprofile}, {"cpuprofile", f.cpuprofile}} {
		if f.given[o.flag] {
			outs = append(outs, namedPath{o.flag, o.name})
			if err := checkOutputFile(o.flag, o.name); err != nil {
				return err
			}
		}
	}
	if err := checkDistinct(outs); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "xdssim: scenario %s, seed %d\n", s.Name, s.Seed)
	if !f.quiet {
		printEstimate(stderr, est, lim)
	}
	cfg := s.FleetConfig()
	if n := len(cfg.WhatIf); n > 0 {
		fmt.Fprintf(stderr, "xdssim: a hypothetical run (what_if = true): %d setting(s) no shipping gRPC client has; summary.json and the report list them\n", n)
	}

	var cpu *cpuProfile
	if f.given["cpuprofile"] {
		if cpu, err = startCPUProfile(f.cpuprofile); err != nil {
			return err
		}
		defer cpu.abandon()
	}

	mem := newHeapWatch()
	bar := newProgress(stderr, f.quiet)
	start := time.Now()
	watch := &eventWatch{w: stderr, est: est.Events}
	res, err := fleet.Run(cfg, fleet.Options{
		Progress: func(now, end time.Duration) {
			mem.sample()
			bar.update(now, end)
		},
		MaxEvents: lim.events,
		Events:    func(n uint64, now time.Duration) { watch.update(n, now, cfg.Duration) },
		ExactRPCs: f.exactRPCs,
	})
	if err != nil {
		bar.done()
		return boundedErr(err, est)
	}
	wall := time.Since(start)
	mem.sample()
	bar.done()

	if cpu != nil {
		if err := cpu.finish(); err != nil {
			return err
		}
	}
	if f.given["memprofile"] {
		if err := writeHeapProfile(f.memprofile); err != nil {
			return err
		}
	}
	expectations := viz.Evaluate(res, s.Expect)
	report := filepath.Join(out, "report.html")
	st := stamp.Run{Build: stamp.Read(), ScenarioSHA256: id.ScenarioSHA256[0]}
	set[0].write = func(w io.Writer) error { return viz.WriteReport(w, res, st, expectations...) }
	set[1].write = func(w io.Writer) error { return viz.WriteSeriesCSV(w, res) }
	set[2].write = func(w io.Writer) error { return viz.WriteSummary(w, res, st, expectations...) }
	for i := range set[3:] {
		set[3+i].write = metricsWriter(metricsStart, res, st)
	}
	for i := range external {
		external[i].write = metricsWriter(metricsStart, res, st)
	}
	if err := dir.publish(set, external); err != nil {
		return err
	}
	if !f.quiet {
		rate := float64(res.Events) / max(wall.Seconds(), 1e-9)
		fmt.Fprintf(stderr, "xdssim: %d clients, %s virtual, %d events in %s wall (%.3g events/s), peak heap %s\n",
			res.Clients, res.Duration, res.Events, wall.Round(time.Millisecond), rate, formatBytes(mem.peak))
	}
	// The expectations are the verdict a CI job reads: --quiet keeps them.
	if err := viz.WriteExpectations(stdout, expectations); err != nil {
		return err
	}
	fmt.Fprintln(stdout, report)
	if n := viz.Breached(expectations); n > 0 {
		ref := scenarioRef(f.args)
		fmt.Fprintf(stderr, "xdssim: breached with seed %d; reproduce: %s\nxdssim: find a smaller scenario that breaches it: %s\n",
			s.Seed, exactFlag(scenarios.Command("run", ref, s.Seed, f.sets), f.exactRPCs),
			exactFlag(scenarios.Command("shrink", ref, s.Seed, f.sets), f.exactRPCs))
		return breachedError{breached: n, total: len(expectations)}
	}
	return nil
}

// writeHeapProfile writes a heap profile of the live heap to name,
// atomically.
func writeHeapProfile(name string) error {
	runtime.GC()
	return writeFile("memprofile", name, pprof.WriteHeapProfile)
}

// heapWatch keeps the largest live heap seen at its samples.
type heapWatch struct {
	s    []metrics.Sample
	peak uint64
}

func newHeapWatch() *heapWatch {
	return &heapWatch{s: []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}}
}

func (h *heapWatch) sample() {
	metrics.Read(h.s)
	if h.s[0].Value.Kind() == metrics.KindUint64 {
		h.peak = max(h.peak, h.s[0].Value.Uint64())
	}
}

func formatBytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	default:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
}
