package fidelity

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/xdssim/xdssim/validate/grpcgo"
)

// stormStream is a stream with an ACKed CDS response, then n NACKs each
// answered by the same response, every, then an ACK of the fix.
func stormStream(start time.Duration, n int, every time.Duration) Stream {
	s := Stream{Server: "s"}
	add := func(at time.Duration, m Message) {
		m.At, m.Type = at, "CDS"
		s.Messages = append(s.Messages, m)
	}
	add(0, Message{})
	add(0, Message{Response: true, Version: "1"})
	add(0, Message{Version: "1", Nonce: "1"})
	add(start, Message{Response: true, Version: "2"})
	for i := 0; i < n; i++ {
		at := start + time.Duration(i)*every
		add(at, Message{NACK: true, Version: "1"})
		add(at, Message{Response: true, Version: "2"})
	}
	end := start + time.Duration(n)*every
	add(end, Message{Response: true, Version: "3"})
	add(end, Message{Version: "3"})
	return s
}

// A storm is back-to-back NACKs of one type, each answering a response;
// its rate is its NACK intervals over its time. A few NACKs are not one.
func TestStormsAreRunsOfBackToBackNACKs(t *testing.T) {
	got := storms([]Stream{stormStream(time.Second, 501, 200*time.Microsecond)})
	if len(got) != 1 || got[0].Type != "CDS" || got[0].NACKs != 501 {
		t.Fatalf("storms = %+v, want one CDS storm of 501 NACKs", got)
	}
	if r := got[0].Rate(); r < 4999 || r > 5001 {
		t.Errorf("rate = %v, want 5000/s (one NACK per 200 µs)", r)
	}
	if got := storms([]Stream{stormStream(time.Second, MinStormNACKs-1, time.Millisecond)}); len(got) != 0 {
		t.Errorf("%d NACKs make storms %+v, want none", MinStormNACKs-1, got)
	}
}

// The case's storms are compared together: the same storms per client in
// both runs, and their common rate within StormTolerance (30 %) of the
// real one.
func TestStormRatesAreComparedWithinTheTolerance(t *testing.T) {
	real := map[string][]Storm{"a": {{Type: "CDS", NACKs: 1001, First: 0, Last: time.Second}}} // 1000/s
	for _, tt := range []struct {
		name string
		sim  []Storm
		pass bool
		want string
	}{
		{"20 % faster", []Storm{{Type: "CDS", NACKs: 1201, Last: time.Second}}, true, ""},
		{"29 % slower", []Storm{{Type: "CDS", NACKs: 711, Last: time.Second}}, true, ""},
		{"35 % faster", []Storm{{Type: "CDS", NACKs: 1351, Last: time.Second}}, false, "sim 1350 NACKs/s, real 1000 NACKs/s: +35 %, tolerance ±30 % (the machine's load average 1.00 on 2 CPUs when the run ended)"},
		{"another type", []Storm{{Type: "LDS", NACKs: 1001, Last: time.Second}}, false, "a: sim has LDS (1001 NACKs), real has CDS (1001 NACKs)"},
		{"none", nil, false, "a: sim has (nothing), real has CDS (1001 NACKs)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := compareStorms([]string{"a"}, map[string][]Storm{"a": tt.sim}, real, "load average 1.00 on 2 CPUs")
			if c.Pass != tt.pass || c.Detail != tt.want {
				t.Errorf("pass %v, detail %q; want %v, %q", c.Pass, c.Detail, tt.pass, tt.want)
			}
		})
	}
}

// The server's time is from its read of a NACK to its write of the
// response; the client's from that write to the read of the next NACK,
// less the link both ways. Flow-control frames (small reads and writes)
// and events outside the storm are left out.
func TestProcessingIsMeasuredAtTheServersSocket(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(us int) time.Time { return t0.Add(time.Duration(us) * time.Microsecond) }
	conn := []grpcgo.WireEvent{
		{At: at(0), Bytes: 200},               // before the storm
		{At: at(100), Bytes: 200},             // NACK
		{At: at(105), Bytes: 13, Write: true}, // WINDOW_UPDATE
		{At: at(110), Bytes: 300, Write: true},
		{At: at(250), Bytes: 200}, // NACK: 140 µs after the response
		{At: at(270), Bytes: 300, Write: true},
		{At: at(400), Bytes: 200},
		{At: at(900), Bytes: 200}, // after the storm
	}
	p := &Processing{Link: 15 * time.Microsecond}
	p.add(conn, at(50), at(400))
	want := func(got []time.Duration, us ...int) {
		t.Helper()
		var s []string
		for _, d := range got {
			s = append(s, d.String())
		}
		var w []string
		for _, u := range us {
			w = append(w, (time.Duration(u) * time.Microsecond).String())
		}
		if strings.Join(s, " ") != strings.Join(w, " ") {
			t.Errorf("got %v, want %v", s, w)
		}
	}
	want(p.Server, 10, 20)
	want(p.Client, 110, 100) // 140 - 30, 130 - 30
}

// The log-normal with a sample's median and mean has
// σ = sqrt(2 ln(mean/median)) and p99 = median × exp(2.326 σ).
func TestSummaryFitsTheLogNormalOfTheMedianAndMean(t *testing.T) {
	var d []time.Duration
	for i := 0; i < 99; i++ {
		d = append(d, 10*time.Microsecond)
	}
	d = append(d, 10*time.Microsecond+99*10*time.Microsecond*(1)) // mean 19.9 µs
	s := Summarize(d)
	if s.Median != 10*time.Microsecond || s.Mean != 19900*time.Nanosecond {
		t.Fatalf("median %v, mean %v", s.Median, s.Mean)
	}
	// σ = sqrt(2 ln 1.99) = 1.1732; p99 = 10 µs × exp(2.7293) = 153.2 µs.
	if s.FitP99 < 152*time.Microsecond || s.FitP99 > 154*time.Microsecond {
		t.Errorf("fit p99 = %v, want about 153 µs", s.FitP99)
	}
}

// A storm case runs again only when its one disagreement is a real storm
// slower than the simulation's, and the fastest real run is the one
// compared, with every run's rate said.
func TestOnlyASlowRealStormRunsAgainAndTheFastestCounts(t *testing.T) {
	storm := func(real float64, pass bool) Check {
		return Check{What: "NACK storms", Pass: pass, Clients: 1, Count: 1, SimRate: 7900, RealRate: real, RateOff: (7900 - real) / real}
	}
	for _, tt := range []struct {
		name   string
		checks []Check
		again  bool
	}{
		{"passing", []Check{{What: "xDS messages", Pass: true}, storm(7000, true)}, false},
		{"real storm slower", []Check{{What: "xDS messages", Pass: true}, storm(5700, false)}, true},
		{"real storm faster", []Check{storm(11000, false)}, false},
		{"messages differ too", []Check{{What: "xDS messages", Pass: false}, storm(5700, false)}, false},
		{"storms differ in kind", []Check{{What: "NACK storms", Pass: false, Clients: 1}}, false},
	} {
		if got := (&Result{Checks: tt.checks}).SlowStormOnly(); got != tt.again {
			t.Errorf("%s: SlowStormOnly = %v, want %v", tt.name, got, tt.again)
		}
	}
	runs := []*Result{
		{Case: "a", Checks: []Check{storm(5701, false)}},
		{Case: "b", Checks: []Check{storm(7152, true)}},
		{Case: "c", Checks: []Check{storm(6306, false)}},
	}
	got := Fastest(runs)
	if got.Case != "b" || !got.Pass() {
		t.Fatalf("Fastest chose %s (pass %v), want b", got.Case, got.Pass())
	}
	if cell, want := got.stormCell(), "the fastest of 3 real runs (5701, 7152, 6306 NACKs/s)"; !strings.Contains(cell, want) {
		t.Errorf("table cell %q does not say %q", cell, want)
	}
	if one := Fastest(runs[:1]); one.Case != "a" || len(one.Checks[0].RealRuns) != 0 {
		t.Errorf("one run: %+v", one)
	}
}

// A storm that fails at the default processing times is checked again at
// the processing times the real run measured: the simulated storm of the
// nack-policy case slows as the measured times grow, and the check passes
// if that pace is within the tolerance of the real one, and fails, saying
// both comparisons, if it is not.
func TestAStormIsCheckedAgainAtTheMeasuredProcessingTimes(t *testing.T) {
	cases, err := LoadCases("../cases")
	if err != nil {
		t.Fatal(err)
	}
	var cfg *Case
	for i := range cases {
		if strings.HasSuffix(cases[i].Path, "nack-policy.toml") {
			cfg = &cases[i]
		}
	}
	if cfg == nil {
		t.Fatal("no nack-policy case")
	}
	obs, err := Simulate(cfg.Config)
	if err != nil {
		t.Fatal(err)
	}
	names := obs.Names()
	var def []Storm
	for _, n := range names {
		def = append(def, storms(obs.Clients[n].Streams)...)
	}
	defRate := stormRate(def)
	if defRate == 0 {
		t.Fatal("the nack-policy case has no storm")
	}
	// A machine whose grpc-go takes 3× and whose server 2× the defaults'
	// means, as samples of a log-normal shape (median < mean).
	sample := func(median time.Duration, n int) []time.Duration {
		var d []time.Duration
		for i := range n { // log-uniform about median: the mean above it
			d = append(d, time.Duration(float64(median)*math.Exp(1.4*(float64(i)/float64(n-1)-0.5))))
		}
		return d
	}
	slow := &Processing{Client: sample(3*76*time.Microsecond, 1000), Server: sample(2*15*time.Microsecond, 1000)}
	check := func(realRate float64) Check {
		c := Check{What: "NACK storms", SimRate: defRate, RealRate: realRate, RateOff: (defRate - realRate) / realRate}
		calibrateStorms(&c, cfg.Config, slow, names)
		return c
	}
	c := check(defRate / 2)
	if c.CalibratedRate <= 0 || c.CalibratedRate >= 0.8*defRate {
		t.Fatalf("at slower processing times the simulated storm runs at %.0f/s, at the defaults %.0f/s: want it slower", c.CalibratedRate, defRate)
	}
	for _, tt := range []struct {
		name string
		real float64
		pass bool
	}{
		{"the real storm at the calibrated pace", c.CalibratedRate, true},
		{"20 % slower than the calibrated pace", c.CalibratedRate / 1.2, true},
		{"half the calibrated pace", c.CalibratedRate / 2, false},
		{"twice the calibrated pace", c.CalibratedRate * 2, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := check(tt.real)
			if got.Pass != tt.pass {
				t.Errorf("real %.0f/s, calibrated sim %.0f/s: pass = %v, want %v (%s)", tt.real, got.CalibratedRate, got.Pass, tt.pass, got.Detail)
			}
			if !strings.Contains(got.Detail, "with this run's measured processing times") {
				t.Errorf("detail %q does not say the calibrated comparison", got.Detail)
			}
		})
	}
}
