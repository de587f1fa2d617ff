package fleet

import (
	"errors"
	"math"
	"reflect"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/xdssim/xdssim/model/xdsclient"
	"github.com/xdssim/xdssim/sim"
)

func config() Config {
	return Config{
		Name: "t", Seed: 1, Duration: 2 * time.Minute, SampleInterval: time.Second,
		Groups: []Group{
			{Name: "web", Clients: 1000, StartSpread: 10 * time.Second},
			{Name: "batch", Clients: 100, StartAt: 20 * time.Second},
		},
		Restarts: []Restart{{Group: "web", At: time.Minute, Fraction: 0.2, Spread: 10 * time.Second, Downtime: 5 * time.Second}},
	}
}

func run(t *testing.T, cfg Config) *Results {
	t.Helper()
	r, err := Run(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func series(t *testing.T, r *Results, name string) []float64 {
	t.Helper()
	for _, s := range r.Series {
		if s.Name == name {
			if len(s.Values) != r.Samples {
				t.Fatalf("%s has %d values, want %d", name, len(s.Values), r.Samples)
			}
			return s.Values
		}
	}
	t.Fatalf("no series %s", name)
	return nil
}

func metric(t *testing.T, r *Results, path string) float64 {
	t.Helper()
	for _, m := range r.Metrics {
		if m.Path == path {
			return m.Value
		}
	}
	t.Fatalf("no metric %s", path)
	return 0
}

func TestClientsStartUniformlyOverTheirSpread(t *testing.T) {
	r := run(t, config())
	running := series(t, r, "clients.running")
	if r.Samples != 121 {
		t.Fatalf("samples = %d, want 121 (0s to 120s)", r.Samples)
	}
	// web starts uniformly over [0, 10s): about 500 are up at 5s.
	if got := running[5]; math.Abs(got-500) > 60 {
		t.Errorf("running at 5s = %v, want about 500", got)
	}
	if got := running[15]; got != 1000 {
		t.Errorf("running at 15s = %v, want all 1000 web clients", got)
	}
	// batch starts at exactly 20s; the sample at 20s sees events at 20s.
	if got := running[20]; got != 1100 {
		t.Errorf("running at 20s = %v, want 1100", got)
	}
	starts := 0.0
	for _, v := range series(t, r, "clients.starts") {
		starts += v * r.SampleInterval.Seconds()
	}
	if starts != metric(t, r, "fleet.starts") {
		t.Errorf("starts/s integrate to %v, want fleet.starts %v", starts, metric(t, r, "fleet.starts"))
	}
}

// TestStaggeredAndListedStarts: a stagger starts client i at start_at + i
// × stagger; a list starts client i at start_at + its time.
func TestStaggeredAndListedStarts(t *testing.T) {
	cfg := config()
	cfg.Restarts = nil
	cfg.Groups[0] = Group{Name: "web", Clients: 10, StartAt: 5 * time.Second, StartStagger: 2 * time.Second}
	cfg.Groups[1] = Group{Name: "batch", Clients: 3, StartAt: 10 * time.Second,
		StartTimes: []time.Duration{30 * time.Second, 0, 50 * time.Second}}
	running := series(t, run(t, cfg), "clients.running")
	for _, tc := range []struct {
		at   int
		want float64
	}{
		{4, 0}, {5, 1}, {6, 1}, {7, 2}, {10, 4}, {11, 5}, // web: 5, 7, 9, ... 23 s; batch/1 at 10 s
		{23, 11}, {39, 11}, {40, 12}, {59, 12}, {60, 13},
	} {
		if got := running[tc.at]; got != tc.want {
			t.Errorf("running at %d s = %v, want %v", tc.at, got, tc.want)
		}
	}
}

func TestRestartTakesTheFractionDownForItsDowntime(t *testing.T) {
	r := run(t, config())
	if got := metric(t, r, "fleet.restarts"); got != 200 {
		t.Errorf("restarts = %v, want 20%% of 1000", got)
	}
	if got := metric(t, r, "fleet.starts"); got != 1300 {
		t.Errorf("starts = %v, want 1100 first starts + 200 restarts", got)
	}
	if len(r.Intervals) != 200 {
		t.Fatalf("%d restart intervals, want 200", len(r.Intervals))
	}
	for _, iv := range r.Intervals {
		if iv.End-iv.Start != 5*time.Second || iv.Start < time.Minute || iv.Start >= 70*time.Second {
			t.Errorf("interval %+v: want 5s down, starting in [60s, 70s)", iv)
		}
	}
	running := series(t, r, "clients.running")
	if running[59] != 1100 || running[119] != 1100 {
		t.Errorf("running before and after the restart = %v, %v, want 1100", running[59], running[119])
	}
	peak := metric(t, r, "fleet.peak_restarting")
	// Samples see the fleet once a second; the peak counts every instant.
	if lowest := slicesMin(running[60:80]); 1100-lowest > peak || 1100-lowest < 0.9*peak {
		t.Errorf("lowest running during the restart %v, want about 1100 - peak restarting (%v)", lowest, peak)
	}
	if len(r.Faults) != 1 || r.Faults[0].Start != time.Minute || r.Faults[0].End != 75*time.Second {
		t.Errorf("faults = %+v, want the restart from 60s to 75s", r.Faults)
	}
}

func TestRestartLeavesClientsThatAreNotUpAlone(t *testing.T) {
	cfg := config()
	cfg.Restarts = []Restart{
		{Group: "batch", At: 5 * time.Second, Fraction: 1},                       // before batch starts
		{Group: "web", At: time.Minute, Fraction: 1, Downtime: 30 * time.Second}, // all of web
		{Group: "web", At: 70 * time.Second, Fraction: 1},                        // while web is down
	}
	r := run(t, cfg)
	if got := metric(t, r, "fleet.restarts"); got != 1000 {
		t.Errorf("restarts = %v, want only the 1000 web clients that were up", got)
	}
}

func TestSameSeedSameResultsDifferentSeedDifferentRun(t *testing.T) {
	a, b := run(t, config()), run(t, config())
	if !reflect.DeepEqual(a, b) {
		t.Error("two runs with the same seed differ")
	}
	cfg := config()
	cfg.Seed = 2
	c := run(t, cfg)
	if reflect.DeepEqual(a.Intervals, c.Intervals) {
		t.Error("seeds 1 and 2 gave the same restart intervals")
	}
}

func TestAddingAGroupDoesNotMoveAnotherGroupsClients(t *testing.T) {
	cfg := config()
	cfg.Restarts = nil
	alone := run(t, cfg)
	cfg.Groups = append(cfg.Groups, Group{Name: "extra", Clients: 500, StartAt: 90 * time.Second})
	more := run(t, cfg)
	a, m := series(t, alone, "clients.running"), series(t, more, "clients.running")
	if !reflect.DeepEqual(a[:90], m[:90]) {
		t.Error("adding a group that starts at 90s changed who was running before 90s")
	}
}

func slicesMin(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = min(m, x)
	}
	return m
}

// TestMetricPathsMatchARun pins MetricPaths to what a run reports, so that
// an expectation naming a path is checked against the real set.
func TestMetricPathsMatchARun(t *testing.T) {
	cfg := xdsConfig(20, xdsclient.GRPCGo())
	res := run(t, cfg)
	var got []string
	for _, m := range res.Metrics {
		got = append(got, m.Path)
	}
	if want := MetricPaths(&cfg); !slices.Equal(got, want) {
		t.Errorf("a run reports %v\nMetricPaths lists %v", got, want)
	}
}

// TestResultsDoNotKeepTheWorldAlive checks that a run's Results hold
// nothing of the simulated world: once the run is over, its clients,
// instances and servers can be freed while the caller keeps the Results
// (a sweep keeps many). Reference: issue 18 (147 MB held at 10 000
// clients).
func TestResultsDoNotKeepTheWorldAlive(t *testing.T) {
	w, err := build(xdsConfig(50, xdsclient.GRPCGo()))
	if err != nil {
		t.Fatal(err)
	}
	w.kernel.Run(sim.Time(0).Add(w.cfg.Duration))
	r := w.results()
	freed := make(chan struct{})
	runtime.AddCleanup(w, func(ch chan struct{}) { close(ch) }, freed)
	w = nil
	for range 20 {
		runtime.GC()
		select {
		case <-freed:
			runtime.KeepAlive(r)
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Error("the world is still reachable from its Results")
	runtime.KeepAlive(r)
}

func TestMaxEventsStopsTheRunAtExactlyThatMany(t *testing.T) {
	cfg := primaryDown(50)
	full, err := Run(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var seen []uint64
	_, err = Run(cfg, Options{MaxEvents: 1000, Events: func(n uint64, _ time.Duration) { seen = append(seen, n) }})
	var lim *EventLimitError
	if !errors.As(err, &lim) || lim.Limit != 1000 || lim.At <= 0 || lim.At >= cfg.Duration {
		t.Fatalf("Run with MaxEvents 1000 = %v, want an EventLimitError partway through", err)
	}
	if len(seen) != 0 {
		t.Errorf("Events called at %v before EventsEvery events", seen)
	}
	// A bound the run does not reach changes nothing.
	same, err := Run(cfg, Options{MaxEvents: full.Events + 1, Events: func(uint64, time.Duration) {}})
	if err != nil || same.Events != full.Events {
		t.Errorf("a bound above the run's events: %v, %d events, want %d", err, same.Events, full.Events)
	}
}
