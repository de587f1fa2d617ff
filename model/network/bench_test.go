package network

import (
	"testing"
	"time"

	"github.com/xdssim/xdssim/sim"
)

// benchFaults is a plan of the size a scenario has: a handful of faults of
// every kind, some covering the benchmark's client.
func benchFaults(tb testing.TB) *Faults {
	return mustFaults(tb, 1,
		Fault{Kind: ServerDown, Start: 10 * sec, Duration: 5 * time.Second},
		Fault{Kind: Partition, Start: 0, Duration: Forever, Groups: []int{3}},
		Fault{Kind: Blackhole, Start: 100 * sec, Duration: 30 * time.Second, Fraction: 0.5},
		Fault{Kind: AddedLatency, Start: 0, Duration: Forever, Latency: ms(1)},
		Fault{Kind: ServerRestart, Start: 200 * sec, Duration: 5 * time.Second},
		Fault{Kind: GoAway, Start: 300 * sec, Duration: time.Second},
		Fault{Kind: MessageLoss, Start: 0, Duration: Forever, Probability: 1e-6, Servers: []int{0}},
	)
}

// messagePath sends one message on an open stream and delivers it: the
// work the wiring does per message.
type messagePath struct {
	f    *Faults
	link LinkConfig
	r    *sim.Rand
	c    ClientRef
	st   Stream
	id   StreamID
	now  sim.Time
}

func newMessagePath(tb testing.TB) *messagePath {
	p := &messagePath{f: benchFaults(tb), link: LinkConfig{Latency: sim.LogNormal(ms(5), ms(50))},
		r: sim.NewStream(1, "client/0"), c: NewClientRef(0, "client/0")}
	p.id = p.st.Begin(0, 0, false)
	p.st.Start(0, p.id)
	return p
}

func (p *messagePath) step() {
	p.now += msT
	at, res := p.st.Send(p.now, p.id, ServerToClient, p.link.OneWay(p.r), p.f.Delivery(p.now, p.c, 1))
	if res == SendScheduled {
		p.st.Deliver(at, p.id, ServerToClient)
	}
}

// connectPath runs one connect cycle: a pick leaves IDLE, an attempt is
// refused, the backoff timer fires, the next attempt connects, and the
// transport is lost again. It is the work the wiring does per connection.
type connectPath struct {
	f    *Faults
	link LinkConfig
	cfg  BackoffConfig
	r    *sim.Rand
	c    ClientRef
	ch   Channel
	buf  []Effect
	now  sim.Time
}

func newConnectPath(tb testing.TB) *connectPath {
	p := &connectPath{f: benchFaults(tb), link: LinkConfig{Latency: sim.LogNormal(ms(5), ms(50))},
		cfg: DefaultBackoffConfig(), r: sim.NewStream(1, "client/0"), c: NewClientRef(0, "client/0"),
		buf: make([]Effect, 0, 8)}
	p.ch = NewChannel(&p.cfg, p.r)
	return p
}

func (p *connectPath) step() {
	p.now += sec
	_, p.buf = p.ch.Pick(p.now, false, p.buf[:0])
	e := p.buf[len(p.buf)-1]
	_, res := ResolveAttempt(p.f, &p.link, p.r, p.c, 0, p.now, e.At, e.TCPAt)
	p.now += 100 * msT
	_ = res
	p.buf = p.ch.ConnectResult(p.now, e.Attempt, false, p.buf[:0])
	t := p.buf[len(p.buf)-1]
	p.now = t.At
	p.buf = p.ch.TimerFired(p.now, t.Timer, p.buf[:0])
	e = p.buf[len(p.buf)-1]
	at, res := ResolveAttempt(p.f, &p.link, p.r, p.c, 0, p.now, e.At, e.TCPAt)
	p.now = at
	p.buf = p.ch.EndAttempt(p.now, e.Attempt, res, p.buf[:0])
	p.buf = p.ch.ConnectionLost(p.now, p.buf[:0])
	if p.ch.State() == TransientFailure { // the fault plan refused it
		p.buf = p.ch.Shutdown(p.now, p.buf[:0])
		p.ch = NewChannel(&p.cfg, p.r)
	}
}

// TestHotPathsDoNotAllocate checks the per-message and per-connect paths
// and the fault queries allocate nothing.
func TestHotPathsDoNotAllocate(t *testing.T) {
	m, c := newMessagePath(t), newConnectPath(t)
	f, cl := benchFaults(t), NewClientRef(3, "client/9")
	for _, tt := range []struct {
		name string
		fn   func()
	}{
		{"message", m.step},
		{"connect", c.step},
		{"queries", func() {
			_ = f.ConnectOutcome(115*sec, cl, 0)
			_ = f.Delivery(115*sec, cl, 0)
		}},
	} {
		if n := testing.AllocsPerRun(1000, tt.fn); n != 0 {
			t.Errorf("%s path: %v allocations per run, want 0", tt.name, n)
		}
	}
	// Reference: docs/architecture.md, Performance rules ("no allocation per event in steady state").
}

// BenchmarkMessagePath measures one message: fault query, latency draw,
// send and delivery on a stream.
func BenchmarkMessagePath(b *testing.B) {
	p := newMessagePath(b)
	b.ReportAllocs()
	for b.Loop() {
		p.step()
	}
}

// BenchmarkConnectPath measures one connect cycle: pick, a refused attempt,
// backoff, a successful attempt, transport lost (two ResolveAttempt calls,
// six channel inputs).
func BenchmarkConnectPath(b *testing.B) {
	p := newConnectPath(b)
	b.ReportAllocs()
	for b.Loop() {
		p.step()
	}
}

// BenchmarkFaultQueries measures ConnectOutcome and Delivery on a plan of
// seven faults.
func BenchmarkFaultQueries(b *testing.B) {
	f, c := benchFaults(b), NewClientRef(3, "client/9")
	b.ReportAllocs()
	for b.Loop() {
		_ = f.ConnectOutcome(115*sec, c, 0)
		_ = f.Delivery(115*sec, c, 0)
	}
}
