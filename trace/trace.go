// Package trace turns what a replayed run traced of a few clients
// ([fleet.TraceEvent]) into what people read: a time-ordered narrative,
// one line per event, each naming the rule it follows (a gRFC section or a
// real client's function); the same events as JSON lines; and a Chrome
// trace that Perfetto opens, with a track per client channel.
//
// A run replays byte for byte from its scenario and seed, so tracing a
// client is running the scenario again with a [Recorder] attached to it
// (fleet.Options.Trace and TraceClients): the run itself is the same as
// without it.
package trace

import (
	"slices"
	"time"

	"github.com/xdssim/xdssim/model/fleet"
)

// Recorder keeps the events a run traces. Its Record method is what
// fleet.Options.Trace takes.
type Recorder struct {
	events []fleet.TraceEvent
}

// Record keeps a copy of e. Its Names are the simulation's immutable
// snapshots, so they may be kept.
func (r *Recorder) Record(e *fleet.TraceEvent) { r.events = append(r.events, *e) }

// Events returns the events in time order; events at the same time keep
// the order the run produced them in. A failure window's end is reported
// when the window is known to be over, after its last failure, so the
// run's order is not always time order.
func (r *Recorder) Events() []fleet.TraceEvent {
	slices.SortStableFunc(r.events, func(a, b fleet.TraceEvent) int {
		switch {
		case a.At < b.At:
			return -1
		case a.At > b.At:
			return 1
		}
		return 0
	})
	return r.events
}

// Window keeps the events in [From, To] (To 0: to the end).
type Window struct{ From, To time.Duration }

// Contains reports whether t falls in the window.
func (w Window) Contains(t time.Duration) bool { return t >= w.From && (w.To == 0 || t <= w.To) }

// Filter returns the events of evs in the window.
func (w Window) Filter(evs []fleet.TraceEvent) []fleet.TraceEvent {
	var out []fleet.TraceEvent
	for _, e := range evs {
		if w.Contains(e.At) {
			out = append(out, e)
		}
	}
	return out
}

// Channel names the channel an event belongs to as the outputs do:
// "client/target", then the server when it has one.
func Channel(e *fleet.TraceEvent) string { return e.Client + "/" + e.Target }
