package fidelity

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/xdssim/xdssim/model/dataplane"
	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/sim"
)

// Observation is what one run of a case showed, per client ("group/i").
type Observation struct {
	Clients map[string]*ClientObservation
	// Conns are, per server, what the clients did to their connections
	// to it: the connect attempts they started and the connections they
	// gave up (a connect deadline, keepalive), in time order. A real run
	// sees them at the server's proxy, without knowing whose they are.
	Conns map[string][]Conn
	// Routing is where the RPCs went, per cluster and locality and phase,
	// for a case that serves resources verbatim (mesh.go); nil otherwise.
	Routing *fleet.Routing
}

// Conn is a connection event: opened (a connect attempt started) or
// given up by its client.
type Conn struct {
	At     time.Duration
	Opened bool
}

func (o *Observation) conn(server string, c Conn) {
	if o.Conns == nil {
		o.Conns = map[string][]Conn{}
	}
	o.Conns[server] = append(o.Conns[server], c)
}

// client returns the observation of the named client, creating it.
func (o *Observation) client(name string) *ClientObservation {
	if o.Clients == nil {
		o.Clients = map[string]*ClientObservation{}
	}
	c, ok := o.Clients[name]
	if !ok {
		c = &ClientObservation{}
		o.Clients[name] = c
	}
	return c
}

// Names returns the clients' names, sorted.
func (o *Observation) Names() []string {
	var out []string
	for n := range o.Clients {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ClientObservation is what one client did.
type ClientObservation struct {
	// Streams are the client's ADS streams as the servers saw them, in
	// the order they opened.
	Streams []Stream
	// Timers are the resource timers that fired.
	Timers []TimerFiring
	// Switches are the moves of the active server (gRFC A71).
	Switches []Switch
	// RPCs are the RPC outcomes, by end time.
	RPCs []RPC
	// Windows are the failure windows built from RPCs.
	Windows []Window
	// States are the client's resource states over time as CSDS showed
	// them; a simulated run of a case with resources of its own has the
	// final ones (mesh.go).
	States []ResourceState
}

// ResourceState is a resource's CSDS client status from a time on.
type ResourceState struct {
	At      time.Duration
	Type    string
	Name    string
	Status  string // REQUESTED, ACKED, NACKED, DOES_NOT_EXIST, ...
	Version string
	// Error is the CSDS error_state details: why the last update of it
	// was NACKed.
	Error string
}

// Outcomes draws the RPC outcomes per interval of every: "." all
// succeeded, "x" all failed, "~" some of each, " " none ended.
func (c *ClientObservation) Outcomes(every, until time.Duration) string {
	n := int(until / every)
	ok, failed := make([]int, n+1), make([]int, n+1)
	for _, r := range c.RPCs {
		i := min(int(r.End/every), n)
		if r.Code == codes.OK {
			ok[i]++
		} else {
			failed[i]++
		}
	}
	b := make([]byte, n+1)
	for i := range b {
		switch {
		case ok[i] > 0 && failed[i] > 0:
			b[i] = '~'
		case failed[i] > 0:
			b[i] = 'x'
		case ok[i] > 0:
			b[i] = '.'
		default:
			b[i] = ' '
		}
	}
	return string(b)
}

// Stream is one ADS stream of a client to a server.
type Stream struct {
	Server   string
	Open     time.Duration
	Messages []Message
	id       int64 // the server's stream id, in a real run
}

// Message is a request the server received or a response it sent.
type Message struct {
	At       time.Duration
	Response bool
	Type     string // LDS, RDS, CDS, EDS
	Version  string
	Nonce    string
	Names    []string // requests only, sorted
	NACK     bool
}

// String formats m as one transcript line, without its time.
func (m Message) String() string {
	if m.Response {
		return fmt.Sprintf("<- %s version=%q nonce=%q", m.Type, m.Version, m.Nonce)
	}
	kind := "ACK "
	switch {
	case m.NACK:
		kind = "NACK"
	case m.Nonce == "":
		kind = "REQ "
	}
	return fmt.Sprintf("-> %s %s version=%q nonce=%s names=[%s]", kind, m.Type, m.Version, m.Nonce, strings.Join(m.Names, " "))
}

// TimerFiring is a resource timer that fired.
type TimerFiring struct {
	At   time.Duration
	Type string
	Name string
}

// Switch is a move of the active server: to a fallback, or back.
type Switch struct {
	At     time.Duration
	Server string
	Revert bool
}

// RPC is one RPC's outcome.
type RPC struct {
	End  time.Duration
	Code codes.Code
}

// Window is a failure window: from the first failed RPC to the last, with
// failures closer than the case's window gap merged.
type Window struct {
	Start, End time.Duration
	Failures   int
}

// lastStream returns the client's latest stream to server, or nil.
func (c *ClientObservation) lastStream(server string) *Stream {
	for i := len(c.Streams) - 1; i >= 0; i-- {
		if c.Streams[i].Server == server {
			return &c.Streams[i]
		}
	}
	return nil
}

// finish sorts what needs sorting and builds the failure windows with the
// simulator's own tracker.
func (o *Observation) finish(gap time.Duration) {
	for _, cs := range o.Conns {
		slices.SortStableFunc(cs, func(a, b Conn) int { return int(a.At - b.At) })
	}
	for _, c := range o.Clients {
		slices.SortStableFunc(c.RPCs, func(a, b RPC) int { return int(a.End - b.End) })
		var tr dataplane.Tracker
		add := func(w dataplane.Window) {
			c.Windows = append(c.Windows, Window{Start: time.Duration(w.Start), End: time.Duration(w.End), Failures: int(w.Failures)})
		}
		for _, r := range c.RPCs {
			if r.Code == codes.OK {
				continue
			}
			// Causes are not compared: a real client cannot tell them.
			if w, ok := tr.Fail(sim.Time(r.End), gap, r.Code, 0); ok {
				add(w)
			}
		}
		if w, ok := tr.Close(); ok {
			add(w)
		}
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
