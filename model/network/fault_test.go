package network

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xdssim/xdssim/sim"
)

func mustFaults(t testing.TB, seed uint64, faults ...Fault) *Faults {
	t.Helper()
	f, err := NewFaults(seed, faults)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

const sec = sim.Time(time.Second)

// TestFaultQueriesByKind checks ConnectOutcome and Delivery for each kind
// of fault, inside its window [10 s, 20 s) and outside it.
func TestFaultQueriesByKind(t *testing.T) {
	c := NewClientRef(0, "client/0")
	tests := []struct {
		fault       Fault
		at          sim.Time
		wantConnect ConnectOutcome
		wantDeliver Delivery
	}{
		{Fault{Kind: ServerDown}, 15 * sec,
			ConnectOutcome{Verdict: ConnectRefused, Fault: 0}, Delivery{Verdict: Lost, Fault: 0}},
		{Fault{Kind: ServerRestart}, 15 * sec,
			ConnectOutcome{Verdict: ConnectRefused, Fault: 0}, Delivery{Verdict: Lost, Fault: 0}},
		{Fault{Kind: Blackhole}, 15 * sec,
			ConnectOutcome{Verdict: ConnectBlackholed, Fault: 0}, Delivery{Verdict: Stalled, Until: 20 * sec, Fault: 0}},
		{Fault{Kind: Partition, Groups: []int{0}}, 15 * sec,
			ConnectOutcome{Verdict: ConnectBlackholed, Fault: 0}, Delivery{Verdict: Stalled, Until: 20 * sec, Fault: 0}},
		{Fault{Kind: BlackholeHold}, 15 * sec,
			ConnectOutcome{Verdict: ConnectHeld, Fault: 0}, Delivery{Verdict: Stalled, Until: 20 * sec, Fault: 0}},
		{Fault{Kind: AddedLatency, Latency: 300 * time.Millisecond}, 15 * sec,
			ConnectOutcome{Added: 300 * time.Millisecond, Fault: -1}, Delivery{Added: 300 * time.Millisecond, Fault: -1}},
		{Fault{Kind: MessageLoss}, 15 * sec,
			ConnectOutcome{Fault: -1}, Delivery{Verdict: Lost, Fault: 0}},
		{Fault{Kind: GoAway}, 15 * sec, // acts through its edges only
			ConnectOutcome{Fault: -1}, Delivery{Fault: -1}},
		{Fault{Kind: StreamResetAfterResponse, Responses: 1}, 15 * sec, // edges and StreamResetAfter only
			ConnectOutcome{Fault: -1}, Delivery{Fault: -1}},
		{Fault{Kind: ServerDown}, 9 * sec, ConnectOutcome{Fault: -1}, Delivery{Fault: -1}},
		{Fault{Kind: ServerDown}, 10 * sec, // the window is [Start, End)
			ConnectOutcome{Verdict: ConnectRefused, Fault: 0}, Delivery{Verdict: Lost, Fault: 0}},
		{Fault{Kind: ServerDown}, 20 * sec, ConnectOutcome{Fault: -1}, Delivery{Fault: -1}},
		{Fault{Kind: Blackhole, Servers: []int{1}}, 15 * sec, // another server
			ConnectOutcome{Fault: -1}, Delivery{Fault: -1}},
		{Fault{Kind: Partition, Groups: []int{1}}, 15 * sec, // another group
			ConnectOutcome{Fault: -1}, Delivery{Fault: -1}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v@%v", tt.fault.Kind, tt.at), func(t *testing.T) {
			ft := tt.fault
			ft.Start, ft.Duration = 10*sec, 10*time.Second
			f := mustFaults(t, 1, ft)
			if got := f.ConnectOutcome(tt.at, c, 0); got != tt.wantConnect {
				t.Errorf("ConnectOutcome = %+v, want %+v", got, tt.wantConnect)
			}
			if got := f.Delivery(tt.at, c, 0); got != tt.wantDeliver {
				t.Errorf("Delivery = %+v, want %+v", got, tt.wantDeliver)
			}
		})
	}
	// Reference: docs/scenario-reference.md, [[fault]] (fault kinds); grpc-go
	// clientconn.go resetTransportAndUnlock (a blackholed server shows only at
	// the connect deadline).
}

// TestOverlappingFaultsCombine checks precedence and sums: a blackhole
// hides a down server (no RST comes back), added latencies add up, and
// chained blackholes stall until the last one ends.
func TestOverlappingFaultsCombine(t *testing.T) {
	c := NewClientRef(0, "client/0")
	f := mustFaults(t, 1,
		Fault{Kind: ServerDown, Start: 0, Duration: 100 * time.Second},
		Fault{Kind: Blackhole, Start: 10 * sec, Duration: 10 * time.Second},
		Fault{Kind: Partition, Start: 15 * sec, Duration: 10 * time.Second, Groups: []int{0}},
		Fault{Kind: Blackhole, Start: 25 * sec, Duration: 5 * time.Second}, // back to back
		Fault{Kind: AddedLatency, Start: 0, Duration: Forever, Latency: 10 * time.Millisecond},
		Fault{Kind: AddedLatency, Start: 0, Duration: Forever, Latency: 5 * time.Millisecond},
	)
	if got, want := f.ConnectOutcome(12*sec, c, 0), (ConnectOutcome{ConnectBlackholed, 15 * time.Millisecond, 1}); got != want {
		t.Errorf("ConnectOutcome(12s) = %+v, want %+v", got, want)
	}
	if got, want := f.Delivery(12*sec, c, 0), (Delivery{Stalled, 15 * time.Millisecond, 30 * sec, 1}); got != want {
		t.Errorf("Delivery(12s) = %+v, want %+v", got, want)
	}
	if got, want := f.ConnectOutcome(40*sec, c, 0), (ConnectOutcome{ConnectRefused, 15 * time.Millisecond, 0}); got != want {
		t.Errorf("ConnectOutcome(40s) = %+v, want %+v", got, want)
	}
	if got := f.StallEnd(5*sec, c, 0); got != 5*sec {
		t.Errorf("StallEnd outside a blackhole = %v, want now", got)
	}
	forever := mustFaults(t, 1, Fault{Kind: Blackhole, Start: 0, Duration: Forever})
	if got := forever.Delivery(sec, c, 0); got.Until != Never {
		t.Errorf("Until of an endless blackhole = %v, want Never", got.Until)
	}
	// Reference: issue #4 (pure query layer).
}

// TestPartitionByGroupCoversOnlyThoseGroups checks partition selection by
// group.
func TestPartitionByGroupCoversOnlyThoseGroups(t *testing.T) {
	f := mustFaults(t, 1, Fault{Kind: Partition, Start: 0, Duration: Forever, Groups: []int{1, 3}})
	for g, want := range []bool{false, true, false, true} {
		c := NewClientRef(g, fmt.Sprintf("client/%d", g))
		if got := f.Covers(0, c, 0); got != want {
			t.Errorf("group %d: covered %v, want %v", g, got, want)
		}
	}
	// Reference: docs/scenario-reference.md, [[fault]] (partition by group).
}

// TestPartitionByFractionIsDeterministicAndStable checks partition
// selection by fraction: it picks about that fraction; the same (seed,
// fault index, client key) always gives the same answer, however many
// clients exist and in whatever order they are asked; another seed or
// fault index picks another subset.
func TestPartitionByFractionIsDeterministicAndStable(t *testing.T) {
	part := Fault{Kind: Partition, Start: 0, Duration: Forever, Fraction: 0.3}
	chosen := func(f *Faults, idx, n int) []bool {
		out := make([]bool, n)
		for i := n - 1; i >= 0; i-- { // ask in reverse: order must not matter
			out[i] = f.Covers(idx, NewClientRef(0, fmt.Sprintf("client/%d", i)), 0)
		}
		return out
	}
	f := mustFaults(t, 42, part, part)
	small, large := chosen(f, 0, 1000), chosen(mustFaults(t, 42, part, part), 0, 10_000)
	if !slices.Equal(small, large[:1000]) {
		t.Error("adding clients changed which of the first 1000 are partitioned")
	}
	n := 0
	for _, b := range large {
		if b {
			n++
		}
	}
	if math.Abs(float64(n)/10_000-0.3) > 0.02 {
		t.Errorf("partitioned %d of 10000, want about 3000", n)
	}
	if slices.Equal(large, chosen(mustFaults(t, 43, part, part), 0, 10_000)) {
		t.Error("another seed chose the same clients")
	}
	if slices.Equal(large, chosen(f, 1, 10_000)) {
		t.Error("another fault index chose the same clients")
	}
	// Reference: docs/architecture.md, Determinism contract ("adding client 10 001 does not change
	// clients 1-10 000").
}

// TestMessageLossIsDeterministic checks a MessageLoss fault with a
// probability: about that share of messages is lost, and the same message
// time always gets the same answer.
func TestMessageLossIsDeterministic(t *testing.T) {
	c := NewClientRef(0, "client/0")
	f := mustFaults(t, 1, Fault{Kind: MessageLoss, Start: 0, Duration: Forever, Probability: 0.1})
	lost := 0
	for i := range 10_000 {
		at := sim.Time(i) * sim.Time(time.Millisecond)
		d := f.Delivery(at, c, 0)
		if d != f.Delivery(at, c, 0) {
			t.Fatal("same message, different verdicts")
		}
		if d.Verdict == Lost {
			lost++
		}
	}
	if lost < 900 || lost > 1100 {
		t.Errorf("lost %d of 10000, want about 1000", lost)
	}
	// Reference: docs/architecture.md, Determinism contract.
}

// TestFaultEdgesAreOrderedAndSayWhatToDo checks the edge list: every start
// and finite end, in time order, with the action the wiring takes.
func TestFaultEdgesAreOrderedAndSayWhatToDo(t *testing.T) {
	f := mustFaults(t, 1,
		Fault{Kind: ServerRestart, Start: 30 * sec, Duration: 5 * time.Second},
		Fault{Kind: Blackhole, Start: 10 * sec, Duration: 20 * time.Second},
		Fault{Kind: GoAway, Start: 50 * sec, Duration: 0},
		Fault{Kind: ServerDown, Start: 60 * sec, Duration: Forever},
		Fault{Kind: StreamResetAfterResponse, Start: 40 * sec, Duration: 5 * time.Second, Responses: 1},
	)
	want := []struct {
		edge   Edge
		action EdgeAction
	}{
		{Edge{10 * sec, 1, Blackhole, false}, ActionStall},
		{Edge{30 * sec, 0, ServerRestart, false}, ActionReset},
		{Edge{30 * sec, 1, Blackhole, true}, ActionNone},
		{Edge{35 * sec, 0, ServerRestart, true}, ActionNone},
		{Edge{40 * sec, 4, StreamResetAfterResponse, false}, ActionEndAnswered},
		{Edge{45 * sec, 4, StreamResetAfterResponse, true}, ActionNone},
		{Edge{50 * sec, 2, GoAway, false}, ActionDrain},
		{Edge{50 * sec, 2, GoAway, true}, ActionCloseDrained},
		{Edge{60 * sec, 3, ServerDown, false}, ActionReset},
	}
	got := f.Edges()
	if len(got) != len(want) {
		t.Fatalf("Edges() = %v, want %d edges", got, len(want))
	}
	for i, w := range want {
		if got[i] != w.edge || got[i].Action() != w.action {
			t.Errorf("edge %d = %+v (%v), want %+v (%v)", i, got[i], got[i].Action(), w.edge, w.action)
		}
	}
	// Reference: issue #4 (edges so the wiring can reset streams at a
	// restart's start); gRFC A9 (GOAWAY, then close after the grace period);
	// gRFC A88 "Open issues" (a server that ends each stream after a response).
}

// TestNewFaultsRejectsInvalidFaults checks validation errors.
func TestNewFaultsRejectsInvalidFaults(t *testing.T) {
	for _, tt := range []struct {
		fault Fault
		want  string
	}{
		{Fault{}, "fault 0 (FaultKind(0)): unknown kind 0"},
		{Fault{Kind: Blackhole, Duration: -time.Second}, "duration must not be negative, got -1s"},
		{Fault{Kind: Blackhole, Start: -1}, "start must not be negative"},
		{Fault{Kind: Partition, Duration: time.Second}, "a partition must choose its clients"},
		{Fault{Kind: ServerDown, Groups: []int{0}}, "a server process is down for every client"},
		{Fault{Kind: ServerRestart, Fraction: 0.5}, "a server process is down for every client"},
		{Fault{Kind: Blackhole, Fraction: 2}, "fraction must be in [0, 1], got 2"},
		{Fault{Kind: AddedLatency}, "latency must be positive"},
		{Fault{Kind: Blackhole, Latency: time.Second}, "latency is only for added-latency faults"},
		{Fault{Kind: MessageLoss, Probability: -0.1}, "probability must be in [0, 1]"},
		{Fault{Kind: Blackhole, Probability: 0.1}, "probability is only for message-loss faults"},
		{Fault{Kind: Blackhole, Servers: []int{-1}}, "server index must not be negative"},
		{Fault{Kind: StreamResetAfterResponse}, "responses must be at least 1, got 0"},
		{Fault{Kind: StreamResetAfterResponse, Responses: -2}, "responses must be at least 1, got -2"},
		{Fault{Kind: GoAway, Responses: 1}, "responses is only for stream-reset-after-response faults"},
	} {
		_, err := NewFaults(1, []Fault{tt.fault})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewFaults(%+v) = %v, want an error containing %q", tt.fault, err, tt.want)
		}
	}
	// Reference: docs/architecture.md, Style ("errors carry context").
}

// TestStreamResetAfterTakesTheStrictestActiveFault checks the query the
// wiring asks at each response: the least Responses of the active
// StreamResetAfterResponse faults that cover the link, 0 outside them or
// for a client or server they do not cover.
func TestStreamResetAfterTakesTheStrictestActiveFault(t *testing.T) {
	c0, c1 := NewClientRef(0, "client/0"), NewClientRef(1, "client/1")
	f := mustFaults(t, 1,
		Fault{Kind: StreamResetAfterResponse, Start: 10 * sec, Duration: 20 * time.Second, Responses: 3, Servers: []int{0}},
		Fault{Kind: StreamResetAfterResponse, Start: 20 * sec, Duration: 5 * time.Second, Responses: 1, Groups: []int{0}},
		Fault{Kind: ServerDown, Start: 0, Duration: Forever, Servers: []int{1}},
	)
	for _, tt := range []struct {
		name   string
		at     sim.Time
		c      ClientRef
		server int
		want   int
	}{
		{"before any", 5 * sec, c0, 0, 0},
		{"one active", 15 * sec, c0, 0, 3},
		{"both active: the least", 22 * sec, c0, 0, 1},
		{"the second does not cover group 1", 22 * sec, c1, 0, 3},
		{"the second has ended", 25 * sec, c0, 0, 3},
		{"window is [Start, End)", 30 * sec, c0, 0, 0},
		{"another server", 15 * sec, c0, 1, 0},
	} {
		if got := f.StreamResetAfter(tt.at, tt.c, tt.server); got != tt.want {
			t.Errorf("%s: StreamResetAfter(%v) = %d, want %d", tt.name, tt.at, got, tt.want)
		}
	}
	var none *Faults
	if got := none.StreamResetAfter(15*sec, c0, 0); got != 0 {
		t.Errorf("nil plan: StreamResetAfter = %d, want 0", got)
	}
	// Reference: gRFC A88 "Open issues" ("the primary server can send an
	// initial response and then the stream can die").
}

// TestNilFaultsIsTheEmptyPlan checks that a nil plan answers as no faults.
func TestNilFaultsIsTheEmptyPlan(t *testing.T) {
	var f *Faults
	c := NewClientRef(0, "client/0")
	if got := f.ConnectOutcome(0, c, 0); got != (ConnectOutcome{Fault: -1}) {
		t.Errorf("ConnectOutcome = %+v", got)
	}
	if got := f.Delivery(0, c, 0); got != (Delivery{Fault: -1}) {
		t.Errorf("Delivery = %+v", got)
	}
	if f.Len() != 0 || f.Edges() != nil || f.StallEnd(5, c, 0) != 5 {
		t.Error("nil plan is not empty")
	}
	// Reference: the Go convention that a nil receiver may be the empty value.
}

// TestNewFaultsCopiesItsInput checks that the plan does not alias the
// caller's slices.
func TestNewFaultsCopiesItsInput(t *testing.T) {
	servers := []int{0}
	in := []Fault{{Kind: Blackhole, Duration: Forever, Servers: servers}}
	f := mustFaults(t, 1, in...)
	servers[0] = 5
	in[0].Kind = ServerDown
	if got := f.Fault(0); got.Kind != Blackhole || got.Servers[0] != 0 {
		t.Errorf("plan changed with its input: %+v", got)
	}
	// Reference: docs/architecture.md, Performance rules.
}
