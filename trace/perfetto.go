package trace

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/model/xdsclient"
)

// Perfetto is what WritePerfetto draws.
type Perfetto struct {
	// Events are the traced events, in time order.
	Events []fleet.TraceEvent
	// Scenario are the scenario's faults and events (fleet.Results.Faults).
	Scenario []fleet.Fault
	// End is the end of the run: slices still open then end there.
	End time.Duration
	// Title names the run (scenario and seed).
	Title string
}

// chromeEvent is one event of the Chrome trace event format (the JSON
// that chrome://tracing and Perfetto's UI read): a complete slice ("X")
// with its duration, an instant ("i") on its thread, or a metadata event
// ("M") naming a process or thread.
type chromeEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"` // µs
	Dur  *float64       `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	S    string         `json:"s,omitempty"` // an instant's scope: "t", its thread
	Args map[string]any `json:"args,omitempty"`
}

// Thread numbers within a client channel's process: the XdsClient's own
// track, then two per server (its channel's connectivity, its ADS
// streams), then the RPCs'.
const (
	tidXdsClient = 1
	tidRPCs      = 2
	tidServer0   = 10 // server k: tidServer0+2k (channel), +2k+1 (streams)
)

// WritePerfetto writes p to w as a Chrome trace: a process per client
// channel ("client/target") with a track for the XdsClient (fallback
// periods, the client's restarts, watcher errors as instants), two per
// control plane (the channel's connectivity states; the ADS streams'
// lifetimes, with NACKs and timer firings as instants), and one for the
// RPCs (failure windows, named by root cause); and a process for the
// scenario, a track per fault. Times are virtual, from 0.
func WritePerfetto(w io.Writer, p Perfetto) error {
	b := perfettoBuilder{pids: map[string]int{}, servers: map[string]map[string]int{}, open: map[[2]int]*chromeEvent{},
		tracked: map[[2]int]bool{}}
	b.scenario(p.Scenario)
	for i := range p.Events {
		b.event(&p.Events[i])
	}
	b.closeAll(p.End)
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"title\":%q,\"clock\":\"virtual time from 0\"},\"traceEvents\":[\n", p.Title)
	for i := range b.out {
		line, err := json.Marshal(&b.out[i])
		if err != nil {
			return err
		}
		bw.Write(line)
		if i < len(b.out)-1 {
			bw.WriteString(",")
		}
		bw.WriteString("\n")
	}
	bw.WriteString("]}\n")
	return bw.Flush()
}

type perfettoBuilder struct {
	out     []chromeEvent
	pids    map[string]int            // by channel
	servers map[string]map[string]int // per channel: server → its position
	open    map[[2]int]*chromeEvent   // the open slice of each (pid, tid)
	order   [][2]int                  // tracks with a slice, in first-open order
	tracked map[[2]int]bool           // the tracks in order
}

func us(d time.Duration) float64 { return float64(d) / 1e3 }

// meta names a process (what "process_name") or thread ("thread_name")
// and orders it among its kind.
func (b *perfettoBuilder) meta(pid, tid int, what, name string, order int) {
	b.out = append(b.out, chromeEvent{Name: what, Ph: "M", Pid: pid, Tid: tid, Args: map[string]any{"name": name}})
	b.out = append(b.out, chromeEvent{Name: strings.TrimSuffix(what, "name") + "sort_index", Ph: "M", Pid: pid, Tid: tid,
		Args: map[string]any{"sort_index": order}})
}

// scenario draws the scenario's faults as slices of process 0, a thread
// each, and its instantaneous events (config changes) as instants.
func (b *perfettoBuilder) scenario(faults []fleet.Fault) {
	if len(faults) == 0 {
		return
	}
	b.meta(0, 0, "process_name", "scenario", 0)
	for i, f := range faults {
		tid := i + 1
		b.meta(0, tid, "thread_name", f.Label, tid)
		if f.End > f.Start {
			d := us(f.End - f.Start)
			b.out = append(b.out, chromeEvent{Name: f.Label, Cat: "scenario", Ph: "X", Ts: us(f.Start), Dur: &d, Pid: 0, Tid: tid})
		} else {
			b.out = append(b.out, chromeEvent{Name: f.Label, Cat: "scenario", Ph: "i", S: "t", Ts: us(f.Start), Pid: 0, Tid: tid})
		}
	}
}

// pid returns the process of e's channel, naming it and its threads the
// first time.
func (b *perfettoBuilder) pid(e *fleet.TraceEvent) int {
	ch := Channel(e)
	if pid, ok := b.pids[ch]; ok {
		return pid
	}
	pid := len(b.pids) + 1
	b.pids[ch] = pid
	b.servers[ch] = map[string]int{}
	b.meta(pid, 0, "process_name", ch, pid)
	b.meta(pid, tidXdsClient, "thread_name", "XdsClient", tidXdsClient)
	b.meta(pid, tidRPCs, "thread_name", "RPCs", tidRPCs)
	return pid
}

// serverTids returns the channel and stream threads of e's server.
func (b *perfettoBuilder) serverTids(pid int, e *fleet.TraceEvent) (channel, streams int) {
	ch := Channel(e)
	k, ok := b.servers[ch][e.Server]
	if !ok {
		k = len(b.servers[ch])
		b.servers[ch][e.Server] = k
		b.meta(pid, tidServer0+2*k, "thread_name", e.Server+": channel", tidServer0+2*k)
		b.meta(pid, tidServer0+2*k+1, "thread_name", e.Server+": ADS stream", tidServer0+2*k+1)
	}
	return tidServer0 + 2*k, tidServer0 + 2*k + 1
}

// begin opens a slice on (pid, tid), ending the one open there.
func (b *perfettoBuilder) begin(pid, tid int, at time.Duration, name, cat string, args map[string]any) {
	b.end(pid, tid, at)
	k := [2]int{pid, tid}
	if _, seen := b.open[k]; !seen {
		if !b.tracked[k] {
			b.tracked[k] = true
			b.order = append(b.order, k)
		}
	}
	b.open[k] = &chromeEvent{Name: name, Cat: cat, Ph: "X", Ts: us(at), Pid: pid, Tid: tid, Args: args}
}

// end closes the slice open on (pid, tid), if any.
func (b *perfettoBuilder) end(pid, tid int, at time.Duration) {
	k := [2]int{pid, tid}
	s := b.open[k]
	if s == nil {
		return
	}
	d := max(us(at)-s.Ts, 0)
	s.Dur = &d
	b.out = append(b.out, *s)
	delete(b.open, k)
}

func (b *perfettoBuilder) instant(pid, tid int, at time.Duration, name, cat string, args map[string]any) {
	b.out = append(b.out, chromeEvent{Name: name, Cat: cat, Ph: "i", S: "t", Ts: us(at), Pid: pid, Tid: tid, Args: args})
}

// closeAll ends every slice still open at the end of the run, in the
// order they opened.
func (b *perfettoBuilder) closeAll(end time.Duration) {
	for _, k := range b.order {
		b.end(k[0], k[1], end)
	}
}

func (b *perfettoBuilder) event(e *fleet.TraceEvent) {
	pid := b.pid(e)
	args := map[string]any{"text": Describe(e)}
	if e.Rule != "" {
		args["rule"] = e.Rule
	}
	switch e.Kind {
	case fleet.TraceConnectivity:
		ch, _ := b.serverTids(pid, e)
		b.begin(pid, ch, e.At, e.To.String(), "connectivity", args)
	case fleet.TraceStreamPending:
		_, st := b.serverTids(pid, e)
		b.begin(pid, st, e.At, "ADS call waiting for READY", "stream", args)
	case fleet.TraceStreamOpen:
		_, st := b.serverTids(pid, e)
		b.begin(pid, st, e.At, "ADS stream", "stream", args)
	case fleet.TraceStreamFailed, fleet.TraceStreamClose:
		_, st := b.serverTids(pid, e)
		b.end(pid, st, e.At)
		if e.Kind == fleet.TraceStreamFailed {
			b.instant(pid, st, e.At, "stream failed: "+code(e.Status.Code), "stream", args)
		}
	case fleet.TraceSend:
		if e.NACK {
			_, st := b.serverTids(pid, e)
			b.instant(pid, st, e.At, "NACK "+e.Type.String(), "nack", args)
		}
	case fleet.TraceResourceTimer:
		_, st := b.serverTids(pid, e)
		b.instant(pid, st, e.At, "does-not-exist timer fired: "+e.Type.String()+" "+firstName(e.Names), "timer", args)
	case fleet.TraceRetryTimer:
		_, st := b.serverTids(pid, e)
		b.instant(pid, st, e.At, "ADS retry timer fired", "timer", args)
	case fleet.TraceFallback:
		b.begin(pid, tidXdsClient, e.At, "on fallback: "+e.Server, "fallback", args)
	case fleet.TraceRevert:
		b.end(pid, tidXdsClient, e.At)
	case fleet.TraceNotify:
		if !e.Resource && e.Status.Code != 0 {
			b.instant(pid, tidXdsClient, e.At, notifyName(e), "watcher", args)
		}
	case fleet.TraceClientStop:
		// The process goes: every slice of the channel ends.
		for _, k := range b.order {
			if k[0] == pid {
				b.end(k[0], k[1], e.At)
			}
		}
		b.begin(pid, tidXdsClient, e.At, "client down (restart)", "restart", args)
	case fleet.TraceClientStart:
		b.end(pid, tidXdsClient, e.At)
	case fleet.TraceWindowClose:
		d := us(e.At - e.Since)
		args["failures"] = e.Count
		b.out = append(b.out, chromeEvent{Name: "failing: " + e.Cause.String(), Cat: "failure_window", Ph: "X",
			Ts: us(e.Since), Dur: &d, Pid: pid, Tid: tidRPCs, Args: args})
	}
}

func notifyName(e *fleet.TraceEvent) string {
	cb := "OnResourceChanged"
	if e.Notification == xdsclient.AmbientError {
		cb = "OnAmbientError"
	}
	return cb + " " + code(e.Status.Code) + ": " + e.Type.String() + " " + firstName(e.Names)
}
