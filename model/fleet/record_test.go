package fleet

import (
	"math"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/xdssim/xdssim/model/dataplane"
	"github.com/xdssim/xdssim/model/network"
	"github.com/xdssim/xdssim/model/xdsclient"
)

// primaryDown is a fleet on the primary alone, which is down for the first
// minute.
func primaryDown(clients int) Config {
	cfg := rpcConfig(clients)
	cfg.Faults = []network.Fault{{Kind: network.ServerDown, Start: 0, Duration: time.Minute, Servers: []int{0}}}
	return cfg
}

// Reference: gRFC A40 (CSDS statuses) and A57 (the 15 s does-not-exist
// timer): an entry is REQUESTED until its resource comes, ACKED once a
// valid resource is cached, DOES_NOT_EXIST when the timer fires first.
func TestCacheStatusSeriesFollowEveryEntry(t *testing.T) {
	cfg := xdsConfig(40, xdsclient.GRPCGo())
	lost := cfg.Groups[0]
	lost.Name, lost.Clients, lost.Targets = "lost", 10, []string{"no-such-listener"}
	cfg.Groups = append(cfg.Groups, lost)
	r := run(t, cfg)
	for _, tc := range []struct {
		at     time.Duration
		status string
		want   float64
	}{
		// LDS, RDS, CDS and EDS of each of the 40; only the Listener of
		// the 10 lost ones, which the server never sends.
		{10 * time.Second, "acked", 160},
		{10 * time.Second, "requested", 10},
		{10 * time.Second, "does_not_exist", 0},
		{30 * time.Second, "requested", 0},
		{30 * time.Second, "does_not_exist", 10},
		{30 * time.Second, "nacked", 0},
	} {
		if got := value(t, r, "xds.resources."+tc.status, tc.at); got != tc.want {
			t.Errorf("%s entries at %v = %v, want %v", tc.status, tc.at, got, tc.want)
		}
	}
	fired := 0.0
	for _, v := range series(t, r, "xds.resource_timer_firings") {
		fired += v * r.SampleInterval.Seconds()
	}
	if want := metric(t, r, "xds.resource_timer_fired"); fired != want || want != 10 {
		t.Errorf("timer firings/s integrate to %v, xds.resource_timer_fired = %v, want 10 each", fired, want)
	}
}

// Reference: gRPC connection-backoff.md (1 s, ×1.6, ±20 % jitter, at most
// 120 s) and gRFC A57 (the ADS stream backs off after a failure).
func TestBackoffHistogramsRecordTheDelays(t *testing.T) {
	r := run(t, primaryDown(20))
	if len(r.Histograms) != 2 {
		t.Fatalf("%d histograms, want 2", len(r.Histograms))
	}
	for _, h := range r.Histograms {
		total := 0
		for _, c := range h.Counts {
			total += c
		}
		if h.Count == 0 || total != h.Count || len(h.Counts) != len(h.Bounds)+1 {
			t.Errorf("%s: %d values, %d counted in %d buckets over %d bounds", h.Name, h.Count, total, len(h.Counts), len(h.Bounds))
		}
		if h.Counts[len(h.Counts)-1] != 0 {
			t.Errorf("%s: %d delays above %v s", h.Name, h.Counts[len(h.Counts)-1], h.Bounds[len(h.Bounds)-1])
		}
	}
	conn := r.Histograms[0]
	if conn.Name != "network.connect_backoff" {
		t.Fatalf("first histogram %s, want network.connect_backoff", conn.Name)
	}
	// The first delay is 1 s ± 20 %: nothing below 0.8 s.
	for i, b := range conn.Bounds {
		if b < 0.79 && conn.Counts[i] != 0 {
			t.Errorf("connect backoff: %d delays at most %v s, want none below 0.8 s", conn.Counts[i], b)
		}
	}
	// A minute of 1, 1.6, 2.56, … s delays averages well above 1 s.
	if mean := conn.Sum / float64(conn.Count); mean < 2 || mean > 40 {
		t.Errorf("connect backoff mean %v s", mean)
	}
}

func TestBackoffBoundsArePreferredNumbers(t *testing.T) {
	b := backoffBounds
	if b[0] != 0.01 || b[len(b)-1] != 1000 || len(b) != 51 {
		t.Fatalf("bounds %v", b)
	}
	for i := 1; i < len(b); i++ {
		if r := b[i] / b[i-1]; r < 1.2 || r > 1.3 {
			t.Errorf("bound %v follows %v: ratio %v", b[i], b[i-1], r)
		}
	}
}

func TestTracksSampleInstancesEvenly(t *testing.T) {
	for _, tc := range []struct {
		name     string
		clients  int
		duration time.Duration
		interval time.Duration
		tracks   int
		columns  int
		every    time.Duration
	}{
		{"every instance of a small fleet", 50, 3 * time.Minute, time.Second, 50, 181, time.Second},
		{"200 of a large fleet", 1000, 3 * time.Minute, time.Second, MaxTracks, 181, time.Second},
		{"long runs fold samples into columns", 10, 20 * time.Minute, time.Second, 10, 301, 4 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := xdsConfig(tc.clients, xdsclient.GRPCGo())
			cfg.Duration, cfg.SampleInterval = tc.duration, tc.interval
			r := run(t, cfg)
			if len(r.Tracks) != tc.tracks || r.TrackInterval != tc.every {
				t.Fatalf("%d tracks every %v, want %d every %v", len(r.Tracks), r.TrackInterval, tc.tracks, tc.every)
			}
			step := tc.clients / tc.tracks
			for i, tr := range r.Tracks {
				if want := "web/" + strconv.Itoa(i*step) + "/echo"; tr.Entity != want {
					t.Fatalf("track %d is %s, want %s", i, tr.Entity, want)
				}
				if len(tr.States) != tc.columns {
					t.Fatalf("track %s has %d columns, want %d", tr.Entity, len(tr.States), tc.columns)
				}
			}
		})
	}
}

// Reference: gRFC A71: clients that start while the primary is down fall
// back and revert when it answers; their tracks show it.
func TestTracksShowFallbackAndRestarts(t *testing.T) {
	cfg := xdsConfig(20, xdsclient.GRPCGo())
	cfg.Groups[0].StartAt, cfg.Groups[0].StartSpread = 2*time.Second, 0
	cfg.Faults = []network.Fault{{Kind: network.ServerDown, Start: 0, Duration: 30 * time.Second, Servers: []int{0}}}
	cfg.Restarts = []Restart{{Group: "web", At: 100 * time.Second, Fraction: 1, Downtime: 10 * time.Second}}
	r := run(t, cfg)
	for _, tc := range []struct {
		at   time.Duration
		want TrackState
	}{
		{0, TrackNotRunning},
		{20 * time.Second, TrackFallback},
		{90 * time.Second, TrackUp},
		{105 * time.Second, TrackNotRunning},
		{150 * time.Second, TrackUp},
	} {
		for _, tr := range r.Tracks {
			if got := tr.States[int(tc.at/r.TrackInterval)]; got != tc.want {
				t.Errorf("%s at %v: %v, want %v", tr.Entity, tc.at, got, tc.want)
			}
		}
	}
}

// The failure windows of a tracked instance mark its columns with their
// cause; the cause-stacked error rate adds up to the share of RPCs that
// failed.
func TestFailureWindowsShowInTracksAndErrorRates(t *testing.T) {
	r := run(t, primaryDown(10))
	want := FailingState(dataplane.NoConfigCPUnreachable)
	var windows int
	for _, in := range r.Intervals {
		if c, ok := in.WindowCause(); !ok || c != dataplane.NoConfigCPUnreachable {
			continue
		}
		windows++
		for _, tr := range r.Tracks {
			if tr.Entity != in.Entity {
				continue
			}
			// Sample k covers ((k-1)I, kI].
			col := func(d time.Duration) int { return int((d + r.SampleInterval - 1) / r.SampleInterval) }
			for c := col(in.Start); c <= col(in.End); c++ {
				if tr.States[c] != want {
					t.Errorf("%s column %d (%v) = %v inside window %v–%v, want %v", tr.Entity, c, time.Duration(c)*r.TrackInterval, tr.States[c], in.Start, in.End, want)
				}
			}
		}
	}
	if windows != 10 {
		t.Fatalf("%d no-config windows, want one per client", windows)
	}
	rate := series(t, r, "rpc.error_rate."+dataplane.NoConfigCPUnreachable.String())
	success := series(t, r, "rpc.success_ratio")
	amp := series(t, r, "retries.amplification")
	for k := range rate {
		if math.IsNaN(success[k]) {
			if !math.IsNaN(rate[k]) {
				t.Errorf("sample %d: error rate %v with no RPCs", k, rate[k])
			}
			continue
		}
		if d := rate[k] - 100*(1-success[k]); math.Abs(d) > 1e-9 {
			t.Errorf("sample %d: error rate %v%%, success ratio %v", k, rate[k], success[k])
		}
		if !math.IsNaN(amp[k]) && amp[k] < 1 {
			t.Errorf("sample %d: %v attempts per RPC", k, amp[k])
		}
	}
	if peak := metric(t, r, "failure_windows.peak_clients_percent"); peak != 100 {
		t.Errorf("peak clients failing %v%%, want 100", peak)
	}
}

func TestResultsNameTheGroupsProfiles(t *testing.T) {
	cfg := xdsConfig(3, xdsclient.GRPCGo())
	java := cfg.Groups[0]
	java.Name, java.Profile = "java", xdsclient.GRPCJava()
	plain := Group{Name: "plain", Clients: 2}
	cfg.Groups = append(cfg.Groups, java, plain)
	r := run(t, cfg)
	want := []GroupInfo{{"web", 3, "grpc-go"}, {"java", 3, "grpc-java"}, {"plain", 2, ""}}
	if !reflect.DeepEqual(r.Groups, want) {
		t.Errorf("groups %+v, want %+v", r.Groups, want)
	}
}

// TestGroupFiguresAddUpToTheFleet runs two groups that differ only in
// their RPC rate and checks that each group's figures sum to the fleet's,
// so that a scenario can compare groups within one run.
func TestGroupFiguresAddUpToTheFleet(t *testing.T) {
	cfg := primaryDown(10)
	fast := cfg.Groups[0]
	fast.Name, fast.RPC.Rate = "fast", 20
	cfg.Groups = append(cfg.Groups, fast)
	r := run(t, cfg)
	for _, name := range []string{"rpc.total", "rpc.failed", "failure_windows.count", "failure_windows.client_seconds"} {
		web, fst := metric(t, r, "groups.web."+name), metric(t, r, "groups.fast."+name)
		want := metric(t, r, name)
		if math.Abs(web+fst-want) > 1e-6*want {
			t.Errorf("%s: web %v + fast %v != fleet %v", name, web, fst, want)
		}
		if web == 0 || fst == 0 {
			t.Errorf("%s: web %v, fast %v: want both non-zero", name, web, fst)
		}
	}
	if web, fst := metric(t, r, "groups.web.rpc.total"), metric(t, r, "groups.fast.rpc.total"); math.Abs(fst/web-2) > 0.2 {
		t.Errorf("fast sent %v RPCs, web %v: want about twice as many", fst, web)
	}
	paths := MetricPaths(&cfg)
	for _, p := range []string{"groups.web.rpc.success_ratio", "groups.fast.xds.resource_timer_spurious", "groups.fast.sessions.affinity_breaks"} {
		if !slices.Contains(paths, p) {
			t.Errorf("MetricPaths lacks %s", p)
		}
	}
}

func TestWindowCauseReadsWhatWindowKindWrites(t *testing.T) {
	for _, tt := range []struct {
		kind string
		want dataplane.Cause
		ok   bool
	}{
		{WindowKind(dataplane.NACK), dataplane.NACK, true},
		{WindowKind(dataplane.Deadline), dataplane.Deadline, true},
		{"restart", 0, false},
		{"failure_window/no_such_cause", 0, false},
	} {
		if c, ok := (Interval{Kind: tt.kind}).WindowCause(); c != tt.want || ok != tt.ok {
			t.Errorf("WindowCause of %q = %v, %v; want %v, %v", tt.kind, c, ok, tt.want, tt.ok)
		}
	}
}
