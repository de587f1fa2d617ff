package network

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/xdssim/xdssim/sim"
)

// TestLinkLatencyFollowsItsDistribution checks one-way latencies drawn
// from a constant, a uniform and a log-normal (median, p99) link.
func TestLinkLatencyFollowsItsDistribution(t *testing.T) {
	const n = 20_000
	for _, tt := range []struct {
		dist                sim.Dist
		wantMedian, wantP99 time.Duration
		wantMin, wantMax    time.Duration
		tolerance           float64
	}{
		{sim.Constant(ms(5)), ms(5), ms(5), ms(5), ms(5), 0},
		{sim.UniformDist(ms(10), ms(30)), ms(20), 29_800 * time.Microsecond, ms(10), ms(30), 0.02},
		{sim.LogNormal(ms(10), ms(80)), ms(10), ms(80), 0, time.Hour, 0.05},
	} {
		t.Run(tt.dist.String(), func(t *testing.T) {
			l := LinkConfig{Latency: tt.dist}
			r := sim.NewStream(1, "client/0")
			x := make([]time.Duration, n)
			for i := range x {
				x[i] = l.OneWay(r)
			}
			slices.Sort(x)
			near := func(got, want time.Duration) bool {
				d := float64(got - want)
				return d <= tt.tolerance*float64(want) && -d <= tt.tolerance*float64(want)
			}
			if got := x[n/2]; !near(got, tt.wantMedian) {
				t.Errorf("median %v, want %v", got, tt.wantMedian)
			}
			if got := x[n*99/100]; !near(got, tt.wantP99) {
				t.Errorf("p99 %v, want %v", got, tt.wantP99)
			}
			if x[0] < tt.wantMin || x[n-1] > tt.wantMax {
				t.Errorf("range [%v, %v], want within [%v, %v]", x[0], x[n-1], tt.wantMin, tt.wantMax)
			}
		})
	}
	// Reference: docs/scenario-reference.md, Distributions (constant, uniform, or
	// lognormal given median and p99).
}

// TestResolveAttemptByOutcome checks when and how a connect attempt ends
// for each outcome, on a 50 ms one-way link (100 ms round trip) with a
// 20 s deadline.
func TestResolveAttemptByOutcome(t *testing.T) {
	const start, deadline = 100 * sec, 120 * sec
	c := NewClientRef(0, "client/0")
	for _, tt := range []struct {
		name    string
		link    LinkConfig
		faults  []Fault
		wantAt  sim.Time
		wantRes AttemptResult
	}{
		{"ok: two round trips", LinkConfig{}, nil, start + 200*msT, AttemptConnected},
		{"ok: TLS adds a round trip", LinkConfig{HandshakeRTTs: 3}, nil, start + 300*msT, AttemptConnected},
		{"refused: one round trip", LinkConfig{},
			[]Fault{{Kind: ServerDown, Duration: Forever}}, start + 100*msT, AttemptRefused},
		{"blackholed: the deadline", LinkConfig{},
			[]Fault{{Kind: Blackhole, Duration: Forever}}, deadline, AttemptTimedOut},
		{"blackhole clears: connects on the SYN retransmitted at +3s", LinkConfig{},
			[]Fault{{Kind: Blackhole, Start: 90 * sec, Duration: 12 * time.Second}}, start + 3*sec + 200*msT, AttemptConnected},
		{"blackhole clears onto a down server: refused after the retransmission", LinkConfig{},
			[]Fault{{Kind: Blackhole, Start: 90 * sec, Duration: 12 * time.Second}, {Kind: ServerDown, Duration: Forever}},
			start + 3*sec + 100*msT, AttemptRefused},
		{"no SYN retransmission", LinkConfig{SYNTimeout: -1},
			[]Fault{{Kind: Blackhole, Start: 90 * sec, Duration: 12 * time.Second}}, deadline, AttemptTimedOut},
		{"added latency on each leg", LinkConfig{},
			[]Fault{{Kind: AddedLatency, Duration: Forever, Latency: ms(250)}}, start + 200*msT + 1000*msT, AttemptConnected},
		{"held: the deadline", LinkConfig{},
			[]Fault{{Kind: BlackholeHold, Duration: Forever}}, deadline, AttemptTimedOut},
		{"hold clears at +8s: completes at once, no SYN retransmission to wait for", LinkConfig{},
			[]Fault{{Kind: BlackholeHold, Start: 90 * sec, Duration: 18 * time.Second}}, start + 8*sec + 100*msT, AttemptConnected},
		{"dropped SYNs under the same outage: the retransmission at +15s", LinkConfig{},
			[]Fault{{Kind: Blackhole, Start: 90 * sec, Duration: 18 * time.Second}}, start + 15*sec + 200*msT, AttemptConnected},
		{"hold clears within the first round trip: as if OK", LinkConfig{},
			[]Fault{{Kind: BlackholeHold, Start: 90 * sec, Duration: 10*time.Second + 50*time.Millisecond}}, start + 200*msT, AttemptConnected},
		{"hold in front of a down server: accepted, then held", LinkConfig{},
			[]Fault{{Kind: BlackholeHold, Duration: Forever}, {Kind: ServerDown, Duration: Forever}}, deadline, AttemptTimedOut},
		{"a dropping blackhole wins over a hold", LinkConfig{},
			[]Fault{{Kind: BlackholeHold, Duration: Forever}, {Kind: Blackhole, Start: 90 * sec, Duration: 12 * time.Second}},
			deadline, AttemptTimedOut},
		{"handshake slower than the deadline", LinkConfig{},
			[]Fault{{Kind: AddedLatency, Duration: Forever, Latency: 6 * time.Second}}, deadline, AttemptTimedOut},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.link.Latency = sim.Constant(ms(50))
			f := mustFaults(t, 1, tt.faults...)
			at, res := ResolveAttempt(f, &tt.link, sim.NewStream(1, "client/0"), c, 0, start, deadline, Never)
			if at != tt.wantAt || res != tt.wantRes {
				t.Errorf("ResolveAttempt = %v %v, want %v %v", at, res, tt.wantAt, tt.wantRes)
			}
		})
	}
	// Reference: grpc doc/connection-backoff.md (connect deadline); RFC 6298 §2 and
	// Linux TCP_TIMEOUT_INIT (SYN retransmitted after 1 s, 2 s, 4 s, ...);
	// grpc-go clientconn.go createTransport (the server preface awaited
	// until the connect deadline).
}

const msT = sim.Time(time.Millisecond)

// TestKeepaliveDetectsABlackhole checks when keepalive (5 min, 20 s) closes
// a transport that went silent, with a 100 ms round trip.
func TestKeepaliveDetectsABlackhole(t *testing.T) {
	ka := XDSKeepalive()
	rtt := 100 * time.Millisecond
	min5 := sim.Time(5 * time.Minute)
	for _, tt := range []struct {
		name                           string
		lastRead, stallStart, stallEnd sim.Time
		wantAt                         sim.Time
		wantDies                       bool
	}{
		{"message just before the stall", 100 * sec, 100 * sec, Never, 100*sec + min5 + 20*sec, true},
		{"idle: the last keepalive ack sets the clock", 0, 400 * sec, Never,
			// acks at 300.1 s (and 600.2 s, after the stall): ping at 600.1 s.
			300*sec + 100*msT + min5 + 20*sec, true},
		{"stall ends before the ping", 100 * sec, 110 * sec, 200 * sec, 100*sec + min5 + 20*sec, false},
		{"stall ends while the ping is out, ack in time", 100 * sec, 110 * sec, 100*sec + min5 + 10*sec, 100*sec + min5 + 20*sec, false},
		{"stall ends too late for the ack", 100 * sec, 110 * sec, 100*sec + min5 + 20*sec, 100*sec + min5 + 20*sec, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			at, dies := ka.DeadAt(tt.lastRead, tt.stallStart, tt.stallEnd, rtt)
			if at != tt.wantAt || dies != tt.wantDies {
				t.Errorf("DeadAt = %v %v, want %v %v", at, dies, tt.wantAt, tt.wantDies)
			}
		})
	}
	if _, dies := (Keepalive{}).DeadAt(0, 0, Never, rtt); dies {
		t.Error("disabled keepalive closed the transport")
	}
	// Reference: grpc-go internal/xds/clients/grpctransport/grpc_transport.go (5 min,
	// 20 s); internal/transport/http2_client.go keepalive.
}

// TestUnacknowledgedWriteClosesTheTransport checks TCP_USER_TIMEOUT: a
// request written into a blackhole closes the transport 20 s later unless
// its acknowledgement is back by then.
func TestUnacknowledgedWriteClosesTheTransport(t *testing.T) {
	ka := XDSKeepalive()
	rtt := 100 * time.Millisecond
	for _, tt := range []struct {
		name           string
		sent, stallEnd sim.Time
		wantAt         sim.Time
		wantDies       bool
	}{
		{"endless blackhole", 10 * sec, Never, 30 * sec, true},
		{"blackhole ends in time", 10 * sec, 25 * sec, 30 * sec, false},
		{"ack would be back just after the timeout", 10 * sec, 29*sec + 950*msT, 30 * sec, true},
		{"written after it ended", 40 * sec, 30 * sec, 60 * sec, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			at, dies := ka.UnackedAt(tt.sent, tt.stallEnd, rtt)
			if at != tt.wantAt || dies != tt.wantDies {
				t.Errorf("UnackedAt = %v %v, want %v %v", at, dies, tt.wantAt, tt.wantDies)
			}
		})
	}
	if _, dies := (Keepalive{}).UnackedAt(0, Never, rtt); dies {
		t.Error("without keepalive TCP_USER_TIMEOUT is not set, but the transport closed")
	}
	// Reference: gRFC A18 (TCP_USER_TIMEOUT = keepalive timeout); grpc-go
	// internal/transport/http2_client.go newHTTP2Client (SetTCPUserTimeout).
}

// TestMaxConnectionAgeIsJittered checks the GOAWAY time of a connection:
// Age ±10 %.
func TestMaxConnectionAgeIsJittered(t *testing.T) {
	m := MaxConnectionAge{Age: 30 * time.Minute}
	r := sim.NewStream(1, "server/0")
	for i := range 1000 {
		at := m.GoAwayAt(sec, r)
		if d := at.Sub(sec); d < 27*time.Minute || d > 33*time.Minute {
			t.Fatalf("draw %d: GOAWAY %v after the connect, want 27-33 min", i, d)
		}
	}
	if (MaxConnectionAge{}).GoAwayAt(0, r) != Never {
		t.Error("zero Age sent a GOAWAY")
	}
	// Reference: grpc-go internal/transport/http2_server.go getJitter; gRFC A9.
}

// ExampleResolveAttempt shows a connect attempt to a server behind a 5 s
// blackhole: the SYN retransmitted 7 s after the start gets through.
func ExampleResolveAttempt() {
	f, _ := NewFaults(1, []Fault{{Kind: Blackhole, Start: 0, Duration: 5 * time.Second}})
	link := LinkConfig{Latency: sim.Constant(10 * time.Millisecond)}
	r := sim.NewStream(1, "client/0")
	at, res := ResolveAttempt(f, &link, r, NewClientRef(0, "client/0"), 0, 0, sim.Time(20*time.Second), Never)
	fmt.Println(at, res)
	// Output: 7.04s connected
}
