package dataplane

import (
	"time"

	"google.golang.org/grpc/codes"

	"github.com/xdssim/xdssim/sim"
)

// Window is an interval in which one client's RPCs to one target failed:
// from its first failure to its last, with failures less than the
// tracker's gap apart merged into one window.
type Window struct {
	Start, End sim.Time
	// Failures counts the failed RPCs (and broken-affinity RPCs) in it.
	Failures uint32
	// Codes are the status codes the failures ended with.
	Codes CodeSet
	// ByCause counts the failures by cause.
	ByCause [NumCauses]uint32
}

// Duration is how long the window lasted.
func (w *Window) Duration() time.Duration { return w.End.Sub(w.Start) }

// Cause is the window's root cause: the cause of most of its failures, the
// first in Cause order on a tie.
func (w *Window) Cause() Cause {
	best := Cause(0)
	for c := Cause(1); c < NumCauses; c++ {
		if w.ByCause[c] > w.ByCause[best] {
			best = c
		}
	}
	return best
}

// Tracker follows one client's failure window for one target. Its window
// is allocated at its first failure and reused after: most clients of a
// fleet never fail, and a fleet holds a Tracker per client and target
// (16 bytes, against the 80 of a Tracker holding its Window). A Tracker
// must not be copied once it has recorded a failure.
type Tracker struct {
	open bool
	cur  *Window // nil until the first failure
}

// Fail records a failure at t. If it falls more than gap after the open
// window's last failure, that window is over: Fail returns it, closed, and
// opens a new one.
func (t *Tracker) Fail(at sim.Time, gap time.Duration, code codes.Code, cause Cause) (closed Window, ok bool) {
	if t.open && at.Sub(t.cur.End) > gap {
		closed, ok = *t.cur, true
		t.open = false
	}
	if !t.open {
		t.open = true
		if t.cur == nil {
			t.cur = new(Window)
		}
		*t.cur = Window{Start: at}
	}
	t.cur.End = at
	t.cur.Failures++
	t.cur.Codes |= 1 << code
	t.cur.ByCause[cause]++
	return closed, ok
}

// Open reports whether a window is open: its last failure may be
// followed by more within the gap.
func (t *Tracker) Open() bool { return t.open }

// Close ends the open window, if there is one, and returns it.
func (t *Tracker) Close() (Window, bool) {
	if !t.open {
		return Window{}, false
	}
	t.open = false
	return *t.cur, true
}
