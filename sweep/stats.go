package sweep

import (
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Confidence is the confidence of every interval, bound and verdict a
// sweep reports: 95 %.
const Confidence = 0.95

// Support is the range of values a metric can take, and whether its
// values are counts: what an interval of its mean must stay inside.
type Support struct {
	Min, Max float64
	// Count says the metric counts events (whole numbers): a count that is
	// zero on every run has a Poisson upper bound (the rule of three).
	Count bool
}

// Real is the support of a difference: any real number.
var Real = Support{Min: math.Inf(-1), Max: math.Inf(1)}

// Stat summarises one metric over the runs of a point: the mean and a
// 95 % confidence interval of the mean that stays inside the metric's
// support, over the runs that reported a finite value.
type Stat struct {
	N    int
	Mean float64
	// SD is the sample standard deviation; NaN with fewer than two values.
	SD float64
	// Low and High bound the 95 % interval of the mean; NaN with fewer
	// than two values. High may be +Inf: the runs cannot bound the mean
	// (a few large values among many equal ones).
	Low, High float64
	// Equal says every value was the same; Low and High are then the
	// mean, but for a count that was zero on every run, whose High is the
	// rule of three's bound.
	Equal bool
}

// Mean returns the Stat of xs inside support sup, leaving out NaN and
// infinities. The interval is the studentized (bootstrap-t) bootstrap's,
// with a fixed resampling seed so that the same values always give the
// same interval, cut to the support: a mean lies in its metric's support,
// so the cut loses no coverage. The bootstrap-t keeps its coverage on
// skewed and zero-inflated metrics where Student's t falls short (Efron
// and Tibshirani, "An Introduction to the Bootstrap", 1993, ch. 12;
// docs/tuning-guide.md has the coverage measured on synthetic data); from
// fewer than 5 values it is Student's t, cut to the support. When
// every value is equal the interval is that value; a count that is zero
// on every run gets [0, −ln(0.05)/n], the Poisson bound on its mean per run
// (the rule of three).
func Mean(xs []float64, sup Support) Stat {
	vs := finiteValues(xs)
	s := Stat{N: len(vs), Mean: math.NaN(), SD: math.NaN(), Low: math.NaN(), High: math.NaN()}
	if s.N == 0 {
		return s
	}
	s.Mean = clamp(mean(vs), sup)
	if s.N < 2 {
		return s
	}
	s.SD = sd(vs, s.Mean)
	if s.SD == 0 {
		s.Mean = clamp(vs[0], sup) // not a sum's rounding of it
		s.Equal, s.Low, s.High = true, s.Mean, s.Mean
		if sup.Count && s.Mean == 0 {
			s.High = -math.Log(1-Confidence) / float64(s.N)
		}
		return s
	}
	var lo, hi float64
	if s.N < minBootstrap {
		half := tCritical(float64(s.N-1)) * s.SD / math.Sqrt(float64(s.N))
		lo, hi = s.Mean-half, s.Mean+half
	} else {
		lo, hi = bootstrapT(vs, s.Mean, s.SD)
	}
	s.Low, s.High = clamp(lo, sup), clamp(hi, sup)
	return s
}

// minBootstrap is the fewest values the bootstrap resamples: below it
// there are too few distinct resamples (35 of 4 values) for their spread
// to mean anything, and Mean uses Student's t, cut to the support.
const minBootstrap = 5

// Describe returns the Stat of xs with Student's t interval, leaving out
// NaN and infinities: the textbook interval for a mean of normal values,
// which Welch's interval extends.
func Describe(xs []float64) Stat {
	vs := finiteValues(xs)
	s := Stat{N: len(vs), Mean: math.NaN(), SD: math.NaN(), Low: math.NaN(), High: math.NaN()}
	if s.N == 0 {
		return s
	}
	s.Mean = mean(vs)
	if s.N < 2 {
		return s
	}
	s.SD = sd(vs, s.Mean)
	s.Equal = s.SD == 0
	half := tCritical(float64(s.N-1)) * s.SD / math.Sqrt(float64(s.N))
	s.Low, s.High = s.Mean-half, s.Mean+half
	return s
}

func finiteValues(xs []float64) []float64 {
	vs := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			vs = append(vs, x)
		}
	}
	return vs
}

func mean(vs []float64) float64 {
	sum := 0.0
	for _, v := range vs {
		sum += v
	}
	return sum / float64(len(vs))
}

// sd is the sample standard deviation of vs around m; 0 when the values
// are equal but for float rounding (within 10⁻¹² of their magnitude),
// where summing would leave noise (4.1 − 1.1 and 3.9 − 0.9 differ).
func sd(vs []float64, m float64) float64 {
	lo, hi := slices.Min(vs), slices.Max(vs)
	if hi-lo <= 1e-12*max(math.Abs(lo), math.Abs(hi)) {
		return 0
	}
	ss := 0.0
	for _, v := range vs {
		ss += (v - m) * (v - m)
	}
	return math.Sqrt(ss / float64(len(vs)-1))
}

// clamp puts v inside sup (NaN stays NaN).
func clamp(v float64, sup Support) float64 {
	return max(sup.Min, min(sup.Max, v))
}

// bootstrapResamples is B of the bootstrap: (B+1)·0.025 is a whole
// number, so the 2.5 % and 97.5 % points are order statistics.
const bootstrapResamples = 1999

// bootstrapT returns the 95 % bootstrap-t interval of the mean of vs (mean
// m, standard deviation s > 0): resample vs B times, studentize each
// resample's mean by its own standard error, and invert the 2.5 % and
// 97.5 % points of those t values around m. A resample whose values are
// all equal has no standard error; its t is the limit, ±∞ (0 when its
// mean is m), so that a sample the resamples cannot spread out gives an
// unbounded side rather than a falsely narrow one. The resampling seed is
// fixed: the interval is a function of the values.
func bootstrapT(vs []float64, m, s float64) (lo, hi float64) {
	n := len(vs)
	rng := rand.New(rand.NewPCG(0x5eed_b007, uint64(n)))
	ts := make([]float64, bootstrapResamples)
	y := make([]float64, n)
	for b := range ts {
		sum := 0.0
		for i := range y {
			y[i] = vs[rng.IntN(n)]
			sum += y[i]
		}
		mb := sum / float64(n)
		sb := sd(y, mb)
		switch {
		case sb > 0:
			ts[b] = (mb - m) / (sb / math.Sqrt(float64(n)))
		case y[0] > m:
			ts[b] = math.Inf(1)
		case y[0] < m:
			ts[b] = math.Inf(-1)
		}
	}
	slices.Sort(ts)
	k := int(math.Round((1 - Confidence) / 2 * (bootstrapResamples + 1)))
	se := s / math.Sqrt(float64(n))
	lo = m - ts[bootstrapResamples-k]*se
	hi = m - ts[k-1]*se
	return lo, hi
}

// HalfWidth is half the width of the 95 % interval.
func (s Stat) HalfWidth() float64 { return (s.High - s.Low) / 2 }

// Contains reports whether the interval holds v.
func (s Stat) Contains(v float64) bool { return s.Low <= v && v <= s.High }

// tCritical is the 97.5th percentile of Student's t with df degrees of
// freedom: the multiplier of a two-sided 95 % interval.
func tCritical(df float64) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(0.5 + Confidence/2)
}

// Welch returns the 95 % interval of mean(b) − mean(a) for two
// independent samples (Welch's t, unequal variances): what the difference
// of two variants would be known to without pairing runs by seed.
func Welch(a, b []float64) Stat {
	sa, sb := Describe(a), Describe(b)
	s := Stat{N: min(sa.N, sb.N), Mean: sb.Mean - sa.Mean, SD: math.NaN(), Low: math.NaN(), High: math.NaN()}
	if sa.N < 2 || sb.N < 2 {
		return s
	}
	va, vb := sa.SD*sa.SD/float64(sa.N), sb.SD*sb.SD/float64(sb.N)
	se := math.Sqrt(va + vb)
	if se == 0 {
		s.Low, s.High, s.Equal = s.Mean, s.Mean, true
		return s
	}
	df := (va + vb) * (va + vb) / (va*va/float64(sa.N-1) + vb*vb/float64(sb.N-1))
	half := tCritical(df) * se
	s.Low, s.High = s.Mean-half, s.Mean+half
	return s
}

// Paired returns the Stat of the differences b[i] − a[i] (bootstrap-t, any
// real value): the 95 % interval of the mean difference when run i of each
// variant had the same seed (common random numbers). Pairs with a NaN are
// left out.
func Paired(a, b []float64) Stat {
	d := make([]float64, min(len(a), len(b)))
	for i := range d {
		d[i] = b[i] - a[i]
	}
	return Mean(d, Real)
}

// Text writes the stat for a table with FormatFigure: "12.3 [10.1, 14.5]",
// "all 5 = 0" when every value was equal (with the rule of three's bound
// for a count of zero: "all 5 = 0 (mean ≤ 0.6)"), the mean alone from one
// value, none from no value.
func (s Stat) Text(none string) string {
	switch {
	case s.N == 0:
		return none
	case s.N < 2:
		return FormatFigure(s.Mean)
	case s.Equal && s.High > s.Mean:
		return "all " + FormatFigure(float64(s.N)) + " = " + FormatFigure(s.Mean) + " (mean ≤ " + FormatFigure(s.High) + ")"
	case s.Equal:
		return "all " + FormatFigure(float64(s.N)) + " = " + FormatFigure(s.Mean)
	}
	end := "]"
	if math.IsInf(s.High, 1) {
		end = ")" // an open end: the runs do not bound it
	}
	return FormatFigure(s.Mean) + " [" + FormatFigure(s.Low) + ", " + FormatFigure(s.High) + end
}

// Binomial bounds on a share of runs: x of n runs had some outcome (a
// breach), and the share p of runs with it in the long run is bounded
// with 95 % confidence by the exact (Clopper–Pearson) one-sided bounds,
// the Beta quantiles
//
//	lower = Beta(x, n−x+1).Quantile(0.05)   (0 when x = 0)
//	upper = Beta(x+1, n−x).Quantile(0.95)   (1 when x = n)
//
// Clopper and Pearson, "The use of confidence or fiducial limits
// illustrated in the case of the binomial", Biometrika 26 (1934). With no
// breach in n runs the upper bound is 1 − 0.05^(1/n): 45 % for 5 runs,
// under 5 % from 59 runs.
func BinomialUpper(x, n int) float64 { return binomialUpper(x, n, 1-Confidence) }

// BinomialLower is the lower one-sided 95 % Clopper–Pearson bound of a
// share: see BinomialUpper.
func BinomialLower(x, n int) float64 { return binomialLower(x, n, 1-Confidence) }

// binomialUpper is the Clopper–Pearson upper bound with tail probability
// tail above it (0.05 one-sided, 0.025 for a two-sided 95 % interval).
func binomialUpper(x, n int, tail float64) float64 {
	if n <= 0 || x >= n {
		return 1
	}
	return distuv.Beta{Alpha: float64(x + 1), Beta: float64(n - x)}.Quantile(1 - tail)
}

// binomialLower is the Clopper–Pearson lower bound with tail probability
// tail below it.
func binomialLower(x, n int, tail float64) float64 {
	if n <= 0 || x <= 0 {
		return 0
	}
	return distuv.Beta{Alpha: float64(x), Beta: float64(n - x + 1)}.Quantile(tail)
}

// SeedsToDecide is the fewest runs in which no breach bounds the share of
// breaching runs below risk with 95 % confidence: 59 for 5 %, 29 for
// 10 %.
func SeedsToDecide(risk float64) int {
	if risk <= 0 || risk >= 1 {
		return 1
	}
	return int(math.Ceil(math.Log(1-Confidence) / math.Log(1-risk)))
}

// QuantileBound is a distribution-free one-sided confidence bound on a
// quantile of the distribution some values were drawn from: with 95 %
// confidence, at least a share Share of the distribution lies on the safe
// side of Value.
type QuantileBound struct {
	// Value is an order statistic of the values; NaN without values.
	Value float64
	// Rank is its 1-based rank counted from the safe end.
	Rank int
	// Share is the share of the distribution the bound holds for: the
	// share asked for when the values are enough to give it, else the
	// largest share the extreme value gives, 0.05^(1/n).
	Share float64
	// Enough says the values were enough for the share asked for.
	Enough bool
}

// LowerQuantileBound returns a value below which at most a share 1−share
// of the distribution lies, with 95 % confidence: the r-th smallest value,
// r the largest rank with P(Binomial(n, 1−share) ≥ r) ≥ 0.95 (the
// nonparametric tolerance bound of Wilks, "Determination of sample sizes
// for setting tolerance limits", Ann. Math. Statist. 12, 1941). With too
// few values even the smallest is not enough; it is returned with the
// share it does give. Values may hold ±Inf (a seed whose threshold lies
// beyond the searched range).
func LowerQuantileBound(values []float64, share float64) QuantileBound {
	vs := slices.Clone(values)
	vs = slices.DeleteFunc(vs, math.IsNaN)
	slices.Sort(vs)
	n := len(vs)
	if n == 0 {
		return QuantileBound{Value: math.NaN()}
	}
	q := 1 - share
	bin := distuv.Binomial{N: float64(n), P: q}
	r := 0
	for k := 1; k <= n; k++ {
		// P(X >= k) = 1 − P(X <= k−1).
		if 1-bin.CDF(float64(k-1)) >= Confidence {
			r = k
		} else {
			break
		}
	}
	if r == 0 {
		return QuantileBound{Value: vs[0], Rank: 1, Share: math.Pow(1-Confidence, 1/float64(n))}
	}
	return QuantileBound{Value: vs[r-1], Rank: r, Share: share, Enough: true}
}

// UpperQuantileBound is LowerQuantileBound from the top: a value above
// which at most a share 1−share of the distribution lies.
func UpperQuantileBound(values []float64, share float64) QuantileBound {
	neg := make([]float64, len(values))
	for i, v := range values {
		neg[i] = -v
	}
	b := LowerQuantileBound(neg, share)
	b.Value = -b.Value
	return b
}
