package sim

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
	"weak"
)

// heapQueue is the obvious binary heap keyed by (At, Seq), built on
// container/heap: the reference the radix queue must agree with, event
// for event.
type heapQueue []Event

func (h heapQueue) Len() int           { return len(h) }
func (h heapQueue) Less(i, j int) bool { return h[i].before(&h[j]) }
func (h heapQueue) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *heapQueue) Push(x any)        { *h = append(*h, x.(Event)) }
func (h *heapQueue) Pop() any {
	ev := (*h)[len(*h)-1]
	*h = (*h)[:len(*h)-1]
	return ev
}

func (h *heapQueue) push(ev Event) { heap.Push(h, ev) }
func (h *heapQueue) pop() Event    { return heap.Pop(h).(Event) }

// workload describes how a random test schedules events: each new event
// is after now by a delay drawn from delay.
type workload struct {
	name  string
	delay func(r *rand.Rand) int64
}

var workloads = []workload{
	{"exponential 1ms", func(r *rand.Rand) int64 { return int64(r.ExpFloat64() * 1e6) }},
	{"many ties", func(r *rand.Rand) int64 { return int64(r.IntN(4)) * 1000 }},
	{"zero delays", func(r *rand.Rand) int64 { return int64(r.IntN(2)) }},
	{"every scale", func(r *rand.Rand) int64 { return r.Int64N(1 << r.IntN(44)) }},
	{"far future", func(r *rand.Rand) int64 {
		if r.IntN(10) == 0 {
			return 1<<44 + r.Int64N(1<<40) // hours ahead
		}
		return r.Int64N(1e9)
	}},
}

func TestQueueAgreesWithBinaryHeap(t *testing.T) {
	for _, w := range workloads {
		t.Run(w.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			var q queue
			var ref heapQueue
			var seq uint64
			now := int64(0)
			push := func(at int64) {
				seq++
				ev := Event{At: Time(at), Seq: seq, Entity: uint32(seq)}
				q.push(ev)
				ref.push(ev)
			}
			for range 1000 {
				push(w.delay(r))
			}
			for i := range 100_000 {
				switch {
				case len(ref) > 0 && r.IntN(100) < 48:
					want := ref.pop()
					got := q.front()
					if got == nil || *got != want {
						t.Fatalf("pop %d: got %+v, want %+v", i, got, want)
					}
					q.pop()
					now = int64(want.At)
				case len(ref) > 0 && r.IntN(100) < 2:
					// Look at the next event without taking it, as Run does
					// at until, then schedule before it.
					next := q.front()
					if *next != ref[0] {
						t.Fatalf("front %d: got %+v, want %+v", i, *next, ref[0])
					}
					if gap := int64(next.At) - now; gap > 0 {
						now += r.Int64N(gap)
					}
					push(now + r.Int64N(int64(next.At)-now+1))
				default:
					push(now + w.delay(r))
				}
				if q.len() != len(ref) {
					t.Fatalf("step %d: len() = %d, want %d", i, q.len(), len(ref))
				}
			}
			for len(ref) > 0 {
				want := ref.pop()
				if got := q.front(); got == nil || *got != want {
					t.Fatalf("draining: got %+v, want %+v", got, want)
				}
				q.pop()
			}
			if q.front() != nil || q.len() != 0 {
				t.Fatalf("drained queue: front() = %v, len() = %d", q.front(), q.len())
			}
		})
	}
}

func TestKernelRunsEventsInHeapOrderAcrossRunCalls(t *testing.T) {
	// The kernel end to end: a world that schedules at random, run in
	// random steps, between which events are scheduled from outside.
	// With reserved set, the world also keeps events of its own, as a
	// server keeps its queued requests: it reserves each one's Seq when it
	// makes it and gives the kernel only those no earlier one of its own
	// precedes (Kernel.ScheduleReserved); they must still run where their
	// reserved Seq puts them.
	for _, reserved := range []bool{false, true} {
		for _, w := range workloads {
			t.Run(fmt.Sprintf("%s/reserved=%v", w.name, reserved), func(t *testing.T) {
				testHeapOrder(t, w, reserved)
			})
		}
	}
}

func testHeapOrder(t *testing.T, w workload, reserved bool) {
	r := rand.New(rand.NewPCG(3, 4))
	var ref heapQueue
	var held, armed heapQueue // the world's own events: not yet given to the kernel, given
	rec := &recorder{}
	k := NewKernel(rec)
	const own = 1 // Kind of the world's own events
	schedule := func(at Time) {
		if !reserved || r.IntN(2) == 0 {
			k.Schedule(Event{At: at, Entity: uint32(k.seq + 1)})
			ref.push(Event{At: at, Seq: k.seq, Entity: uint32(k.seq)})
			return
		}
		seq := k.Reserve()
		ev := Event{At: at, Seq: seq, Entity: uint32(seq), Kind: own}
		ref.push(ev)
		if len(armed) == 0 || ev.before(&armed[0]) {
			k.ScheduleReserved(ev)
			armed.push(ev)
		} else {
			held.push(ev)
		}
	}
	rec.hook = func(k *Kernel, ev Event) {
		if ev.Kind == own {
			if first := armed.pop(); first != ev {
				t.Fatalf("ran %+v, want the first of the world's own given to the kernel, %+v", ev, first)
			}
			if len(held) > 0 && (len(armed) == 0 || held[0].before(&armed[0])) {
				next := held.pop()
				k.ScheduleReserved(next)
				armed.push(next)
			}
		}
		for range r.IntN(3) {
			schedule(k.Now() + Time(w.delay(r)))
		}
	}
	for range 100 {
		schedule(Time(w.delay(r)))
	}
	for len(ref) > 0 && len(rec.got) < 50_000 {
		next := ref[0].At
		until := k.Now() + Time(r.Int64N(int64(next-k.Now())*2+2))
		before := len(rec.got)
		k.Run(until)
		for _, got := range rec.got[before:] {
			if want := ref.pop(); got != want {
				t.Fatalf("event %d: got %+v, want %+v", len(rec.got), got, want)
			}
		}
		if len(ref) > 0 && ref[0].At <= until {
			t.Fatalf("Run(%v) returned with %+v pending", until, ref[0])
		}
		if k.Pending() != len(ref)-len(held) {
			t.Fatalf("Pending() = %d, want %d", k.Pending(), len(ref)-len(held))
		}
		// Schedule from outside, up to the next pending event.
		horizon := Time(1000)
		if len(ref) > 0 {
			horizon = ref[0].At - k.Now() + 1
		}
		for range r.IntN(3) {
			schedule(k.Now() + Time(r.Int64N(int64(horizon))))
		}
	}
}

func TestQueueHandlesTheWholeTimeRange(t *testing.T) {
	var q queue
	ats := []Time{1<<63 - 1, 0, 1 << 62, 255, 256, 1<<63 - 1, 1 << 56, 1<<56 - 1}
	for i, at := range ats {
		q.push(Event{At: at, Seq: uint64(i)})
	}
	want := []Time{0, 255, 256, 1<<56 - 1, 1 << 56, 1 << 62, 1<<63 - 1, 1<<63 - 1}
	for _, w := range want {
		ev := q.front()
		if ev == nil || ev.At != w {
			t.Fatalf("front() = %+v, want At %d", ev, int64(w))
		}
		q.pop()
	}
	if q.len() != 0 || q.front() != nil {
		t.Errorf("len() = %d after popping every event", q.len())
	}
}

func ExampleKernel() {
	w := &printer{}
	k := NewKernel(w)
	k.Schedule(Event{At: 20, Entity: 2})
	k.Schedule(Event{At: 10, Entity: 1})
	k.Schedule(Event{At: 20, Entity: 3})
	k.Run(100)
	fmt.Println("now", k.Now(), "events", k.Events())
	// Output:
	// 10ns entity 1
	// 20ns entity 2
	// 20ns entity 3
	// now 100ns events 3
}

type printer struct{}

func (printer) HandleEvent(k *Kernel, ev Event) { fmt.Println(ev.At, "entity", ev.Entity) }

func TestArraysAreRecycledWithinABudget(t *testing.T) {
	var q queue
	q.cur = 1 << 16 // slot 1 of level 2 is now in range
	s := &q.slots[2][1]
	s.ev = q.array(1024)
	for i := range 10 {
		s.ev[i] = Event{At: Time(q.cur) + Time(i), Seq: uint64(i)}
	}
	s.n, q.n = 10, 10
	q.spill(s)
	if s.ev != nil || s.n != 0 || len(q.spare[10]) != 1 || q.spareLen != 1024 {
		t.Fatalf("after spill: slot has %d events in %d, %d spare arrays of 1024; want 0 in 0, 1",
			s.n, len(s.ev), len(q.spare[10]))
	}
	for i := range 10 {
		if ev := q.front(); ev == nil || ev.Seq != uint64(i) {
			t.Fatalf("event %d is %+v", i, ev)
		}
		q.pop()
	}
	if a := q.array(1024); len(a) != 1024 || q.spareLen != 0 {
		t.Errorf("array(1024) returned %d events, leaving %d spare; want the spare array", len(a), q.spareLen)
	}
	q.recycle(make([]Event, maxSpare))
	q.recycle(make([]Event, 4))
	if q.spareLen != maxSpare {
		t.Errorf("with nothing pending, kept %d events of spare arrays; want %d", q.spareLen, maxSpare)
	}
}

// TestAnArrayHandedOutAgainIsNotPinned: an array the spare lists hand
// out again belongs to its slot alone, so that once the slot is done
// with it and recycle leaves it to the collector (over the budget) it is
// collected. A stale pointer in a spare list's backing array pinned, in
// a million clients' reconnect storm, most of the burst's arrays:
// hundreds of megabytes.
func TestAnArrayHandedOutAgainIsNotPinned(t *testing.T) {
	var q queue
	a := make([]Event, 1024)
	w := weak.Make(&a[0])
	q.recycle(a)
	if b := q.array(1024); &b[0] != &a[0] {
		t.Fatal("array(1024) did not hand out the spare array")
	}
	a = nil // the slot is done with it; recycle does not keep it
	runtime.GC()
	if w.Value() != nil {
		t.Error("the array is still reachable from the queue")
	}
	runtime.KeepAlive(&q)
}

func TestSteadyStateAllocatesNothing(t *testing.T) {
	w := &holdWorld{r: NewStream(1, "hold"), mean: time.Millisecond}
	k := NewKernel(w)
	for i := range 10_000 {
		k.Schedule(Event{At: Time(w.r.Exp(w.mean)), Entity: uint32(i)})
	}
	w.left = 1_000_000 // warm up
	k.Run(1<<63 - 1)
	allocs := testing.AllocsPerRun(5, func() {
		w.left = 100_000
		k.Run(1<<63 - 1)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per 100 000 events in the steady state, want 0", allocs)
	}
}
