package dataplane

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	"google.golang.org/grpc/codes"

	"github.com/xdssim/xdssim/sim"
)

// The tests in this file each check a few sentences of gRFC A6 (client
// retries), gRFC A44 (xDS retry support) or GEP-3440 (gRPC retries), or a
// behaviour of a real client where the three leave it open; each ends with
// the section or file it pins down.

func ptr[T any](v T) *T { return &v }

// ms is a virtual time or duration in milliseconds.
func ms(n int64) sim.Time { return sim.Time(n * int64(time.Millisecond)) }

// runCall drives one RPC until it is over, answering attempt k (from 1)
// with outcome(k) latency after it starts, and returns the final decision
// and the start times of the attempts.
func runCall(c *Call, p *RetryPolicy, start, deadline sim.Time, latency time.Duration,
	outcome func(attempt int) codes.Code, th *Throttle, r *sim.Rand) (Decision, []sim.Time) {
	c.Start(p, start, deadline)
	starts := []sim.Time{start}
	at := start
	for {
		d := c.AttemptDone(at.Add(latency), outcome(c.Attempts()), th, r)
		if d.Done {
			return d, starts
		}
		c.BeginRetry()
		starts = append(starts, d.At)
		at = d.At
	}
}

// TestRetrySucceedsOnSecondAttempt checks that an attempt failing with a
// retryable code is retried after a jittered backoff and that the retry's
// OK ends the RPC.
func TestRetrySucceedsOnSecondAttempt(t *testing.T) {
	for _, tt := range []struct {
		name     string
		jitter   Jitter
		deadline sim.Time
		lo, hi   time.Duration // bounds of the first backoff (25 ms base)
	}{
		{"grpc-go jitter, no deadline", JitterGRPCGo, 0, 20 * time.Millisecond, 30 * time.Millisecond},
		{"grpc-go jitter, distant deadline", JitterGRPCGo, ms(10_000), 20 * time.Millisecond, 30 * time.Millisecond},
		{"full jitter", JitterFull, 0, 0, 25 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := PolicyFromXDS("unavailable", nil, 0, 0)
			p.Jitter = tt.jitter
			th := NewThrottle(10, 0.1)
			r := sim.NewStream(1, "call")
			var c Call
			start := ms(1000)
			c.Start(&p, start, tt.deadline)
			if c.Attempts() != 1 {
				t.Fatalf("Attempts() after Start = %d, want 1", c.Attempts())
			}
			failed := start.Add(10 * time.Millisecond)
			d := c.AttemptDone(failed, codes.Unavailable, &th, r)
			if !d.Retry || d.Done || d.Throttled {
				t.Fatalf("after UNAVAILABLE: %+v, want a retry", d)
			}
			if wait := d.At.Sub(failed); wait < tt.lo || wait > tt.hi {
				t.Errorf("retry starts %v after the failure, want within [%v, %v]", wait, tt.lo, tt.hi)
			}
			if c.Attempts() != 1 {
				t.Errorf("Attempts() before BeginRetry = %d, want 1", c.Attempts())
			}
			c.BeginRetry()
			if c.Attempts() != 2 {
				t.Errorf("Attempts() after BeginRetry = %d, want 2", c.Attempts())
			}
			end := d.At.Add(5 * time.Millisecond)
			d = c.AttemptDone(end, codes.OK, &th, r)
			if want := (Decision{Done: true, At: end, Code: codes.OK}); d != want {
				t.Errorf("after OK: %+v, want %+v", d, want)
			}
			if got := th.Tokens(); got != 9.1 {
				t.Errorf("throttle tokens = %v, want 10 - 1 + 0.1 = 9.1", got)
			}
		})
	}
	// Reference: gRFC A6, Retry Policy Capabilities and Exponential Backoff;
	// gRFC A44, Converting Envoy RetryPolicy to gRPC RetryPolicy (num_retries
	// default 1).
}

// TestRetryStopsWhenAttemptsAreExhausted checks that an RPC failing every
// attempt makes num_retries+1 attempts, at most 5, and ends with the last
// attempt's code.
func TestRetryStopsWhenAttemptsAreExhausted(t *testing.T) {
	for _, tt := range []struct {
		name         string
		numRetries   *uint32
		wantAttempts int
	}{
		{"num_retries unset is 1 retry", nil, 2},
		{"num_retries 2", ptr[uint32](2), 3},
		{"num_retries 4 reaches the cap", ptr[uint32](4), 5},
		{"num_retries 10 is capped at 5 attempts", ptr[uint32](10), 5},
		{"num_retries max uint32 is capped at 5 attempts", ptr[uint32](1<<32 - 1), 5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := PolicyFromXDS("unavailable", tt.numRetries, 0, 0)
			th := NewThrottle(1000, 1) // 500 failures before it engages
			r := sim.NewStream(2, "call")
			var c Call
			d, starts := runCall(&c, &p, 0, 0, time.Millisecond,
				func(int) codes.Code { return codes.Unavailable }, &th, r)
			if c.Attempts() != tt.wantAttempts || len(starts) != tt.wantAttempts {
				t.Errorf("made %d attempts (%d starts), want %d", c.Attempts(), len(starts), tt.wantAttempts)
			}
			if !d.Done || d.Code != codes.Unavailable || d.Throttled {
				t.Errorf("final decision %+v, want Done UNAVAILABLE, not throttled", d)
			}
			// Every failed attempt counted against the throttle, the last
			// one too (grpc-go counts before checking maxAttempts).
			if got, want := th.Tokens(), float64(1000-tt.wantAttempts); got != want {
				t.Errorf("throttle tokens = %v, want %v", got, want)
			}
			for i := 1; i < len(starts); i++ {
				if starts[i] <= starts[i-1] {
					t.Errorf("attempt %d starts at %v, not after attempt %d at %v", i+1, starts[i], i, starts[i-1])
				}
			}
		})
	}
	// Reference: gRFC A6, Maximum Number of Retries and Limits on Retries and
	// Hedges; gRFC A44 ("any value greater than 4, will effectively be
	// converted to maxAttempts=5").
}

// TestNonRetryableCodeIsNotRetried checks that a code outside the policy's
// set ends the RPC at once and does not count against the throttle.
func TestNonRetryableCodeIsNotRetried(t *testing.T) {
	all := PolicyFromXDS("cancelled,deadline-exceeded,internal,resource-exhausted,unavailable", ptr[uint32](4), 0, 0)
	unavailable := PolicyFromXDS("unavailable", ptr[uint32](4), 0, 0)
	empty := PolicyFromXDS("5xx", ptr[uint32](4), 0, 0)
	for _, tt := range []struct {
		name   string
		policy *RetryPolicy
		code   codes.Code
	}{
		{"INTERNAL when only unavailable is retried", &unavailable, codes.Internal},
		{"CANCELLED when only unavailable is retried", &unavailable, codes.Canceled},
		{"PERMISSION_DENIED is never retryable", &all, codes.PermissionDenied},
		{"INVALID_ARGUMENT is never retryable", &all, codes.InvalidArgument},
		{"UNKNOWN is never retryable", &all, codes.Unknown},
		{"UNAVAILABLE with no policy", nil, codes.Unavailable},
		{"UNAVAILABLE when retry_on names only HTTP conditions", &empty, codes.Unavailable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			th := NewThrottle(10, 0.1)
			r := sim.NewStream(3, "call")
			var c Call
			c.Start(tt.policy, ms(5), ms(10_000))
			d := c.AttemptDone(ms(7), tt.code, &th, r)
			if want := (Decision{Done: true, At: ms(7), Code: tt.code}); d != want {
				t.Errorf("decision %+v, want %+v", d, want)
			}
			if c.Attempts() != 1 {
				t.Errorf("Attempts() = %d, want 1", c.Attempts())
			}
			if th.Tokens() != 10 {
				t.Errorf("throttle tokens = %v, want 10: only retryable codes count as failures", th.Tokens())
			}
		})
	}
	// Reference: gRFC A6, Retryable Status Codes and Throttling Retry
	// Attempts and Hedged RPCs ("The only RPCs that are counted as
	// failures..."); grpc-go stream.go csAttempt.shouldRetry; GEP-3440
	// Conformance Details ("no retries for non-retryable errors").
}

// TestThrottleArithmeticIsExact checks A6's token bucket: it starts full,
// a failure costs a token (not below 0), a success earns tokenRatio (not
// above maxTokens), retries need strictly more than maxTokens/2, and
// tokenRatio keeps 3 decimal places, all without floating-point drift.
func TestThrottleArithmeticIsExact(t *testing.T) {
	type step struct {
		op          string // "fail" or "ok", repeated n times
		n           int
		wantTokens  float64
		wantAllowed bool
	}
	for _, tt := range []struct {
		name      string
		maxTokens int
		ratio     float64
		steps     []step
	}{
		{"starts full, threshold is strict", 10, 0.1, []step{
			{"ok", 0, 10, true},
			{"fail", 1, 9, true},
			{"fail", 3, 6, true},
			{"fail", 1, 5, false}, // 5 is not > 10/2
			{"ok", 1, 5.1, true},
			{"fail", 1, 4.1, false},
		}},
		{"floors at 0 and caps at maxTokens", 10, 0.1, []step{
			{"fail", 25, 0, false},
			{"ok", 30, 3, false}, // exactly 3: 30 × 0.1 summed in float64 is not
			{"ok", 500, 10, true},
		}},
		{"odd maxTokens has a half-token threshold", 5, 0.5, []step{
			{"fail", 2, 3, true}, // 3 > 2.5
			{"fail", 1, 2, false},
			{"ok", 1, 2.5, false}, // 2.5 is not > 2.5
			{"ok", 1, 3, true},
		}},
		{"tokenRatio keeps 3 decimal places", 10, 0.5466, []step{
			{"fail", 10, 0, false},
			{"ok", 1, 0.546, false},
			{"ok", 9, 5.46, true},
		}},
		{"a small ratio is not lost to binary rounding", 1, 0.009, []step{
			{"fail", 1, 0, false},
			{"ok", 1, 0.009, false},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			th := NewThrottle(tt.maxTokens, tt.ratio)
			if !th.Enabled() {
				t.Fatal("Enabled() = false for a configured throttle")
			}
			for i, s := range tt.steps {
				for range s.n {
					if s.op == "fail" {
						th.OnFailure()
					} else {
						th.OnSuccess()
					}
				}
				if th.Tokens() != s.wantTokens || th.Allowed() != s.wantAllowed {
					t.Errorf("step %d (%s ×%d): tokens %v allowed %v, want %v %v",
						i, s.op, s.n, th.Tokens(), th.Allowed(), s.wantTokens, s.wantAllowed)
				}
			}
		})
	}

	var zero Throttle
	zero.OnFailure()
	zero.OnFailure()
	zero.OnSuccess()
	if zero.Enabled() || !zero.Allowed() || zero.Tokens() != 0 {
		t.Errorf("zero Throttle: Enabled %v Allowed %v Tokens %v, want false true 0",
			zero.Enabled(), zero.Allowed(), zero.Tokens())
	}
	// Reference: gRFC A6, Throttling Retry Attempts and Hedged RPCs and
	// Validation of retryThrottling; grpc-java RetriableStream.Throttle and
	// C-core retry_throttle.cc (milli-tokens).
}

// TestNewThrottleRejectsWhatA6Rejects checks the retryThrottling ranges.
func TestNewThrottleRejectsWhatA6Rejects(t *testing.T) {
	for _, tt := range []struct {
		maxTokens int
		ratio     float64
		want      string
	}{
		{0, 0.1, "maxTokens must be in (0, 1000], got 0"},
		{1001, 0.1, "maxTokens must be in (0, 1000], got 1001"},
		{10, 0, "tokenRatio must be > 0, got 0"},
		{10, -1, "tokenRatio must be > 0, got -1"},
	} {
		msg := panicMessage(func() { NewThrottle(tt.maxTokens, tt.ratio) })
		if !strings.Contains(msg, tt.want) {
			t.Errorf("NewThrottle(%d, %v) panicked with %q, want %q", tt.maxTokens, tt.ratio, msg, tt.want)
		}
	}
	// Reference: gRFC A6, Validation of retryThrottling.
}

func panicMessage(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}

// TestRetryThrottlingStartsAboveTheFailureRatio drives RPCs through a
// Throttle(maxTokens 10, tokenRatio 0.1) whose attempts fail at a fixed,
// evenly spread fraction f. Each failure costs 1 token and each success
// earns 0.1, so the bucket drifts down exactly when f > 0.1/(1+0.1) ≈
// 0.0909: below that no retry is ever throttled; above it the bucket
// sinks through maxTokens/2 (on towards 0, for the failures keep coming)
// and the throttle refuses retries until the failure fraction falls.
func TestRetryThrottlingStartsAboveTheFailureRatio(t *testing.T) {
	for _, tt := range []struct {
		failures      float64
		wantThrottled bool
	}{
		{0.01, false},
		{0.05, false},
		{0.08, false},
		{0.1, true},
		{0.2, true},
		{0.5, true},
	} {
		t.Run(fmt.Sprint(tt.failures), func(t *testing.T) {
			p := PolicyFromXDS("unavailable", ptr[uint32](4), 0, 0)
			th := NewThrottle(10, 0.1)
			r := sim.NewStream(4, "throttle")
			// Attempt k (counting over the whole run) fails when the
			// running count of failures floor(k·f) steps up: exactly a
			// fraction f of attempts fail, as evenly as possible.
			k := 0
			outcome := func(int) codes.Code {
				k++
				if int(float64(k)*tt.failures) > int(float64(k-1)*tt.failures) {
					return codes.Unavailable
				}
				return codes.OK
			}
			var c Call
			var retriesWanted, throttled, lateThrottled int
			const rpcs, warmUp = 20_000, 1_000
			minTokens := th.Tokens()
			at := sim.Time(0)
			for i := range rpcs {
				c.Start(&p, at, 0)
				for {
					d := c.AttemptDone(at.Add(time.Millisecond), outcome(c.Attempts()), &th, r)
					minTokens = min(minTokens, th.Tokens())
					if d.Throttled {
						throttled++
						if i >= warmUp {
							lateThrottled++
						}
					}
					if d.Retry || d.Throttled {
						retriesWanted++
					}
					if d.Done {
						at = d.At
						break
					}
					c.BeginRetry()
					at = d.At
				}
			}
			frac := float64(throttled) / float64(max(retriesWanted, 1))
			t.Logf("f=%v: %d retries wanted, %d throttled (%.3f), min tokens %v, final %v",
				tt.failures, retriesWanted, throttled, frac, minTokens, th.Tokens())
			if !tt.wantThrottled {
				if throttled != 0 {
					t.Errorf("%d of %d retries throttled, want none below the failure ratio", throttled, retriesWanted)
				}
				if minTokens <= 5 {
					t.Errorf("tokens fell to %v, want them above maxTokens/2 throughout", minTokens)
				}
				return
			}
			if lateThrottled == 0 || frac <= 0 {
				t.Errorf("no retry throttled after warm-up (%d in all of %d wanted), want some above the failure ratio",
					throttled, retriesWanted)
			}
			if th.Tokens() > 5 {
				t.Errorf("tokens end at %v, want the bucket at or below maxTokens/2 = 5", th.Tokens())
			}
		})
	}
	// Reference: gRFC A6, Throttling Retry Attempts and Hedged RPCs and
	// Throttling Configuration ("throttles retry attempts ... when the
	// client's ratio of failures to successes exceeds ~10%").
}

// TestThrottleRefusesARetryTheAttemptsWouldAllow checks the decision when
// the throttle is at its threshold: the RPC ends with the attempt's code,
// marked Throttled, and the failure still cost a token.
func TestThrottleRefusesARetryTheAttemptsWouldAllow(t *testing.T) {
	p := PolicyFromXDS("unavailable", ptr[uint32](4), 0, 0)
	th := NewThrottle(10, 0.1)
	for range 4 {
		th.OnFailure() // 6 tokens: one more failure reaches the threshold
	}
	var c Call
	c.Start(&p, 0, 0)
	d := c.AttemptDone(ms(3), codes.Unavailable, &th, sim.NewStream(5, "call"))
	if want := (Decision{Done: true, At: ms(3), Code: codes.Unavailable, Throttled: true}); d != want {
		t.Errorf("decision %+v, want %+v", d, want)
	}
	if th.Tokens() != 5 {
		t.Errorf("tokens = %v, want 5", th.Tokens())
	}
	// Reference: gRFC A6, Throttling Retry Attempts and Hedged RPCs ("Retry
	// attempts are canceled and the failure returned to the client
	// application"); grpc-go stream.go csAttempt.shouldRetry.
}

// TestRetryBackoffStaysWithinBounds checks the backoff of retry n: the
// base min(25 ms × 2^(n-1), 250 ms), times a factor in [0.8, 1.2) for
// JitterGRPCGo or in [0, 1) for JitterFull, and that the draws spread over
// the whole range.
func TestRetryBackoffStaysWithinBounds(t *testing.T) {
	p := PolicyFromXDS("unavailable", nil, 0, 0)
	for _, tt := range []struct {
		jitter           Jitter
		loFactor, hiFact float64
	}{
		{JitterGRPCGo, 0.8, 1.2},
		{JitterFull, 0, 1},
	} {
		t.Run(tt.jitter.String(), func(t *testing.T) {
			p.Jitter = tt.jitter
			r := sim.NewStream(6, "backoff")
			for n := 1; n <= 8; n++ {
				b := min(25*time.Millisecond<<(n-1), 250*time.Millisecond)
				lo := time.Duration(float64(b) * tt.loFactor)
				hi := time.Duration(float64(b) * tt.hiFact)
				seenLo, seenHi := time.Duration(1<<62), time.Duration(0)
				for range 5_000 {
					d := p.Backoff(n, r)
					seenLo, seenHi = min(seenLo, d), max(seenHi, d)
					if d < lo || d >= hi {
						t.Fatalf("Backoff(%d) = %v, want in [%v, %v)", n, d, lo, hi)
					}
				}
				spread := hi - lo
				if seenLo > lo+spread/50 || seenHi < hi-spread/50 {
					t.Errorf("Backoff(%d) drew only [%v, %v] of [%v, %v)", n, seenLo, seenHi, lo, hi)
				}
			}
		})
	}
	// Reference: gRFC A6, Exponential Backoff; grpc-go stream.go
	// csAttempt.shouldRetry ("a random factor between 0.8 and 1.2");
	// grpc-java RetriableStream.intervalWithJitter; GEP-3440, Envoy
	// ("default maximum interval is capped at 250ms (10 times the base
	// interval)").
}

// TestBackoffIsAFunctionOfTheStream checks that the backoff depends only
// on the policy, n and the random stream: the same stream state gives the
// same delay, and each call draws exactly once.
func TestBackoffIsAFunctionOfTheStream(t *testing.T) {
	p := PolicyFromXDS("unavailable", nil, 0, 0)
	for _, j := range []Jitter{JitterGRPCGo, JitterFull} {
		p.Jitter = j
		a, b := sim.NewStream(7, "x"), sim.NewStream(7, "x")
		for n := 1; n <= 8; n++ {
			if da, db := p.Backoff(n, a), p.Backoff(n, b); da != db {
				t.Errorf("%v: Backoff(%d) = %v and %v from equal streams", j, n, da, db)
			}
		}
		c := sim.NewStream(7, "x")
		for range 8 {
			c.Float64()
		}
		if a.Float64() != c.Float64() {
			t.Errorf("%v: Backoff drew other than one number per call", j)
		}
	}
	// Reference: docs/architecture.md, Determinism contract.
}

// TestDeadlineCutsRetriesShort checks that no attempt starts at or after
// the call's deadline: a deadline inside the backoff ends the RPC with
// DEADLINE_EXCEEDED at the deadline, and an attempt that ends after the
// deadline ends it at once.
func TestDeadlineCutsRetriesShort(t *testing.T) {
	p := PolicyFromXDS("unavailable", ptr[uint32](4), 0, 0)
	// The first backoff drawn from this stream, to put a deadline exactly
	// at the end of it.
	backoff := p.Backoff(1, sim.NewStream(8, "call"))
	for _, tt := range []struct {
		name       string
		deadline   sim.Time
		ended      sim.Time
		code       codes.Code
		want       Decision
		wantTokens float64
	}{
		{"deadline inside the backoff", ms(15), ms(10), codes.Unavailable,
			Decision{Done: true, At: ms(15), Code: codes.DeadlineExceeded}, 9},
		{"deadline exactly when the retry would start", ms(10).Add(backoff), ms(10), codes.Unavailable,
			Decision{Done: true, At: ms(10).Add(backoff), Code: codes.DeadlineExceeded}, 9},
		{"deadline just after the retry would start", ms(10).Add(backoff + 1), ms(10), codes.Unavailable,
			Decision{Retry: true, At: ms(10).Add(backoff)}, 9},
		{"attempt ended after the deadline", ms(15), ms(20), codes.Unavailable,
			Decision{Done: true, At: ms(20), Code: codes.DeadlineExceeded}, 10},
		{"attempt ended at the deadline", ms(15), ms(15), codes.Unavailable,
			Decision{Done: true, At: ms(15), Code: codes.DeadlineExceeded}, 10},
		{"OK after the deadline is too late", ms(15), ms(20), codes.OK,
			Decision{Done: true, At: ms(20), Code: codes.DeadlineExceeded}, 10},
		{"non-retryable code after the deadline", ms(15), ms(20), codes.PermissionDenied,
			Decision{Done: true, At: ms(20), Code: codes.DeadlineExceeded}, 10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			th := NewThrottle(10, 0.1)
			var c Call
			c.Start(&p, 0, tt.deadline)
			d := c.AttemptDone(tt.ended, tt.code, &th, sim.NewStream(8, "call"))
			if d != tt.want {
				t.Errorf("decision %+v, want %+v", d, tt.want)
			}
			if c.Attempts() != 1 {
				t.Errorf("Attempts() = %d, want 1", c.Attempts())
			}
			if th.Tokens() != tt.wantTokens {
				t.Errorf("throttle tokens = %v, want %v", th.Tokens(), tt.wantTokens)
			}
		})
	}

	// Across several attempts: every attempt starts before the deadline
	// and the RPC ends exactly at it.
	var c Call
	d, starts := runCall(&c, &p, 0, ms(100), 20*time.Millisecond,
		func(int) codes.Code { return codes.Unavailable }, nil, sim.NewStream(9, "call"))
	if d.Code != codes.DeadlineExceeded || d.At != ms(100) {
		t.Errorf("final decision %+v, want DEADLINE_EXCEEDED at the 100ms deadline", d)
	}
	for i, s := range starts {
		if s >= ms(100) {
			t.Errorf("attempt %d starts at %v, at or after the deadline", i+1, s)
		}
	}
	// Reference: gRFC A6, Maximum Number of Retries ("the operation will
	// fail after that time regardless of how many attempts were
	// configured"); GEP-3440, Backoff (retries "MUST not exceed the Request
	// timeout ... the Gateway MUST return a timeout error"); grpc-go
	// stream.go csAttempt.shouldRetry (waits on the timer or cs.ctx.Done()).
}

// TestPolicyFromXDSAppliesA44Defaults checks the conversion of an Envoy
// RetryPolicy: num_retries defaults to 1, retry_back_off to 25 ms / 250
// ms, max_interval to 10 × base_interval, intervals below 1 ms become
// 1 ms, the multiplier is 2, and retry_on keeps only the gRPC conditions.
func TestPolicyFromXDSAppliesA44Defaults(t *testing.T) {
	unavailable := CodeSet(1 << codes.Unavailable)
	for _, tt := range []struct {
		name       string
		retryOn    string
		numRetries *uint32
		base, max  time.Duration
		want       RetryPolicy
	}{
		{"all defaults", "unavailable", nil, 0, 0,
			RetryPolicy{2, unavailable, 25 * time.Millisecond, 250 * time.Millisecond, 2, JitterGRPCGo}},
		{"HTTP conditions are ignored", "5xx,unavailable, cancelled", nil, 0, 0,
			RetryPolicy{2, unavailable | 1<<codes.Canceled, 25 * time.Millisecond, 250 * time.Millisecond, 2, JitterGRPCGo}},
		{"max_interval defaults to 10 × base_interval", "unavailable", ptr[uint32](3), 100 * time.Millisecond, 0,
			RetryPolicy{4, unavailable, 100 * time.Millisecond, time.Second, 2, JitterGRPCGo}},
		{"both intervals given", "unavailable", ptr[uint32](1), 40 * time.Millisecond, 70 * time.Millisecond,
			RetryPolicy{2, unavailable, 40 * time.Millisecond, 70 * time.Millisecond, 2, JitterGRPCGo}},
		{"intervals below 1ms are 1ms", "unavailable", nil, 500 * time.Microsecond, 200 * time.Microsecond,
			RetryPolicy{2, unavailable, time.Millisecond, time.Millisecond, 2, JitterGRPCGo}},
		{"a tiny base_interval scales its default max from 1ms", "unavailable", nil, time.Microsecond, 0,
			RetryPolicy{2, unavailable, time.Millisecond, 10 * time.Millisecond, 2, JitterGRPCGo}},
		{"num_retries above 4 is capped at 5 attempts", "unavailable", ptr[uint32](10), 0, 0,
			RetryPolicy{5, unavailable, 25 * time.Millisecond, 250 * time.Millisecond, 2, JitterGRPCGo}},
		{"num_retries 0 (NACKed by gRPC) means one attempt", "unavailable", ptr[uint32](0), 0, 0,
			RetryPolicy{1, unavailable, 25 * time.Millisecond, 250 * time.Millisecond, 2, JitterGRPCGo}},
		{"max below base (NACKed by gRPC) is raised to base", "unavailable", nil, 50 * time.Millisecond, 20 * time.Millisecond,
			RetryPolicy{2, unavailable, 50 * time.Millisecond, 50 * time.Millisecond, 2, JitterGRPCGo}},
		{"no gRPC condition gives an empty set", "5xx,reset,connect-failure", nil, 0, 0,
			RetryPolicy{2, 0, 25 * time.Millisecond, 250 * time.Millisecond, 2, JitterGRPCGo}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := PolicyFromXDS(tt.retryOn, tt.numRetries, tt.base, tt.max); got != tt.want {
				t.Errorf("PolicyFromXDS(%q, %v, %v, %v) =\n  %+v, want\n  %+v",
					tt.retryOn, tt.numRetries, tt.base, tt.max, got, tt.want)
			}
		})
	}
	// Reference: gRFC A44, Converting Envoy RetryPolicy to gRPC RetryPolicy;
	// gRFC A6, Limits on Retries and Hedges; grpc-java
	// XdsRouteConfigureResource.parseRetryPolicy (1 ms floor).
}

// TestParseRetryOnAndStringRoundTrip checks retry_on parsing (the five
// gRPC conditions only, trimmed, any case, duplicates merged) and that
// String spells a set so that it parses back to itself.
func TestParseRetryOnAndStringRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		in         string
		want       CodeSet
		wantString string
	}{
		{"", 0, ""},
		{"unavailable", 1 << codes.Unavailable, "unavailable"},
		{"cancelled,deadline-exceeded,internal,resource-exhausted,unavailable", RetryableCodes,
			"cancelled,deadline-exceeded,resource-exhausted,internal,unavailable"}, // code order
		{"unavailable, cancelled", 1<<codes.Canceled | 1<<codes.Unavailable, "cancelled,unavailable"},
		{" Unavailable ,\tCANCELLED ", 1<<codes.Canceled | 1<<codes.Unavailable, "cancelled,unavailable"},
		{"unavailable,unavailable,,", 1 << codes.Unavailable, "unavailable"},
		{"5xx,gateway-error,retriable-4xx,reset", 0, ""},
		{"canceled", 0, ""}, // Envoy spells it "cancelled"
		{"permission-denied,not-found", 0, ""},
		{"deadline_exceeded", 0, ""},
	} {
		got := ParseRetryOn(tt.in)
		if got != tt.want {
			t.Errorf("ParseRetryOn(%q) = %#x, want %#x", tt.in, got, tt.want)
		}
		if s := got.String(); s != tt.wantString {
			t.Errorf("ParseRetryOn(%q).String() = %q, want %q", tt.in, s, tt.wantString)
		}
	}

	for s := CodeSet(0); s < 1<<17; s++ {
		if s&^RetryableCodes != 0 {
			continue
		}
		if back := ParseRetryOn(s.String()); back != s {
			t.Errorf("ParseRetryOn(%q) = %#x, want %#x", s.String(), back, s)
		}
	}

	for _, tt := range []struct {
		set  CodeSet
		want string
	}{
		{1<<codes.OK | 1<<codes.PermissionDenied | 1<<codes.Unauthenticated, "ok,permission-denied,unauthenticated"},
		{1 << 20, "code-20"},
	} {
		if got := tt.set.String(); got != tt.want {
			t.Errorf("CodeSet(%#x).String() = %q, want %q", uint32(tt.set), got, tt.want)
		}
	}
	if !RetryableCodes.Has(codes.Unavailable) || RetryableCodes.Has(codes.PermissionDenied) || RetryableCodes.Has(codes.Code(40)) {
		t.Error("RetryableCodes.Has is wrong")
	}
	// Reference: gRFC A44, Converting Envoy RetryPolicy to gRPC RetryPolicy;
	// GEP-3440, API (GRPCRouteRetryCondition); grpc-go unmarshal_rds.go
	// generateRetryConfig (TrimSpace, ToLower).
}

// TestCallRejectsInputsOutOfOrder checks the invariants AttemptDone and
// BeginRetry assert: one outcome per attempt, a retry only when one was
// asked for, and no attempt that ends before it started.
func TestCallRejectsInputsOutOfOrder(t *testing.T) {
	p := PolicyFromXDS("unavailable", nil, 0, 0)
	r := sim.NewStream(10, "call")
	for _, tt := range []struct {
		name string
		run  func(c *Call)
		want string
	}{
		{"AttemptDone before Start", func(c *Call) {
			c.AttemptDone(0, codes.OK, nil, r)
		}, "no attempt in flight (the call is idle)"},
		{"AttemptDone twice for one attempt", func(c *Call) {
			c.Start(&p, 0, 0)
			c.AttemptDone(ms(1), codes.Unavailable, nil, r)
			c.AttemptDone(ms(2), codes.Unavailable, nil, r)
		}, "no attempt in flight (the call is backing off)"},
		{"AttemptDone after the RPC is over", func(c *Call) {
			c.Start(&p, 0, 0)
			c.AttemptDone(ms(1), codes.OK, nil, r)
			c.AttemptDone(ms(2), codes.OK, nil, r)
		}, "no attempt in flight (the call is done)"},
		{"BeginRetry with no retry pending", func(c *Call) {
			c.Start(&p, 0, 0)
			c.BeginRetry()
		}, "no retry pending (the call is attempting)"},
		{"retry attempt ending before its start", func(c *Call) {
			c.Start(&p, 0, 0)
			d := c.AttemptDone(ms(1), codes.Unavailable, nil, r)
			c.BeginRetry()
			c.AttemptDone(d.At-1, codes.OK, nil, r)
		}, "attempt 2 started later"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var c Call
			if msg := panicMessage(func() { tt.run(&c) }); !strings.Contains(msg, tt.want) {
				t.Errorf("panicked with %q, want %q", msg, tt.want)
			}
		})
	}
	// Reference: docs/architecture.md, Style ("Invariants asserted where they can
	// break"); go.etcd.io/raft raft.go (Step rejects messages its state
	// cannot take).
}

// TestCallAllocatesNothing checks that a whole RPC with retries allocates
// nothing and that a Call stays small.
func TestCallAllocatesNothing(t *testing.T) {
	p := PolicyFromXDS("unavailable", ptr[uint32](3), 0, 0)
	th := NewThrottle(100, 2) // two failures and a success per RPC: the bucket stays full
	r := sim.NewStream(11, "call")
	var c Call
	allocs := testing.AllocsPerRun(1000, func() {
		if d := oneRPCWithRetries(&c, &p, &th, r); d.Code != codes.OK {
			t.Fatalf("RPC ended %v, want OK", d.Code)
		}
	})
	if allocs != 0 {
		t.Errorf("an RPC with two retries allocates %v times, want 0", allocs)
	}
	if size := unsafe.Sizeof(Call{}); size > 32 {
		t.Errorf("Call is %d bytes, want at most 32", size)
	}
	// Reference: docs/architecture.md, Performance rules.
}

// oneRPCWithRetries runs an RPC that fails twice with UNAVAILABLE and then
// succeeds.
func oneRPCWithRetries(c *Call, p *RetryPolicy, th *Throttle, r *sim.Rand) Decision {
	c.Start(p, 0, ms(60_000))
	at := sim.Time(0)
	for _, code := range [...]codes.Code{codes.Unavailable, codes.Unavailable, codes.OK} {
		d := c.AttemptDone(at.Add(time.Millisecond), code, th, r)
		if d.Done {
			return d
		}
		c.BeginRetry()
		at = d.At
	}
	panic("unreachable: the third attempt succeeds")
}

func BenchmarkCallWithRetries(b *testing.B) {
	p := PolicyFromXDS("unavailable", ptr[uint32](3), 0, 0)
	th := NewThrottle(100, 2) // two failures and a success per RPC: the bucket stays full
	r := sim.NewStream(12, "call")
	var c Call
	b.ReportAllocs()
	for b.Loop() {
		if d := oneRPCWithRetries(&c, &p, &th, r); d.Code != codes.OK {
			b.Fatalf("RPC ended %v", d.Code)
		}
	}
}
