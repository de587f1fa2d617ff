package sim

import (
	"fmt"
	"testing"
	"time"
)

// holdWorld is the classic hold model: every event schedules one more at
// now + Exp(mean), so the number of pending events stays constant. It
// stops the run after left events.
type holdWorld struct {
	r    *Rand
	mean time.Duration
	left int
}

func (w *holdWorld) HandleEvent(k *Kernel, ev Event) {
	ev.At = k.Now().Add(w.r.Exp(w.mean))
	k.Schedule(ev)
	if w.left--; w.left == 0 {
		k.Stop()
	}
}

// holdKernels are the hold models of BenchmarkHold by number of pending
// events, built once and kept warm across the benchmark's runs.
var holdKernels = map[int]*Kernel{}

// holdKernel returns a kernel running the hold model with pending events
// in its steady state. Exponential delays are memoryless, so the queue's
// contents start in their steady state, but its arrays reach theirs only
// once the queue has emptied slots of every level the events reach: at
// 1 000 000 pending events a slot of level 3 (2^24 ns) fills up with most
// of them. Two such slots' time, 34 ms, warms the queue up.
func holdKernel(pending int) *Kernel {
	if k, ok := holdKernels[pending]; ok {
		return k
	}
	w := &holdWorld{r: NewStream(1, "hold"), mean: time.Millisecond}
	k := NewKernel(w)
	for i := range pending {
		k.Schedule(Event{At: Time(w.r.Exp(w.mean)), Entity: uint32(i)})
	}
	w.left = -1 // no limit
	k.Run(Time(34 * time.Millisecond))
	holdKernels[pending] = k
	return k
}

// BenchmarkHold measures the kernel's throughput in the hold model with a
// constant number of pending events, through the real Run path: one op is
// one event taken from the queue, handled, and replaced.
func BenchmarkHold(b *testing.B) {
	for _, pending := range []int{10_000, 1_000_000} {
		b.Run(fmt.Sprintf("pending=%d", pending), func(b *testing.B) {
			k := holdKernel(pending)
			w := k.h.(*holdWorld)
			w.left = b.N
			b.ReportAllocs()
			b.ResetTimer()
			k.Run(1<<63 - 1)
			b.StopTimer()
			if w.left != 0 || k.Pending() != pending {
				b.Fatalf("Run returned with %d events left to run and %d pending", w.left, k.Pending())
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// rearmWorld models resource timers: every entity receives a response
// about once a second and re-arms its 15-second timer on each, so nearly
// every timer event is stale by the time it runs.
type rearmWorld struct {
	timers []Timer
	r      *Rand
	left   int
	fired  int
}

const (
	kindResponse uint32 = iota
	kindResourceTimeout
)

func (w *rearmWorld) HandleEvent(k *Kernel, ev Event) {
	switch ev.Kind {
	case kindResponse:
		w.timers[ev.Entity].ArmAfter(k, 15*time.Second, ev.Entity, kindResourceTimeout)
		k.After(w.r.Exp(time.Second), ev)
		if w.left--; w.left == 0 {
			k.Stop()
		}
	case kindResourceTimeout:
		if w.timers[ev.Entity].Fire(ev) {
			w.fired++
		}
	}
}

// BenchmarkTimerRearm measures re-arming an armed timer, including the
// later dispatch of the stale event the re-arming leaves behind. One op is
// one response: one re-arm plus one scheduled response.
func BenchmarkTimerRearm(b *testing.B) {
	const entities = 1000
	w := &rearmWorld{timers: make([]Timer, entities), r: NewStream(1, "rearm")}
	k := NewKernel(w)
	for e := range uint32(entities) {
		k.After(w.r.Exp(time.Second), Event{Entity: e, Kind: kindResponse})
	}
	w.left = -1
	k.Run(Time(30 * time.Second)) // reach the steady state
	w.left = b.N
	b.ReportAllocs()
	b.ResetTimer()
	k.Run(1<<63 - 1)
	if w.left != 0 {
		b.Fatalf("Run returned with %d responses left", w.left)
	}
}
