package sim

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// recorder is a world that records the events it handles and runs an
// optional hook on each.
type recorder struct {
	got  []Event
	hook func(k *Kernel, ev Event)
}

func (r *recorder) HandleEvent(k *Kernel, ev Event) {
	if ev.At != k.Now() {
		panic(fmt.Sprintf("event at %v handled at %v", ev.At, k.Now()))
	}
	r.got = append(r.got, ev)
	if r.hook != nil {
		r.hook(k, ev)
	}
}

func (r *recorder) entities() []uint32 {
	var ids []uint32
	for _, ev := range r.got {
		ids = append(ids, ev.Entity)
	}
	return ids
}

// mustPanic runs f and returns the message it panicked with.
func mustPanic(t *testing.T, f func()) (msg string) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil {
			t.Fatal("did not panic")
		}
		msg = fmt.Sprint(r)
	}()
	f()
	return ""
}

func TestRunHandlesEventsInTimeThenSchedulingOrder(t *testing.T) {
	tests := []struct {
		name string
		at   []Time // event i is for entity i
		want []uint32
	}{
		{"in time order", []Time{1, 2, 3}, []uint32{0, 1, 2}},
		{"reverse time order", []Time{3, 2, 1}, []uint32{2, 1, 0}},
		{"ties run in scheduling order", []Time{5, 5, 5, 5}, []uint32{0, 1, 2, 3}},
		{"ties among others", []Time{7, 3, 7, 3, 0, 7}, []uint32{4, 1, 3, 0, 2, 5}},
		{"all at time zero", []Time{0, 0, 0}, []uint32{0, 1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &recorder{}
			k := NewKernel(w)
			for i, at := range tt.at {
				k.Schedule(Event{At: at, Entity: uint32(i)})
			}
			k.Run(100)
			if got := w.entities(); !slices.Equal(got, tt.want) {
				t.Errorf("handled entities %v, want %v", got, tt.want)
			}
			if got := k.Events(); got != uint64(len(tt.at)) {
				t.Errorf("Events() = %d, want %d", got, len(tt.at))
			}
		})
	}
}

func TestScheduleSetsIncreasingSeq(t *testing.T) {
	w := &recorder{}
	k := NewKernel(w)
	for i := range 3 {
		k.Schedule(Event{At: Time(3 - i), Seq: 99})
	}
	k.Run(10)
	seqs := []uint64{w.got[0].Seq, w.got[1].Seq, w.got[2].Seq}
	if want := []uint64{3, 2, 1}; !slices.Equal(seqs, want) {
		t.Errorf("Seq of handled events = %v, want %v", seqs, want)
	}
}

func TestEventsScheduledWhileRunningRunAfterThoseAlreadyDue(t *testing.T) {
	// An event scheduled for the current time runs after every event
	// already scheduled for that time, in the same Run.
	w := &recorder{}
	k := NewKernel(w)
	w.hook = func(k *Kernel, ev Event) {
		if ev.Entity == 0 {
			k.Schedule(Event{At: k.Now(), Entity: 10})
			k.After(time.Nanosecond, Event{Entity: 11})
		}
	}
	k.Schedule(Event{At: 5, Entity: 0})
	k.Schedule(Event{At: 5, Entity: 1})
	k.Schedule(Event{At: 6, Entity: 2})
	k.Run(6)
	if got, want := w.entities(), []uint32{0, 1, 10, 2, 11}; !slices.Equal(got, want) {
		t.Errorf("handled entities %v, want %v", got, want)
	}
}

func TestAfterSchedulesRelativeToNow(t *testing.T) {
	w := &recorder{}
	k := NewKernel(w)
	k.Run(Time(time.Second))
	k.After(2*time.Second, Event{At: 12345, Entity: 1})
	k.Run(Time(10 * time.Second))
	if len(w.got) != 1 || w.got[0].At != Time(3*time.Second) {
		t.Errorf("handled %+v, want one event at 3s", w.got)
	}
}

func TestSchedulingInThePastPanics(t *testing.T) {
	tests := []struct {
		name     string
		schedule func(k *Kernel)
		want     string
	}{
		{"Schedule before now", func(k *Kernel) { k.Schedule(Event{At: 9, Entity: 3, Kind: 4}) },
			"sim: Schedule: event (entity 3, kind 4) at 9ns is before the current time 10ns"},
		{"After with a negative delay", func(k *Kernel) { k.After(-1, Event{Entity: 5}) },
			"sim: Schedule: event (entity 5, kind 0) at 9ns is before the current time 10ns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := NewKernel(&recorder{})
			k.Run(10)
			if got := mustPanic(t, func() { tt.schedule(k) }); got != tt.want {
				t.Errorf("panic %q, want %q", got, tt.want)
			}
			if k.Pending() != 0 {
				t.Errorf("Pending() = %d after a rejected event, want 0", k.Pending())
			}
		})
	}
}

func TestRunStopsAtUntilAndLeavesLaterEventsPending(t *testing.T) {
	w := &recorder{}
	k := NewKernel(w)
	for _, at := range []Time{10, 20, 20, 30, 40} {
		k.Schedule(Event{At: at, Entity: uint32(at)})
	}
	steps := []struct {
		until       Time
		wantHandled []uint32
		wantPending int
	}{
		{5, nil, 5},
		{20, []uint32{10, 20, 20}, 2}, // events at exactly until run
		{29, []uint32{10, 20, 20}, 2},
		{100, []uint32{10, 20, 20, 30, 40}, 0},
		{200, []uint32{10, 20, 20, 30, 40}, 0}, // an empty queue still advances the clock
	}
	for _, s := range steps {
		k.Run(s.until)
		if got := w.entities(); !slices.Equal(got, s.wantHandled) {
			t.Errorf("after Run(%d): handled %v, want %v", s.until, got, s.wantHandled)
		}
		if got := k.Pending(); got != s.wantPending {
			t.Errorf("after Run(%d): Pending() = %d, want %d", s.until, got, s.wantPending)
		}
		if got := k.Now(); got != s.until {
			t.Errorf("after Run(%d): Now() = %v, want %v", s.until, got, s.until)
		}
	}
}

func TestRunUntilBeforeNowPanics(t *testing.T) {
	k := NewKernel(&recorder{})
	k.Run(10)
	got := mustPanic(t, func() { k.Run(9) })
	if want := "sim: Run: until 9ns is before the current time 10ns"; got != want {
		t.Errorf("panic %q, want %q", got, want)
	}
}

func TestRunInsideRunPanics(t *testing.T) {
	w := &recorder{}
	k := NewKernel(w)
	var msg string
	w.hook = func(k *Kernel, ev Event) { msg = mustPanic(t, func() { k.Run(100) }) }
	k.Schedule(Event{At: 1})
	k.Run(10)
	if !strings.Contains(msg, "during a run") {
		t.Errorf("panic %q, want it to say Run was called during a run", msg)
	}
}

// sample is what a sampler saw at time At.
type sample struct {
	At      Time
	Handled int
}

func TestSamplerSeesStateAfterEventsAtOrBeforeItsTime(t *testing.T) {
	tests := []struct {
		name     string
		interval time.Duration
		events   []Time
		runs     []Time // successive Run(until) calls
		want     []sample
	}{
		{
			name:     "samples at 0, i, 2i, ... up to until",
			interval: 10,
			runs:     []Time{35},
			want:     []sample{{0, 0}, {10, 0}, {20, 0}, {30, 0}},
		},
		{
			name:     "a sample at t sees events at exactly t",
			interval: 10,
			events:   []Time{0, 10, 15, 20, 20, 40},
			runs:     []Time{30},
			want:     []sample{{0, 1}, {10, 2}, {20, 5}, {30, 5}},
		},
		{
			name:     "a sample at until is taken",
			interval: 10,
			events:   []Time{5},
			runs:     []Time{20},
			want:     []sample{{0, 0}, {10, 1}, {20, 1}},
		},
		{
			name:     "successive runs take each sample once",
			interval: 10,
			events:   []Time{5, 25},
			runs:     []Time{10, 10, 15, 30},
			want:     []sample{{0, 0}, {10, 1}, {20, 1}, {30, 2}},
		},
		{
			name:     "events far apart",
			interval: 10,
			events:   []Time{45},
			runs:     []Time{50},
			want:     []sample{{0, 0}, {10, 0}, {20, 0}, {30, 0}, {40, 0}, {50, 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &recorder{}
			k := NewKernel(w)
			var got []sample
			k.SetSampler(tt.interval, func(at Time) {
				if k.Now() != at {
					t.Errorf("sample at %v: Now() = %v", at, k.Now())
				}
				got = append(got, sample{at, len(w.got)})
			})
			for _, at := range tt.events {
				k.Schedule(Event{At: at})
			}
			for _, until := range tt.runs {
				k.Run(until)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("samples %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSamplerDoesNotChangeTheRun(t *testing.T) {
	// Samples are not events: with or without a sampler, the same events
	// run with the same Seq and Events() counts the same.
	run := func(withSampler bool) ([]Event, uint64) {
		w := &recorder{}
		k := NewKernel(w)
		w.hook = func(k *Kernel, ev Event) {
			if ev.At < 100 {
				k.After(7, ev)
			}
		}
		if withSampler {
			k.SetSampler(5, func(Time) {})
		}
		k.Schedule(Event{At: 0, Entity: 1})
		k.Schedule(Event{At: 3, Entity: 2})
		k.Run(200)
		return w.got, k.Events()
	}
	want, wantN := run(false)
	got, gotN := run(true)
	if !slices.Equal(got, want) || gotN != wantN {
		t.Errorf("with a sampler: %d events %v\nwithout: %d events %v", gotN, got, wantN, want)
	}
}

func TestSetSamplerMidRunStartsAtNextMultiple(t *testing.T) {
	k := NewKernel(&recorder{})
	k.Run(15)
	var got []Time
	k.SetSampler(10, func(t Time) { got = append(got, t) })
	k.Run(40)
	k.SetSampler(10, nil)
	k.Run(60)
	if want := []Time{20, 30, 40}; !slices.Equal(got, want) {
		t.Errorf("samples at %v, want %v", got, want)
	}
}

func TestSetSamplerRejectsNonPositiveInterval(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		k := NewKernel(&recorder{})
		got := mustPanic(t, func() { k.SetSampler(d, func(Time) {}) })
		if !strings.Contains(got, "interval must be positive") {
			t.Errorf("SetSampler(%v): panic %q", d, got)
		}
	}
}

func TestStopReturnsAfterTheCurrentEvent(t *testing.T) {
	w := &recorder{}
	k := NewKernel(w)
	w.hook = func(k *Kernel, ev Event) {
		if ev.Entity == 2 {
			k.Stop()
		}
	}
	for i := range uint32(4) {
		k.Schedule(Event{At: Time(10 * (i + 1)), Entity: i + 1})
	}
	k.Run(100)
	if got, want := w.entities(), []uint32{1, 2}; !slices.Equal(got, want) {
		t.Fatalf("handled %v before Stop took effect, want %v", got, want)
	}
	if k.Now() != 20 || k.Pending() != 2 || k.Events() != 2 {
		t.Errorf("after Stop: Now() = %v, Pending() = %d, Events() = %d; want 20ns, 2, 2",
			k.Now(), k.Pending(), k.Events())
	}
	k.Run(100) // a new Run carries on
	if got, want := w.entities(), []uint32{1, 2, 3, 4}; !slices.Equal(got, want) || k.Now() != 100 {
		t.Errorf("after a second Run: handled %v at %v, want %v at 100ns", got, k.Now(), want)
	}
}

func TestStopFromSamplerReturnsAtTheSampleTime(t *testing.T) {
	w := &recorder{}
	k := NewKernel(w)
	k.SetSampler(10, func(at Time) {
		if at == 20 {
			k.Stop()
		}
	})
	k.Schedule(Event{At: 15})
	k.Schedule(Event{At: 25})
	k.Run(100)
	if k.Now() != 20 || len(w.got) != 1 {
		t.Errorf("Now() = %v with %d events handled, want 20ns and 1", k.Now(), len(w.got))
	}
}

func TestStopOutsideRunDoesNothing(t *testing.T) {
	w := &recorder{}
	k := NewKernel(w)
	k.Stop()
	k.Schedule(Event{At: 1})
	k.Run(10)
	if len(w.got) != 1 || k.Now() != 10 {
		t.Errorf("handled %d events, Now() = %v; want 1 and 10ns", len(w.got), k.Now())
	}
}

func TestTimeArithmeticAndString(t *testing.T) {
	tm := Time(0).Add(1500 * time.Millisecond)
	if tm != Time(1500*time.Millisecond) {
		t.Errorf("Add: got %d", tm)
	}
	if d := tm.Sub(Time(time.Second)); d != 500*time.Millisecond {
		t.Errorf("Sub: got %v", d)
	}
	if s := tm.Seconds(); s != 1.5 {
		t.Errorf("Seconds: got %v", s)
	}
	for _, tt := range []struct {
		t    Time
		want string
	}{{0, "0s"}, {1500, "1.5µs"}, {Time(90 * time.Second), "1m30s"}} {
		if got := tt.t.String(); got != tt.want {
			t.Errorf("Time(%d).String() = %q, want %q", int64(tt.t), got, tt.want)
		}
	}
}

func TestValuesStaySmall(t *testing.T) {
	// Events are stored inline in the queue and timers inside every
	// entity, so their size is part of the memory budget.
	if got := unsafe.Sizeof(Event{}); got != 32 {
		t.Errorf("unsafe.Sizeof(Event{}) = %d, want 32", got)
	}
	if got := unsafe.Sizeof(Timer{}); got != 16 {
		t.Errorf("unsafe.Sizeof(Timer{}) = %d, want 16", got)
	}
}

func TestSamplerStopsAtTheEndOfTime(t *testing.T) {
	k := NewKernel(&recorder{})
	n := 0
	k.SetSampler(time.Duration(1<<62), func(Time) { n++ })
	k.Run(1<<63 - 1)
	if n != 2 { // at 0 and 2^62; 2^63 does not exist
		t.Errorf("took %d samples up to the largest Time, want 2", n)
	}
}

func TestAddSaturatesInsteadOfWrapping(t *testing.T) {
	const maxT, minT = Time(math.MaxInt64), Time(math.MinInt64)
	tests := []struct {
		name string
		t    Time
		d    time.Duration
		want Time
	}{
		{"in range", Time(time.Second), time.Second, Time(2 * time.Second)},
		{"a draw past the end of time", Time(time.Hour), time.Duration(math.MaxInt64), Never},
		{"the largest draw from late in a run", Time(30 * 24 * time.Hour), MaxDraw, Time(30*24*time.Hour) + Time(MaxDraw)},
		{"negative past the start of time", minT + 5, -10, minT},
		{"up to Never exactly", maxT - 5, 5, Never},
	}
	for _, tt := range tests {
		if got := tt.t.Add(tt.d); got != tt.want {
			t.Errorf("%s: Time(%d).Add(%d) = %d, want %d", tt.name, tt.t, tt.d, got, tt.want)
		}
	}
}

func TestWatchIsCalledAtTheCountsItAsksForAndCanStop(t *testing.T) {
	var r recorder
	k := NewKernel(&r)
	for i := range 100 {
		k.Schedule(Event{At: Time(i), Entity: uint32(i)})
	}
	var calls []uint64
	k.Watch(10, func(n uint64) uint64 {
		calls = append(calls, n)
		if n == 40 {
			k.Stop()
		}
		return n + 15
	})
	k.Run(1000)
	if want := []uint64{10, 25, 40}; !slices.Equal(calls, want) {
		t.Errorf("watch called at %v, want %v", calls, want)
	}
	if k.Events() != 40 || k.Now() != 39 {
		t.Errorf("stopped after %d events at %v, want 40 at 39ns", k.Events(), k.Now())
	}
}

// TestRestartedKernelRunsAStretchBehindAnotherAndMovesTheRest: a kernel
// (a wheel's or a local one's) restarted behind the time it reached runs
// the events of a new stretch in (At, Seq) order, and MoveTo hands what
// is left to another kernel in that order.
func TestRestartedKernelRunsAStretchBehindAnotherAndMovesTheRest(t *testing.T) {
	for _, kind := range []struct {
		name string
		new  func(Handler) *Kernel
	}{{"wheel", NewKernel}, {"local", NewLocalKernel}} {
		t.Run(kind.name, func(t *testing.T) { testRestart(t, kind.new) })
	}
}

func testRestart(t *testing.T, newKernel func(Handler) *Kernel) {
	local, main := &recorder{}, &recorder{}
	lk, mk := newKernel(local), NewKernel(main)
	for _, tt := range []struct {
		name    string
		from    Time
		at      []Time // entities are their index
		until   Time
		handled []uint32
		moved   []uint32
	}{
		{"a first stretch", 1 << 30, []Time{1<<30 + 5, 1<<30 + 1<<20, 1 << 40}, 1<<30 + 1<<20, []uint32{0, 1}, []uint32{2}},
		{"one behind it", 1000, []Time{1 << 41, 3000, 1000, 3000}, 2999, []uint32{2}, []uint32{1, 3, 0}},
		{"every event at until", 7, []Time{7, 7}, 7, []uint32{0, 1}, nil},
	} {
		local.got, main.got = nil, nil
		lk.Restart(tt.from)
		for i, at := range tt.at {
			lk.Schedule(Event{At: at, Entity: uint32(i)})
		}
		lk.Run(tt.until)
		if got := local.entities(); !slices.Equal(got, tt.handled) {
			t.Errorf("%s: handled %v, want %v", tt.name, got, tt.handled)
		}
		lk.MoveTo(mk)
		mk.Run(Never - 1)
		if got := main.entities(); !slices.Equal(got, tt.moved) {
			t.Errorf("%s: moved %v, want %v", tt.name, got, tt.moved)
		}
		if lk.Pending() != 0 {
			t.Errorf("%s: %d events left after MoveTo", tt.name, lk.Pending())
		}
		mk = NewKernel(main) // the next case's events may be behind this one's clock
	}
	mustPanic(t, func() {
		lk.Schedule(Event{At: lk.Now() + 1})
		lk.Restart(0)
	})
}

// looker is a recorder that is a Looker: it records, for each event it
// handles, the event Ahead showed just before it ran, if any.
type looker struct {
	recorder
	shown    Event
	has      bool
	showings []struct {
		ev  Event
		has bool
	}
}

func (l *looker) Ahead(ev *Event) { l.shown, l.has = *ev, true }

func (l *looker) HandleEvent(k *Kernel, ev Event) {
	l.showings = append(l.showings, struct {
		ev  Event
		has bool
	}{l.shown, l.has})
	l.has = false
	l.recorder.HandleEvent(k, ev)
}

// TestALookerIsShownTheEventAfterTheOneThatRuns: before each event runs,
// a Looker is shown the event that runs after it when that one is at hand
// (ties, the same 256 ns, the next blocks of 256 ns), and otherwise an
// event still to run or nothing; never one that ran. Being shown events
// changes nothing of the run.
func TestALookerIsShownTheEventAfterTheOneThatRuns(t *testing.T) {
	near := []Time{3, 3, 3, 10, 200, 255, 256, 600, 1000, 9000, 60000}
	r := NewStream(7, "looker")
	var far []Time
	for range 500 {
		far = append(far, Time(r.Uint64()%uint64(2*time.Second)))
	}
	for _, tt := range []struct {
		name  string
		at    []Time
		exact bool // every event but the last is shown the next one
	}{
		{"events near each other", near, true},
		{"events far apart, scheduling more as they run", far, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			run := func(w interface {
				Handler
				rec() *recorder
			}) *Kernel {
				k := NewKernel(w)
				for i, at := range tt.at {
					k.Schedule(Event{At: at, Entity: uint32(i)})
				}
				w.rec().hook = func(k *Kernel, ev Event) {
					if !tt.exact && ev.Entity%3 == 0 && ev.Kind < 4 {
						k.Schedule(Event{At: k.Now() + Time(ev.Entity)*97, Entity: ev.Entity, Kind: ev.Kind + 1})
					}
				}
				k.Run(Time(time.Hour))
				return k
			}
			plain, l := &plainRecorder{}, &looker{}
			run(plain)
			run(l)
			if !slices.Equal(l.got, plain.got) {
				t.Fatal("the run with a Looker differs from the run without")
			}
			ran := map[uint64]int{} // Seq → index in the run
			for i, ev := range l.got {
				ran[ev.Seq] = i
			}
			shownNext := 0
			for i, s := range l.showings {
				if !s.has {
					continue
				}
				j, ok := ran[s.ev.Seq]
				if !ok || l.got[j] != s.ev || j <= i {
					t.Fatalf("before event %d (%+v), shown %+v: not an event that runs after it", i, l.got[i], s.ev)
				}
				if j == i+1 {
					shownNext++
				}
			}
			if tt.exact && shownNext != len(l.got)-1 {
				t.Errorf("shown the next event before %d of %d events, want all but the last", shownNext, len(l.got))
			}
			if shownNext == 0 {
				t.Error("never shown the next event")
			}
		})
	}
}

// plainRecorder is a recorder that is not a Looker.
type plainRecorder struct{ recorder }

func (p *plainRecorder) rec() *recorder { return &p.recorder }
func (l *looker) rec() *recorder        { return &l.recorder }
