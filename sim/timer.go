package sim

import (
	"fmt"
	"time"
)

// A Timer is a cancellable, re-armable timer. It lives inside the entity
// that owns it and allocates nothing: arming schedules an ordinary [Event],
// and stopping or re-arming leaves that event in the queue but makes it
// stale, so cancelling costs nothing (lazy cancellation).
//
// Every arming gets a new generation number, carried in the event's Arg.
// When an event for the timer's entity and kind is dispatched, the world
// calls [Timer.Fire], which reports whether the event is the timer's live
// firing or a stale one to ignore:
//
//	case kindResourceTimer:
//		if !c.resourceTimer.Fire(ev) {
//			return // stopped or re-armed since
//		}
//		c.onResourceTimeout()
//
// The zero Timer is stopped.
type Timer struct {
	// state is the generation of the latest arming shifted left by one,
	// with the low bit set while that arming is live. Packing the flag
	// keeps a Timer at 16 bytes.
	state uint64
	at    Time
}

// Arm schedules the timer to fire at at, as Event{At: at, Entity: entity,
// Kind: kind, Arg: generation} on k. If the timer was armed, the earlier
// arming is superseded: its event becomes stale.
func (t *Timer) Arm(k *Kernel, at Time, entity, kind uint32) {
	gen := t.state>>1 + 1
	k.Schedule(Event{At: at, Entity: entity, Kind: kind, Arg: gen})
	t.state, t.at = gen<<1|1, at
}

// Stop disarms the timer: its pending event, if any, becomes stale.
func (t *Timer) Stop() { t.state &^= 1 }

// Armed reports whether the timer is armed and has not fired yet.
func (t *Timer) Armed() bool { return t.state&1 != 0 }

// When returns the time the timer is armed for. It is meaningful only
// while [Timer.Armed] reports true.
func (t *Timer) When() Time { return t.at }

// Fire reports whether ev is the live firing of the timer, and if so
// disarms it. It returns false for the events of earlier armings and for
// events that arrive after [Timer.Stop]. The world calls it when it
// dispatches an event of the timer's entity and kind.
func (t *Timer) Fire(ev Event) bool {
	if t.state != ev.Arg<<1|1 {
		return false
	}
	if ev.At != t.at {
		// The event carries the live generation but not the time: the
		// world dispatched another timer's event to this one.
		panic(fmt.Sprintf("sim: Timer.Fire: live firing (entity %d, kind %d, generation %d) at %v, but the timer is armed for %v",
			ev.Entity, ev.Kind, ev.Arg, ev.At, t.at))
	}
	t.state &^= 1
	return true
}

// ArmAfter arms the timer to fire d after the current time of k; see
// [Timer.Arm].
func (t *Timer) ArmAfter(k *Kernel, d time.Duration, entity, kind uint32) {
	t.Arm(k, k.Now().Add(d), entity, kind)
}
