package fidelity

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xdssim/xdssim/model/network"
)

// The band is derived from the retry schedule 0, 1, 1+1.6J, ... s with J
// in [0.8, 1.2]: lo = 1, 2.28, 4.33, 7.60, 12.85, ...;
// hi = 1, 2.92, 5.99, 10.90, 18.76, ... The latest reconnect after an
// outage of d is hi[K+1] for the K with lo[K-1] < d <= lo[K].
func TestReconnectBandFollowsTheRetrySchedule(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want time.Duration // hi[K+1] - d
	}{
		{500 * time.Millisecond, 2920*time.Millisecond - 500*time.Millisecond}, // K=0
		{2 * time.Second, 5992*time.Millisecond - 2*time.Second},               // K=1 (lo[0]=1 < 2 <= 2.28)
		{4 * time.Second, 10907*time.Millisecond - 4*time.Second},              // K=2 (2.28 < 4 <= 4.33)
		{5 * time.Second, 18771*time.Millisecond - 5*time.Second},              // K=3 (4.33 < 5 <= 7.60)
	}
	for _, tt := range tests {
		got := ReconnectBand(tt.d, network.ServerDown)
		if diff := got - tt.want; diff > 5*time.Millisecond || diff < -5*time.Millisecond {
			t.Errorf("ReconnectBand(%v) = %v, want %v", tt.d, got, tt.want)
		}
	}
	if got := ReconnectBand(time.Hour, network.Blackhole); got != 20*time.Second {
		t.Errorf("blackhole band = %v, want the 20 s connect timeout", got)
	}
	// A hold shorter than the connect timeout: the first attempt
	// completes when it clears.
	if got := ReconnectBand(6*time.Second, network.BlackholeHold); got != 0 {
		t.Errorf("short hold band = %v, want 0", got)
	}
	if got := ReconnectBand(time.Minute, network.BlackholeHold); got != 20*time.Second {
		t.Errorf("long hold band = %v, want the 20 s connect timeout", got)
	}
}

func TestToleranceWidensOnlyAfterAnOutage(t *testing.T) {
	tol := Tolerance{RPCInterval: 100 * time.Millisecond, Slack: Slack,
		Outages: []Outage{{End: 4 * time.Second, Band: 7 * time.Second}}}
	base := tol.Base()
	tests := []struct {
		at   time.Duration
		want time.Duration
	}{
		{time.Second, base},
		{5 * time.Second, base + 7*time.Second},
		{11 * time.Second, base + 7*time.Second},
		{12 * time.Second, base},
	}
	for _, tt := range tests {
		if got := tol.At(tt.at); got != tt.want {
			t.Errorf("At(%v) = %v, want %v", tt.at, got, tt.want)
		}
	}
}

func TestTranscriptLeavesOutRacesButNotBehaviour(t *testing.T) {
	req := func(typ, version, nonce string, nack bool) Message {
		return Message{Type: typ, Version: version, Nonce: nonce, Names: []string{"x"}, NACK: nack}
	}
	resp := func(typ, version, nonce string) Message {
		return Message{Response: true, Type: typ, Version: version, Nonce: nonce}
	}
	// Two runs whose only differences are the order across types and so
	// the nonce values.
	a := Stream{Server: "p", Messages: []Message{
		req("LDS", "", "", false), resp("LDS", "v1", "1"), req("CDS", "", "", false), resp("CDS", "v1", "2"),
		req("LDS", "v1", "1", false), req("CDS", "v1", "2", false)}}
	b := Stream{Server: "p", Messages: []Message{
		req("CDS", "", "", false), resp("CDS", "v1", "1"), req("LDS", "", "", false), resp("LDS", "v1", "2"),
		req("CDS", "v1", "1", false), req("LDS", "v1", "2", false)}}
	if ta, tb := transcript([]Stream{a}), transcript([]Stream{b}); !slices.Equal(ta, tb) {
		t.Errorf("transcripts differ:\n%s\n--\n%s", strings.Join(ta, "\n"), strings.Join(tb, "\n"))
	}
	// An ACK of an older response is behaviour, and shows.
	c := Stream{Server: "p", Messages: []Message{
		req("LDS", "", "", false), resp("LDS", "v1", "1"), resp("LDS", "v2", "2"), req("LDS", "v1", "1", false)}}
	if got := transcript([]Stream{c}); !slices.Contains(got, `  -> ACK  LDS version="v1" nonce=older names=[x]`) {
		t.Errorf("stale ACK not shown as such:\n%s", strings.Join(got, "\n"))
	}
	// A NACK loop is written once, however long it ran.
	loop := func(n int) Stream {
		s := Stream{Server: "p", Messages: []Message{req("CDS", "", "", false)}}
		for i := range n {
			nonce := string(rune('a' + i))
			s.Messages = append(s.Messages, resp("CDS", "bad", nonce), req("CDS", "", nonce, true))
		}
		return s
	}
	if l3, l9 := transcript([]Stream{loop(3)}), transcript([]Stream{loop(9)}); !slices.Equal(l3, l9) || !slices.Contains(l3, "  (repeats)") {
		t.Errorf("NACK loops of 3 and 9 rounds:\n%s\n--\n%s", strings.Join(l3, "\n"), strings.Join(l9, "\n"))
	}
	if l1 := transcript([]Stream{loop(1)}); slices.Contains(l1, "  (repeats)") {
		t.Errorf("a single exchange marked as repeating:\n%s", strings.Join(l1, "\n"))
	}
	// A loop that the end of the run cuts between a response and its
	// NACK is the same loop: where a run stops is a race.
	cut := loop(9)
	cut.Messages = append(cut.Messages, resp("CDS", "bad", "z"))
	if l9, lc := transcript([]Stream{loop(9)}), transcript([]Stream{cut}); !slices.Equal(l9, lc) {
		t.Errorf("a NACK loop cut after a response:\n%s\n--\n%s", strings.Join(lc, "\n"), strings.Join(l9, "\n"))
	}
	// Subscribing to two names at once, one request per name, is a race:
	// the opening is written as its outcome, whatever the order and the
	// crossing.
	sub := func(nonce string, names ...string) Message {
		m := Message{Type: "CDS", Nonce: nonce, Names: names}
		if nonce != "" {
			m.Version = "v1" // an ACK carries the version it accepts
		}
		return m
	}
	openings := [][]Message{
		{sub("", "a"), resp("CDS", "v1", "1"), sub("", "a", "b"), sub("1", "a", "b"), resp("CDS", "v1", "2"), sub("2", "a", "b")},
		{sub("", "a"), sub("", "a", "b"), resp("CDS", "v1", "1"), sub("1", "a", "b"), resp("CDS", "v1", "2"), sub("2", "a", "b")},
		{sub("", "b"), resp("CDS", "v1", "1"), sub("", "a", "b"), resp("CDS", "v1", "2"), sub("1", "a", "b"), sub("2", "a", "b")},
		{sub("", "a"), resp("CDS", "v1", "1"), sub("1", "a"), sub("1", "a", "b"), resp("CDS", "v1", "2"), sub("2", "a", "b")},
	}
	// What follows the opening is kept: a new version, an unsubscription.
	for i := range openings {
		openings[i] = append(openings[i], resp("CDS", "v2", "9"), Message{Type: "CDS", Version: "v2", Nonce: "9", Names: []string{"a"}})
	}
	want := transcript([]Stream{{Server: "p", Messages: openings[0]}})
	if !slices.Contains(want, `  <- CDS version="v2"`) || !slices.Contains(want, `  -> ACK  CDS version="v2" nonce=last names=[a]`) {
		t.Errorf("the messages after the opening are lost:\n%s", strings.Join(want, "\n"))
	}
	for _, o := range openings[1:] {
		if got := transcript([]Stream{{Server: "p", Messages: o}}); !slices.Equal(got, want) {
			t.Errorf("openings differ:\n%s\n--\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	// A NACK in the opening is behaviour: kept.
	nacked := []Message{sub("", "a"), resp("CDS", "bad", "1"), {Type: "CDS", Version: "v1", Nonce: "1", Names: []string{"a", "b"}, NACK: true}}
	if got := transcript([]Stream{{Server: "p", Messages: nacked}}); !slices.Contains(got, `  -> NACK CDS version="v1" nonce=last names=[a b]`) {
		t.Errorf("a NACK in the opening was folded:\n%s", strings.Join(got, "\n"))
	}
}

func TestCompareTimesNeedsTheSameThingsWithinTolerance(t *testing.T) {
	tol := Tolerance{RPCInterval: 100 * time.Millisecond, Slack: Slack}
	at := func(s float64, label string) timed { return timed{time.Duration(s * float64(time.Second)), label} }
	tests := []struct {
		name      string
		sim, real []timed
		pass      bool
	}{
		{"equal", []timed{at(1, "a")}, []timed{at(1, "a")}, true},
		{"within", []timed{at(1, "a")}, []timed{at(1.3, "a")}, true},
		{"too far", []timed{at(1, "a")}, []timed{at(2, "a")}, false},
		{"missing", []timed{at(1, "a")}, nil, false},
		{"other label", []timed{at(1, "a")}, []timed{at(1, "b")}, false},
	}
	for _, tt := range tests {
		if got := compareTimes("c", "x", tol, tt.sim, tt.real); got.Pass != tt.pass {
			t.Errorf("%s: pass = %v, want %v (%s)", tt.name, got.Pass, tt.pass, got.Detail)
		}
	}
}

// TestCompareConnsAllowsForBackoffJitter checks the comparison of what
// clients did to their connections during a blackhole: the same events
// in the same order, each within the base tolerance plus 0.4 of every
// jittered span before it (a backoff between giving up and opening again,
// or a deadline stretched past 20 s).
func TestCompareConnsAllowsForBackoffJitter(t *testing.T) {
	tol := Tolerance{RPCInterval: 100 * time.Millisecond, Slack: Slack} // base 0.45 s
	s := func(d float64) time.Duration { return time.Duration(d * float64(time.Second)) }
	// keepalive gives up at 320 s; a connect attempt opens at once, gives
	// up 20 s later; 1 s later the next opens, 20 s later it gives up; 1.6 s
	// later (jittered) the next opens.
	sim := []Conn{{At: s(320)}, {At: s(320), Opened: true}, {At: s(340)}, {At: s(341), Opened: true}, {At: s(361)}, {At: s(362.6), Opened: true}}
	shift := func(i int, d float64) []Conn {
		out := slices.Clone(sim)
		out[i].At += s(d)
		return out
	}
	for _, tt := range []struct {
		name string
		real []Conn
		pass bool
	}{
		{"identical", slices.Clone(sim), true},
		{"keepalive 0.3 s late", shift(0, 0.3), true},
		{"keepalive 1 s late", shift(0, 1), false},
		// before the last open: spans 0, 1 and 1.6 s jittered: 0.45 + 0.4 × 2.6 = 1.49 s.
		{"the last open 1.2 s early", shift(5, -1.2), true},
		{"the last open 1.6 s early", shift(5, -1.6), false},
		{"one attempt fewer", sim[:5], false},
		{"two clients' events a race apart", []Conn{sim[1], sim[0], sim[2], sim[3], sim[4], sim[5]}, true},
		{"a give-up where an open was", []Conn{sim[0], {At: s(320)}, sim[2], sim[3], sim[4], sim[5]}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := compareConns("primary", tol, sim, tt.real)
			if c.Pass != tt.pass {
				t.Errorf("pass = %v, want %v (%s)", c.Pass, tt.pass, c.Detail)
			}
		})
	}
}
