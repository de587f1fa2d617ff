package fleet

import (
	"fmt"
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/xdssim/xdssim/model/network"
	"github.com/xdssim/xdssim/model/xdsclient"
	"github.com/xdssim/xdssim/sim"
)

// withField returns p with one field overridden, as a scenario's
// profile_fields does.
func withField(t *testing.T, p xdsclient.Profile, name, value string) xdsclient.Profile {
	t.Helper()
	if err := p.Set(name, value); err != nil {
		t.Fatal(err)
	}
	return p
}

// stuckConnecting is a fleet of clients with only a primary, which is
// blackholed from 0 to 40 s; the clients start at 5 s, so their channel
// spends its first connect attempt, 20 s (min_connect_timeout), in
// CONNECTING, then backs off and tries again until the blackhole clears.
func stuckConnecting(p xdsclient.Profile) Config {
	cfg := xdsConfig(20, p)
	cfg.Duration = 90 * time.Second
	cfg.Groups[0].Servers = []int{0}
	cfg.Groups[0].StartAt, cfg.Groups[0].StartSpread = 5*time.Second, 0
	cfg.Faults = []network.Fault{{Kind: network.Blackhole, Start: 0, Duration: 40 * time.Second, Servers: []int{0}}}
	return cfg
}

// TestResourceTimerRaceWithAChannelStuckConnecting: a wait_for_ready ADS
// call exists, and has its request, from the moment the XdsClient asks
// for it, while the channel is CONNECTING. The pre-A57 timer starts when
// the request is handed to the call and fires at 15 s, before the 20 s
// connect attempt ends: a spurious does-not-exist, since the server holds
// the resource. The A57 timer starts only once the request is written on
// a READY channel and never fires. grpc-go's fail-fast NewStream blocks in
// the pick, so nothing is handed to a call before READY and the pre-A57
// timer makes no difference there.
func TestResourceTimerRaceWithAChannelStuckConnecting(t *testing.T) {
	tests := []struct {
		name    string
		profile xdsclient.Profile
		want    float64 // spurious timer firings: one per client, for its Listener
	}{
		{"grpc-core (A57)", xdsclient.GRPCCore(), 0},
		{"spec (A57)", xdsclient.Spec(), 0},
		{"grpc-core with pre_a57_timer", withField(t, xdsclient.GRPCCore(), "pre_a57_timer", "true"), 20},
		{"spec with pre_a57_timer", withField(t, xdsclient.Spec(), "pre_a57_timer", "true"), 20},
		{"grpc-go with pre_a57_timer", withField(t, xdsclient.GRPCGo(), "pre_a57_timer", "true"), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, stuckConnecting(tt.profile))
			if got := metric(t, r, "xds.resource_timer_fired"); got != tt.want {
				t.Errorf("timers fired = %v, want %v", got, tt.want)
			}
			if got := metric(t, r, "xds.resource_timer_spurious"); got != tt.want {
				t.Errorf("spurious timer firings = %v, want %v", got, tt.want)
			}
			// Whoever timed out gets the resource once connected.
			if got := value(t, r, "xds.config_complete", 80*time.Second); got != 20 {
				t.Errorf("config complete at 80s = %v, want 20", got)
			}
		})
	}
	// Reference: gRFC A57, Handling Resources That Do Not Exist ("the
	// default minimum connection attempt timeout is 20 seconds and the xDS
	// resource does-not-exist timeout is only 15 seconds"); C-core
	// xds_client.cc AdsCall (the call and its first send_message start at
	// once) and ResourceTimer::MaybeStartTimer (on OnRequestSent); grpc-go
	// picker_wrapper.go (NewStream blocks while CONNECTING).
}

// TestWaitForReadyCallHoldsItsRequestsUntilTheChannelIsReady: the
// requests handed to a wait_for_ready call while its pick is queued reach
// the server once, in order, after the channel connects, exactly as
// those of a call that starts on a READY channel: the server sees the
// same requests whether or not the client waited behind a blackhole.
func TestWaitForReadyCallHoldsItsRequestsUntilTheChannelIsReady(t *testing.T) {
	var first, opened time.Duration = -1, -1
	cfg := stuckConnecting(xdsclient.GRPCCore())
	cfg.Groups[0].Clients = 1
	r, err := Run(cfg, Options{Trace: func(e *TraceEvent) {
		switch {
		case e.Kind == TraceStreamOpen && opened < 0:
			opened = e.At
		case e.Kind == TraceRequest && first < 0:
			first = e.At
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if opened < 40*time.Second || first < opened {
		t.Errorf("stream reached the server at %v, first request at %v; want both after the blackhole (40s)", opened, first)
	}
	calm := stuckConnecting(xdsclient.GRPCCore())
	calm.Groups[0].Clients, calm.Faults = 1, nil
	want := run(t, calm)
	for _, m := range []string{"control_plane.primary.requests", "control_plane.primary.acks", "control_plane.primary.streams_opened"} {
		if got, w := metric(t, r, m), metric(t, want, m); got != w {
			t.Errorf("%s = %v, want %v as without the blackhole", m, got, w)
		}
	}
	// Reference: grpc doc/wait-for-ready.md; C-core xds_client.cc
	// AdsCall::AdsCall (SendMessageLocked before the call has a transport)
	// and OnRequestSent.
}

// resetFleet is a fleet of clients with everything cached from a primary
// that, from 30 s for 10 s, ends every ADS stream after responses
// responses, with a healthy fallback in their bootstrap.
func resetFleet(p xdsclient.Profile, responses int) Config {
	cfg := xdsConfig(10, p)
	cfg.Duration = time.Minute
	cfg.Faults = []network.Fault{{Kind: network.StreamResetAfterResponse, Start: sim.Time(30 * time.Second),
		Duration: 10 * time.Second, Servers: []int{0}, Responses: responses}}
	return cfg
}

// TestServerThatEndsStreamsAfterAResponseIsNotAFailure: every stream the
// fault ends had a response, so the XdsClient sees no connectivity error:
// no fallback, no stream counted as failed before a response, and the
// cached config keeps working. What differs is the restart delay: grpc-go
// restarts at once, hammering the server with a stream per round trip;
// grpc-java and C-core reset the backoff and wait about 1 s.
func TestServerThatEndsStreamsAfterAResponseIsNotAFailure(t *testing.T) {
	tests := []struct {
		name             string
		profile          xdsclient.Profile
		minOpen, maxOpen float64 // streams opened on the primary by 10 clients
	}{
		// 10 clients × 10 s / (one 10 ms round trip per stream).
		{"grpc-go restarts at once", xdsclient.GRPCGo(), 5000, 12000},
		// 10 clients × 10 s / ~1 s, plus the 10 first streams.
		{"grpc-java waits a jittered initial backoff", xdsclient.GRPCJava(), 80, 150},
		{"grpc-core waits a jittered initial backoff", xdsclient.GRPCCore(), 80, 150},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, resetFleet(tt.profile, 1))
			if got := metric(t, r, "control_plane.primary.streams_opened"); got < tt.minOpen || got > tt.maxOpen {
				t.Errorf("primary streams opened = %v, want %v to %v", got, tt.minOpen, tt.maxOpen)
			}
			for _, m := range []string{"xds.fallback_switches", "xds.streams_failed_before_response", "control_plane.fallback.streams_opened", "rpc.failed"} {
				if got := metric(t, r, m); got != 0 {
					t.Errorf("%s = %v, want 0", m, got)
				}
			}
			if got := value(t, r, "control_plane.primary.open_streams", 50*time.Second); got != 10 {
				t.Errorf("primary open streams after the fault = %v, want 10 (one per client, kept)", got)
			}
		})
	}
	// Reference: gRFC A57, Handling ADS Stream Termination ("we do not
	// consider it an error if the ADS stream was closed after having
	// received a response"); gRFC A88, Open issues ("we don't impose
	// exponential backoff between stream attempts, so we could DoS the
	// server"); grpc-go internal/xds/clients/internal/backoff RunF
	// (ErrResetBackoff restarts at once).
}

// TestStreamResetAfterResponseCountsResponsesPerStream: the server ends a
// stream after its Nth response. A client that starts during the fault
// subscribes to four resources (LDS, RDS, CDS, EDS): with N = 4 its
// stream ends after the fourth and the next stream gets four again, so it
// keeps restarting; with N = 5 it never sees a fifth, and its one stream
// lives. With N = 1 each new stream gets only the Listener again, so the
// client never gets its config until the fault ends, and never falls back
// (every stream had a response) though a healthy fallback holds it all.
func TestStreamResetAfterResponseCountsResponsesPerStream(t *testing.T) {
	tests := []struct {
		responses        int
		minOpen, maxOpen float64
		completeDuring   float64 // instances with their config at 35 s
	}{
		{1, 50, 200, 0},
		{4, 50, 200, 10},
		{5, 10, 10, 10},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("responses=%d", tt.responses), func(t *testing.T) {
			cfg := resetFleet(xdsclient.GRPCJava(), tt.responses)
			cfg.Groups[0].StartAt = 31 * time.Second
			r := run(t, cfg)
			if got := metric(t, r, "control_plane.primary.streams_opened"); got < tt.minOpen || got > tt.maxOpen {
				t.Errorf("primary streams opened = %v, want %v to %v", got, tt.minOpen, tt.maxOpen)
			}
			if got := value(t, r, "xds.config_complete", 39*time.Second); got != tt.completeDuring {
				t.Errorf("config complete at 39s = %v, want %v", got, tt.completeDuring)
			}
			if got := value(t, r, "xds.config_complete", 50*time.Second); got != 10 {
				t.Errorf("config complete after the fault = %v, want 10", got)
			}
			if got := metric(t, r, "xds.fallback_switches"); got != 0 {
				t.Errorf("fallback switches = %v, want 0", got)
			}
		})
	}
	// Reference: gRFC A88, Open issues ("the primary server can send an
	// initial response and then the stream can die, and if that happens
	// repeatedly over and over again, it will never cause us to trigger
	// fallback"); gRFC A71, Fallback.
}

// TestStreamResetAfterResponseEndsAnsweredStreamsAtItsStart: streams
// opened before the fault, which have had their responses, are ended at
// its start, not left alone until the next push; the connections stay
// READY throughout.
func TestStreamResetAfterResponseEndsAnsweredStreamsAtItsStart(t *testing.T) {
	cfg := resetFleet(xdsclient.GRPCJava(), 1)
	var ended int
	var at time.Duration
	r, err := Run(cfg, Options{Trace: func(e *TraceEvent) {
		if e.Kind == TraceStreamClose && ended == 0 {
			at = e.At
		}
		if e.Kind == TraceStreamClose {
			ended++
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if ended == 0 || at != 30*time.Second+5*time.Millisecond {
		t.Errorf("first stream closed at %v, want 30.005s (the status's one-way trip)", at)
	}
	for _, s := range []time.Duration{29 * time.Second, 35 * time.Second, 45 * time.Second} {
		if got := value(t, r, "xds.primary_ready", s); got != 10 {
			t.Errorf("primary channels READY at %v = %v, want 10", s, got)
		}
	}
	// Reference: gRFC A88, Open issues; network.StreamResetAfterResponse.
}

// TestASpareArrayHandedOutIsNotPinned checks that the spare list lets go
// of an array it hands out: a fifo that grows past the array drops it,
// and nothing else may keep it alive (a stale slot past the list's end
// once did, up to maxSpares arrays).
func TestASpareArrayHandedOutIsNotPinned(t *testing.T) {
	var sp spares[int]
	a := make([]int, 4)
	w := weak.Make(&a[0])
	sp.put(a)
	a = nil
	var q fifo[int]
	for i := range 5 { // the fifo takes the spare array, then outgrows it
		q.push(i, &sp)
	}
	runtime.GC()
	if w.Value() != nil {
		t.Error("the spare list keeps alive an array it handed out")
	}
	if q.len() != 5 || *q.front() != 0 {
		t.Errorf("the fifo holds %d items from %d, want 5 from 0", q.len(), *q.front())
	}
	runtime.KeepAlive(&sp)
}
