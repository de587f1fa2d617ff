package network

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/xdssim/xdssim/sim"
)

// Never is the time of something that does not happen: the end of a fault
// that lasts forever, the end of a stall that never clears.
const Never = sim.Never

// Forever is the Duration of a fault that never ends.
const Forever = time.Duration(math.MaxInt64)

// FaultKind says what a [Fault] does to the links it covers.
type FaultKind uint8

const (
	// ServerDown: the server process is down. Connect attempts are refused
	// after one round trip (the host answers SYN with RST); at the start,
	// every connection to the server is reset, failing its streams with
	// UNAVAILABLE ([StatusConnectionReset]). It covers every client.
	ServerDown FaultKind = iota + 1
	// Blackhole: packets between the covered clients and the server are
	// dropped, SYNs included. Connect attempts hang until their deadline
	// (unless the blackhole clears before a SYN retransmission: the attempt
	// then goes on from that retransmission; see [ResolveAttempt]);
	// messages on open streams stall and are delivered, in order, once it
	// clears (TCP retransmits them). Nothing tells the client: the
	// connection stays READY until keepalive gives up (see [Keepalive]).
	// [BlackholeHold] is the other real blackhole.
	Blackhole
	// Partition is a Blackhole of a chosen subset of clients (by group or
	// by fraction). It behaves exactly as Blackhole; the separate kind
	// names the intent in reports.
	Partition
	// AddedLatency adds Fault.Latency to every one-way trip between the
	// covered clients and the server: each message and each leg of a
	// connect handshake.
	AddedLatency
	// ServerRestart: the server process restarts. At the start every
	// connection is reset (streams fail with UNAVAILABLE); connect
	// attempts are refused for Duration, the restart time. It covers every
	// client.
	ServerRestart
	// GoAway: at the start the server sends GOAWAY on every covered
	// connection, then closes the connection Duration later (its grace
	// period; 0 closes at once). The client's channel goes IDLE at the
	// GOAWAY and reconnects on its next pick; streams already open go on
	// until the close, which fails them with UNAVAILABLE
	// ([StatusDrained]). An ADS stream that had received a response is not
	// in error when it closes so (gRFC A57, Handling ADS Stream
	// Termination). Connect attempts and messages are unaffected.
	GoAway
	// MessageLoss: each message between the covered clients and the
	// server is lost with Fault.Probability, and a lost message fails its
	// stream with UNAVAILABLE ([StatusMessageLost]) when it would have
	// arrived. HTTP/2 over TCP does not lose single messages; this models
	// a stream reset by a proxy or a broken path.
	MessageLoss
	// StreamResetAfterResponse: the server ends each covered ADS stream
	// with UNAVAILABLE ([StatusStreamReset]) right after it has sent
	// Fault.Responses responses on it, as a server that crashes in its
	// stream handler, or a proxy that cuts streams, does. The connection
	// stays up (the channel stays READY). At the start, streams that have
	// already had that many responses are ended at once; during the fault,
	// a stream is ended right after its Responses-th response. Since each
	// stream received a response, the client sees no error (gRFC A57,
	// Handling ADS Stream Termination), never falls back (gRFC A71) and,
	// in grpc-go, retries without backoff: the case gRFC A88 "Open issues"
	// names ("we don't impose exponential backoff between stream attempts,
	// so we could DoS the server"). Connect attempts and messages are
	// unaffected.
	StreamResetAfterResponse
	// BlackholeHold: the TCP connection is accepted but no byte gets
	// through: the server's HTTP/2 preface never arrives, as behind a TCP
	// proxy or load balancer whose backend is unreachable, or a server
	// whose process is stopped (the kernel accepts, nothing reads). A
	// connect attempt completes its TCP handshake and then waits for the
	// preface until its deadline; when the hold clears within it, the
	// attempt completes at once (the held bytes are delivered), with no SYN
	// retransmission to wait for, as happens when a partition heals within
	// the TCP timeout. Messages on open streams stall as in a Blackhole.
	// grpc-go fails such an attempt at its connect deadline
	// (clientconn.go createTransport: "failed to receive server preface
	// within timeout").
	BlackholeHold
)

var faultNames = [...]string{"", "server-down", "blackhole", "partition", "added-latency", "server-restart", "goaway", "message-loss",
	"stream-reset-after-response", "blackhole-hold"}

// String names the kind as a scenario spells it, such as "server-down".
func (k FaultKind) String() string {
	if k > 0 && int(k) < len(faultNames) {
		return faultNames[k]
	}
	return fmt.Sprintf("FaultKind(%d)", k)
}

// Fault is one fault over a window of virtual time [Start, Start+Duration)
// on the links between a set of clients and a set of servers.
type Fault struct {
	Kind FaultKind
	// Start is when the fault begins.
	Start sim.Time
	// Duration is how long it lasts; [Forever] never ends. A fault given
	// by its end time has Duration = end.Sub(Start). For GoAway it is the
	// grace period before the connection is closed.
	Duration time.Duration
	// Servers are the indices of the servers it covers; nil covers every
	// server.
	Servers []int
	// Groups are the client groups it covers; nil covers every group.
	// ServerDown and ServerRestart must not name groups.
	Groups []int
	// Fraction, when not 0, narrows the covered clients to that fraction
	// of the clients of Groups, chosen by a hash of (seed, fault index,
	// client key): the choice of one client does not depend on which
	// other clients exist. ServerDown and ServerRestart must leave it 0.
	Fraction float64
	// Latency is the one-way delay an AddedLatency fault adds.
	Latency time.Duration
	// Probability, when not 0, is the chance that a MessageLoss fault
	// loses each message; 0 loses every message.
	Probability float64
	// Responses is how many responses a StreamResetAfterResponse fault
	// lets a stream have before the server ends it; at least 1 for that
	// kind, 0 for every other.
	Responses int
}

// End returns the time the fault ends, [Never] if it lasts forever.
func (f *Fault) End() sim.Time { return f.Start.Add(f.Duration) } // Add saturates at Never

// activeAt reports whether t is in the fault's window [Start, End).
func (f *Fault) activeAt(t sim.Time) bool { return f.Start <= t && t < f.End() }

// ClientRef identifies a client to the fault queries: its group and the
// hash of its stable key. Make it once per client with [NewClientRef].
type ClientRef struct {
	// Key is the hash of the client's stable key.
	Key uint64
	// Group is the index of the client's group.
	Group int
}

// NewClientRef returns the reference of the client named key (such as
// "client/17", the key of its sim stream) in group group.
func NewClientRef(group int, key string) ClientRef {
	return ClientRef{Key: sim.Mix64(sim.HashKey(key)), Group: group}
}

// ConnectVerdict says how a connect attempt fares.
type ConnectVerdict uint8

const (
	// ConnectOK: the server accepts the connection.
	ConnectOK ConnectVerdict = iota
	// ConnectRefused: the attempt fails after one round trip.
	ConnectRefused
	// ConnectBlackholed: nothing comes back; the attempt hangs.
	ConnectBlackholed
	// ConnectHeld: TCP connects, then nothing comes back until the hold
	// clears.
	ConnectHeld
)

var connectNames = [...]string{"ok", "refused", "blackholed", "held"}

// String names the verdict.
func (v ConnectVerdict) String() string {
	if int(v) < len(connectNames) {
		return connectNames[v]
	}
	return fmt.Sprintf("ConnectVerdict(%d)", v)
}

// ConnectOutcome is how a connect attempt started at some time fares, from
// [Faults.ConnectOutcome].
type ConnectOutcome struct {
	Verdict ConnectVerdict
	// Added is the one-way latency that AddedLatency faults add.
	Added time.Duration
	// Fault is the index of the fault that decided a refused or
	// blackholed verdict, -1 if none did.
	Fault int
}

// DeliveryVerdict says what becomes of a message.
type DeliveryVerdict uint8

const (
	// Delivered: the message arrives after the link latency plus Added.
	Delivered DeliveryVerdict = iota
	// Stalled: the message is held until the blackhole clears at Until
	// (never, if Until is [Never]), then arrives.
	Stalled
	// Lost: the message is lost and its stream fails with UNAVAILABLE.
	Lost
)

var deliveryNames = [...]string{"delivered", "stalled", "lost"}

// String names the verdict.
func (v DeliveryVerdict) String() string {
	if int(v) < len(deliveryNames) {
		return deliveryNames[v]
	}
	return fmt.Sprintf("DeliveryVerdict(%d)", v)
}

// Delivery is what becomes of a message sent at some time, from
// [Faults.Delivery].
type Delivery struct {
	Verdict DeliveryVerdict
	// Added is the one-way latency that AddedLatency faults add.
	Added time.Duration
	// Until is when a stall clears: the first time from which no
	// blackhole or partition covers the link.
	Until sim.Time
	// Fault is the index of the fault that decided a stalled or lost
	// verdict, -1 if none did.
	Fault int
}

// EdgeAction is what the caller does to existing connections and streams
// at an [Edge]. Queries ([Faults.ConnectOutcome], [Faults.Delivery]) need
// no edges; actions do.
type EdgeAction uint8

const (
	// ActionNone: nothing changes for existing connections; the edge
	// matters for reports (fault windows) and keepalive checks.
	ActionNone EdgeAction = iota
	// ActionReset: every connection of a covered client to the server is
	// reset: its channel gets [Channel.ConnectionLost] and its streams
	// fail with [StatusConnectionReset]. (ServerDown, ServerRestart start.)
	ActionReset
	// ActionDrain: every covered connection gets GOAWAY: its channel gets
	// [Channel.ConnectionLost] and its open streams are marked draining
	// ([Stream.Drain]). (GoAway start.)
	ActionDrain
	// ActionCloseDrained: the streams still draining on covered
	// connections fail with [StatusDrained]. (GoAway end.)
	ActionCloseDrained
	// ActionEndAnswered: the server ends every covered open stream that
	// has already had Fault.Responses responses with [StatusStreamReset];
	// connections stay up. (StreamResetAfterResponse start; during the
	// fault the caller asks [Faults.StreamResetAfter] at each response.)
	ActionEndAnswered
	// ActionStall: nothing crosses the covered connections any more, and
	// nothing tells the client: the caller works out when keepalive
	// notices ([Keepalive.DeadAt]). (Blackhole and Partition start.)
	ActionStall
)

var actionNames = [...]string{"none", "reset", "drain", "close-drained", "end-answered", "stall"}

// String names the action.
func (a EdgeAction) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return fmt.Sprintf("EdgeAction(%d)", a)
}

// Edge is the start or the end of a fault: a time at which the caller may
// need to act on connections, see [Edge.Action].
type Edge struct {
	At sim.Time
	// Fault is the index of the fault in the list given to [NewFaults].
	Fault int
	Kind  FaultKind
	// End is false for the fault's start, true for its end.
	End bool
}

// Action returns what the caller does at the edge.
func (e Edge) Action() EdgeAction {
	switch {
	case !e.End && (e.Kind == ServerDown || e.Kind == ServerRestart):
		return ActionReset
	case !e.End && e.Kind == GoAway:
		return ActionDrain
	case e.End && e.Kind == GoAway:
		return ActionCloseDrained
	case !e.End && e.Kind == StreamResetAfterResponse:
		return ActionEndAnswered
	case !e.End && (e.Kind == Blackhole || e.Kind == Partition):
		return ActionStall
	}
	return ActionNone
}

// Faults is the fault plan of a run: an immutable list of faults and pure,
// allocation-free queries over it. Queries loop over every fault, so a
// plan is meant to hold tens of faults, not thousands. A nil *Faults is
// the empty plan.
type Faults struct {
	seed   uint64
	faults []Fault
	salts  []uint64 // per fault: the hash salt of its client choice
	edges  []Edge
}

// NewFaults validates faults and returns the plan of a run seeded with
// seed. It copies faults; the caller may reuse the slice.
func NewFaults(seed uint64, faults []Fault) (*Faults, error) {
	f := &Faults{seed: seed, faults: make([]Fault, len(faults)), salts: make([]uint64, len(faults))}
	for i := range faults {
		ft := faults[i]
		if err := validateFault(&ft); err != nil {
			return nil, fmt.Errorf("network: fault %d (%v): %w", i, ft.Kind, err)
		}
		ft.Servers = slices.Clone(ft.Servers)
		ft.Groups = slices.Clone(ft.Groups)
		f.faults[i] = ft
		f.salts[i] = sim.Mix64(seed ^ sim.Mix64(uint64(i)+sim.Golden))
		f.edges = append(f.edges, Edge{At: ft.Start, Fault: i, Kind: ft.Kind})
		if end := ft.End(); end != Never {
			f.edges = append(f.edges, Edge{At: end, Fault: i, Kind: ft.Kind, End: true})
		}
	}
	slices.SortStableFunc(f.edges, func(a, b Edge) int {
		if c := cmp.Compare(a.At, b.At); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Fault, b.Fault); c != 0 {
			return c
		}
		switch {
		case !a.End && b.End:
			return -1
		case a.End && !b.End:
			return 1
		}
		return 0
	})
	return f, nil
}

func validateFault(f *Fault) error {
	switch {
	case f.Kind < ServerDown || f.Kind > BlackholeHold:
		return fmt.Errorf("unknown kind %d", f.Kind)
	case f.Start < 0:
		return fmt.Errorf("start must not be negative, got %v", f.Start)
	case f.Duration < 0:
		return fmt.Errorf("duration must not be negative, got %v", f.Duration)
	case !(f.Fraction >= 0 && f.Fraction <= 1):
		return fmt.Errorf("fraction must be in [0, 1], got %v", f.Fraction)
	case !(f.Probability >= 0 && f.Probability <= 1):
		return fmt.Errorf("probability must be in [0, 1], got %v", f.Probability)
	case f.Latency < 0:
		return fmt.Errorf("latency must not be negative, got %v", f.Latency)
	case f.Kind == AddedLatency && f.Latency == 0:
		return fmt.Errorf("latency must be positive")
	case f.Kind != AddedLatency && f.Latency != 0:
		return fmt.Errorf("latency is only for %v faults, got %v", AddedLatency, f.Latency)
	case f.Kind != MessageLoss && f.Probability != 0:
		return fmt.Errorf("probability is only for %v faults, got %v", MessageLoss, f.Probability)
	case f.Kind == StreamResetAfterResponse && f.Responses < 1:
		return fmt.Errorf("responses must be at least 1, got %d", f.Responses)
	case f.Kind != StreamResetAfterResponse && f.Responses != 0:
		return fmt.Errorf("responses is only for %v faults, got %d", StreamResetAfterResponse, f.Responses)
	case (f.Kind == ServerDown || f.Kind == ServerRestart) && (f.Groups != nil || f.Fraction != 0):
		return fmt.Errorf("a server process is down for every client: groups and fraction must be unset")
	case f.Kind == Partition && f.Groups == nil && f.Fraction == 0:
		return fmt.Errorf("a partition must choose its clients by groups or fraction")
	}
	for _, s := range f.Servers {
		if s < 0 {
			return fmt.Errorf("server index must not be negative, got %d", s)
		}
	}
	for _, g := range f.Groups {
		if g < 0 {
			return fmt.Errorf("group index must not be negative, got %d", g)
		}
	}
	return nil
}

// Len returns the number of faults.
func (f *Faults) Len() int {
	if f == nil {
		return 0
	}
	return len(f.faults)
}

// Fault returns fault i as given to [NewFaults]. Its slices are shared:
// do not modify them.
func (f *Faults) Fault(i int) Fault { return f.faults[i] }

// Edges returns the starts and ends of every fault in time order (ties:
// by fault index, a start before its end). Faults that last forever have
// no end edge. The slice is shared: do not modify it.
func (f *Faults) Edges() []Edge {
	if f == nil {
		return nil
	}
	return f.edges
}

// Covers reports whether fault i covers the link between client c and
// server, whatever the time.
func (f *Faults) Covers(i int, c ClientRef, server int) bool {
	ft := &f.faults[i]
	if ft.Servers != nil && !slices.Contains(ft.Servers, server) {
		return false
	}
	if ft.Groups != nil && !slices.Contains(ft.Groups, c.Group) {
		return false
	}
	return ft.Fraction == 0 || unit(sim.Mix64(f.salts[i]^c.Key)) < ft.Fraction
}

// ConnectOutcome returns how a connect attempt from client c to server
// started at now fares. A blackhole or partition wins over a hold (the SYN
// never arrives), a hold over a down server (something accepts before
// it), and any of them over OK. Added sums the active AddedLatency
// faults.
func (f *Faults) ConnectOutcome(now sim.Time, c ClientRef, server int) ConnectOutcome {
	o := ConnectOutcome{Fault: -1}
	if f == nil {
		return o
	}
	for i := range f.faults {
		ft := &f.faults[i]
		if !ft.activeAt(now) || !f.Covers(i, c, server) {
			continue
		}
		switch ft.Kind {
		case Blackhole, Partition:
			if o.Verdict != ConnectBlackholed {
				o.Verdict, o.Fault = ConnectBlackholed, i
			}
		case BlackholeHold:
			if o.Verdict == ConnectOK || o.Verdict == ConnectRefused {
				o.Verdict, o.Fault = ConnectHeld, i
			}
		case ServerDown, ServerRestart:
			if o.Verdict == ConnectOK {
				o.Verdict, o.Fault = ConnectRefused, i
			}
		case AddedLatency:
			o.Added += ft.Latency
		}
	}
	return o
}

// Delivery returns what becomes of a message between client c and server
// (either way) sent at now. A blackhole or partition stalls it until
// Until; else a down server or a message loss loses it; else it is
// delivered. Added sums the active AddedLatency faults.
//
// A MessageLoss fault with a Probability loses the message when a hash of
// (seed, fault index, client key, server, now) falls below it: the choice
// is deterministic and needs no random stream.
func (f *Faults) Delivery(now sim.Time, c ClientRef, server int) Delivery {
	d := Delivery{Fault: -1}
	if f == nil {
		return d
	}
	for i := range f.faults {
		ft := &f.faults[i]
		if !ft.activeAt(now) || !f.Covers(i, c, server) {
			continue
		}
		switch ft.Kind {
		case Blackhole, Partition, BlackholeHold:
			if d.Verdict != Stalled {
				d.Verdict, d.Fault = Stalled, i
			}
		case ServerDown, ServerRestart:
			if d.Verdict == Delivered {
				d.Verdict, d.Fault = Lost, i
			}
		case MessageLoss:
			if d.Verdict == Delivered && f.loses(i, c, server, now) {
				d.Verdict, d.Fault = Lost, i
			}
		case AddedLatency:
			d.Added += ft.Latency
		}
	}
	if d.Verdict == Stalled {
		d.Until = f.StallEnd(now, c, server)
	}
	return d
}

// StreamResetAfter returns how many responses a stream between client c
// and server may have at now before the server ends it: the least
// Responses of the StreamResetAfterResponse faults active at now that
// cover the link, or 0 when none does.
func (f *Faults) StreamResetAfter(now sim.Time, c ClientRef, server int) int {
	n := 0
	if f == nil {
		return n
	}
	for i := range f.faults {
		ft := &f.faults[i]
		if ft.Kind != StreamResetAfterResponse || !ft.activeAt(now) || !f.Covers(i, c, server) {
			continue
		}
		if n == 0 || ft.Responses < n {
			n = ft.Responses
		}
	}
	return n
}

// StallEnd returns the first time at or after now at which no blackhole
// (of either kind) or partition covers the link between client c and
// server: now itself if none covers it at now, [Never] if one never ends.
// Overlapping and back-to-back blackholes chain.
func (f *Faults) StallEnd(now sim.Time, c ClientRef, server int) sim.Time {
	t := now
	if f == nil {
		return t
	}
	for moved := true; moved && t != Never; {
		moved = false
		for i := range f.faults {
			ft := &f.faults[i]
			if (ft.Kind == Blackhole || ft.Kind == Partition || ft.Kind == BlackholeHold) && ft.activeAt(t) && f.Covers(i, c, server) {
				t, moved = ft.End(), true
			}
		}
	}
	return t
}

// loses reports whether MessageLoss fault i loses the message.
func (f *Faults) loses(i int, c ClientRef, server int, now sim.Time) bool {
	p := f.faults[i].Probability
	if p == 0 {
		return true
	}
	h := sim.Mix64(f.salts[i] ^ c.Key ^ sim.Mix64(uint64(server)+sim.Golden) ^ sim.Mix64(uint64(now)))
	return unit(h) < p
}

// unit maps a hash to [0, 1) with 53 bits of precision.
func unit(h uint64) float64 { return float64(h>>11) / (1 << 53) }
