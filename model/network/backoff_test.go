package network

import (
	"strings"
	"testing"
	"time"

	"github.com/xdssim/xdssim/sim"
)

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
	}{{ScheduleGRPCGo, false}, {ScheduleSpec, false}, {ScheduleCore, true}} {
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
	// returns BaseDelay; cap before jitter); C-core src/core/util/backoff.cc.
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
		{"zero min connect timeout", func(b *BackoffConfig) { b.MinConnectTimeout = 0 }, "min connect timeout must be positive"},
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
	// Reference: DESIGN.md, Style ("errors that read as sentences with context").
}
