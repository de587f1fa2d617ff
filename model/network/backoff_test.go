package network

import (
	"strings"
	"testing"
	"time"

	"github.com/xdssim/xdssim/sim"
)

// TestBackoffConfigPerImplementation checks each implementation's channel
// backoff: the same delays everywhere, but where a delay is measured from,
// whether the first is jittered and what bounds an attempt differ.
func TestBackoffConfigPerImplementation(t *testing.T) {
	base := BackoffConfig{InitialBackoff: time.Second, Multiplier: 1.6, Jitter: 0.2, MaxBackoff: 120 * time.Second}
	with := func(min, tcp time.Duration, s BackoffSchedule) BackoffConfig {
		b := base
		b.MinConnectTimeout, b.TCPConnectTimeout, b.Schedule = min, tcp, s
		return b
	}
	for _, tt := range []struct {
		impl string
		want BackoffConfig
	}{
		// grpc-go clientconn.go resetTransportAndUnlock, dialoptions.go minConnectTimeout.
		{"grpc-go", with(20*time.Second, 0, ScheduleGRPCGo)},
		// grpc-java InternalSubchannel, ExponentialBackoffPolicy; Netty CONNECT_TIMEOUT_MILLIS.
		{"grpc-java", with(0, 30*time.Second, ScheduleJava)},
		// C-core subchannel.cc StartConnectingLocked, backoff.cc.
		{"grpc-core", with(20*time.Second, 0, ScheduleCore)},
		// grpc doc/connection-backoff.md.
		{"spec", with(20*time.Second, 0, ScheduleSpec)},
	} {
		got, ok := BackoffConfigOf(tt.impl)
		if !ok || got != tt.want {
			t.Errorf("BackoffConfigOf(%q) = %+v, %v; want %+v", tt.impl, got, ok, tt.want)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("%s: %v", tt.impl, err)
		}
		if s, ok := ParseBackoffSchedule(got.Schedule.String()); !ok || s != got.Schedule {
			t.Errorf("%s: schedule %v does not parse back", tt.impl, got.Schedule)
		}
	}
	if _, ok := BackoffConfigOf("grpc-rust"); ok {
		t.Error("BackoffConfigOf(grpc-rust) succeeded")
	}
	// Reference: grpc doc/connection-backoff.md; the files above.
}

// TestNextAttemptIsMeasuredFromTheFailureOrTheStart checks where each
// schedule measures the delay from.
func TestNextAttemptIsMeasuredFromTheFailureOrTheStart(t *testing.T) {
	const s = sim.Time(time.Second)
	for _, tt := range []struct {
		schedule        BackoffSchedule
		started, failed sim.Time
		delay           time.Duration
		want            sim.Time
	}{
		{ScheduleGRPCGo, 0, s / 10, time.Second, s + s/10}, // after the failure
		{ScheduleSpec, 0, s / 10, time.Second, s},          // after the start
		{ScheduleCore, 0, s / 10, time.Second, s},          // after the start
		{ScheduleJava, 0, s / 10, time.Second, s},          // after the start
		{ScheduleJava, 0, 30 * s, time.Second, 30 * s},     // the start's time has passed: at once
		{ScheduleGRPCGo, 0, 20 * s, time.Second, 21 * s},   // grpc-go waits even after a timeout
	} {
		b := DefaultBackoffConfig()
		b.Schedule = tt.schedule
		if got := b.NextAttempt(tt.started, tt.failed, tt.delay); got != tt.want {
			t.Errorf("%v: NextAttempt(%v, %v, %v) = %v, want %v", tt.schedule, tt.started, tt.failed, tt.delay, got, tt.want)
		}
	}
	// Reference: grpc-go clientconn.go resetTransportAndUnlock (sleeps backoffFor after
	// the failure); grpc doc/connection-backoff.md (SleepUntil(current_deadline));
	// C-core subchannel.cc next_attempt_time_; grpc-java InternalSubchannel.scheduleBackoff.
}

// TestAttemptDeadlines checks what bounds an attempt: the whole attempt
// (grpc-go, C-core, spec) or only its TCP connect (grpc-java).
func TestAttemptDeadlines(t *testing.T) {
	const s = sim.Time(time.Second)
	goCfg, java := GRPCGoBackoffConfig(), GRPCJavaBackoffConfig()
	for _, tt := range []struct {
		name      string
		got, want sim.Time
	}{
		{"grpc-go: min connect timeout", goCfg.Deadline(5*s, time.Second), 25 * s},
		{"grpc-go: a long backoff", goCfg.Deadline(5*s, 40*time.Second), 45 * s},
		{"grpc-go: no TCP bound", goCfg.TCPDeadline(5 * s), Never},
		{"grpc-java: no deadline", java.Deadline(5*s, 40*time.Second), Never},
		{"grpc-java: Netty's 30 s", java.TCPDeadline(5 * s), 35 * s},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	// Reference: grpc-go clientconn.go ("Give dial more time as we keep failing to
	// connect"); grpc-java NettyClientTransport.start (no CONNECT_TIMEOUT_MILLIS set:
	// Netty DefaultChannelConfig's 30 s); grpc-java#1943.
}

// TestBackoffDefaultsAreTheSpecs checks the defaults against grpc
// doc/connection-backoff.md.
func TestBackoffDefaultsAreTheSpecs(t *testing.T) {
	got := DefaultBackoffConfig()
	want := BackoffConfig{
		InitialBackoff:    time.Second,
		Multiplier:        1.6,
		Jitter:            0.2,
		MaxBackoff:        120 * time.Second,
		MinConnectTimeout: 20 * time.Second,
		Schedule:          ScheduleGRPCGo,
	}
	if got != want {
		t.Errorf("DefaultBackoffConfig() = %+v, want %+v", got, want)
	}
	if err := got.Validate(); err != nil {
		t.Error(err)
	}
	// Reference: grpc doc/connection-backoff.md; grpc-go backoff/backoff.go DefaultConfig.
}

// TestBackoffDelayGrowsAndCaps checks the unjittered delays 1.6^n s up to
// 120 s, the jitter bounds, and that the first delay is exact and draws
// nothing except on C-core's schedule.
func TestBackoffDelayGrowsAndCaps(t *testing.T) {
	cfg := DefaultBackoffConfig()
	for _, tt := range []struct {
		n    int
		want time.Duration
	}{
		{0, time.Second},
		{1, 1600 * time.Millisecond},
		{2, 2560 * time.Millisecond},
		{3, 4096 * time.Millisecond},
		{10, 109_951_162_777}, // 1.6^10 s
		{11, 120 * time.Second},
		{1000, 120 * time.Second},
	} {
		if got := cfg.Capped(tt.n); got != tt.want {
			t.Errorf("Capped(%d) = %v, want %v", tt.n, got, tt.want)
		}
	}

	r := sim.NewStream(7, "jitter")
	lo, hi := time.Duration(1<<62), time.Duration(0)
	for range 10_000 {
		d := cfg.Delay(20, r)
		lo, hi = min(lo, d), max(hi, d)
	}
	if lo < 96*time.Second || hi > 144*time.Second || hi < 143*time.Second || lo > 97*time.Second {
		t.Errorf("Delay(20) spans [%v, %v], want about [96s, 144s]: jitter after the cap", lo, hi)
	}

	for _, tt := range []struct {
		schedule  BackoffSchedule
		wantDraws bool
	}{{ScheduleGRPCGo, false}, {ScheduleSpec, false}, {ScheduleCore, true}, {ScheduleJava, true}} {
		cfg.Schedule = tt.schedule
		a, b := sim.NewStream(1, "x"), sim.NewStream(1, "x")
		d := cfg.Delay(0, a)
		drew := a.Uint64() != b.Uint64()
		if drew != tt.wantDraws {
			t.Errorf("%v: Delay(0) drew: %v, want %v", tt.schedule, drew, tt.wantDraws)
		}
		if !tt.wantDraws && d != time.Second {
			t.Errorf("%v: Delay(0) = %v, want exactly 1s", tt.schedule, d)
		}
	}
	// Reference: grpc-go internal/backoff/backoff.go Exponential.Backoff (retries == 0
	// returns BaseDelay; cap before jitter); C-core src/core/util/backoff.cc;
	// grpc-java ExponentialBackoffPolicy.nextBackoffNanos (jitters the first delay).
}

// TestBackoffConfigValidateNamesTheBadValue checks the errors of Validate.
func TestBackoffConfigValidateNamesTheBadValue(t *testing.T) {
	for _, tt := range []struct {
		name   string
		modify func(*BackoffConfig)
		want   string
	}{
		{"negative initial", func(b *BackoffConfig) { b.InitialBackoff = -1 }, "initial backoff must not be negative"},
		{"multiplier below 1", func(b *BackoffConfig) { b.Multiplier = 0.5 }, "multiplier must be >= 1, got 0.5"},
		{"jitter above 1", func(b *BackoffConfig) { b.Jitter = 1.5 }, "jitter must be in [0, 1], got 1.5"},
		{"max below initial", func(b *BackoffConfig) { b.MaxBackoff = time.Millisecond }, "max backoff 1ms is below the initial backoff 1s"},
		{"no bound on an attempt", func(b *BackoffConfig) { b.MinConnectTimeout = 0 }, "a min connect timeout or a TCP connect timeout must bound an attempt"},
		{"negative TCP connect timeout", func(b *BackoffConfig) { b.TCPConnectTimeout = -1 }, "connect timeouts must not be negative"},
		{"unknown schedule", func(b *BackoffConfig) { b.Schedule = 9 }, "unknown schedule 9"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := DefaultBackoffConfig()
			tt.modify(&b)
			err := b.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	// Reference: docs/architecture.md, Style ("errors that read as sentences with context").
}
