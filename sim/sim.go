// Package sim is the discrete-event simulation kernel of xdssim: virtual
// time, an event queue, cancellable timers, seeded random streams and the
// loop that runs a world's events in order.
//
// A run is deterministic. Events run in the order of their time and, for
// equal times, in the order they were scheduled; all randomness comes from
// per-entity streams derived from the run seed (see [NewStream]); the kernel
// starts no goroutines and never reads the wall clock. Running the same
// world with the same seed therefore processes the same events in the same
// order, on any machine.
//
// The kernel knows nothing of what it simulates. The world implements
// [Handler]; events are small values (see [Event]) that name an entity and
// a kind chosen by the world, so scheduling one allocates nothing.
package sim

import (
	"math"
	"time"
)

// Time is a point in virtual time: the nanoseconds elapsed since the start
// of a run. The zero Time is the start of the run.
type Time int64

// Never is the latest Time: an event at Never does not run in any run
// (runs last at most a few weeks of virtual time).
const Never = Time(math.MaxInt64)

// Add returns the time t+d, saturated to [math.MinInt64, Never]: a
// duration too long for virtual time (a log-normal's far tail, a backoff
// grown without end) yields a time after every run, never one that wraps
// into the past.
func (t Time) Add(d time.Duration) Time {
	s := t + Time(d)
	if (s < t) != (d < 0) { // the sum overflowed
		if d < 0 {
			return math.MinInt64
		}
		return Never
	}
	return s
}

// Sub returns the duration t-u.
func (t Time) Sub(u Time) time.Duration { return time.Duration(t - u) }

// Seconds returns t as a floating-point number of seconds since the start
// of the run.
func (t Time) Seconds() float64 { return time.Duration(t).Seconds() }

// String returns t as the time elapsed since the start of the run, in the
// form of [time.Duration.String], such as "1m30.5s".
func (t Time) String() string { return time.Duration(t).String() }

// Event is one thing that happens at one point in virtual time. It is a
// 32-byte value holding no pointers, so the queue stores events inline and
// scheduling one allocates nothing.
//
// What Entity, Kind and Arg mean is up to the world; the kernel only orders
// events by At and Seq.
type Event struct {
	// At is the virtual time at which the event runs.
	At Time
	// Seq is set by the kernel when the event is scheduled. Events with
	// equal At run in increasing Seq, that is in the order they were
	// scheduled.
	Seq uint64
	// Entity identifies the entity the event is for.
	Entity uint32
	// Kind says what the event is.
	Kind uint32
	// Arg is the event's payload. Events scheduled by a [Timer] carry the
	// timer's generation here.
	Arg uint64
}

// before reports whether e runs before f: it orders events by (At, Seq).
func (e *Event) before(f *Event) bool {
	return e.At < f.At || e.At == f.At && e.Seq < f.Seq
}

// A Handler is the simulated world: the kernel hands it every event, one at
// a time, in order. HandleEvent may schedule further events on k, stop the
// run, or arm and stop timers; it must not call [Kernel.Run].
type Handler interface {
	HandleEvent(k *Kernel, ev Event)
}
