package fidelity

import (
	"fmt"
	"strings"
	"time"
)

// Table formats results as a markdown table, a row per case and a column
// per comparison, as docs/model-fidelity.md shows it.
func Table(results []*Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| Case | xDS messages (exact) | Failure windows | Resource timers | Fallback switches | Connections in blackholes | NACK storms (rate ±%.0f %%) | Own resources: final status | RPCs per cluster and locality | Tolerance | Result |\n", 100*StormTolerance)
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		verdict := "pass"
		if !r.Pass() {
			verdict = "**FAIL**"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Case,
			r.cell("xDS messages", false), r.cell("failure windows", true), r.cell("resource timers", true),
			r.cell("fallback switches", true), r.cell("connections in blackholes", true), r.stormCell(),
			r.cell("final status per resource", true), r.cell("RPCs per cluster and locality", true), r.Tolerance, verdict)
	}
	return b.String()
}

// cell sums up one comparison over every client of the case.
func (r *Result) cell(what string, timed bool) string {
	clients, count, failed := 0, 0, 0
	var worst time.Duration
	for _, c := range r.Checks {
		if c.What != what {
			continue
		}
		clients++
		count += c.Count
		worst = max(worst, c.MaxDelta)
		if !c.Pass {
			failed++
		}
	}
	who := "clients"
	if what == "connections in blackholes" {
		who = "servers" // a proxy cannot tell whose connection it is
	}
	if clients == 0 {
		return "—"
	}
	if clients == 1 {
		who = strings.TrimSuffix(who, "s")
	}
	s := fmt.Sprintf("%d over %d %s", count, clients, who)
	if !timed {
		s = fmt.Sprintf("%d transcript lines over %d %s", count, clients, who)
	}
	if what == "RPCs per cluster and locality" {
		s = fmt.Sprintf("%d shares (cluster or locality × phase), |z| ≤ %d", count, routingZ)
	} else if what == "final status per resource" {
		s = fmt.Sprintf("%d resources over %d %s", count, clients, who)
	} else if timed && count > 0 {
		s += fmt.Sprintf(", max Δ %.2f s", worst.Seconds())
	}
	if failed > 0 {
		s = fmt.Sprintf("**%d of %d %s differ**; %s", failed, clients, who, s)
	}
	return s
}

// stormCell sums up the NACK storms of the case: how many, over how many
// clients, and their rate in each run.
func (r *Result) stormCell() string {
	for _, c := range r.Checks {
		if c.What != "NACK storms" || c.Clients == 0 {
			continue
		}
		who := "clients"
		if c.Clients == 1 {
			who = "client"
		}
		if c.SimRate == 0 {
			return fmt.Sprintf("**differ** over %d %s", c.Clients, who)
		}
		s := fmt.Sprintf("%d over %d %s: sim %.0f/s, real %.0f/s (%+.0f %%)", c.Count, c.Clients, who, c.SimRate, c.RealRate, 100*c.RateOff)
		if len(c.RealRuns) > 1 {
			s += ", " + c.runsText()
		}
		if c.CalibratedRate > 0 {
			s += fmt.Sprintf("; at the processing times the real run measured, sim %.0f/s (%+.0f %%)", c.CalibratedRate, 100*c.CalibratedOff)
		}
		if !c.Pass {
			s = "**" + s + "**"
		}
		return s
	}
	return "—"
}

// String sums the tolerance up: its base and each outage's band.
func (t Tolerance) String() string {
	s := fmt.Sprintf("%.2f s", t.Base().Seconds())
	for _, o := range t.Outages {
		s += fmt.Sprintf(" (+%.2f s after the outage ending at %v)", o.Band.Seconds(), o.End)
	}
	return s
}

// MeshDetails lists, for a case that serves resources of its own, each
// client's final status and error per resource and the RPC shares per
// cluster and locality, simulated and real.
func (r *Result) MeshDetails() string {
	var b strings.Builder
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "%s: %s\n", r.Case, n)
	}
	for _, c := range r.Checks {
		if c.What == "final status per resource" || c.What == "RPCs per cluster and locality" {
			fmt.Fprintf(&b, "%s: %s %s:\n%s", r.Case, c.Client, c.What, c.Detail)
		}
	}
	return b.String()
}

// Failures lists every failed check with its detail.
func (r *Result) Failures() string {
	var b strings.Builder
	for _, c := range r.Checks {
		if !c.Pass {
			fmt.Fprintf(&b, "%s: %s %s: %s\n", r.Case, c.Client, c.What, c.Detail)
		}
	}
	return b.String()
}
