package network

import (
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/xdssim/xdssim/sim"
	"google.golang.org/grpc/codes"
)

// The backoff draws of sim.NewStream(1, "client/0"), in order: draw i is
// Capped(i) = 1.6^i s (capped at 120 s) jittered by r.Jitter(·, 0.2).
// TestBackoffDrawsOfTheTimelineStream recomputes them from the stream.
//
//	draw 1: 1.6 s         -> 1.781681406 s
//	draw 2: 2.56 s        -> 2.974781381 s
//	draw 3: 4.096 s       -> 4.781014422 s
//	draw 4: 6.5536 s      -> 6.934530099 s
//	draw 5: 10.48576 s    -> 9.872959724 s
//	draw 6: 16.777216 s   -> 14.750754813 s
//	draw 7: 26.8435456 s  -> 25.061173042 s
//	draw 8: 42.94967296 s -> 39.404234203 s
var timelineDraws = []time.Duration{
	1_781_681_406, 2_974_781_381, 4_781_014_422, 6_934_530_099,
	9_872_959_724, 14_750_754_813, 25_061_173_042, 39_404_234_203,
}

func TestBackoffDrawsOfTheTimelineStream(t *testing.T) {
	cfg := DefaultBackoffConfig()
	r := sim.NewStream(1, "client/0")
	for i, want := range timelineDraws {
		n := i + 1
		if got := r.Jitter(cfg.Capped(n), cfg.Jitter); got != want {
			t.Errorf("draw %d: got %d ns, want %d ns", n, got, want)
		}
	}
	// Reference: grpc doc/connection-backoff.md; grpc-go internal/backoff/backoff.go.
}

// TestConnectTimelineServerDown checks, against hand-computed times, the
// attempts a channel makes to a server that is down from 0 to 60 s, refused
// (the process is down: RST after one round trip) and blackholed (packets
// dropped: each attempt hangs until its deadline), on each schedule.
//
// The link has a constant one-way latency of 50 ms: a refusal takes one
// 100 ms round trip, a connect two (200 ms). Backoff draws come from the
// stream in order (see timelineDraws); the attempt after n failures uses
// draw n, drawn when it starts; attempt 0 uses exactly 1 s (grpc-go,
// spec) or draws too (C-core, not tabled here).
//
// grpc-go, refused: attempt k+1 = failure of attempt k + its backoff.
//
//	a0 =  0            fail  0.1            (backoff 1 s exactly)
//	a1 =  1.1          fail  1.2            + draw1 1.781681406
//	a2 =  2.981681406  fail  3.081681406    + draw2 2.974781381
//	a3 =  6.056462787  fail  6.156462787    + draw3 4.781014422
//	a4 = 10.937477209  fail 11.037477209    + draw4 6.934530099
//	a5 = 17.972007308  fail 18.072007308    + draw5 9.872959724
//	a6 = 27.944967032  fail 28.044967032    + draw6 14.750754813
//	a7 = 42.795721845  fail 42.895721845    + draw7 25.061173042 (deadline 25.06 s after a7 > 20 s)
//	a8 = 67.956894887  up (>= 60 s): READY at 68.156894887
//
// grpc-go, blackholed: every attempt hangs to its deadline, start + 20 s;
// the SYN retransmissions at +1, +3, +7, +15 s all fall in the blackhole.
//
//	a0 =  0            timeout 20            + 1 s
//	a1 = 21            timeout 41            + draw1 1.781681406
//	a2 = 42.781681406  timeout 62.781681406  + draw2 2.974781381 (SYNs up to 57.78 s: all blackholed)
//	a3 = 65.756462787  up: READY at 65.956462787
//
// spec (connection-backoff.md), refused: attempt k+1 = start of attempt k
// + its backoff.
//
//	a0 =  0, a1 = 1, a2 = 2.781681406, a3 = 5.756462787, a4 = 10.537477209,
//	a5 = 17.472007308, a6 = 27.344967032, a7 = 42.095721845,
//	a8 = 42.095721845 + 25.061173042 = 67.156894887: READY at 67.356894887
//
// spec, blackholed: the deadline (20 s) is past the next attempt time, so
// the next attempt starts as soon as one times out.
//
//	a0 = 0, a1 = 20, a2 = 40, a3 = 60: up, READY at 60.2
//
// In every case the channel reports CONNECTING once, then
// TRANSIENT_FAILURE at the first failure, and stays there (sticky, gRFC
// A62) until READY.
func TestConnectTimelineServerDown(t *testing.T) {
	tests := []struct {
		name         string
		cfg          BackoffConfig
		kind         FaultKind
		wantAttempts []sim.Time
		wantStates   []stateChange
	}{
		{
			name: "grpc-go/refused", cfg: GRPCGoBackoffConfig(), kind: ServerDown,
			wantAttempts: []sim.Time{0, 1_100_000_000, 2_981_681_406, 6_056_462_787, 10_937_477_209,
				17_972_007_308, 27_944_967_032, 42_795_721_845, 67_956_894_887},
			wantStates: []stateChange{
				{0, Idle, Connecting},
				{100_000_000, Connecting, TransientFailure},
				{68_156_894_887, TransientFailure, Ready},
			},
		},
		{
			name: "grpc-go/blackholed", cfg: GRPCGoBackoffConfig(), kind: Blackhole,
			wantAttempts: []sim.Time{0, 21_000_000_000, 42_781_681_406, 65_756_462_787},
			wantStates: []stateChange{
				{0, Idle, Connecting},
				{20_000_000_000, Connecting, TransientFailure},
				{65_956_462_787, TransientFailure, Ready},
			},
		},
		{
			name: "spec/refused", cfg: SpecBackoffConfig(), kind: ServerDown,
			wantAttempts: []sim.Time{0, 1_000_000_000, 2_781_681_406, 5_756_462_787, 10_537_477_209,
				17_472_007_308, 27_344_967_032, 42_095_721_845, 67_156_894_887},
			wantStates: []stateChange{
				{0, Idle, Connecting},
				{100_000_000, Connecting, TransientFailure},
				{67_356_894_887, TransientFailure, Ready},
			},
		},
		{
			name: "spec/blackholed", cfg: SpecBackoffConfig(), kind: Blackhole,
			wantAttempts: []sim.Time{0, 20_000_000_000, 40_000_000_000, 60_000_000_000},
			wantStates: []stateChange{
				{0, Idle, Connecting},
				{20_000_000_000, Connecting, TransientFailure},
				{60_200_000_000, TransientFailure, Ready},
			},
		},
		{
			// grpc-java, refused: like C-core, every delay is jittered, the
			// first included, and measured from the attempt start, so
			// attempt k+1 starts at the sum of the first k+1 draws
			// Jitter(Capped(i)) of the stream: 1.113550879, 1.859238363,
			// 2.988134014, 4.334081312, 6.170599828, 9.219221758,
			// 15.663233151, 24.627646377 s.
			//
			//	a0 = 0, a1 = 1.113550879, a2 = 2.972789242, a3 = 5.960923256,
			//	a4 = 10.295004568, a5 = 16.465604396, a6 = 25.684826154,
			//	a7 = 41.348059305, a8 = 65.975705682: READY at 66.175705682
			name: "grpc-java/refused", cfg: GRPCJavaBackoffConfig(), kind: ServerDown,
			wantAttempts: []sim.Time{0, 1_113_550_879, 2_972_789_242, 5_960_923_256, 10_295_004_568,
				16_465_604_396, 25_684_826_154, 41_348_059_305, 65_975_705_682},
			wantStates: []stateChange{
				{0, Idle, Connecting},
				{100_000_000, Connecting, TransientFailure},
				{66_175_705_682, TransientFailure, Ready},
			},
		},
		{
			// grpc-java, blackholed: no MIN_CONNECT_TIMEOUT; Netty's 30 s
			// CONNECT_TIMEOUT_MILLIS ends each attempt whose SYNs (+1, +3,
			// +7, +15 s; the next at +31 s) all fall in the blackhole. The
			// next attempt starts at once: its time (start + ~1.1 s) has
			// passed.
			//
			//	a0 =  0  timeout 30;  a1 = 30  timeout 60;  a2 = 60  up: READY at 60.2
			name: "grpc-java/blackholed", cfg: GRPCJavaBackoffConfig(), kind: Blackhole,
			wantAttempts: []sim.Time{0, 30_000_000_000, 60_000_000_000},
			wantStates: []stateChange{
				{0, Idle, Connecting},
				{30_000_000_000, Connecting, TransientFailure},
				{60_200_000_000, TransientFailure, Ready},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			link := LinkConfig{Latency: sim.Constant(50 * time.Millisecond)}
			h := newHarness(t, cfg, link, []Fault{{Kind: tt.kind, Start: 0, Duration: 60 * time.Second}})
			h.run(sim.Time(10 * time.Minute))
			if !slices.Equal(h.attempts, tt.wantAttempts) {
				t.Errorf("attempt starts:\n got %v\nwant %v\nlog:\n%v", h.attempts, tt.wantAttempts, h.log)
			}
			if !slices.Equal(h.states, tt.wantStates) {
				t.Errorf("state changes:\n got %v\nwant %v", h.states, tt.wantStates)
			}
			if h.ch.State() != Ready || h.ch.Failures() != 0 {
				t.Errorf("end: state %v, failures %d; want READY, 0", h.ch.State(), h.ch.Failures())
			}
		})
	}
	// Reference: grpc doc/connection-backoff.md; grpc-go clientconn.go
	// resetTransportAndUnlock; grpc-go balancer/pickfirst/pickfirst.go (sticky TF, gRFC A62);
	// grpc-java InternalSubchannel.scheduleBackoff, NettyClientTransport.start.
}

// TestConnectTimelineCoreJittersTheFirstBackoff checks C-core's schedule:
// the first delay is jittered too, so attempt 1 starts at draw 0 rather
// than at 1 s.
func TestConnectTimelineCoreJittersTheFirstBackoff(t *testing.T) {
	cfg := DefaultBackoffConfig()
	cfg.Schedule = ScheduleCore
	link := LinkConfig{Latency: sim.Constant(50 * time.Millisecond)}
	h := newHarness(t, cfg, link, []Fault{{Kind: ServerDown, Duration: 3 * time.Second}})
	h.run(sim.Time(time.Minute))
	// Draws of sim.NewStream(1, "client/0") for C-core: Jitter(1 s) =
	// 1.113550879 s, Jitter(1.6 s) = 1.859238363 s, Jitter(2.56 s) = ...
	// a0 = 0, a1 = 1.113550879, a2 = 1.113550879 + 1.859238363 = 2.972789242,
	// a3 = a2 + 2.988134014 = 5.960923256 (after the outage): READY at 6.160923256.
	want := []sim.Time{0, 1_113_550_879, 2_972_789_242, 5_960_923_256}
	if !slices.Equal(h.attempts, want) {
		t.Errorf("attempt starts: got %v, want %v", h.attempts, want)
	}
	r := sim.NewStream(1, "client/0")
	for i, d := range []time.Duration{1_113_550_879, 1_859_238_363, 2_988_134_014} {
		if got := r.Jitter(cfg.Capped(i), 0.2); got != d {
			t.Errorf("draw %d: got %d, want %d", i, got, d)
		}
	}
	// Reference: C-core src/core/util/backoff.cc BackOff::NextAttemptDelay.
}

// TestConnectDeadlineIsMaxOfMinConnectTimeoutAndBackoff checks each
// attempt's deadline: start + max(MinConnectTimeout, backoff).
func TestConnectDeadlineIsMaxOfMinConnectTimeoutAndBackoff(t *testing.T) {
	cfg := DefaultBackoffConfig()
	r := sim.NewStream(1, "client/0")
	ch := NewChannel(&cfg, r)
	buf := ch.Connect(0, nil)
	now := sim.Time(0)
	ref := sim.NewStream(1, "client/0")
	for n := 0; n < 12; n++ {
		var e Effect
		for _, x := range buf {
			if x.Kind == StartConnectAttempt {
				e = x
			}
		}
		backoff := cfg.InitialBackoff
		if n > 0 {
			backoff = ref.Jitter(cfg.Capped(n), cfg.Jitter)
		}
		if want := now.Add(max(20*time.Second, backoff)); e.At != want {
			t.Fatalf("attempt after %d failures: deadline %v, want %v (backoff %v)", n, e.At, want, backoff)
		}
		now = e.At
		buf = ch.ConnectDeadline(now, e.Attempt, buf[:0])
		timer := buf[len(buf)-1]
		if timer.Kind != ArmTimer || timer.At != now.Add(backoff) {
			t.Fatalf("after %d failures: %v, want arm-timer at %v", n, timer, now.Add(backoff))
		}
		now = timer.At
		buf = ch.TimerFired(now, timer.Timer, buf[:0])
	}
	// Reference: grpc-go clientconn.go resetTransportAndUnlock ("Give dial more
	// time as we keep failing to connect"); grpc doc/connection-backoff.md.
}

// TestSuccessfulConnectResetsBackoff checks that the attempt after a READY
// transport closes starts over at the initial backoff.
func TestSuccessfulConnectResetsBackoff(t *testing.T) {
	cfg := DefaultBackoffConfig()
	ch := NewChannel(&cfg, sim.NewStream(1, "client/0"))
	var buf []Effect
	now := sim.Time(0)
	buf = ch.Connect(now, buf[:0])
	for range 3 { // three refusals
		now += sim.Time(100 * time.Millisecond)
		buf = ch.ConnectResult(now, ch.Attempt(), false, buf[:0])
		now = buf[len(buf)-1].At
		buf = ch.TimerFired(now, buf[len(buf)-1].Timer, buf[:0])
	}
	if ch.Failures() != 3 {
		t.Fatalf("failures = %d, want 3", ch.Failures())
	}
	now += sim.Time(200 * time.Millisecond)
	buf = ch.ConnectResult(now, ch.Attempt(), true, buf[:0])
	if ch.State() != Ready || ch.Failures() != 0 {
		t.Fatalf("after success: %v with %d failures, want READY with 0", ch.State(), ch.Failures())
	}
	now += sim.Time(time.Minute)
	buf = ch.ConnectionLost(now, buf[:0])
	_, buf = ch.Pick(now, false, buf[:0])
	start := buf[len(buf)-1]
	if start.Kind != StartConnectAttempt || start.At != now.Add(20*time.Second) {
		t.Fatalf("reconnect: %v, want start-connect-attempt with deadline now+20s", start)
	}
	buf = ch.ConnectResult(now+1, start.Attempt, false, buf[:0])
	if arm := buf[len(buf)-1]; arm.At != (now + 1).Add(time.Second) {
		t.Errorf("backoff after reset: timer at %v, want %v (exactly the initial 1 s)", arm.At, (now + 1).Add(time.Second))
	}
	// Reference: grpc-go clientconn.go resetTransportAndUnlock ("Success; reset
	// backoff"); grpc doc/connection-backoff.md (reset on SETTINGS).
}

// TestReadyTransportClosedGoesIdle checks what a channel does when its
// READY transport closes: IDLE, no attempt and no timer until a stream is
// picked, then CONNECTING (a fresh first pass, not sticky TF).
func TestReadyTransportClosedGoesIdle(t *testing.T) {
	cfg := DefaultBackoffConfig()
	ch := NewChannel(&cfg, sim.NewStream(1, "client/0"))
	buf := ch.Connect(0, nil)
	buf = ch.ConnectResult(10, ch.Attempt(), true, buf[:0])
	buf = ch.ConnectionLost(100, buf[:0])
	if want := []Effect{{Kind: StateChanged, From: Ready, To: Idle}}; !slices.Equal(buf, want) {
		t.Fatalf("ConnectionLost: %v, want %v", buf, want)
	}
	if ch.SubchannelState() != Idle {
		t.Errorf("subchannel %v, want IDLE", ch.SubchannelState())
	}
	buf = ch.ConnectionLost(101, buf[:0]) // not READY: nothing
	if len(buf) != 0 {
		t.Errorf("ConnectionLost while IDLE: %v, want nothing", buf)
	}
	p, buf := ch.Pick(200, false, buf[:0])
	if p.Result != PickQueue || len(buf) != 2 || buf[0] != (Effect{Kind: StateChanged, From: Idle, To: Connecting}) || buf[1].Kind != StartConnectAttempt {
		t.Errorf("pick on IDLE: %v %v, want queue, IDLE->CONNECTING and an attempt", p, buf)
	}
	// Reference: grpc-go clientconn.go createTransport onClose ("Always go idle and
	// wait for the LB policy to initiate a new connection attempt");
	// balancer/pickfirst/pickfirst.go idlePicker.
}

// TestPickFailFastVersusWaitForReady checks what a stream's pick does in
// each channel state, fail-fast (grpc-go's ADS stream) and wait_for_ready
// (C-core's).
func TestPickFailFastVersusWaitForReady(t *testing.T) {
	tests := []struct {
		name                string
		setup               func(ch *Channel) // from a new channel
		wantFailFast        PickResult
		wantWaitForReady    PickResult
		wantStatus          codes.Code
		wantConnectsOnPick  bool
		wantStateAfterSetup State
	}{
		{"idle", func(ch *Channel) {}, PickQueue, PickQueue, codes.OK, true, Idle},
		{"connecting", func(ch *Channel) { ch.Connect(0, nil) }, PickQueue, PickQueue, codes.OK, false, Connecting},
		{"ready", func(ch *Channel) {
			ch.Connect(0, nil)
			ch.ConnectResult(1, ch.Attempt(), true, nil)
		}, PickProceed, PickProceed, codes.OK, false, Ready},
		{"transient-failure", func(ch *Channel) {
			ch.Connect(0, nil)
			ch.ConnectResult(1, ch.Attempt(), false, nil)
		}, PickFail, PickQueue, codes.Unavailable, false, TransientFailure},
		{"sticky-transient-failure-while-reconnecting", func(ch *Channel) {
			ch.Connect(0, nil)
			b := ch.ConnectResult(1, ch.Attempt(), false, nil)
			ch.TimerFired(b[len(b)-1].At, b[len(b)-1].Timer, nil)
		}, PickFail, PickQueue, codes.Unavailable, false, TransientFailure},
		{"shutdown", func(ch *Channel) { ch.Shutdown(0, nil) }, PickFail, PickFail, codes.Canceled, false, Shutdown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, wfr := range []bool{false, true} {
				cfg := DefaultBackoffConfig()
				ch := NewChannel(&cfg, sim.NewStream(1, "client/0"))
				tt.setup(&ch)
				if ch.State() != tt.wantStateAfterSetup {
					t.Fatalf("setup left %v, want %v", ch.State(), tt.wantStateAfterSetup)
				}
				want := tt.wantFailFast
				if wfr {
					want = tt.wantWaitForReady
				}
				p, eff := ch.Pick(sim.Time(10*time.Second), wfr, nil)
				if p.Result != want {
					t.Errorf("waitForReady=%v: %v, want %v", wfr, p.Result, want)
				}
				if p.Result == PickFail && p.Status.Code != tt.wantStatus {
					t.Errorf("waitForReady=%v: status %v, want code %v", wfr, p.Status, tt.wantStatus)
				}
				if connected := len(eff) > 0; connected != tt.wantConnectsOnPick {
					t.Errorf("waitForReady=%v: effects %v; want a connect: %v", wfr, eff, tt.wantConnectsOnPick)
				}
			}
		})
	}
	// Reference: grpc-go picker_wrapper.go pick (fail-fast fails with UNAVAILABLE on a
	// picker error, ErrNoSubConnAvailable blocks); balancer/pickfirst/pickfirst.go;
	// grpc doc/wait-for-ready.md; grpc-go internal/xds/clients/grpctransport
	// grpc_transport.go NewStream (the ADS stream is fail-fast).
}

// TestTransientFailureStatusNamesTheCause checks that a fail-fast pick
// fails with the status of the last attempt's failure.
func TestTransientFailureStatusNamesTheCause(t *testing.T) {
	cfg := DefaultBackoffConfig()
	ch := NewChannel(&cfg, sim.NewStream(1, "client/0"))
	b := ch.Connect(0, nil)
	ch.ConnectDeadline(b[1].At, b[1].Attempt, nil)
	if p, _ := ch.Pick(b[1].At, false, nil); p.Status != StatusConnectTimeout {
		t.Errorf("after a timeout: %v, want %v", p.Status, StatusConnectTimeout)
	}
	// Reference: grpc-go picker_wrapper.go (the picker's error is the last connection error).
}

// TestStaleInputsAreIgnored checks that results of earlier attempts and
// firings of earlier timers change nothing.
func TestStaleInputsAreIgnored(t *testing.T) {
	cfg := DefaultBackoffConfig()
	ch := NewChannel(&cfg, sim.NewStream(1, "client/0"))
	b := ch.Connect(0, nil)
	first := b[1].Attempt
	b = ch.ConnectResult(100, first, false, nil)
	timer := b[len(b)-1]
	b = ch.TimerFired(timer.At, timer.Timer, nil)
	if len(b) != 1 || b[0].Kind != StartConnectAttempt {
		t.Fatalf("timer: %v", b)
	}
	before := ch
	for _, in := range []func() []Effect{
		func() []Effect { return ch.ConnectResult(timer.At+1, first, true, nil) },    // earlier attempt
		func() []Effect { return ch.TimerFired(timer.At+2, timer.Timer, nil) },       // fired already
		func() []Effect { return ch.TimerFired(timer.At+3, timer.Timer+1, nil) },     // never armed
		func() []Effect { return ch.Connect(timer.At+4, nil) },                       // not IDLE
		func() []Effect { return ch.ConnectResult(timer.At+5, first+7, false, nil) }, // unknown
	} {
		if got := in(); len(got) != 0 || ch != before {
			t.Errorf("stale input changed the channel: effects %v", got)
		}
	}
	// Reference: raft-style machines drop stale messages (go.etcd.io/raft); grpc-go
	// clientconn.go ignores connect() on a non-IDLE addrConn.
}

// TestShutdownCancelsTheBackoffTimer checks Shutdown in backoff: the timer
// is cancelled, SHUTDOWN is reported, and later inputs do nothing.
func TestShutdownCancelsTheBackoffTimer(t *testing.T) {
	cfg := DefaultBackoffConfig()
	ch := NewChannel(&cfg, sim.NewStream(1, "client/0"))
	ch.Connect(0, nil)
	b := ch.ConnectResult(100, ch.Attempt(), false, nil)
	timer := b[len(b)-1]
	b = ch.Shutdown(200, nil)
	want := []Effect{{Kind: CancelTimer, Timer: timer.Timer}, {Kind: StateChanged, From: TransientFailure, To: Shutdown}}
	if !slices.Equal(b, want) {
		t.Errorf("Shutdown: %v, want %v", b, want)
	}
	if b = ch.TimerFired(timer.At, timer.Timer, nil); len(b) != 0 {
		t.Errorf("timer after shutdown: %v", b)
	}
	if b = ch.Connect(timer.At, nil); len(b) != 0 {
		t.Errorf("connect after shutdown: %v", b)
	}
	// Reference: grpc-go clientconn.go resetTransportAndUnlock (returns when the
	// addrConn's context is cancelled during backoff).
}

// TestChannelIsSmall checks the per-channel footprint: a fleet keeps one
// per client per server.
func TestChannelIsSmall(t *testing.T) {
	if n := unsafe.Sizeof(Channel{}); n > 48 {
		t.Errorf("Channel is %d bytes, want <= 48", n)
	}
	if n := unsafe.Sizeof(Stream{}); n > 40 {
		t.Errorf("Stream is %d bytes, want <= 40", n)
	}
	// Reference: docs/architecture.md, Performance rules ("Per-client state is compact").
}
