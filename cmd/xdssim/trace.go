package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/trace"
)

var traceCommand = command{
	runs: true,
	name: "trace", args: "FILE|NAME", scenario: true,
	summary: "replay a run and tell what chosen clients did, event by event, and the rule behind each",
	about: `Replay a scenario's run with tracing on for the clients named by --client
(the others are not traced and cost nothing; the run is the same as without
tracing) and print a time-ordered narrative of what happened to each: its
channels' connectivity, ADS streams opened and failed (with their status and
whether a response had been read, gRFC A57), each DiscoveryRequest with its
version, nonce and names, each response, ACKs and NACKs with their error,
timers armed, cancelled and fired, watcher notifications (gRFC A88), fallback
and revert (gRFC A71), RPCs with their picks, attempts and retries, and each
RPC failure window with its root cause. Every line names the rule it
follows: a gRFC section or the real client's function. The scenario's own
events (faults, restarts, changes) are told as context.

A client is GROUP/INDEX, such as web/0 (every target of the client), or
GROUP/INDEX/TARGET (one of its XdsClient instances). Alike RPCs in a row are
folded into the first and a count.`,
	flags: []flagDoc{
		{name: "client", arg: "NAME[/TARGET]", doc: "a client to trace: GROUP/INDEX or GROUP/INDEX/TARGET (required; repeatable)"},
		{name: "from", arg: "T", doc: "tell only what happened from virtual time T on (such as 2m30s)"},
		{name: "to", arg: "T", doc: "tell only what happened up to virtual time T"},
		flagSeed, flagSet, flagAdd, flagMaxMemory, flagMaxEvents, flagMaxCPU, flagForce, flagExactRPCs,
		{name: "json", doc: "print every event as a JSON line (time, kind, fields, text, rule) instead of the narrative"},
		{name: "perfetto", arg: "FILE", doc: "also write a Chrome trace of the clients' channels to FILE, for Perfetto (ui.perfetto.dev) or chrome://tracing", file: true},
	},
	exec: cmdTrace,
}

func cmdTrace(vals flagValues, pos []string, stdout, stderr io.Writer) error {
	s, lim, err := loadScenario("trace", vals, pos, true, stderr)
	if err != nil {
		return err
	}
	clients := vals["client"]
	if len(clients) == 0 {
		return badInput("trace: expected --client GROUP/INDEX[/TARGET], such as --client %s/0", s.Fleet.Groups[0].Name)
	}
	cfg := s.FleetConfig()
	for _, c := range clients {
		if err := cfg.CheckClient(c); err != nil {
			return badInput("--client %v", err)
		}
	}
	var win trace.Window
	if win.From, err = durationFlag(vals, "from"); err != nil {
		return err
	}
	if win.To, err = durationFlag(vals, "to"); err != nil {
		return err
	}
	switch {
	case win.From > cfg.Duration:
		return badInput("--from %s: after the end of the run (%s)", trace.Dur(win.From), trace.Dur(cfg.Duration))
	case win.To != 0 && win.To < win.From:
		return badInput("--to %s: before --from %s", trace.Dur(win.To), trace.Dur(win.From))
	}
	if f, ok := flagGiven(vals, "perfetto"); ok {
		if err := checkOutputFile("perfetto", f); err != nil {
			return err // before the run, not after
		}
	}
	fmt.Fprintf(stderr, "xdssim: scenario %s, seed %d: tracing %s\n", s.Name, s.Seed, strings.Join(clients, ", "))
	var rec trace.Recorder
	res, err := runBounded(lim, s, cfg, fleet.Options{Trace: rec.Record, TraceClients: clients, ExactRPCs: vals.given("exact-rpcs")})
	if err != nil {
		return err
	}
	evs := rec.Events()
	if f := vals.last("perfetto"); f != "" {
		if err := writeFile("perfetto", f, func(w io.Writer) error {
			return trace.WritePerfetto(w, trace.Perfetto{Events: evs, Scenario: res.Faults, End: res.Duration, Title: fmt.Sprintf("%s seed %d", s.Name, s.Seed)})
		}); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "xdssim: Chrome trace written to %s (open it at ui.perfetto.dev)\n", f)
	}
	// From here the trace is written: --max-cpu no longer stops it, so
	// that standard output holds all of it or, before, none.
	beginWriting()
	if vals.given("json") {
		return trace.WriteJSONLines(stdout, win.Filter(evs))
	}
	to := win.To
	if to == 0 {
		to = cfg.Duration
	}
	fmt.Fprintf(stdout, "# %s, seed %d: %s, from %s to %s of virtual time\n", s.Name, s.Seed, strings.Join(clients, ", "),
		trace.Dur(win.From), trace.Dur(to))
	return trace.WriteNarrative(stdout, trace.Narrative{Events: evs, Scenario: res.Faults, Window: win})
}
