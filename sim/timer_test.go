package sim

import (
	"slices"
	"testing"
	"time"
)

const kindTimer = 7

// timerWorld owns one timer and records its live firings.
type timerWorld struct {
	timer Timer
	fired []Time
	stale int
	hook  func(k *Kernel, ev Event)
}

func (w *timerWorld) HandleEvent(k *Kernel, ev Event) {
	if ev.Kind == kindTimer {
		if w.timer.Fire(ev) {
			w.fired = append(w.fired, ev.At)
		} else {
			w.stale++
		}
	}
	if w.hook != nil {
		w.hook(k, ev)
	}
}

func TestTimerFiresOnceAtItsTime(t *testing.T) {
	tests := []struct {
		name      string
		ops       func(w *timerWorld, k *Kernel)
		wantFired []Time
		wantStale int
	}{
		{
			name:      "armed once fires once",
			ops:       func(w *timerWorld, k *Kernel) { w.timer.Arm(k, 50, 1, kindTimer) },
			wantFired: []Time{50},
		},
		{
			name: "re-arming later supersedes",
			ops: func(w *timerWorld, k *Kernel) {
				w.timer.Arm(k, 30, 1, kindTimer)
				w.timer.Arm(k, 70, 1, kindTimer)
			},
			wantFired: []Time{70},
			wantStale: 1,
		},
		{
			name: "re-arming earlier supersedes",
			ops: func(w *timerWorld, k *Kernel) {
				w.timer.Arm(k, 70, 1, kindTimer)
				w.timer.Arm(k, 30, 1, kindTimer)
			},
			wantFired: []Time{30},
			wantStale: 1,
		},
		{
			name: "re-arming for the same time fires once",
			ops: func(w *timerWorld, k *Kernel) {
				w.timer.Arm(k, 40, 1, kindTimer)
				w.timer.Arm(k, 40, 1, kindTimer)
			},
			wantFired: []Time{40},
			wantStale: 1,
		},
		{
			name: "Stop makes the firing stale",
			ops: func(w *timerWorld, k *Kernel) {
				w.timer.Arm(k, 40, 1, kindTimer)
				w.timer.Stop()
			},
			wantStale: 1,
		},
		{
			name: "arming after Stop fires only the new arming",
			ops: func(w *timerWorld, k *Kernel) {
				w.timer.Arm(k, 40, 1, kindTimer)
				w.timer.Stop()
				w.timer.Arm(k, 40, 1, kindTimer)
			},
			wantFired: []Time{40},
			wantStale: 1,
		},
		{
			name:      "Stop on a stopped timer does nothing",
			ops:       func(w *timerWorld, k *Kernel) { w.timer.Stop() },
			wantFired: nil,
		},
		{
			name: "re-arming from its own firing",
			ops: func(w *timerWorld, k *Kernel) {
				w.timer.Arm(k, 10, 1, kindTimer)
				w.hook = func(k *Kernel, ev Event) {
					if len(w.fired) < 3 && !w.timer.Armed() {
						w.timer.ArmAfter(k, 10*time.Nanosecond, 1, kindTimer)
					}
				}
			},
			wantFired: []Time{10, 20, 30},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &timerWorld{}
			k := NewKernel(w)
			tt.ops(w, k)
			k.Run(100)
			if !slices.Equal(w.fired, tt.wantFired) {
				t.Errorf("fired at %v, want %v", w.fired, tt.wantFired)
			}
			if w.stale != tt.wantStale {
				t.Errorf("%d stale firings, want %d", w.stale, tt.wantStale)
			}
			if w.timer.Armed() {
				t.Errorf("Armed() after every firing ran")
			}
		})
	}
}

func TestTimerArmedAndWhen(t *testing.T) {
	var w timerWorld
	k := NewKernel(&w)
	tm := &w.timer
	if tm.Armed() {
		t.Fatal("zero Timer is armed")
	}
	tm.Arm(k, 25, 1, kindTimer)
	if !tm.Armed() || tm.When() != 25 {
		t.Errorf("after Arm(25): Armed() = %v, When() = %v", tm.Armed(), tm.When())
	}
	tm.Arm(k, 15, 1, kindTimer)
	if !tm.Armed() || tm.When() != 15 {
		t.Errorf("after re-Arm(15): Armed() = %v, When() = %v", tm.Armed(), tm.When())
	}
	k.Run(20)
	if tm.Armed() {
		t.Errorf("Armed() after firing")
	}
	tm.ArmAfter(k, 5, 1, kindTimer)
	if !tm.Armed() || tm.When() != 25 {
		t.Errorf("after ArmAfter(5) at 20ns: Armed() = %v, When() = %v", tm.Armed(), tm.When())
	}
	tm.Stop()
	if tm.Armed() {
		t.Errorf("Armed() after Stop")
	}
}

func TestTimerIgnoresEventsItDidNotSchedule(t *testing.T) {
	var tm Timer
	if tm.Fire(Event{Arg: 0}) || tm.Fire(Event{Arg: 1}) {
		t.Error("a zero Timer accepted a firing")
	}
	k := NewKernel(&timerWorld{})
	tm.Arm(k, 10, 1, kindTimer)
	if tm.Fire(Event{At: 10, Arg: 2}) {
		t.Error("accepted a firing of a generation it never armed")
	}
	if !tm.Armed() {
		t.Error("a rejected firing disarmed the timer")
	}
}

func TestTimerFiringAtTheWrongTimePanics(t *testing.T) {
	// A live generation at another time means the world dispatched the
	// event to the wrong timer: an invariant, not a stale firing.
	var tm Timer
	k := NewKernel(&timerWorld{})
	tm.Arm(k, 10, 1, kindTimer)
	got := mustPanic(t, func() { tm.Fire(Event{At: 11, Entity: 1, Kind: kindTimer, Arg: 1}) })
	want := "sim: Timer.Fire: live firing (entity 1, kind 7, generation 1) at 11ns, but the timer is armed for 10ns"
	if got != want {
		t.Errorf("panic %q, want %q", got, want)
	}
}
