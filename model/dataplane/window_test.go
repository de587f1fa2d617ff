package dataplane

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/xdssim/xdssim/sim"
)

func TestFailuresCloserThanTheGapMergeIntoOneWindow(t *testing.T) {
	at := func(ms int) sim.Time { return sim.Time(0).Add(time.Duration(ms) * time.Millisecond) }
	var tr Tracker
	gap := time.Second
	tr.Fail(at(0), gap, codes.Unavailable, BackendDown)
	tr.Fail(at(900), gap, codes.Unavailable, BackendDown)
	tr.Fail(at(1800), gap, codes.DeadlineExceeded, Deadline)
	closed, ok := tr.Fail(at(5000), gap, codes.Unavailable, NACK)
	if !ok {
		t.Fatal("a failure 3.2 s after the last did not close the window")
	}
	if closed.Start != at(0) || closed.End != at(1800) || closed.Failures != 3 || closed.Cause() != BackendDown {
		t.Errorf("closed window = %+v, want 0–1.8 s, 3 failures, backend_down", closed)
	}
	if !closed.Codes.Has(codes.Unavailable) || !closed.Codes.Has(codes.DeadlineExceeded) {
		t.Errorf("codes = %v, want UNAVAILABLE and DEADLINE_EXCEEDED", closed.Codes)
	}
	last, ok := tr.Close()
	if !ok || last.Start != at(5000) || last.Duration() != 0 || last.Cause() != NACK {
		t.Errorf("last window = %+v, want a one-failure nack window at 5 s", last)
	}
	if _, ok := tr.Close(); ok {
		t.Error("closing twice returned a window")
	}
}

func TestWindowCauseIsTheMostFrequentFirstOnATie(t *testing.T) {
	w := Window{}
	w.ByCause[Deadline], w.ByCause[NACK] = 2, 2
	if w.Cause() != NACK {
		t.Errorf("tie between nack and deadline gave %v, want nack (earlier in order)", w.Cause())
	}
	w.ByCause[Deadline] = 3
	if w.Cause() != Deadline {
		t.Errorf("cause = %v, want deadline", w.Cause())
	}
}

func TestParseCauseReadsWhatStringWrites(t *testing.T) {
	for c := Cause(0); c < NumCauses; c++ {
		if got, ok := ParseCause(c.String()); !ok || got != c {
			t.Errorf("ParseCause(%q) = %v, %v; want %v", c.String(), got, ok, c)
		}
	}
	for _, name := range []string{"", "unknown", "NACK", "nack "} {
		if c, ok := ParseCause(name); ok {
			t.Errorf("ParseCause(%q) = %v, want none", name, c)
		}
	}
}
