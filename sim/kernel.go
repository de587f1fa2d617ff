package sim

import (
	"fmt"
	"math"
	"time"
)

// A Kernel runs a simulation: it owns the virtual clock and the queue of
// pending events, and hands events to its [Handler] in (At, Seq) order.
//
// A Kernel is not safe for concurrent use; a run is single-threaded by
// design. Independent runs use independent kernels.
type Kernel struct {
	h       Handler
	ahead   Looker
	now     Time
	seq     uint64 // Seq of the last scheduled or reserved event
	events  uint64 // events handed to h so far
	ranAt   Time   // At and Seq of the last event handed to h
	ranSeq  uint64
	q       queue
	running bool
	stopped bool

	sampleEvery time.Duration
	sample      func(t Time)
	nextSample  Time

	watch   func(events uint64) uint64
	watchAt uint64 // events at which watch is next called; 0: never
}

// NewKernel returns a kernel at time 0 with no pending events that hands
// every event to h.
func NewKernel(h Handler) *Kernel {
	if h == nil {
		panic("sim: NewKernel: nil Handler")
	}
	k := &Kernel{h: h}
	k.ahead, _ = h.(Looker)
	return k
}

// A Looker is a Handler that is shown, before an event runs, an event
// likely to run soon after it, so that it can bring that event's state
// into the processor's caches meanwhile. Ahead must not change anything
// an event can observe.
type Looker interface {
	Ahead(ev *Event)
}

// Now returns the current virtual time: while an event runs, its At; after
// [Kernel.Run] returns, the time the run reached.
func (k *Kernel) Now() Time { return k.now }

// Events returns the number of events handled so far.
func (k *Kernel) Events() uint64 { return k.events }

// Pending returns the number of events in the queue, counting events that
// belong to stopped or re-armed timers and will be ignored when they run.
func (k *Kernel) Pending() int { return k.q.len() }

// Schedule adds ev to the queue and sets its Seq, so that it runs after
// every event already scheduled for the same time. Schedule panics if ev.At
// is before [Kernel.Now]: an event never runs in the past.
func (k *Kernel) Schedule(ev Event) {
	if ev.At < k.now {
		k.pastEvent("Schedule", ev)
	}
	k.seq++
	ev.Seq = k.seq
	k.q.push(ev)
}

// Reserve takes the Seq that [Kernel.Schedule] would give an event
// scheduled now, for an event that the caller will schedule later with
// [Kernel.ScheduleReserved]: a world that knows now when something will
// happen but keeps it in a queue of its own, and gives the kernel only
// that queue's next event, still has it run among the events of its time
// as though it had been scheduled now.
func (k *Kernel) Reserve() uint64 {
	k.seq++
	return k.seq
}

// ScheduleReserved adds ev, whose Seq was taken with [Kernel.Reserve], to
// the queue: it runs after the events of its At whose Seq is lower and
// before those whose Seq is higher, wherever they were scheduled. It
// panics if ev.Seq was not reserved, or if ev would run before the event
// last run: before the current time, or at it but with a lower Seq.
//
// The kernel keeps reserved events apart from the others, in a binary
// heap, and compares its first with the first of the rest at every event:
// it is meant for a few such events pending at a time, one per queue the
// world keeps.
func (k *Kernel) ScheduleReserved(ev Event) {
	if ev.Seq == 0 || ev.Seq > k.seq {
		panic(fmt.Sprintf("sim: ScheduleReserved: event (entity %d, kind %d) has Seq %d, which was not reserved",
			ev.Entity, ev.Kind, ev.Seq))
	}
	if ev.At < k.now || ev.At == k.ranAt && ev.Seq <= k.ranSeq {
		k.pastEvent("ScheduleReserved", ev)
	}
	k.q.pushReserved(ev)
}

// After schedules ev to run d after the current time: it sets ev.At to
// Now()+d and calls [Kernel.Schedule]. A negative d panics.
func (k *Kernel) After(d time.Duration, ev Event) {
	ev.At = k.now.Add(d)
	k.Schedule(ev)
}

// pastEvent panics because ev would run before the current time.
func (k *Kernel) pastEvent(op string, ev Event) {
	panic(fmt.Sprintf("sim: %s: event (entity %d, kind %d) at %v is before the current time %v",
		op, ev.Entity, ev.Kind, ev.At, k.now))
}

// SetSampler makes [Kernel.Run] call fn(t) for every t = 0, interval,
// 2*interval, ... up to the time the run reaches. A sample at t sees the
// state after every event with At <= t has run and before any event with
// At > t runs. Samples are not events: they are not counted by
// [Kernel.Events] and take no Seq, so adding a sampler does not change the
// run. fn may read the world and call [Kernel.Stop], but must not schedule
// events.
//
// Samples at times that have already passed are skipped: the first sample
// is at the first multiple of interval not before [Kernel.Now]. A nil fn
// removes the sampler. SetSampler panics if interval is not positive.
func (k *Kernel) SetSampler(interval time.Duration, fn func(t Time)) {
	if fn == nil {
		k.sample, k.sampleEvery = nil, 0
		return
	}
	if interval <= 0 {
		panic(fmt.Sprintf("sim: SetSampler: interval must be positive, got %v", interval))
	}
	k.sample, k.sampleEvery = fn, interval
	i := Time(interval)
	k.nextSample = (k.now + i - 1) / i * i
}

// Watch makes [Kernel.Run] call fn once it has handled at events in all,
// between two events; fn returns the count at which to call it next (0:
// never again). fn may read the world and call [Kernel.Stop], but must
// not schedule events. Watching costs one comparison per event and does
// not change the run. A nil fn removes the watch.
func (k *Kernel) Watch(at uint64, fn func(events uint64) (next uint64)) {
	k.watch, k.watchAt = fn, at
	if fn == nil {
		k.watchAt = 0
	}
}

// Run handles events in (At, Seq) order until the queue is empty or the
// next event is after until, and then advances the clock to until, taking
// any samples due on the way. Events after until stay pending; a later
// Run continues with them.
//
// Before each event, a Handler that is a [Looker] is shown the event
// likely to run after it, when the queue has one at hand.
//
// If [Kernel.Stop] is called, Run returns as soon as the current event or
// sample is done, with the clock at that event's or sample's time.
//
// Run panics if until is before [Kernel.Now], if it is called while a run
// is in progress, or if an event would run in the past (an invariant of
// the queue).
func (k *Kernel) Run(until Time) {
	if until < k.now {
		panic(fmt.Sprintf("sim: Run: until %v is before the current time %v", until, k.now))
	}
	if k.running {
		panic("sim: Run called during a run")
	}
	k.running, k.stopped = true, false
	defer func() { k.running = false }()

	for {
		next := k.q.front()
		if next == nil || next.At > until {
			break
		}
		if k.sample != nil && k.nextSample < next.At {
			if k.sampleThrough(next.At - 1) {
				return
			}
			continue // look again, in case fn scheduled something
		}
		ev := *next
		k.q.pop()
		if ev.At < k.now {
			k.pastEvent("Run", ev)
		}
		k.now = ev.At
		k.ranAt, k.ranSeq = ev.At, ev.Seq
		k.events++
		if k.ahead != nil {
			if nx := k.q.peek(); nx != nil {
				k.ahead.Ahead(nx)
			}
		}
		k.h.HandleEvent(k, ev)
		if k.events == k.watchAt {
			next := k.watch(k.events)
			if next <= k.events {
				next = 0
			}
			k.watchAt = next
		}
		if k.stopped {
			return
		}
	}
	if k.sample != nil && k.nextSample <= until && k.sampleThrough(until) {
		return
	}
	k.now = until
}

// sampleThrough takes every sample due at or before t. It reports whether
// the sampler stopped the run; the clock is then at that sample's time.
func (k *Kernel) sampleThrough(t Time) (stopped bool) {
	for k.sample != nil && k.nextSample <= t {
		st := k.nextSample
		k.now = st
		fn := k.sample
		if st > Never-Time(k.sampleEvery) {
			k.sample = nil // the next sample's time is past the end of time
		} else {
			k.nextSample = st + Time(k.sampleEvery)
		}
		fn(st)
		if k.stopped {
			return true
		}
	}
	return false
}

// Stop makes the current [Kernel.Run] return once the event or sample in
// progress is done. Called outside a run, it does nothing.
func (k *Kernel) Stop() {
	if k.running {
		k.stopped = true
	}
}

// NewLocalKernel returns a kernel as [NewKernel] does, for a few pending
// events at a time (one entity's, say): it keeps them in a binary heap,
// which for a handful of events costs less than the timing wheel, whose
// cost is in moving events down its levels.
func NewLocalKernel(h Handler) *Kernel {
	k := NewKernel(h)
	k.q.cur = math.MaxUint64 // every event is before it: all go to the heap
	return k
}

// Restart sets the clock of a kernel with no pending events to now, which
// may be before [Kernel.Now]: a kernel that runs one entity's events of a
// stretch of time at a time, ahead of or behind the main kernel's clock,
// starts each stretch afresh. Restart panics during a run or with events
// pending.
func (k *Kernel) Restart(now Time) {
	if k.running || k.q.len() > 0 {
		panic("sim: Restart of a kernel that is running or has events pending")
	}
	k.now = now
	k.ranAt, k.ranSeq = 0, 0
	if k.q.cur != math.MaxUint64 {
		k.q.restart(uint64(now))
	}
}

// MoveTo removes every pending event and schedules it on dst, in (At, Seq)
// order, so that they keep their order among themselves and run after the
// events dst already has for the same time; dst may be running. It panics
// during a run of k, or if an event is before dst's clock.
func (k *Kernel) MoveTo(dst *Kernel) {
	if k.running {
		panic("sim: MoveTo during a run")
	}
	for {
		next := k.q.front()
		if next == nil {
			return
		}
		ev := *next
		k.q.pop()
		dst.Schedule(ev)
	}
}
