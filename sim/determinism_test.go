package sim

import (
	"encoding/binary"
	"fmt"
	"hash"
	"hash/fnv"
	"testing"
	"time"
)

// Event kinds of the synthetic world.
const (
	kindWork uint32 = iota + 1
	kindMessage
	kindRetry   // timer
	kindTimeout // timer
)

// synthEntity is one entity of the synthetic world: its own random
// stream and two timers, one re-armed often and one stopped often.
type synthEntity struct {
	r       *Rand
	retry   Timer
	timeout Timer
	got     int // messages received
}

// synthWorld exercises everything a real world does with the kernel:
// per-entity streams, events between entities with random latencies, and
// timers that are armed, re-armed and stopped at random.
type synthWorld struct {
	entities []synthEntity
	latency  Dist
	work     Dist
	fired    int
	events   eventHash
}

func newSynthWorld(seed uint64, entities int) *synthWorld {
	w := &synthWorld{
		entities: make([]synthEntity, entities),
		latency:  LogNormal(2*time.Millisecond, 20*time.Millisecond),
		work:     Exponential(50 * time.Millisecond),
		events:   eventHash{h: fnv.New64a()},
	}
	for i := range w.entities {
		w.entities[i].r = NewStream(seed, fmt.Sprintf("entity/%d", i))
	}
	return w
}

func (w *synthWorld) HandleEvent(k *Kernel, ev Event) {
	w.events.event(ev)
	e := &w.entities[ev.Entity]
	switch ev.Kind {
	case kindWork:
		switch e.r.IntN(4) {
		case 0: // send a message to a random entity
			to := uint32(e.r.IntN(len(w.entities)))
			k.After(w.latency.Sample(e.r), Event{Entity: to, Kind: kindMessage, Arg: uint64(ev.Entity)})
		case 1: // (re-)arm the retry timer with jittered backoff
			e.retry.ArmAfter(k, e.r.Jitter(100*time.Millisecond, 0.2), ev.Entity, kindRetry)
		case 2: // arm the timeout unless it is armed
			if !e.timeout.Armed() {
				e.timeout.ArmAfter(k, time.Duration(e.r.Uniform(0.1, 0.5)*float64(time.Second)), ev.Entity, kindTimeout)
			}
		case 3:
			e.timeout.Stop()
		}
		k.After(w.work.Sample(e.r), ev)
	case kindMessage:
		e.got++
		e.timeout.Stop()
	case kindRetry:
		if e.retry.Fire(ev) {
			w.fired++
			k.After(e.r.Exp(10*time.Millisecond), Event{Entity: ev.Entity, Kind: kindMessage, Arg: uint64(ev.Entity)})
		}
	case kindTimeout:
		if e.timeout.Fire(ev) {
			w.fired++
			e.retry.Stop()
		}
	}
}

// eventHash hashes the sequence of processed events (At, Entity, Kind,
// Arg) with 64-bit FNV-1a.
type eventHash struct {
	h   hash.Hash64
	buf [24]byte
	n   int
}

func (e *eventHash) event(ev Event) {
	binary.LittleEndian.PutUint64(e.buf[0:], uint64(ev.At))
	binary.LittleEndian.PutUint32(e.buf[8:], ev.Entity)
	binary.LittleEndian.PutUint32(e.buf[12:], ev.Kind)
	binary.LittleEndian.PutUint64(e.buf[16:], ev.Arg)
	e.h.Write(e.buf[:])
	e.n++
}

// runSynth runs the synthetic world to a 20-second horizon and returns the
// hash of the events it processed and how many there were.
func runSynth(t *testing.T, seed uint64) (hash uint64, events int) {
	t.Helper()
	w := newSynthWorld(seed, 50)
	k := NewKernel(w)
	for i := range w.entities {
		k.Schedule(Event{At: 0, Entity: uint32(i), Kind: kindWork})
	}
	k.Run(Time(20 * time.Second))
	if w.fired == 0 {
		t.Fatal("no timer fired: the synthetic world does not exercise timers")
	}
	return w.events.h.Sum64(), w.events.n
}

func TestSameSeedProcessesTheSameEvents(t *testing.T) {
	h1, n1 := runSynth(t, 1)
	h2, n2 := runSynth(t, 1)
	if h1 != h2 || n1 != n2 {
		t.Errorf("seed 1 ran twice: hash %#x over %d events, then %#x over %d", h1, n1, h2, n2)
	}
	if n1 < 10_000 {
		t.Errorf("only %d events: the synthetic world is too small to test much", n1)
	}
}

func TestDifferentSeedsProcessDifferentEvents(t *testing.T) {
	seen := map[uint64]uint64{}
	for seed := range uint64(5) {
		h, _ := runSynth(t, seed)
		if prev, ok := seen[h]; ok {
			t.Errorf("seeds %d and %d produced the same hash %#x", prev, seed, h)
		}
		seen[h] = seed
	}
}

func TestSyntheticRunIsPinned(t *testing.T) {
	// The exact events of seed 1 are pinned, so a change to the event
	// order (a new queue), to stream derivation or to a distribution's
	// sampling shows up here. Update the values only on purpose, and say
	// why in the commit: recorded runs stop reproducing.
	const wantHash, wantEvents = 0x1f71c2c2914fd4f, 36785
	if h, n := runSynth(t, 1); h != wantHash || n != wantEvents {
		t.Errorf("seed 1: hash %#x over %d events, want %#x over %d", h, n, uint64(wantHash), wantEvents)
	}
}
