package network

import (
	"fmt"
	"testing"
	"time"

	"github.com/xdssim/xdssim/sim"
)

// Event kinds of the test harness.
const (
	kindKick uint32 = iota // call Connect
	kindAttemptEnd
	kindBackoffTimer
)

// stateChange is one StateChanged effect, with its time.
type stateChange struct {
	At       sim.Time
	From, To State
}

func (s stateChange) String() string { return fmt.Sprintf("%v %v->%v", s.At, s.From, s.To) }

// harness drives one Channel on the sim kernel the way the fleet wiring
// does: connect attempts are resolved against the fault plan and the link,
// their ends and the backoff timer are kernel events. It records what the
// channel did.
type harness struct {
	k      *sim.Kernel
	ch     Channel
	cfg    BackoffConfig
	faults *Faults
	link   LinkConfig
	rng    *sim.Rand
	client ClientRef
	server int
	buf    []Effect

	attempts []sim.Time    // start of each attempt
	results  []sim.Time    // end of each attempt
	states   []stateChange // every StateChanged
	log      []string
}

func newHarness(t testing.TB, cfg BackoffConfig, link LinkConfig, faults []Fault) *harness {
	t.Helper()
	f, err := NewFaults(1, faults)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{cfg: cfg, faults: f, link: link, rng: sim.NewStream(1, "client/0"), client: NewClientRef(0, "client/0")}
	h.ch = NewChannel(&h.cfg, h.rng)
	h.k = sim.NewKernel(h)
	h.buf = make([]Effect, 0, 8)
	return h
}

// HandleEvent implements sim.Handler.
func (h *harness) HandleEvent(k *sim.Kernel, ev sim.Event) {
	now := k.Now()
	h.buf = h.buf[:0]
	switch ev.Kind {
	case kindKick:
		h.buf = h.ch.Connect(now, h.buf)
	case kindAttemptEnd:
		res := AttemptResult(ev.Arg & 0xff)
		h.results = append(h.results, now)
		h.log = append(h.log, fmt.Sprintf("%v attempt #%d %v", now, ev.Arg>>8, res))
		h.buf = h.ch.EndAttempt(now, uint32(ev.Arg>>8), res, h.buf)
	case kindBackoffTimer:
		h.buf = h.ch.TimerFired(now, TimerID(ev.Arg), h.buf)
	}
	h.apply(now)
}

// apply carries out the effects in h.buf.
func (h *harness) apply(now sim.Time) {
	for _, e := range h.buf {
		h.log = append(h.log, fmt.Sprintf("%v %v", now, e))
		switch e.Kind {
		case StartConnectAttempt:
			h.attempts = append(h.attempts, now)
			at, res := ResolveAttempt(h.faults, &h.link, h.rng, h.client, h.server, now, e.At, e.TCPAt)
			h.k.Schedule(sim.Event{At: at, Kind: kindAttemptEnd, Arg: uint64(e.Attempt)<<8 | uint64(res)})
		case ArmTimer:
			h.k.Schedule(sim.Event{At: e.At, Kind: kindBackoffTimer, Arg: uint64(e.Timer)})
		case StateChanged:
			h.states = append(h.states, stateChange{now, e.From, e.To})
		}
	}
}

// run connects the channel at time 0 and runs until until.
func (h *harness) run(until sim.Time) {
	h.k.Schedule(sim.Event{At: 0, Kind: kindKick})
	h.k.Run(until)
}

// ms returns a duration of n milliseconds.
func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }
