package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/scenarios"
	"github.com/xdssim/xdssim/stamp"
)

// command is one subcommand of xdssim: what `xdssim help`, `xdssim CMD
// --help` and the shell completion scripts say of it, and what runs it.
// Every subcommand answers --help (or -h, or `xdssim help CMD`) with its
// usage before it parses anything, so its own flag parsing never sees it.
type command struct {
	// name is the subcommand; args its positional arguments as the
	// synopsis writes them ("[FILE|NAME]").
	name, args string
	// summary is the one line `xdssim help` lists.
	summary string
	// about says what the command does, in a paragraph or two; its usage
	// prints it after the synopsis.
	about string
	// flags are the command's flags, in the order its usage lists them.
	// A test checks that the command accepts each.
	flags []flagDoc
	// scenario says the positional argument is a scenario: completion
	// offers the library's names and *.toml files.
	scenario bool
	// run runs the command on its arguments as given; or exec runs it on
	// its flags and positional arguments as parse parsed them.
	run  func(args []string, stdout, stderr io.Writer) error
	exec func(vals flagValues, pos []string, stdout, stderr io.Writer) error
	// breach says what exit code 3 means for the command ("the run
	// breached an expectation"); "": the command never returns 3.
	breach string
	// runs says the command runs scenarios: one may stop at --max-events
	// (exit code 4).
	runs bool
	// stopped, for a command that runs nothing but takes --max-cpu, says
	// what its exit code 4 means.
	stopped string
}

// invoke runs the command on args.
func (c *command) invoke(args []string, stdout, stderr io.Writer) error {
	if c.exec == nil {
		return c.run(args, stdout, stderr)
	}
	vals, pos, err := c.parse(args)
	if err != nil {
		return err
	}
	if err := startCPUWatch(vals.given("max-cpu"), vals.last("max-cpu")); err != nil {
		return err
	}
	return c.exec(vals, pos, stdout, stderr)
}

// flagDoc documents one flag of a command.
type flagDoc struct {
	// name is the flag without its dashes; arg names its value ("N",
	// "FILE"), empty for a boolean.
	name, arg string
	doc       string
	// file and dir say the value is a path, for completion.
	file, dir bool
}

// The flags several commands share.
var (
	flagSeed = flagDoc{name: "seed", arg: "N", doc: "the run seed (overrides the scenario's seed)"}
	flagSet  = flagDoc{name: "set", arg: "key=value", doc: "override any scenario key by its path, e.g. --set fleet.group[0].clients=500 (repeatable)"}
	flagAdd  = flagDoc{name: "add", arg: "key={...}", doc: "append an element to an array of tables, e.g. --add 'fault={kind=\"server-down\", at=\"1m\", duration=\"30s\"}' (repeatable)"}
	// flagExactRPCs turns off the bulk accounting of steady RPCs
	// (docs/performance.md, "Steady RPCs in bulk").
	flagExactRPCs = flagDoc{name: "exact-rpcs", doc: "take every RPC one by one instead of accounting steady RPCs in bulk: another sample of the same distribution, several times slower, to check a figure without the bulk path"}
)

// commands are xdssim's subcommands, in the order help lists them.
func commands() []*command {
	return []*command{
		&runCommand, &validateCommand, &listCommand, &explainCommand,
		&traceCommand, &csdsCommand, &shrinkCommand,
		&importCommand, &lintCommand,
		&sweepCommand, &compareCommand, &mergeCommand,
		&schemaCommand, &completionCommand, &versionCommand,
	}
}

// findCommand returns the subcommand named name.
func findCommand(name string) *command {
	for _, c := range commands() {
		if c.name == name {
			return c
		}
	}
	return nil
}

// commandNames lists the subcommands' names.
func commandNames() []string {
	var out []string
	for _, c := range commands() {
		out = append(out, c.name)
	}
	return out
}

// wantsHelp reports whether args ask for the command's usage: -h, -help
// or --help before any "--".
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// synopsis is the command's usage line.
func (c *command) synopsis() string {
	s := "xdssim " + c.name
	if c.args != "" {
		s += " " + c.args
	}
	if len(c.flags) > 0 {
		s += " [flags]"
	}
	return s
}

// usage is what `xdssim CMD --help` prints.
func (c *command) usage() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s\n\n", c.synopsis())
	if c.about != "" {
		b.WriteString(strings.TrimSpace(c.about))
		b.WriteString("\n")
	} else {
		b.WriteString(c.summary + ".\n")
	}
	if len(c.flags) > 0 {
		b.WriteString("\nFlags (they may stand before or after the arguments):\n")
		width := 0
		for _, f := range c.flags {
			width = max(width, len(f.spelled()))
		}
		for _, f := range c.flags {
			fmt.Fprintf(&b, "  %-*s  %s\n", width, f.spelled(), f.doc)
		}
	}
	b.WriteString("\nExit codes:\n")
	for _, e := range c.exitCodes() {
		fmt.Fprintf(&b, "  %d  %s\n", e.code, e.meaning)
	}
	return b.String()
}

// exitCodeDoc is one exit code and what it means for a command.
type exitCodeDoc struct {
	code    int
	meaning string
}

// exitCodes are the exit codes the command can return, from the one table
// of every command's (docs/limits.md): 0, 1 and 2 always, 3 with what it
// means for the command, 4 for the commands that run scenarios.
func (c *command) exitCodes() []exitCodeDoc {
	out := []exitCodeDoc{
		{exitOK, "ok"},
		{exitInternal, "internal error: a bug of xdssim, never bad input"},
		{exitInput, "invalid input: the scenario (with file:line:col), a flag, or a run estimated above --max-memory or --max-events"},
	}
	if c.breach != "" {
		out = append(out, exitCodeDoc{exitBreached, c.breach})
	}
	switch {
	case c.runs:
		out = append(out, exitCodeDoc{exitEventLimit, "a run reached --max-events, or the command --max-cpu, and stopped, incomplete; nothing is written"})
	case c.stopped != "":
		out = append(out, exitCodeDoc{exitEventLimit, c.stopped})
	}
	return out
}

// spelled is how usage writes the flag: "--seed N".
func (f flagDoc) spelled() string {
	if f.arg == "" {
		return "--" + f.name
	}
	return "--" + f.name + " " + f.arg
}

// mainUsage is what `xdssim`, `xdssim help` and `xdssim --help` print.
func mainUsage() string {
	var b strings.Builder
	b.WriteString("xdssim simulates fleets of gRPC XdsClients on a virtual clock.\n\nUsage:\n")
	width := 0
	for _, c := range commands() {
		width = max(width, len(c.synopsis()))
	}
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, c.synopsis(), c.summary)
	}
	b.WriteString(`
'xdssim help COMMAND' or 'xdssim COMMAND --help' prints a command's flags.

A scenario is a path to a TOML file or the name of a library scenario
('xdssim list'). Scenarios may carry expectations ([[expect]] metric, min,
max); run prints them as a pass/FAIL table on stdout, even with --quiet.

Exit codes: 0 ok, 1 internal error (a bug of xdssim), 2 invalid input (the
scenario, with file:line:col, or flags, or a run estimated above --max-memory
or --max-events), 3 the outputs are written but the answer is no (run: an
expectation breached; sweep and merge: no setting of the knobs known to meet
the constraints under every condition; sweep --find: no bound that holds;
compare: a run of a variant breached an expectation of its scenario), 4 a run
stopped at --max-events or --max-cpu. 'xdssim COMMAND --help' lists the codes
each command can return.
`)
	return b.String()
}

var versionCommand = command{
	name: "version", summary: "print the version, the VCS revision and the Go version of this build",
	about: `Print the build of xdssim: its version, the VCS revision it was built from,
whether that tree had uncommitted changes (dirty) and the Go version, as the Go
toolchain recorded them in the binary. Every output names the same. "go build"
in a git clone records them all; "go run" (without -buildvcs=true), a test
binary, -buildvcs=false (also in GOFLAGS), a git worktree or a tree without
its .git record no revision: the version is then "devel" and the revision and
dirty "unknown".`,
	flags: []flagDoc{{name: "json", doc: "print it as the JSON object outputs carry as \"build\": version, revision, dirty, go"}},
	exec: func(vals flagValues, pos []string, stdout, _ io.Writer) error {
		if len(pos) > 0 {
			return badInput("version: unexpected argument %q", pos[0])
		}
		b := stamp.Read()
		if vals.given("json") {
			j, err := json.MarshalIndent(b, "", "  ")
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(stdout, "%s\n", j)
			return err
		}
		_, err := fmt.Fprintf(stdout, "xdssim %s\n", b)
		return err
	},
}

// helpCommand prints the usage of the command it names, or the main one.
func helpCommand(args []string, stdout io.Writer) error {
	switch len(args) {
	case 0:
		_, err := io.WriteString(stdout, mainUsage())
		return err
	case 1:
		if c := findCommand(args[0]); c != nil {
			_, err := io.WriteString(stdout, c.usage())
			return err
		}
		return badInput("help: unknown command %q (commands: %s)", args[0], strings.Join(commandNames(), ", "))
	}
	return badInput("help: expected one command, found %d: %s", len(args), strings.Join(args, " "))
}

// hasFlag reports whether c documents a flag named name.
func (c *command) hasFlag(name string) bool {
	return slices.ContainsFunc(c.flags, func(f flagDoc) bool { return f.name == name })
}

// flagValues are the flags a command was given, by name: every value of a
// flag that takes one, in order, and "true" for a boolean.
type flagValues map[string][]string

// last returns the flag's last value, or "" when it was not given.
func (v flagValues) last(name string) string {
	if vs := v[name]; len(vs) > 0 {
		return vs[len(vs)-1]
	}
	return ""
}

// given reports whether the flag was given.
func (v flagValues) given(name string) bool { return len(v[name]) > 0 }

// parse parses args against the command's documented flags, which may
// stand before, between or after the positional arguments: a flag is
// accepted exactly when the command documents it. A flag that takes a
// value may be repeated; last returns the last one.
func (c *command) parse(args []string) (flagValues, []string, error) {
	vals := flagValues{}
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	for _, f := range c.flags {
		switch {
		case f.name == "add":
			// An addition is an override of its own kind, in order with
			// the --set flags.
			fs.Var(addFlag{add: func(v string) { vals["set"] = append(vals["set"], v) },
				raw: func(v string) { vals[f.name] = append(vals[f.name], v) }}, f.name, "")
		case f.arg == "":
			fs.Var(boolValue{vals, f.name}, f.name, "")
		default:
			fs.Var(repeated{vals, f.name}, f.name, "")
		}
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, nil, badInput("%s: %v (see 'xdssim %s --help')", c.name, err, c.name)
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	// An empty value is never the default: --shard= is not "no shard".
	for _, f := range c.flags {
		if f.arg != "" && slices.Contains(vals[f.name], "") {
			return nil, nil, badInput("--%s: expected %s, found an empty value", f.name, f.arg)
		}
	}
	return vals, pos, nil
}

type repeated struct {
	vals flagValues
	name string
}

func (r repeated) String() string     { return "" }
func (r repeated) Set(v string) error { r.vals[r.name] = append(r.vals[r.name], v); return nil }

type boolValue struct {
	vals flagValues
	name string
}

func (b boolValue) String() string   { return "" }
func (b boolValue) IsBoolFlag() bool { return true }
func (b boolValue) Set(v string) error {
	on, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("expected true or false, found %q", v)
	}
	if on {
		b.vals[b.name] = append(b.vals[b.name], "true")
	} else {
		delete(b.vals, b.name)
	}
	return nil
}

// loadScenario loads the one scenario of pos with the --seed and --set of
// vals, and the limits of its run (refused already when the estimate is
// above them). With no positional argument it loads the library's default
// unless the command requires one.
func loadScenario(cmd string, vals flagValues, pos []string, required bool, stderr io.Writer) (*scenarios.Scenario, limits, error) {
	sets, err := seedOverride(vals.given("seed"), vals.last("seed"), vals["set"])
	if err != nil {
		return nil, limits{}, err
	}
	f := limitFlags(vals)
	f.sets, f.args = sets, pos
	s, err := f.load(cmd, required, stderr)
	if err != nil {
		return nil, limits{}, err
	}
	// The commands that run a scenario are refused above --max-memory
	// and --max-events, as run is (docs/limits.md).
	lim, err := parseLimits(f)
	if err != nil {
		return nil, lim, err
	}
	if err := lim.check(s.Estimate()); err != nil {
		return nil, lim, err
	}
	return s, lim, nil
}

// exactFlag appends --exact-rpcs to the command line cmd when exact is
// set, so that a run it reproduces takes its RPCs as the original did.
func exactFlag(cmd string, exact bool) string {
	if exact {
		return cmd + " --exact-rpcs"
	}
	return cmd
}

// limitFlags are the --max-memory, --max-events, --max-cpu and --force of
// vals.
func limitFlags(vals flagValues) *runFlags {
	return &runFlags{maxMemory: vals.last("max-memory"), maxEvents: vals.last("max-events"), maxCPU: vals.last("max-cpu"), force: vals.given("force"),
		given: map[string]bool{"max-memory": vals.given("max-memory"), "max-events": vals.given("max-events"), "max-cpu": vals.given("max-cpu")}}
}

// runBounded runs cfg stopping at lim's --max-events: a run that reaches
// it is an eventLimitError (exit 4), as run's is.
func runBounded(lim limits, s *scenarios.Scenario, cfg fleet.Config, opts fleet.Options) (*fleet.Results, error) {
	opts.MaxEvents = lim.events
	res, err := fleet.Run(cfg, opts)
	if err != nil {
		return nil, boundedErr(err, s.Estimate())
	}
	return res, nil
}

// durationFlag parses the virtual time a flag gives ("1m30s").
func durationFlag(vals flagValues, name string) (time.Duration, error) {
	s := vals.last(name)
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, badInput("--%s %s: expected a virtual time such as 90s or 1m30s", name, s)
	}
	return d, nil
}
