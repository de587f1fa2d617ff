package sim

import "math/bits"

// queue holds the pending events and yields them in (At, Seq) order.
//
// It is a radix queue over the bits of At, in the manner of a hierarchical
// timing wheel: level l has 256 slots, one for each value of byte l of At.
// An event is filed at the level of the highest byte in which its At
// differs from cur, the time of the current slot, in the slot of its own
// value of that byte; level 0 thus holds the events of cur's block of 256
// nanoseconds, one slot per nanosecond. When the current slot is used up,
// the queue moves to the next occupied slot of level 0, or, if there is
// none, empties the next occupied slot of the lowest level that has one
// into the levels below it. An event moves down at most once per level
// (three times for an event a millisecond ahead), and every move appends
// to a slot, so the queue touches memory in sequence where a heap jumps
// about: in the hold benchmark it is about as fast as a binary heap at 10⁴
// pending events and three times faster at 10⁶, and its cost does not
// grow with the number of events pending.
//
// Ties need no comparison. A level-0 slot holds the events of one At, and
// every slot holds its events in Seq order: the event scheduled last has
// the highest Seq and is appended last, and a slot that is emptied into
// lower levels is emptied in order into slots that are empty. So the
// current slot is consumed first in, first out.
//
// Events scheduled before cur go to early, a binary heap. That only
// happens when [Kernel.Run] looked at the next event, found it after
// until, and returned: the clock is then behind cur.
//
// Events whose Seq was reserved earlier ([Kernel.ScheduleReserved]) would
// break the slots' order, which is the order of scheduling: they go to
// reserved, another binary heap, whose first event front compares with
// the first of the rest.
type queue struct {
	n     int    // events in the queue
	cur   uint64 // At of the current slot, slots[0][cur&slotMask]
	head  int    // events of the current slot already taken
	early []Event

	reserved     []Event
	fromReserved bool // front returned reserved[0]
	slots        [levels][slotsPerLevel]slot
	used         [levels][slotsPerLevel / 64]uint64 // bit i of level l: slots[l][i] is not empty

	spare    [64][][]Event // spare arrays of 1<<c events in spare[c]
	spareLen int           // events the spare arrays hold
}

const (
	digitBits     = 8
	slotsPerLevel = 1 << digitBits
	slotMask      = slotsPerLevel - 1
	levels        = 64 / digitBits

	minArray = 4       // events in the smallest array of a slot
	maxKept  = 64      // events in the largest array a slot keeps when emptied
	maxSpare = 1 << 16 // events' worth of spare arrays kept beyond the pending events
)

// slot is a growable array of events, kept by hand rather than with
// append so that filing an event writes no pointer.
type slot struct {
	ev []Event
	n  int
}

func (q *queue) len() int { return q.n }

// restart makes an empty queue's current slot the one of at, so that
// events from at on are filed in the wheel, not in early.
func (q *queue) restart(at uint64) {
	q.cur, q.head = at, 0
}

func (q *queue) push(ev Event) {
	q.n++
	if at := uint64(ev.At); at >= q.cur {
		q.file(at, ev)
		return
	}
	q.early = pushHeap(q.early, ev)
}

// pushReserved adds ev, whose Seq may be lower than that of events
// already pushed.
func (q *queue) pushReserved(ev Event) {
	q.n++
	q.reserved = pushHeap(q.reserved, ev)
}

// file puts ev, whose At is at >= q.cur, in its slot.
func (q *queue) file(at uint64, ev Event) {
	var l uint
	if x := at ^ q.cur; x != 0 {
		l = uint(bits.Len64(x)-1) / digitBits
	}
	i := at >> (l * digitBits) & slotMask
	s := &q.slots[l%levels][i]
	if s.n < len(s.ev) {
		set(&s.ev[s.n], &ev)
		s.n++
	} else {
		q.grow(s, l, ev)
	}
	q.used[l%levels][i/64] |= 1 << (i % 64)
}

// grow appends ev to s, a slot of level l, which is full.
func (q *queue) grow(s *slot, l uint, ev Event) {
	if l == 0 && s == &q.slots[0][q.cur&slotMask] && q.head > 0 {
		// Reclaim the room of the events already taken.
		s.n = copy(s.ev, s.ev[q.head:s.n])
		q.head = 0
	}
	if s.n == len(s.ev) {
		bigger := q.array(max(minArray, 2*len(s.ev)))
		copy(bigger, s.ev[:s.n])
		q.recycle(s.ev)
		s.ev = bigger
	}
	set(&s.ev[s.n], &ev)
	s.n++
}

// array returns an array of at least n events, n a power of two: the
// smallest spare array that is large enough, or a new one.
func (q *queue) array(n int) []Event {
	for c := bits.Len(uint(n)) - 1; c < len(q.spare); c++ {
		if sp := q.spare[c]; len(sp) > 0 {
			// The list lets go of a: a stale pointer past its end would
			// keep a alive once its slot is done with it and recycle
			// leaves it to the collector.
			a := sp[len(sp)-1]
			sp[len(sp)-1] = nil
			q.spare[c] = sp[:len(sp)-1]
			q.spareLen -= len(a)
			return a
		}
	}
	return make([]Event, n)
}

// recycle keeps a, an array no slot uses any more, for array to hand out
// again, so that a run in its steady state allocates nothing. Spare arrays
// for more than three times the pending events, plus maxSpare, are left to
// the garbage collector, so that a burst of events long gone does not pin
// memory. (At 10⁶ pending events in the hold benchmark, a budget of twice
// the pending events still let a few arrays be dropped and allocated again
// at each 2^24 ns boundary, where a slot of level 3 holding most events is
// emptied into level 2.)
func (q *queue) recycle(a []Event) {
	if len(a) == 0 || q.spareLen+len(a) > 3*q.n+maxSpare {
		return
	}
	c := bits.Len(uint(len(a))) - 1
	q.spare[c] = append(q.spare[c], a)
	q.spareLen += len(a)
}

// front returns the first event, or nil if the queue is empty. The
// pointer is valid until the queue is next changed.
func (q *queue) front() *Event {
	var f *Event // the first of early and the slots
	if len(q.early) > 0 {
		f = &q.early[0]
	} else if q.n > len(q.reserved) {
		s := &q.slots[0][q.cur&slotMask]
		if q.head == s.n {
			s = q.advance()
		}
		f = &s.ev[q.head]
	}
	q.fromReserved = len(q.reserved) > 0 && (f == nil || q.reserved[0].before(f))
	if q.fromReserved {
		return &q.reserved[0]
	}
	return f
}

// peek returns, without changing the queue, the event likely to come
// next, if one is at hand: the next of the current slot, the first of the
// next occupied slot of level 0 (both then the next event, unless one in
// early or reserved comes first), or the first filed in the next occupied
// slot of level 1, which holds a stretch of 256 ns. It returns nil when
// finding one would take more: the slots of higher levels are not in
// order. Kernel.Run shows it to a Looker.
func (q *queue) peek() *Event {
	s := &q.slots[0][q.cur&slotMask]
	if q.head < s.n {
		return &s.ev[q.head]
	}
	if i, ok := q.nextUsed(0, q.cur&slotMask+1); ok {
		return &q.slots[0][i].ev[0]
	}
	if i, ok := q.nextUsed(1, q.cur>>digitBits&slotMask+1); ok {
		return &q.slots[1][i].ev[0]
	}
	return nil
}

// pop removes the event front returned. It must follow a call to front
// that returned an event, with no change to the queue in between.
func (q *queue) pop() {
	q.n--
	if q.fromReserved {
		q.fromReserved = false
		q.reserved = popHeap(q.reserved)
		return
	}
	if len(q.early) > 0 {
		q.early = popHeap(q.early)
		return
	}
	q.head++
	i := q.cur & slotMask
	if s := &q.slots[0][i]; q.head == s.n {
		s.n, q.head = 0, 0
		q.used[0][i/64] &^= 1 << (i % 64)
		if len(s.ev) > maxKept {
			q.recycle(s.ev)
			s.ev = nil
		}
	}
}

// advance makes the next occupied slot current and returns it. The current
// slot must be used up and the wheel must not be empty.
func (q *queue) advance() *slot {
	q.head = 0
	for {
		for l := uint(0); l < levels; l++ {
			shift := l * digitBits
			i, ok := q.nextUsed(l, q.cur>>shift&slotMask+1)
			if !ok {
				continue
			}
			// The slot's events lie in [start, start + 2^shift).
			q.cur = q.cur>>shift>>digitBits<<digitBits<<shift | i<<shift
			if l == 0 {
				return &q.slots[0][i]
			}
			q.used[l][i/64] &^= 1 << (i % 64)
			q.spill(&q.slots[l][i])
			if c := &q.slots[0][q.cur&slotMask]; c.n > 0 {
				return c
			}
			break // look again from level 0
		}
	}
}

// spill files the events of s again, in order, now that cur has moved
// into s's range; they all go to lower levels. It leaves s empty. A slot
// keeps a small array for the next events filed in it, but a large one
// is recycled: the slots of the higher levels are used in turn, few at a
// time, and an array kept in each would pin memory for long.
func (q *queue) spill(s *slot) {
	evs := s.ev[:s.n]
	s.n = 0
	if len(s.ev) > maxKept {
		s.ev = nil
	}
	for i := range evs {
		q.file(uint64(evs[i].At), evs[i])
	}
	if s.ev == nil {
		q.recycle(evs[:cap(evs)])
	}
}

// nextUsed returns the first occupied slot of level l at or after from.
func (q *queue) nextUsed(l uint, from uint64) (uint64, bool) {
	for w := from / 64; w < slotsPerLevel/64; w++ {
		m := q.used[l][w]
		if w == from/64 {
			m &= ^uint64(0) << (from % 64)
		}
		if m != 0 {
			return w*64 + uint64(bits.TrailingZeros64(m)), true
		}
	}
	return 0, false
}

// set copies *src to *dst one field at a time. The compiler spills an
// Event argument to the stack one field at a time; copying it whole would
// reload it 16 bytes at a time, which store-to-load forwarding cannot
// serve: the stall cost 6% of an event in the hold benchmark.
func set(dst, src *Event) {
	dst.At = src.At
	dst.Seq = src.Seq
	dst.Entity = src.Entity
	dst.Kind = src.Kind
	dst.Arg = src.Arg
}

// pushHeap adds ev to the binary heap h.
func pushHeap(h []Event, ev Event) []Event {
	h = append(h, ev)
	up(h, len(h)-1)
	return h
}

// popHeap removes the first event of the binary heap h, not empty.
func popHeap(h []Event) []Event {
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	down(h, 0)
	return h
}

// up and down restore the heap order of a after a[i] moved.
func up(a []Event, i int) {
	ev := a[i]
	for i > 0 {
		p := (i - 1) / 2
		if !ev.before(&a[p]) {
			break
		}
		a[i] = a[p]
		i = p
	}
	a[i] = ev
}

func down(a []Event, i int) {
	n := len(a)
	if i >= n {
		return
	}
	ev := a[i]
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && a[c+1].before(&a[c]) {
			c++
		}
		if !a[c].before(&ev) {
			break
		}
		a[i] = a[c]
		i = c
	}
	a[i] = ev
}
