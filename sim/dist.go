package sim

import (
	"fmt"
	"math"
	"time"

	"gonum.org/v1/gonum/stat/distuv"
)

// z99 is the 0.99 quantile of the standard normal distribution.
const z99 = 2.3263478740408408

// A Dist is a probability distribution of durations, such as a link's
// latency or a server's service time. It is a small value, not an
// interface, so it can be stored in configuration and copied freely.
//
// The zero Dist always yields 0.
type Dist struct {
	kind distKind
	// a and b are the parameters as given: the constant, the bounds of a
	// uniform, the mean of an exponential, the median and p99 of a
	// log-normal.
	a, b time.Duration
	// mu and sigma are the log-normal's parameters, derived from a and b.
	mu, sigma float64
}

type distKind uint8

const (
	distConstant distKind = iota
	distUniform
	distExponential
	distLogNormal
)

// Constant returns the distribution that always yields d.
func Constant(d time.Duration) Dist {
	if d < 0 {
		panic(fmt.Sprintf("sim: Constant: duration must not be negative, got %v", d))
	}
	return Dist{kind: distConstant, a: d}
}

// UniformDist returns the uniform distribution over [lo, hi].
// It panics unless 0 <= lo <= hi.
func UniformDist(lo, hi time.Duration) Dist {
	if lo < 0 || hi < lo {
		panic(fmt.Sprintf("sim: UniformDist: need 0 <= lo <= hi, got lo=%v hi=%v", lo, hi))
	}
	return Dist{kind: distUniform, a: lo, b: hi}
}

// Exponential returns the exponential distribution with the given mean.
// It panics if mean is negative; a zero mean always yields 0.
func Exponential(mean time.Duration) Dist {
	if mean < 0 {
		panic(fmt.Sprintf("sim: Exponential: mean must not be negative, got %v", mean))
	}
	return Dist{kind: distExponential, a: mean}
}

// LogNormal returns the log-normal distribution with the given median and
// 99th percentile, the two figures latency measurements usually report.
// Its parameters are mu = ln(median) and sigma = (ln(p99) - mu) / z, where
// z ≈ 2.326 is the 0.99 quantile of the standard normal distribution.
// It panics unless 0 < median <= p99; median == p99 always yields median.
func LogNormal(median, p99 time.Duration) Dist {
	if median <= 0 || p99 < median {
		panic(fmt.Sprintf("sim: LogNormal: need 0 < median <= p99, got median=%v p99=%v", median, p99))
	}
	mu := math.Log(float64(median))
	return Dist{
		kind:  distLogNormal,
		a:     median,
		b:     p99,
		mu:    mu,
		sigma: (math.Log(float64(p99)) - mu) / z99,
	}
}

// Sample draws a duration from d using r, rounded to the nanosecond.
// It is never negative.
func (d Dist) Sample(r *Rand) time.Duration {
	switch d.kind {
	case distUniform:
		if d.a == d.b {
			return d.a
		}
		u := distuv.Uniform{Min: float64(d.a), Max: float64(d.b), Src: r.Source()}
		return DurationOf(u.Rand())
	case distExponential:
		if d.a == 0 {
			return 0
		}
		e := distuv.Exponential{Rate: 1 / float64(d.a), Src: r.Source()}
		return DurationOf(e.Rand())
	case distLogNormal:
		l := distuv.LogNormal{Mu: d.mu, Sigma: d.sigma, Src: r.Source()}
		return DurationOf(l.Rand())
	}
	return d.a
}

// Mean returns the mean of d, rounded to the nanosecond.
func (d Dist) Mean() time.Duration {
	switch d.kind {
	case distUniform:
		return d.a + (d.b-d.a)/2
	case distLogNormal:
		return DurationOf(math.Exp(d.mu + d.sigma*d.sigma/2))
	}
	return d.a
}

// String describes d in the form of its constructor, such as
// "LogNormal(median=10ms, p99=80ms)".
func (d Dist) String() string {
	switch d.kind {
	case distUniform:
		return fmt.Sprintf("Uniform(%v, %v)", d.a, d.b)
	case distExponential:
		return fmt.Sprintf("Exponential(mean=%v)", d.a)
	case distLogNormal:
		return fmt.Sprintf("LogNormal(median=%v, p99=%v)", d.a, d.b)
	}
	return fmt.Sprintf("Constant(%v)", d.a)
}

// Bound returns the largest duration d can yield, and false when d has no
// bound (an exponential or log-normal with any spread).
func (d Dist) Bound() (time.Duration, bool) {
	switch d.kind {
	case distUniform:
		return d.b, true
	case distExponential:
		return 0, d.a == 0
	case distLogNormal:
		return d.a, d.a == d.b
	}
	return d.a, true
}

// Fixed returns the one duration d yields and true when it always yields
// the same one (a constant, or a distribution without spread), and false
// when its draws vary.
func (d Dist) Fixed() (time.Duration, bool) {
	switch d.kind {
	case distUniform:
		return d.a, d.a == d.b
	case distExponential:
		return 0, d.a == 0
	case distLogNormal:
		return d.a, d.sigma == 0
	}
	return d.a, true
}

// Survival returns the probability that a draw of d is longer than x:
// P(S > x), the share of durations that have not ended x after they began.
func (d Dist) Survival(x time.Duration) float64 {
	switch d.kind {
	case distUniform:
		switch {
		case x < d.a:
			return 1
		case x >= d.b:
			return 0
		}
		return float64(d.b-x) / float64(d.b-d.a)
	case distExponential:
		if x < 0 {
			return 1
		}
		if d.a == 0 {
			return 0
		}
		return math.Exp(-float64(x) / float64(d.a))
	case distLogNormal:
		if x <= 0 {
			return 1
		}
		if d.sigma == 0 {
			return boolProb(x < d.a)
		}
		return normalTail((math.Log(float64(x)) - d.mu) / d.sigma)
	}
	return boolProb(x < d.a)
}

// SampleAbove draws a duration from d conditioned on its being longer than
// x, using r: the remaining life of something that began x ago and has not
// ended. Survival(x) must be above 0. It is inverse-transform sampling of
// the conditional distribution, except for the exponential, which is
// memoryless (x plus a fresh draw).
func (d Dist) SampleAbove(r *Rand, x time.Duration) time.Duration {
	var s time.Duration
	switch d.kind {
	case distUniform:
		lo := max(float64(d.a), float64(x))
		s = DurationOf(lo + (float64(d.b)-lo)*r.Float64())
	case distExponential:
		s = max(x, 0) + d.Sample(r)
	case distLogNormal:
		if d.sigma == 0 {
			return d.a
		}
		// The upper tail beyond x has probability q; a draw of it is the
		// standard normal quantile of 1 - v for v uniform in (0, q],
		// taken from erfcinv so that a far tail keeps its precision.
		lo := -math.MaxFloat64
		if x > 0 {
			lo = (math.Log(float64(x)) - d.mu) / d.sigma
		}
		v := (1 - r.Float64()) * normalTail(lo)
		s = DurationOf(math.Exp(d.mu + d.sigma*math.Sqrt2*math.Erfcinv(2*v)))
	default:
		return d.a
	}
	return max(s, x+1) // rounded to the nanosecond, still longer than x
}

// SampleBelow draws a duration from d conditioned on its being at most x,
// using r: how long something took, given that it ended within x of its
// start. Survival(x) must be below 1. It is inverse-transform sampling of
// the conditional distribution: a uniform draw scaled to the probability
// P(S ≤ x), mapped through d's quantile function.
func (d Dist) SampleBelow(r *Rand, x time.Duration) time.Duration {
	var s time.Duration
	u := 1 - r.Float64() // in (0, 1]
	switch d.kind {
	case distUniform:
		hi := min(float64(d.b), float64(x))
		s = DurationOf(float64(d.a) + (hi-float64(d.a))*u)
	case distExponential:
		if d.a == 0 {
			return 0
		}
		// F(s) = 1 − e^(−s/mean): s = −mean·ln(1 − u·F(x)).
		m := float64(d.a)
		s = DurationOf(-m * math.Log1p(u*math.Expm1(-float64(x)/m)))
	case distLogNormal:
		if d.sigma == 0 {
			return d.a
		}
		// The lower tail up to x has probability Φ(z(x)); a draw of it is
		// the standard normal quantile of u·Φ(z(x)), taken from erfcinv
		// so that a far tail keeps its precision.
		hi := math.MaxFloat64
		if x > 0 {
			hi = (math.Log(float64(x)) - d.mu) / d.sigma
		}
		v := u * normalTail(-hi)
		s = DurationOf(math.Exp(d.mu - d.sigma*math.Sqrt2*math.Erfcinv(2*v)))
	default:
		return d.a
	}
	return min(max(s, 0), x) // rounded to the nanosecond, still at most x
}

// normalTail is the standard normal distribution's upper tail at z,
// P(Z > z).
func normalTail(z float64) float64 { return 0.5 * math.Erfc(z/math.Sqrt2) }

func boolProb(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Poisson draws a Poisson-distributed count with the given mean from r:
// how many events of a Poisson process of that mean number fall in an
// interval. A mean that is not positive yields 0.
func (r *Rand) Poisson(mean float64) int {
	if !(mean > 0) {
		return 0
	}
	return int(distuv.Poisson{Lambda: mean, Src: r.Source()}.Rand())
}

// Binomial returns a draw of the number of successes in n trials of
// probability p (gonum distuv.Binomial).
func (r *Rand) Binomial(n int, p float64) int {
	switch {
	case n <= 0 || !(p > 0):
		return 0
	case p >= 1:
		return n
	}
	return int(distuv.Binomial{N: float64(n), P: p, Src: r.Source()}.Rand())
}
