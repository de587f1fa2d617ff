package network

import (
	"fmt"
	"time"

	"github.com/xdssim/xdssim/sim"
)

// State is a gRPC connectivity state (grpc doc/connectivity-semantics-and-api.md).
type State uint8

// Connectivity states. The zero State is IDLE, where every channel starts.
const (
	Idle State = iota
	Connecting
	Ready
	TransientFailure
	Shutdown
)

var stateNames = [...]string{"IDLE", "CONNECTING", "READY", "TRANSIENT_FAILURE", "SHUTDOWN"}

// String returns the state's name as gRPC spells it, such as
// "TRANSIENT_FAILURE".
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", s)
}

// TimerID names one arming of a channel's backoff timer. A firing whose
// TimerID is not the live one is stale and ignored.
type TimerID uint32

// EffectKind says what an [Effect] asks the caller to do.
type EffectKind uint8

const (
	// StartConnectAttempt: start connect attempt Effect.Attempt now; it
	// must end by Effect.At, its deadline, and its TCP connect by
	// Effect.TCPAt (either may be [Never]). Answer with
	// [Channel.ConnectResult] when it succeeds or is refused in time, else
	// with [Channel.ConnectDeadline] when a deadline passes
	// ([ResolveAttempt] says which, and when).
	StartConnectAttempt EffectKind = iota
	// ArmTimer: call [Channel.TimerFired] with Effect.Timer at Effect.At.
	ArmTimer
	// CancelTimer: the firing of Effect.Timer is no longer wanted. Acting
	// on it is optional: TimerFired ignores stale timers.
	CancelTimer
	// StateChanged: the channel's connectivity state went from Effect.From
	// to Effect.To. Re-pick the streams queued on the channel
	// ([Channel.Pick]); tell the XdsClient if it watches connectivity.
	StateChanged
)

var effectNames = [...]string{"start-connect-attempt", "arm-timer", "cancel-timer", "state-changed"}

// String names the kind.
func (k EffectKind) String() string {
	if int(k) < len(effectNames) {
		return effectNames[k]
	}
	return fmt.Sprintf("EffectKind(%d)", k)
}

// Effect is one thing a [Channel] wants done. Only the fields of its Kind
// are set. It is a small value with no pointers.
type Effect struct {
	Kind EffectKind
	// From and To are the states of a StateChanged.
	From, To State
	// Attempt numbers a StartConnectAttempt; its answer carries it back.
	Attempt uint32
	// Timer is the timer of an ArmTimer or CancelTimer.
	Timer TimerID
	// At is the deadline of a StartConnectAttempt or the firing time of an
	// ArmTimer.
	At sim.Time
	// TCPAt is when a StartConnectAttempt's TCP connect gives up.
	TCPAt sim.Time
}

// String formats the effect for logs and test failures, such as
// "state-changed IDLE->CONNECTING".
func (e Effect) String() string {
	switch e.Kind {
	case StartConnectAttempt:
		if e.TCPAt != Never {
			return fmt.Sprintf("%v #%d deadline=%v tcp-deadline=%v", e.Kind, e.Attempt, e.At, e.TCPAt)
		}
		return fmt.Sprintf("%v #%d deadline=%v", e.Kind, e.Attempt, e.At)
	case ArmTimer:
		return fmt.Sprintf("%v #%d at=%v", e.Kind, e.Timer, e.At)
	case CancelTimer:
		return fmt.Sprintf("%v #%d", e.Kind, e.Timer)
	case StateChanged:
		return fmt.Sprintf("%v %v->%v", e.Kind, e.From, e.To)
	}
	return e.Kind.String()
}

// PickResult says what becomes of a stream started on a channel.
type PickResult uint8

const (
	// PickProceed: the channel is READY; the stream starts now.
	PickProceed PickResult = iota
	// PickQueue: the stream waits; pick again when the channel's state
	// changes.
	PickQueue
	// PickFail: the stream fails at once with [Pick.Status].
	PickFail
)

var pickNames = [...]string{"proceed", "queue", "fail"}

// String names the result.
func (p PickResult) String() string {
	if int(p) < len(pickNames) {
		return pickNames[p]
	}
	return fmt.Sprintf("PickResult(%d)", p)
}

// Pick is the outcome of [Channel.Pick].
type Pick struct {
	Result PickResult
	// Status is the stream's failure when Result is PickFail.
	Status Status
}

// connErr is why the channel's last connect attempt failed.
type connErr uint8

const (
	errNone connErr = iota
	errRefused
	errDeadline
)

// Channel is a gRPC channel to one xDS server: the pick_first policy over
// a single address, its one subchannel, and the subchannel's connection
// backoff. It is a pure state machine, moved only by its methods, which
// append the effects ([Effect]) the caller must carry out to dst and return
// the extended slice (as strconv.AppendInt does); with a dst of enough
// capacity nothing allocates. It reads no clock: every input carries the
// virtual time now.
//
// What it models, and from where:
//
//   - Connecting (grpc-go clientconn.go resetTransportAndUnlock): an
//     attempt started after n consecutive failures has the backoff
//     d = [BackoffConfig.Delay](n) and the deadline start +
//     max(MinConnectTimeout, d) ([BackoffConfig.Deadline]; grpc-java has
//     none, only a TCP connect timeout, [BackoffConfig.TCPDeadline]). On
//     failure the subchannel enters TRANSIENT_FAILURE and waits d,
//     measured from the failure (ScheduleGRPCGo) or from the attempt
//     start (ScheduleSpec, ScheduleCore, ScheduleJava:
//     [BackoffConfig.NextAttempt]); then it goes IDLE and pick_first
//     connects it again at once. A successful connect resets n to 0.
//   - The channel's state is pick_first's (grpc-go
//     balancer/pickfirst/pickfirst.go, gRFC A62): CONNECTING during the
//     first pass, then TRANSIENT_FAILURE once the one address has failed,
//     and it stays TRANSIENT_FAILURE ("sticky") while the subchannel backs
//     off and reconnects, until an attempt succeeds (READY). The
//     subchannel's own state is [Channel.SubchannelState].
//   - A READY transport that closes (server restart, GOAWAY, keepalive
//     timeout) takes the subchannel and the channel to IDLE, with no
//     backoff and no new attempt: pick_first's idle picker connects on the
//     next pick (grpc-go clientconn.go createTransport onClose "Always go
//     idle"; pickfirst.go idlePicker). An xDS channel reconnects when its
//     XdsClient restarts the ADS stream that failed with the transport (in
//     grpc-go at once if that stream had a response, else after the
//     stream's own backoff): the new stream's pick calls [Channel.Pick],
//     which leaves IDLE. Streams queued on the channel, re-picked on the
//     StateChanged to IDLE, do the same.
//
// The zero Channel is not usable; make one with [NewChannel]. A Channel is
// 48 bytes.
type Channel struct {
	cfg *BackoffConfig
	rng *sim.Rand
	// start is when the current or last attempt started.
	start sim.Time
	// backoff is the delay drawn when the current or last attempt started.
	backoff time.Duration
	// failures counts consecutive failed attempts since the last success.
	failures uint32
	// attempt numbers the current or last attempt.
	attempt uint32
	// timer is the live or last arming of the backoff timer.
	timer   TimerID
	state   State // the channel's, as pick_first reports it
	sub     State // the subchannel's
	lastErr connErr
}

// NewChannel returns an IDLE channel whose connection backoff follows cfg
// and draws its jitter from r, the stream of the client that owns the
// channel. The channel keeps both pointers: cfg must not change while the
// channel is in use; it is typically shared by a whole client group.
func NewChannel(cfg *BackoffConfig, r *sim.Rand) Channel {
	if cfg == nil || r == nil {
		panic("network: NewChannel: nil BackoffConfig or Rand")
	}
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	return Channel{cfg: cfg, rng: r}
}

// State returns the channel's connectivity state, the one gRPC reports to
// the application and its picker acts on.
func (c *Channel) State() State { return c.state }

// SubchannelState returns the state of the channel's subchannel, which
// differs from [Channel.State] while the channel is in sticky
// TRANSIENT_FAILURE: the subchannel is then TRANSIENT_FAILURE while it
// backs off and CONNECTING during an attempt.
func (c *Channel) SubchannelState() State { return c.sub }

// Failures returns the number of consecutive failed connect attempts since
// the last successful one: the backoff index.
func (c *Channel) Failures() int { return int(c.failures) }

// Attempt returns the number of the current or last connect attempt; 0
// before the first.
func (c *Channel) Attempt() uint32 { return c.attempt }

// Deadline returns the deadline of the current or last connect attempt
// ([BackoffConfig.Deadline]); [Never] if nothing bounds the whole attempt.
func (c *Channel) Deadline() sim.Time { return c.cfg.Deadline(c.start, c.backoff) }

// TCPDeadline returns when the TCP connect of the current or last attempt
// gives up ([BackoffConfig.TCPDeadline]); [Never] if nothing bounds it.
func (c *Channel) TCPDeadline() sim.Time { return c.cfg.TCPDeadline(c.start) }

// LastError returns the status a fail-fast pick fails with while the
// channel is in TRANSIENT_FAILURE: why the last attempt failed.
func (c *Channel) LastError() Status {
	if c.lastErr == errDeadline {
		return StatusConnectTimeout
	}
	return StatusRefused
}

// Connect leaves IDLE: the subchannel starts a connect attempt and the
// channel reports CONNECTING. In any other state it does nothing, as
// grpc-go's addrConn.connect does.
func (c *Channel) Connect(now sim.Time, dst []Effect) []Effect {
	if c.state != Idle {
		return dst
	}
	dst = c.setState(dst, Connecting)
	return c.startAttempt(now, dst)
}

// Pick decides what becomes of a stream started on the channel now, as
// grpc-go's picker_wrapper does with pick_first's pickers:
//
//   - READY: proceed.
//   - IDLE: queue, and leave IDLE (the idle picker's ExitIdle).
//   - CONNECTING: queue, fail-fast or not (ErrNoSubConnAvailable blocks).
//   - TRANSIENT_FAILURE: a fail-fast stream fails with UNAVAILABLE and the
//     last connection error; a wait_for_ready stream queues.
//   - SHUTDOWN: fail with CANCELED.
//
// A queued stream is picked again after the next StateChanged.
//
// Reference: grpc-go picker_wrapper.go pick; balancer/pickfirst/pickfirst.go;
// grpc doc/wait-for-ready.md.
func (c *Channel) Pick(now sim.Time, waitForReady bool, dst []Effect) (Pick, []Effect) {
	switch c.state {
	case Ready:
		return Pick{Result: PickProceed}, dst
	case Idle:
		return Pick{Result: PickQueue}, c.Connect(now, dst)
	case TransientFailure:
		if !waitForReady {
			return Pick{Result: PickFail, Status: c.LastError()}, dst
		}
	case Shutdown:
		return Pick{Result: PickFail, Status: StatusChannelClosed}, dst
	}
	return Pick{Result: PickQueue}, dst
}

// ConnectResult ends connect attempt attempt before its deadline: ok if the
// transport is up (the server's HTTP/2 SETTINGS arrived), else refused. A
// result for any attempt but the one in progress is stale and ignored.
// A successful result at or after the deadline panics: the caller should
// have called [Channel.ConnectDeadline].
func (c *Channel) ConnectResult(now sim.Time, attempt uint32, ok bool, dst []Effect) []Effect {
	if !c.attemptLive(attempt) {
		return dst
	}
	if ok {
		if now >= c.Deadline() {
			panic(fmt.Sprintf("network: Channel.ConnectResult: attempt %d succeeded at %v, not before its deadline %v",
				attempt, now, c.Deadline()))
		}
		// Success resets the backoff (clientconn.go: backoffIdx = 0;
		// connection-backoff.md: reset when SETTINGS arrives).
		c.failures = 0
		c.lastErr = errNone
		c.sub = Ready
		return c.setState(dst, Ready)
	}
	c.lastErr = errRefused
	return c.fail(now, dst)
}

// ConnectDeadline ends connect attempt attempt at its deadline, or at its
// TCP deadline while the TCP connect was still pending: the attempt
// failed. A deadline for any attempt but the one in progress is stale and
// ignored; one that comes before both deadlines panics.
func (c *Channel) ConnectDeadline(now sim.Time, attempt uint32, dst []Effect) []Effect {
	if !c.attemptLive(attempt) {
		return dst
	}
	if first := min(c.Deadline(), c.TCPDeadline()); now < first {
		panic(fmt.Sprintf("network: Channel.ConnectDeadline: attempt %d timed out at %v, before its deadline %v",
			attempt, now, first))
	}
	c.lastErr = errDeadline
	return c.fail(now, dst)
}

// TimerFired reports that backoff timer id fired: the subchannel leaves
// TRANSIENT_FAILURE for IDLE and pick_first connects it again at once,
// while the channel stays TRANSIENT_FAILURE. A stale id is ignored.
func (c *Channel) TimerFired(now sim.Time, id TimerID, dst []Effect) []Effect {
	if c.state == Shutdown || c.sub != TransientFailure || id != c.timer {
		return dst
	}
	c.failures++
	return c.startAttempt(now, dst)
}

// ConnectionLost reports that the READY transport closed (the server died,
// restarted, sent GOAWAY, or keepalive gave up): the channel goes IDLE and
// makes no attempt until the next [Channel.Connect] or [Channel.Pick]. The
// caller fails or drains the streams that were on the transport. In any
// other state it does nothing.
//
// Reference: grpc-go clientconn.go createTransport onClose;
// balancer/pickfirst/pickfirst.go updateSubConnState.
func (c *Channel) ConnectionLost(now sim.Time, dst []Effect) []Effect {
	if c.state != Ready {
		return dst
	}
	c.sub = Idle
	return c.setState(dst, Idle)
}

// Shutdown closes the channel for good: any backoff timer is cancelled,
// any attempt in progress is abandoned, and later inputs are ignored. The
// caller fails the channel's streams.
func (c *Channel) Shutdown(now sim.Time, dst []Effect) []Effect {
	if c.state == Shutdown {
		return dst
	}
	if c.sub == TransientFailure {
		dst = append(dst, Effect{Kind: CancelTimer, Timer: c.timer})
	}
	c.sub = Shutdown
	return c.setState(dst, Shutdown)
}

// attemptLive reports whether attempt is the attempt in progress.
func (c *Channel) attemptLive(attempt uint32) bool {
	return c.state != Shutdown && c.sub == Connecting && attempt == c.attempt
}

// startAttempt starts the next connect attempt, drawing its backoff.
func (c *Channel) startAttempt(now sim.Time, dst []Effect) []Effect {
	c.attempt++
	c.start = now
	c.backoff = c.cfg.Delay(int(c.failures), c.rng)
	c.sub = Connecting
	return append(dst, Effect{Kind: StartConnectAttempt, Attempt: c.attempt, At: c.Deadline(), TCPAt: c.TCPDeadline()})
}

// fail handles the failure of the attempt in progress: TRANSIENT_FAILURE,
// then the backoff timer, or at once the next attempt when the schedule's
// next attempt time has passed.
func (c *Channel) fail(now sim.Time, dst []Effect) []Effect {
	c.sub = TransientFailure
	dst = c.setState(dst, TransientFailure) // sticky: no-op after the first
	next := c.cfg.NextAttempt(c.start, now, c.backoff)
	if next <= now {
		// connection-backoff.md: SleepUntil(current_deadline) returns at
		// once when the attempt outlived it.
		c.failures++
		return c.startAttempt(now, dst)
	}
	c.timer++
	return append(dst, Effect{Kind: ArmTimer, Timer: c.timer, At: next})
}

// setState moves the channel to s, appending a StateChanged if it changes.
func (c *Channel) setState(dst []Effect, s State) []Effect {
	if c.state == s {
		return dst
	}
	from := c.state
	c.state = s
	return append(dst, Effect{Kind: StateChanged, From: from, To: s})
}
