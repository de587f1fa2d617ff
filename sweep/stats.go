package sweep

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Stat summarises one metric over the seeds of a point: the mean and the
// 95 % confidence interval of the mean (Student's t), over the runs that
// reported a finite value.
type Stat struct {
	N    int
	Mean float64
	// SD is the sample standard deviation; NaN with fewer than two values.
	SD float64
	// Low and High bound the 95 % interval; NaN with fewer than two
	// values.
	Low, High float64
}

// Describe returns the Stat of xs, leaving out NaN and infinities.
func Describe(xs []float64) Stat {
	var vs []float64
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			vs = append(vs, x)
		}
	}
	s := Stat{N: len(vs), Mean: math.NaN(), SD: math.NaN(), Low: math.NaN(), High: math.NaN()}
	if s.N == 0 {
		return s
	}
	sum := 0.0
	for _, v := range vs {
		sum += v
	}
	s.Mean = sum / float64(s.N)
	if s.N < 2 {
		return s
	}
	ss := 0.0
	for _, v := range vs {
		ss += (v - s.Mean) * (v - s.Mean)
	}
	s.SD = math.Sqrt(ss / float64(s.N-1))
	half := tCritical(float64(s.N-1)) * s.SD / math.Sqrt(float64(s.N))
	s.Low, s.High = s.Mean-half, s.Mean+half
	return s
}

// HalfWidth is half the width of the 95 % interval.
func (s Stat) HalfWidth() float64 { return (s.High - s.Low) / 2 }

// tCritical is the 97.5th percentile of Student's t with df degrees of
// freedom: the multiplier of a two-sided 95 % interval.
func tCritical(df float64) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(0.975)
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
		s.Low, s.High = s.Mean, s.Mean
		return s
	}
	df := (va + vb) * (va + vb) / (va*va/float64(sa.N-1) + vb*vb/float64(sb.N-1))
	half := tCritical(df) * se
	s.Low, s.High = s.Mean-half, s.Mean+half
	return s
}

// Paired returns the Stat of the differences b[i] − a[i]: the 95 %
// interval of the mean difference when run i of each variant had the same
// seed (common random numbers). Pairs with a NaN are left out.
func Paired(a, b []float64) Stat {
	d := make([]float64, min(len(a), len(b)))
	for i := range d {
		d[i] = b[i] - a[i]
	}
	return Describe(d)
}

// Text writes the stat for a table: the mean and its interval with num,
// the mean alone from one value, none from no value.
func (s Stat) Text(num func(float64) string, none string) string {
	switch {
	case s.N == 0:
		return none
	case s.N < 2:
		return num(s.Mean)
	}
	return num(s.Mean) + " [" + num(s.Low) + ", " + num(s.High) + "]"
}
