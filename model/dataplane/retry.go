package dataplane

// This file is the retry machine of a gRPC client channel: the route's
// retry policy (gRFC A44, from an Envoy RouteAction.retry_policy), the
// per-server retry throttle (gRFC A6 "Throttling Retry Attempts and Hedged
// RPCs") and the per-RPC state that decides, attempt by attempt, whether
// to retry and when (gRFC A6 "Retry Policy Capabilities", GEP-3440
// "Backoff"). Like the rest of the package it is pure: the caller passes
// the virtual time in and schedules the retry the Decision asks for.

import (
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/xdssim/xdssim/sim"
)

// CodeSet is a set of gRPC status codes: bit i is codes.Code(i).
type CodeSet uint32

// RetryableCodes is the set of codes GEP-3440 lists as retry reasons and
// the only ones gRPC converts from an Envoy retry_on (gRFC A44):
// cancelled, deadline-exceeded, internal, resource-exhausted and
// unavailable.
const RetryableCodes CodeSet = 1<<codes.Canceled | 1<<codes.DeadlineExceeded |
	1<<codes.Internal | 1<<codes.ResourceExhausted | 1<<codes.Unavailable

// Has reports whether c is in s.
func (s CodeSet) Has(c codes.Code) bool { return c < 32 && s&(1<<c) != 0 }

// retryCodeNames spells the codes as Envoy's x-envoy-retry-grpc-on does
// ("cancelled", "deadline-exceeded", ...); codes Envoy cannot retry on are
// spelled the same way (lower case, words joined by '-').
var retryCodeNames = [...]string{
	codes.OK:                 "ok",
	codes.Canceled:           "cancelled",
	codes.Unknown:            "unknown",
	codes.InvalidArgument:    "invalid-argument",
	codes.DeadlineExceeded:   "deadline-exceeded",
	codes.NotFound:           "not-found",
	codes.AlreadyExists:      "already-exists",
	codes.PermissionDenied:   "permission-denied",
	codes.ResourceExhausted:  "resource-exhausted",
	codes.FailedPrecondition: "failed-precondition",
	codes.Aborted:            "aborted",
	codes.OutOfRange:         "out-of-range",
	codes.Unimplemented:      "unimplemented",
	codes.Internal:           "internal",
	codes.Unavailable:        "unavailable",
	codes.DataLoss:           "data-loss",
	codes.Unauthenticated:    "unauthenticated",
}

// String lists the codes in s in code order, comma-separated, spelled as
// an Envoy retry_on spells them: "cancelled,unavailable". The empty set is
// "". For a subset of [RetryableCodes], ParseRetryOn(s.String()) == s.
func (s CodeSet) String() string {
	var b strings.Builder
	for c := codes.Code(0); c < 32; c++ {
		if !s.Has(c) {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if int(c) < len(retryCodeNames) {
			b.WriteString(retryCodeNames[c])
		} else {
			fmt.Fprintf(&b, "code-%d", uint32(c))
		}
	}
	return b.String()
}

// ParseRetryOn converts an Envoy RouteAction.retry_policy.retry_on string
// to the codes gRPC retries on, as gRFC A44 "Converting Envoy RetryPolicy
// to gRPC RetryPolicy" says: only "cancelled", "deadline-exceeded",
// "internal", "resource-exhausted" and "unavailable" are used, any other
// condition (such as "5xx") is ignored. Entries are comma-separated, the
// whitespace around them is trimmed and case is ignored, as grpc-go
// (internal/xds/xdsclient/xdsresource unmarshal_rds.go generateRetryConfig)
// and grpc-java (XdsRouteConfigureResource.parseRetryPolicy) do.
func ParseRetryOn(s string) CodeSet {
	var set CodeSet
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		for c := codes.Code(0); int(c) < len(retryCodeNames); c++ {
			if RetryableCodes.Has(c) && strings.EqualFold(entry, retryCodeNames[c]) {
				set |= 1 << c
			}
		}
	}
	return set
}

// Jitter is how a retry backoff is randomised.
type Jitter uint8

const (
	// JitterGRPCGo multiplies the backoff b by a uniform factor in
	// [0.8, 1.2). It is what grpc-go does (stream.go csAttempt.shouldRetry:
	// "multiplying with a random factor between 0.8 and 1.2"), what C-core
	// does (src/core/client_channel/retry_interceptor.cc RetryState builds
	// its BackOff with set_jitter(0.2); src/core/util/backoff.cc
	// NextAttemptDelay jitters every delay, the first included), what
	// grpc-java does by default since v1.80 (RetriableStream.intervalWithJitter,
	// grpc-java #12639) and what gRFC A6 "Exponential Backoff" has said
	// since its 2024-08 revision (grpc/proposal #452). It is the zero
	// value.
	JitterGRPCGo Jitter = iota
	// JitterFull draws the backoff uniformly from [0, b): gRFC A6 as first
	// written ("random(0, initialBackoff)", until grpc/proposal #452 in
	// 2024-08), grpc-java's RetriableStream.intervalWithJitter when
	// GRPC_EXPERIMENTAL_XDS_RLS_LB is false, and Envoy's fully jittered
	// retry backoff (GEP-3440 "Background on implementations: Envoy").
	JitterFull
)

var jitterNames = [...]string{"grpc-go", "full"}

// String names the jitter.
func (j Jitter) String() string {
	if int(j) < len(jitterNames) {
		return jitterNames[j]
	}
	return fmt.Sprintf("Jitter(%d)", j)
}

// maxAttemptsLimit is the client-side cap on maxAttempts (gRFC A6 "Limits
// on Retries and Hedges"; grpc-go dialoptions.go defaultMaxCallAttempts,
// grpc-java ManagedChannelServiceConfig maxRetryAttemptsLimit, C-core
// retry_service_config.cc MAX_MAX_RETRY_ATTEMPTS).
const maxAttemptsLimit = 5

// A44 defaults: Envoy's retry_back_off when absent, and the floor gRPC
// applies to a configured interval (gRFC A44, grpc-java
// XdsRouteConfigureResource.parseRetryPolicy).
const (
	defaultBaseInterval = 25 * time.Millisecond
	minInterval         = time.Millisecond
	xdsBackoffFactor    = 2
)

// RetryPolicy is a route's retry policy as a gRPC client applies it (the
// retryPolicy of gRFC A6, as gRFC A44 builds it from xDS). A policy is
// immutable once built and may be shared by every call that uses it.
type RetryPolicy struct {
	// MaxAttempts is the most attempts an RPC makes, the first included:
	// num_retries+1 (A44), at most 5 (A6). Values below 1 mean 1.
	MaxAttempts int
	// On is the set of codes that are retried (retryableStatusCodes).
	On CodeSet
	// InitialBackoff is the backoff before the first retry, before
	// jitter: base_interval (A44 default 25 ms).
	InitialBackoff time.Duration
	// MaxBackoff caps the backoff before jitter: max_interval (A44
	// default 10 × base_interval).
	MaxBackoff time.Duration
	// Multiplier scales the backoff after each retry; A44 fixes it at 2.
	Multiplier float64
	// Jitter says how each backoff is randomised.
	Jitter Jitter
}

// PolicyFromXDS builds the retry policy of an Envoy RouteAction.retry_policy
// as gRFC A44 "Converting Envoy RetryPolicy to gRPC RetryPolicy" does:
//
//   - MaxAttempts = numRetries+1, where a nil numRetries means Envoy's
//     default of 1, capped at 5 (gRFC A6 "Limits on Retries and Hedges");
//   - InitialBackoff = base (base_interval), 25 ms when base is 0
//     (retry_back_off absent);
//   - MaxBackoff = maxInterval (max_interval), 10 × InitialBackoff when it
//     is 0;
//   - intervals below 1 ms are treated as 1 ms;
//   - Multiplier = 2;
//   - On = ParseRetryOn(retryOn).
//
// The XdsClient has already NACKed what A44 rejects (num_retries 0,
// negative intervals, max_interval below base_interval); given such values
// anyway, PolicyFromXDS stays well defined: numRetries 0 gives one
// attempt, a negative interval counts as absent and maxInterval is raised
// to base.
// A policy whose On is empty retries nothing, as the "no retry policy"
// A44 installs in that case.
//
// The cap of 5 is A6's and grpc-java's and C-core's; grpc-go does not
// apply it to xDS policies (internal/xds/resolver/serviceconfig.go
// retryConfigToPolicy sets MaxAttempts to num_retries+1 and the cap lives
// only in parseServiceConfig), so a grpc-go client makes num_retries+1
// attempts.
func PolicyFromXDS(retryOn string, numRetries *uint32, base, maxInterval time.Duration) RetryPolicy {
	attempts := int64(2)
	if numRetries != nil {
		attempts = int64(*numRetries) + 1
	}
	attempts = min(attempts, maxAttemptsLimit)
	if base <= 0 {
		base = defaultBaseInterval
	}
	base = max(base, minInterval)
	if maxInterval <= 0 {
		maxInterval = 10 * base
	}
	maxInterval = max(maxInterval, minInterval, base)
	return RetryPolicy{
		MaxAttempts:    int(attempts),
		On:             ParseRetryOn(retryOn),
		InitialBackoff: base,
		MaxBackoff:     maxInterval,
		Multiplier:     xdsBackoffFactor,
		Jitter:         JitterGRPCGo,
	}
}

// maxAttempts is p.MaxAttempts, at least 1.
func (p *RetryPolicy) maxAttempts() int { return max(p.MaxAttempts, 1) }

// Backoff returns the delay before retry n, n = 1 being the first retry
// (the second attempt): min(InitialBackoff × Multiplier^(n-1), MaxBackoff),
// jittered as p.Jitter says with one draw from r (gRFC A6 "Exponential
// Backoff"; grpc-go stream.go csAttempt.shouldRetry). n below 1 counts as
// 1. The delay is truncated to the nanosecond, as grpc-go and grpc-java
// truncate theirs.
//
// The growth is computed by repeated multiplication, as grpc-java's
// RetriableStream compounds nextBackoffIntervalNanos, rather than with
// math.Pow, and each product is rounded explicitly to float64, so no
// fused multiply-add changes a delay from one machine to another.
func (p *RetryPolicy) Backoff(n int, r *sim.Rand) time.Duration {
	b := float64(p.InitialBackoff)
	limit := float64(p.MaxBackoff)
	for i := 1; i < n && b < limit; i++ {
		b = float64(b * p.Multiplier)
	}
	b = min(b, limit)
	u := r.Float64()
	var d float64
	switch p.Jitter {
	case JitterFull:
		d = b * u
	default:
		d = b * float64(0.8+float64(0.4*u))
	}
	if !(d > 0) {
		return 0
	}
	return time.Duration(int64(d))
}

// milliTokensPerToken is the fixed-point scale of a Throttle: gRFC A6
// "Validation of retryThrottling" keeps 3 decimal places of tokenRatio, and
// grpc-java (RetriableStream.Throttle) and C-core (retry_throttle.cc) count
// milli-tokens in integers.
const milliTokensPerToken = 1000

// Throttle is gRFC A6 "Throttling Retry Attempts and Hedged RPCs": the
// token bucket a channel keeps per server name, configured by the service
// config's retryThrottling {maxTokens, tokenRatio}. It counts milli-tokens
// in integers, as grpc-java and C-core do, so its arithmetic is exact
// (grpc-go's clientconn.go retryThrottler keeps float64 tokens, whose sums
// of a ratio such as 0.1 drift in the last place: thirty 0.1s make
// 3.0000000000000013, which can tip the strict threshold comparison).
//
// The zero Throttle is "no throttling": Allowed is always true and
// OnFailure and OnSuccess do nothing.
type Throttle struct {
	max    int32 // maxTokens, in milli-tokens; 0 = disabled
	ratio  int32 // tokenRatio, in milli-tokens
	tokens int32 // token_count, in milli-tokens, in [0, max]
}

// NewThrottle returns a throttle with maxTokens tokens that gains
// tokenRatio tokens per success, starting full (A6: token_count "is
// initially set to maxTokens"). tokenRatio keeps 3 decimal places and
// drops the rest (A6: "0.5466 is treated as 0.546"). It panics unless
// maxTokens is in (0, 1000] and tokenRatio > 0, the ranges A6 "Validation
// of retryThrottling" accepts.
func NewThrottle(maxTokens int, tokenRatio float64) Throttle {
	if maxTokens <= 0 || maxTokens > 1000 {
		panic(fmt.Sprintf("dataplane: retry throttling maxTokens must be in (0, 1000], got %d", maxTokens))
	}
	if !(tokenRatio > 0) {
		panic(fmt.Sprintf("dataplane: retry throttling tokenRatio must be > 0, got %v", tokenRatio))
	}
	// The 1e-6 keeps a ratio whose product with 1000 rounds just below
	// an integer (as 1.005 × 1000 = 1004.9999999999999) from losing its
	// last decimal place.
	ratio := int64(tokenRatio*milliTokensPerToken + 1e-6)
	ratio = min(ratio, int64(maxTokens)*milliTokensPerToken)
	m := int32(maxTokens * milliTokensPerToken)
	return Throttle{max: m, ratio: int32(ratio), tokens: m}
}

// Enabled reports whether t throttles at all: false for the zero Throttle.
func (t *Throttle) Enabled() bool { return t.max > 0 }

// OnFailure records an attempt that failed with a code the call's policy
// retries: token_count drops by 1, not below 0 (A6: "Every failed RPC will
// decrement the token_count by 1"). Only such failures count (A6: "The
// only RPCs that are counted as failures ... fail with a status code that
// qualifies as a retryable ... status code"); [Call.AttemptDone] calls it
// only for them.
func (t *Throttle) OnFailure() {
	t.tokens = max(t.tokens-milliTokensPerToken, 0)
}

// OnSuccess records a successful RPC: token_count grows by tokenRatio, not
// above maxTokens (A6: "Every successful RPC will increment the
// token_count by tokenRatio").
func (t *Throttle) OnSuccess() {
	t.tokens = min(t.tokens+t.ratio, t.max)
}

// Allowed reports whether a retry may be sent: token_count must be above
// maxTokens/2, strictly (A6: "If token_count is less than or equal to the
// threshold, defined to be (maxTokens / 2), then RPCs will not be
// retried"). The zero Throttle always allows.
func (t *Throttle) Allowed() bool {
	return !t.Enabled() || t.tokens > t.max/2
}

// Tokens returns token_count.
func (t *Throttle) Tokens() float64 {
	return float64(t.tokens) / milliTokensPerToken
}

// callPhase is where a Call is between its inputs.
type callPhase uint8

const (
	callIdle       callPhase = iota // not started, or reused after Done
	callAttempting                  // an attempt is in flight
	callBackingOff                  // a retry is due at Decision.At
	callDone                        // the RPC is over
)

var callPhaseNames = [...]string{"idle", "attempting", "backing off", "done"}

func (p callPhase) String() string { return callPhaseNames[p] }

// Call is the retry state of one RPC: started with [Call.Start], told how
// each attempt ended with [Call.AttemptDone], and told when the retry it
// asked for starts with [Call.BeginRetry]. It is a 32-byte value that
// holds no pointer but its policy, so a channel can keep one per RPC in
// flight. The zero Call is ready for Start.
type Call struct {
	policy   *RetryPolicy
	deadline sim.Time // 0 = none
	last     sim.Time // when the call last moved; inputs never go back in time
	attempts int32
	phase    callPhase
}

// Start begins an RPC at now with the given absolute deadline (0 = none)
// and retry policy (nil = no retries). The first attempt starts at now.
// Start forgets whatever c held, so a channel may reuse a Call whose RPC
// is over or that it abandons.
func (c *Call) Start(policy *RetryPolicy, now, deadline sim.Time) {
	*c = Call{policy: policy, deadline: deadline, last: now, attempts: 1, phase: callAttempting}
}

// Attempts returns how many attempts have started.
func (c *Call) Attempts() int { return int(c.attempts) }

// Decision is what the channel does after an attempt ends.
type Decision struct {
	// Retry says to start attempt Attempts()+1 at At, calling
	// [Call.BeginRetry] then.
	Retry bool
	// At is when the retry starts, or when the RPC ends.
	At sim.Time
	// Done says the RPC is over with Code at At: at the time the attempt
	// ended, or at the deadline when the deadline falls in the backoff.
	Done bool
	// Code is the RPC's final status code when Done.
	Code codes.Code
	// Throttled says a retry was wanted but the throttle refused it.
	Throttled bool
}

// AttemptDone feeds the outcome of the current attempt, which ended with
// code at now, and returns what happens next. throttle is the channel's
// throttle for the server (nil or the zero Throttle: none); r supplies the
// backoff jitter. In order (gRFC A6 "Summary of Retry and Hedging Logic";
// the order of checks is grpc-go's stream.go csAttempt.shouldRetry and
// C-core's retry_interceptor.cc RetryState::ShouldRetry):
//
//  1. The deadline has passed (now ≥ deadline): the RPC is over with
//     DEADLINE_EXCEEDED at now, whatever the attempt said. A6 "Maximum
//     Number of Retries": the deadline "applies across all attempts"; A44:
//     when it is exceeded "the RPC fails as a whole and there will be no
//     retry possible after that". The throttle is not touched: grpc-go
//     finishes a stream whose context is done, and shouldRetry returns on
//     cs.finished before it counts anything.
//  2. OK: the RPC succeeded; the throttle gains tokenRatio (grpc-go
//     stream.go clientStream.finish calls retryThrottler.successfulRPC for
//     any successful RPC, retry policy or not).
//  3. A code the policy does not retry, or no policy: the RPC is over with
//     that code and the throttle does not count it (A6: failures count only
//     when the code "qualifies as retryable"; grpc-go shouldRetry returns
//     before retryThrottler.throttle, "we count this as a failure only if
//     the code matched a retryable code").
//  4. A retryable code: the throttle loses a token first, even when no
//     retry follows (grpc-go and C-core count it before the attempts
//     check). Then: attempts exhausted → over with code; throttle at or
//     below half → over with code, Throttled; otherwise the backoff is
//     drawn, and if the deadline falls within it the RPC is over with
//     DEADLINE_EXCEEDED at the deadline (grpc-go waits on the retry timer
//     or the context, whichever is first; GEP-3440 "Backoff": attempts
//     "MUST not exceed the Request timeout ... the Gateway MUST return a
//     timeout error"), else the retry starts at now+backoff.
//
// AttemptDone panics unless an attempt is in flight and now is not before
// the time the attempt started.
func (c *Call) AttemptDone(now sim.Time, code codes.Code, throttle *Throttle, r *sim.Rand) Decision {
	if c.phase != callAttempting {
		panic(fmt.Sprintf("dataplane: Call.AttemptDone at %v: no attempt in flight (the call is %v)", now, c.phase))
	}
	if now < c.last {
		panic(fmt.Sprintf("dataplane: Call.AttemptDone at %v: attempt %d started later, at %v", now, c.attempts, c.last))
	}
	c.last = now
	if c.deadline != 0 && now >= c.deadline {
		return c.done(now, codes.DeadlineExceeded, false)
	}
	if code == codes.OK {
		if throttle != nil {
			throttle.OnSuccess()
		}
		return c.done(now, codes.OK, false)
	}
	p := c.policy
	if p == nil || !p.On.Has(code) {
		return c.done(now, code, false)
	}
	if throttle != nil {
		throttle.OnFailure()
	}
	if int(c.attempts) >= p.maxAttempts() {
		return c.done(now, code, false)
	}
	if throttle != nil && !throttle.Allowed() {
		return c.done(now, code, true)
	}
	at := now.Add(p.Backoff(int(c.attempts), r))
	if c.deadline != 0 && at >= c.deadline {
		return c.done(c.deadline, codes.DeadlineExceeded, false)
	}
	c.phase = callBackingOff
	c.last = at
	return Decision{Retry: true, At: at}
}

// done ends the RPC with code at at.
func (c *Call) done(at sim.Time, code codes.Code, throttled bool) Decision {
	c.phase = callDone
	c.last = at
	return Decision{Done: true, At: at, Code: code, Throttled: throttled}
}

// BeginRetry records that the retry AttemptDone asked for has started:
// Attempts grows by one. The caller calls it at the Decision's At. It
// panics unless a retry is pending.
func (c *Call) BeginRetry() {
	if c.phase != callBackingOff {
		panic(fmt.Sprintf("dataplane: Call.BeginRetry: no retry pending (the call is %v)", c.phase))
	}
	c.attempts++
	c.phase = callAttempting
}
