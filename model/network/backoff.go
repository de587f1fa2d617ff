package network

import (
	"fmt"
	"time"

	"github.com/xdssim/xdssim/sim"
)

// BackoffSchedule says how a channel spaces its connect attempts. All
// schedules use the same delays (see [BackoffConfig.Delay]) and the same
// connect deadline; they differ in where the delay is measured from and in
// whether the first delay is jittered.
type BackoffSchedule uint8

const (
	// ScheduleGRPCGo is grpc-go's addrConn (clientconn.go
	// resetTransportAndUnlock): the delay is drawn when the attempt starts
	// and slept after the attempt fails, measured from the failure. The
	// first delay after a reset is exactly InitialBackoff, unjittered
	// (internal/backoff/backoff.go). It is the zero value.
	ScheduleGRPCGo BackoffSchedule = iota
	// ScheduleSpec is grpc doc/connection-backoff.md as written: the next
	// attempt starts delay after the previous attempt started, or at once
	// if that attempt ended later than that. The first delay is exactly
	// InitialBackoff.
	ScheduleSpec
	// ScheduleCore is C-core's subchannel: measured from the attempt start
	// like ScheduleSpec, but every delay is jittered, the first included
	// (src/core/util/backoff.cc BackOff::NextAttemptDelay).
	ScheduleCore
)

var scheduleNames = [...]string{"grpc-go", "spec", "grpc-core"}

// String names the schedule as a scenario spells it.
func (s BackoffSchedule) String() string {
	if int(s) < len(scheduleNames) {
		return scheduleNames[s]
	}
	return fmt.Sprintf("BackoffSchedule(%d)", s)
}

// BackoffConfig is a channel's connection backoff, with the parameters of
// grpc doc/connection-backoff.md. [DefaultBackoffConfig] returns the
// defaults every gRPC implementation ships.
type BackoffConfig struct {
	// InitialBackoff is the delay after the first failure (INITIAL_BACKOFF,
	// 1 s).
	InitialBackoff time.Duration
	// Multiplier scales the delay after each further failure (MULTIPLIER,
	// 1.6).
	Multiplier float64
	// Jitter randomises each delay by a uniform factor in
	// [1-Jitter, 1+Jitter] (JITTER, 0.2).
	Jitter float64
	// MaxBackoff caps the delay before jitter is applied, so a jittered
	// delay can reach MaxBackoff*(1+Jitter) (MAX_BACKOFF, 120 s).
	MaxBackoff time.Duration
	// MinConnectTimeout is the least time an attempt is given: its
	// deadline is its start plus max(MinConnectTimeout, delay)
	// (MIN_CONNECT_TIMEOUT, 20 s).
	MinConnectTimeout time.Duration
	// Schedule says where delays are measured from; the zero value is
	// grpc-go's.
	Schedule BackoffSchedule
}

// DefaultBackoffConfig returns the connection backoff of grpc
// doc/connection-backoff.md and grpc-go backoff.DefaultConfig: 1 s initial,
// multiplier 1.6, jitter 0.2, at most 120 s, min connect timeout 20 s, on
// grpc-go's schedule.
func DefaultBackoffConfig() BackoffConfig {
	return BackoffConfig{
		InitialBackoff:    time.Second,
		Multiplier:        1.6,
		Jitter:            0.2,
		MaxBackoff:        120 * time.Second,
		MinConnectTimeout: 20 * time.Second,
		Schedule:          ScheduleGRPCGo,
	}
}

// Validate reports the first parameter of b that is out of range.
func (b *BackoffConfig) Validate() error {
	switch {
	case b.InitialBackoff < 0:
		return fmt.Errorf("network: backoff: initial backoff must not be negative, got %v", b.InitialBackoff)
	case b.Multiplier < 1:
		return fmt.Errorf("network: backoff: multiplier must be >= 1, got %v", b.Multiplier)
	case !(b.Jitter >= 0 && b.Jitter <= 1):
		return fmt.Errorf("network: backoff: jitter must be in [0, 1], got %v", b.Jitter)
	case b.MaxBackoff < b.InitialBackoff:
		return fmt.Errorf("network: backoff: max backoff %v is below the initial backoff %v", b.MaxBackoff, b.InitialBackoff)
	case b.MinConnectTimeout <= 0:
		return fmt.Errorf("network: backoff: min connect timeout must be positive, got %v", b.MinConnectTimeout)
	case b.Schedule > ScheduleCore:
		return fmt.Errorf("network: backoff: unknown schedule %d", b.Schedule)
	}
	return nil
}

// Capped returns the unjittered delay after n consecutive failed attempts
// beyond the first: InitialBackoff multiplied by Multiplier n times, capped
// at MaxBackoff. It multiplies step by step, as grpc-go's
// internal/backoff Exponential.Backoff does, so the float rounding is the
// same.
func (b *BackoffConfig) Capped(n int) time.Duration {
	d, limit := float64(b.InitialBackoff), float64(b.MaxBackoff)
	for d < limit && n > 0 {
		d *= b.Multiplier
		n--
	}
	if d > limit {
		d = limit
	}
	return time.Duration(d)
}

// Delay returns the backoff for the attempt made after n consecutive
// failures, drawing its jitter from r when the schedule jitters it:
// Capped(n) jittered by r.Jitter(·, Jitter), except that n == 0 yields
// exactly InitialBackoff and draws nothing, unless the schedule is
// ScheduleCore.
//
// Reference: grpc doc/connection-backoff.md; grpc-go
// internal/backoff/backoff.go; C-core src/core/util/backoff.cc.
func (b *BackoffConfig) Delay(n int, r *sim.Rand) time.Duration {
	if n == 0 && b.Schedule != ScheduleCore {
		return b.InitialBackoff
	}
	return r.Jitter(b.Capped(n), b.Jitter)
}
