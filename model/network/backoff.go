package network

import (
	"fmt"
	"time"

	"github.com/xdssim/xdssim/sim"
)

// BackoffSchedule says how a channel spaces its connect attempts. All
// schedules use the same delays (see [BackoffConfig.Delay]); they differ in
// where the delay is measured from and in whether the first delay is
// jittered. What bounds an attempt is set apart, by
// [BackoffConfig.MinConnectTimeout] and [BackoffConfig.TCPConnectTimeout].
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
	// (src/core/client_channel/subchannel.cc StartConnectingLocked sets
	// next_attempt_time_ = now + backoff_.NextAttemptDelay();
	// src/core/util/backoff.cc BackOff::NextAttemptDelay jitters the
	// initial delay too).
	ScheduleCore
	// ScheduleJava is grpc-java's InternalSubchannel: the delay is
	// measured from the attempt start (scheduleBackoff waits
	// reconnectPolicy.nextBackoffNanos() − connectingTimer.elapsed()), and
	// every delay is jittered, the first included
	// (ExponentialBackoffPolicy.nextBackoffNanos). Its delays are
	// ScheduleCore's; the two differ in what bounds an attempt
	// ([JavaBackoffConfig]).
	ScheduleJava
)

var scheduleNames = [...]string{"grpc-go", "spec", "grpc-core", "grpc-java"}

// ParseBackoffSchedule returns the schedule a scenario names: grpc-go,
// spec, grpc-core or grpc-java.
func ParseBackoffSchedule(name string) (BackoffSchedule, bool) {
	for i, n := range scheduleNames {
		if n == name {
			return BackoffSchedule(i), true
		}
	}
	return 0, false
}

// measuredFromStart reports whether the schedule measures a delay from the
// start of the attempt that failed rather than from its failure.
func (s BackoffSchedule) measuredFromStart() bool { return s != ScheduleGRPCGo }

// jittersFirst reports whether the first delay after a reset is jittered.
func (s BackoffSchedule) jittersFirst() bool { return s == ScheduleCore || s == ScheduleJava }

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
	// MinConnectTimeout is the least time an attempt is given: the whole
	// attempt (TCP, the handshake and the server's HTTP/2 SETTINGS) must
	// end by its start plus max(MinConnectTimeout, delay)
	// (MIN_CONNECT_TIMEOUT, 20 s; grpc-go clientconn.go
	// resetTransportAndUnlock, C-core subchannel.cc
	// StartConnectingLocked). 0 means no such deadline: grpc-java has
	// none (no MIN_CONNECT_TIMEOUT anywhere in it; grpc-java#1943, "Implement
	// connection attempt exponential timeout", is open).
	MinConnectTimeout time.Duration
	// TCPConnectTimeout bounds the TCP connect alone, from the attempt's
	// start; the handshake that follows is not bounded by it. 0 means no
	// such bound. grpc-java's Netty transport sets no CONNECT_TIMEOUT_MILLIS
	// (NettyClientTransport.start), so Netty's default of 30 s applies
	// (DefaultChannelConfig); grpc-go and C-core bound the whole attempt
	// instead. With TLS, grpc-java's handshake is also bounded, by Netty
	// SslHandler's default handshakeTimeoutMillis (10 s, which grpc-java
	// does not change); the links modelled here are plaintext, so no such
	// bound applies.
	TCPConnectTimeout time.Duration
	// Schedule says where delays are measured from; the zero value is
	// grpc-go's.
	Schedule BackoffSchedule
}

// DefaultBackoffConfig returns the connection backoff of grpc
// doc/connection-backoff.md and grpc-go backoff.DefaultConfig: 1 s initial,
// multiplier 1.6, jitter 0.2, at most 120 s, min connect timeout 20 s, on
// grpc-go's schedule. It is [GRPCGoBackoffConfig].
func DefaultBackoffConfig() BackoffConfig { return GRPCGoBackoffConfig() }

// GRPCGoBackoffConfig is grpc-go's channel backoff: backoff.DefaultConfig
// (1 s, 1.6, 0.2, 120 s) and minConnectTimeout 20 s (dialoptions.go), on
// [ScheduleGRPCGo].
func GRPCGoBackoffConfig() BackoffConfig {
	return BackoffConfig{
		InitialBackoff:    time.Second,
		Multiplier:        1.6,
		Jitter:            0.2,
		MaxBackoff:        120 * time.Second,
		MinConnectTimeout: 20 * time.Second,
		Schedule:          ScheduleGRPCGo,
	}
}

// GRPCCoreBackoffConfig is C-core's subchannel backoff: 1 s, 1.6, 0.2,
// 120 s (subchannel.cc ParseArgsForBackoffValues: GRPC_ARG_INITIAL_/
// MAX_RECONNECT_BACKOFF_MS defaults, GRPC_SUBCHANNEL_RECONNECT_MULTIPLIER
// and _JITTER) and a min connect timeout of 20 s
// (GRPC_ARG_MIN_RECONNECT_BACKOFF_MS), on [ScheduleCore].
func GRPCCoreBackoffConfig() BackoffConfig {
	b := GRPCGoBackoffConfig()
	b.Schedule = ScheduleCore
	return b
}

// GRPCJavaBackoffConfig is grpc-java's subchannel backoff:
// ExponentialBackoffPolicy (1 s, 1.6, 0.2, 2 min) on [ScheduleJava],
// with no deadline over the attempt: only Netty's 30 s
// CONNECT_TIMEOUT_MILLIS bounds the TCP connect, and on a plaintext link
// nothing bounds the HTTP/2 handshake after it (see
// [BackoffConfig.MinConnectTimeout]; a TLS handshake would have Netty
// SslHandler's 10 s, see [BackoffConfig.TCPConnectTimeout]).
func GRPCJavaBackoffConfig() BackoffConfig {
	b := GRPCGoBackoffConfig()
	b.MinConnectTimeout = 0
	b.TCPConnectTimeout = 30 * time.Second
	b.Schedule = ScheduleJava
	return b
}

// SpecBackoffConfig is grpc doc/connection-backoff.md as written: the
// defaults of DefaultBackoffConfig on [ScheduleSpec].
func SpecBackoffConfig() BackoffConfig {
	b := GRPCGoBackoffConfig()
	b.Schedule = ScheduleSpec
	return b
}

// BackoffConfigOf returns the channel backoff of the gRPC implementation
// an XdsClient profile names: grpc-go, grpc-java, grpc-core or spec.
func BackoffConfigOf(impl string) (BackoffConfig, bool) {
	switch impl {
	case "grpc-go":
		return GRPCGoBackoffConfig(), true
	case "grpc-java":
		return GRPCJavaBackoffConfig(), true
	case "grpc-core":
		return GRPCCoreBackoffConfig(), true
	case "spec":
		return SpecBackoffConfig(), true
	}
	return BackoffConfig{}, false
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
	case b.MinConnectTimeout < 0 || b.TCPConnectTimeout < 0:
		return fmt.Errorf("network: backoff: connect timeouts must not be negative, got %v and %v", b.MinConnectTimeout, b.TCPConnectTimeout)
	case b.MinConnectTimeout == 0 && b.TCPConnectTimeout == 0:
		return fmt.Errorf("network: backoff: a min connect timeout or a TCP connect timeout must bound an attempt")
	case b.Schedule > ScheduleJava:
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
// ScheduleCore or ScheduleJava.
//
// Reference: grpc doc/connection-backoff.md; grpc-go
// internal/backoff/backoff.go; C-core src/core/util/backoff.cc;
// grpc-java ExponentialBackoffPolicy.nextBackoffNanos.
func (b *BackoffConfig) Delay(n int, r *sim.Rand) time.Duration {
	if n == 0 && !b.Schedule.jittersFirst() {
		return b.InitialBackoff
	}
	return r.Jitter(b.Capped(n), b.Jitter)
}

// NextAttempt returns when the attempt after a failed one starts, given
// when the failed attempt started and when it failed and its delay: delay
// after the failure on grpc-go's schedule, else delay after its start but
// no earlier than the failure (connection-backoff.md: SleepUntil a time
// already past returns at once).
func (b *BackoffConfig) NextAttempt(started, failed sim.Time, delay time.Duration) sim.Time {
	if !b.Schedule.measuredFromStart() {
		return failed.Add(delay)
	}
	return max(started.Add(delay), failed)
}

// Deadline returns the deadline of an attempt started at start with delay
// delay: start + max(MinConnectTimeout, delay), or [Never] when
// MinConnectTimeout is 0.
func (b *BackoffConfig) Deadline(start sim.Time, delay time.Duration) sim.Time {
	if b.MinConnectTimeout == 0 {
		return Never
	}
	return start.Add(max(b.MinConnectTimeout, delay))
}

// TCPDeadline returns when the TCP connect of an attempt started at start
// gives up: start + TCPConnectTimeout, or [Never] when it is 0.
func (b *BackoffConfig) TCPDeadline(start sim.Time) sim.Time {
	if b.TCPConnectTimeout == 0 {
		return Never
	}
	return start.Add(b.TCPConnectTimeout)
}
