package trace

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/xdssim/xdssim/model/fleet"
)

// Narrative is what WriteNarrative tells.
type Narrative struct {
	// Events are the traced events, in time order (Recorder.Events).
	Events []fleet.TraceEvent
	// Scenario are the spans in which the scenario injected something
	// (fleet.Results.Faults): their starts and ends are told too, as
	// context.
	Scenario []fleet.Fault
	// Window limits the narrative to a span of virtual time.
	Window Window
}

// line is one line of the narrative.
type line struct {
	at        time.Duration
	who, what string
	rules     []string
	rpc       *rpcLine // the RPC the line tells, if it tells one
	// notify is the first of the error notifications the line tells, and
	// resources the resources they were for.
	notify    *fleet.TraceEvent
	resources []string
}

// sameError reports whether e tells the same error to a watcher as
// first, at the same time on the same channel.
func sameError(first, e *fleet.TraceEvent) bool {
	return first != nil && e.Kind == fleet.TraceNotify && !e.Resource && e.At == first.At && Channel(e) == Channel(first) &&
		e.Notification == first.Notification && e.Status == first.Status && e.Rule == first.Rule
}

// errorNotification tells error notifications like first for every
// resource in *resources and e's.
func errorNotification(first *fleet.TraceEvent, resources *[]string, e *fleet.TraceEvent) string {
	*resources = append(*resources, e.Type.String()+" "+firstName(e.Names))
	return notificationFor(first, *resources)
}

// WriteNarrative writes n to w, one line per event:
//
//	TIME  CHANNEL  WHAT HAPPENED  [RULE]
//
// where CHANNEL is "client/target" (or "scenario" for the scenario's own
// events) and RULE names the gRFC section or the real client's function
// the step follows. An RPC is one line, its attempts and retries
// included. Consecutive RPCs of a channel that went alike (the same
// outcome on each attempt, the same causes) are folded into the first and
// one line that counts the rest, so that a long failure window reads as
// its first failure and how long the same failure went on.
func WriteNarrative(w io.Writer, n Narrative) error {
	lines := n.lines()
	width := 0
	for _, l := range lines {
		width = max(width, len(l.who))
	}
	bw := bufio.NewWriter(w)
	for _, l := range lines {
		fmt.Fprintf(bw, "%11s  %-*s  %s", Dur(l.at), width, l.who, l.what)
		if len(l.rules) > 0 {
			fmt.Fprintf(bw, "  [%s]", strings.Join(l.rules, "; "))
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// lines builds the narrative's lines, in time order.
func (n *Narrative) lines() []line {
	var items []line
	for _, f := range n.Scenario {
		if f.End > f.Start {
			items = append(items, line{at: f.Start, who: "scenario", what: f.Label + " begins"},
				line{at: f.End, who: "scenario", what: f.Label + " ends"})
		} else {
			items = append(items, line{at: f.Start, who: "scenario", what: f.Label})
		}
	}
	scenario := len(items)
	evs := n.Window.Filter(n.Events)
	rpcs := map[rpcKey]*rpcLine{}
	var order []*rpcLine // RPC lines, in the order they begin
	for i := range evs {
		e := &evs[i]
		if isRPCPart(e.Kind) {
			k := rpcKey{Channel(e), e.RPC}
			r := rpcs[k]
			if r == nil {
				r = &rpcLine{at: e.At, who: Channel(e), id: e.RPC, pos: len(items)}
				rpcs[k] = r
				order = append(order, r)
				items = append(items, line{}) // its place, filled below
			}
			r.add(e)
			continue
		}
		if e.Kind == fleet.TraceRequest || e.Kind == fleet.TraceResponse || e.Kind == fleet.TraceStreamClose {
			// The server's side of the messages the client's lines show,
			// and a close every failure or release line shows.
			continue
		}
		if len(items) > scenario {
			if l := &items[len(items)-1]; sameError(l.notify, e) {
				// The same error told to the watcher of every resource at
				// once: one line names them all.
				l.what = errorNotification(l.notify, &l.resources, e)
				continue
			}
		}
		l := line{at: e.At, who: Channel(e), what: Describe(e), rules: rules(e.Rule)}
		if e.Kind == fleet.TraceNotify && !e.Resource {
			l.notify = e
			l.what = errorNotification(e, &l.resources, e)
		}
		items = append(items, l)
	}
	for _, r := range order {
		items[r.pos] = r.line()
	}
	// The scenario's lines go in time order with the events, first among
	// equals; the events keep the run's order.
	evLines := items[scenario:]
	scLines := slices.Clone(items[:scenario])
	slices.SortStableFunc(scLines, func(a, b line) int { return cmpDur(a.at, b.at) })
	var out []line
	for _, l := range scLines {
		if n.Window.Contains(l.at) {
			out = append(out, l)
		}
	}
	out = append(out, evLines...)
	slices.SortStableFunc(out, func(a, b line) int { return cmpDur(a.at, b.at) })
	return fold(out)
}

func cmpDur(a, b time.Duration) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// isRPCPart reports whether events of kind k belong to an RPC's line.
func isRPCPart(k fleet.TraceKind) bool {
	return k == fleet.TracePick || k == fleet.TraceAttempt || k == fleet.TraceRetry || k == fleet.TraceRPC
}

type rpcKey struct {
	channel string
	id      uint64
}

// rpcLine gathers the events of one RPC.
type rpcLine struct {
	at    time.Duration
	who   string
	id    uint64
	pos   int
	parts []string // what each attempt did, in order
	shape []string // the same without backends and times: what folds alike
	rules []string
	// last is the outcome of the last attempt; attempts counts them.
	last     string
	attempts int
	done     bool
}

func (r *rpcLine) add(e *fleet.TraceEvent) {
	for _, rule := range rules(e.Rule) {
		if !slices.Contains(r.rules, rule) {
			r.rules = append(r.rules, rule)
		}
	}
	switch e.Kind {
	case fleet.TracePick:
		if e.Code != codes.OK {
			p := "no pick:"
			if e.Detail != "" {
				p = "no pick (" + e.Detail + "):"
			}
			r.parts = append(r.parts, p)
			r.shape = append(r.shape, p)
			return
		}
		p := "→ " + e.Backend
		if e.Delay > 0 {
			p += " (after " + Dur(e.Delay) + ")"
		}
		r.parts = append(r.parts, p)
		r.shape = append(r.shape, "→")
	case fleet.TraceAttempt:
		r.last = outcome(e.Code, e.Cause)
		r.parts = append(r.parts, r.last)
		r.shape = append(r.shape, r.last)
		r.attempts++
	case fleet.TraceRetry:
		if e.Throttled {
			r.parts = append(r.parts, "throttled, no retry;")
			r.shape = append(r.shape, "throttled")
			return
		}
		r.parts = append(r.parts, "retry in "+Dur(e.Delay)+",")
		r.shape = append(r.shape, "retry")
	case fleet.TraceRPC:
		r.done = true
		final := outcome(e.Code, e.Cause)
		switch {
		case r.attempts == 0:
			// It never reached an attempt: no config came, or none could.
			r.parts = append(r.parts, final)
		case final != r.last || r.attempts > 1:
			r.parts = append(r.parts, "→ RPC "+final)
		}
		// Its latency counts from its start, a wait for a first config
		// before its pick included.
		if e.Latency > 0 {
			r.parts = append(r.parts, "in "+Dur(e.Latency))
		}
		r.shape = append(r.shape, "= "+final)
	}
}

// outcome says how an attempt or an RPC ended.
func outcome(c codes.Code, cause fmt.Stringer) string {
	if c == codes.OK {
		return "OK"
	}
	return code(c) + " (" + cause.String() + ")"
}

func (r *rpcLine) line() line {
	what := fmt.Sprintf("RPC #%d %s", r.id, strings.Join(r.parts, " "))
	if !r.done {
		what += " (still going when the trace ends)"
	}
	return line{at: r.at, who: r.who, what: what, rules: r.rules, rpc: r}
}

// key says which RPC lines fold together: the same channel and shape.
func (r *rpcLine) key() string { return r.who + "\x00" + strings.Join(r.shape, "|") }

// fold folds each run of consecutive alike RPC lines into its first line
// and one that counts the rest.
func fold(lines []line) []line {
	var out []line
	var head *rpcLine // the first line of the run being folded
	var n int
	var last time.Duration
	var backends []string
	flush := func() {
		if head != nil && n > 0 {
			what := fmt.Sprintf("… and %d more RPCs like #%d until %s", n, head.id, Dur(last))
			if len(backends) > 0 {
				what += ", to " + strings.Join(backends, ", ")
			}
			out = append(out, line{at: last, who: head.who, what: what})
		}
		head, n, backends = nil, 0, nil
	}
	for _, l := range lines {
		r := l.rpc
		if r == nil {
			flush()
			out = append(out, l)
			continue
		}
		if head != nil && head.key() == r.key() {
			n++
			last = l.at
			for _, p := range r.parts {
				if b, ok := strings.CutPrefix(p, "→ "); ok && !slices.Contains(backends, b) && len(backends) < 6 {
					backends = append(backends, b)
				}
			}
			continue
		}
		flush()
		head = r
		out = append(out, l)
	}
	flush()
	return out
}

// rules splits nothing: an event names one rule; none when empty.
func rules(rule string) []string {
	if rule == "" {
		return nil
	}
	return []string{rule}
}
