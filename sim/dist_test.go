package sim

import (
	"math"
	"slices"
	"strconv"
	"testing"
	"time"
)

// quantile says a distribution has the value want at probability p.
type quantile struct{ p, want float64 }

func TestDistSampleMatchesItsDistribution(t *testing.T) {
	// 100 000 draws put the sample mean and quantiles within a few
	// percent of the distribution's.
	const n = 100_000
	ms := float64(time.Millisecond)
	tests := []struct {
		dist      Dist
		wantMean  float64 // in nanoseconds
		quantiles []quantile
		tolerance float64 // relative
	}{
		{
			dist:      Constant(3 * time.Millisecond),
			wantMean:  3 * ms,
			quantiles: []quantile{{0, 3 * ms}, {0.5, 3 * ms}, {1, 3 * ms}},
		},
		{
			dist:      UniformDist(10*time.Millisecond, 30*time.Millisecond),
			wantMean:  20 * ms,
			quantiles: []quantile{{0.01, 10.2 * ms}, {0.25, 15 * ms}, {0.5, 20 * ms}, {0.99, 29.8 * ms}},
			tolerance: 0.01,
		},
		{
			dist:     Exponential(100 * time.Millisecond),
			wantMean: 100 * ms,
			quantiles: []quantile{
				{0.5, 100 * ms * math.Ln2},
				{0.9, 100 * ms * math.Log(10)},
				{0.99, 100 * ms * math.Log(100)},
			},
			tolerance: 0.03,
		},
		{
			dist:     LogNormal(10*time.Millisecond, 80*time.Millisecond),
			wantMean: 10 * ms * math.Exp(math.Pow(math.Log(8)/z99, 2)/2),
			quantiles: []quantile{
				{0.5, 10 * ms},
				{0.99, 80 * ms},
			},
			tolerance: 0.03,
		},
	}
	for _, tt := range tests {
		t.Run(tt.dist.String(), func(t *testing.T) {
			r := NewStream(1, tt.dist.String())
			x := make([]float64, n)
			var sum float64
			for i := range x {
				d := tt.dist.Sample(r)
				if d < 0 {
					t.Fatalf("Sample() = %v, want >= 0", d)
				}
				x[i] = float64(d)
				sum += x[i]
			}
			slices.Sort(x)
			within := func(what string, got, want float64) {
				t.Helper()
				if math.Abs(got-want) > tt.tolerance*want {
					t.Errorf("%s = %v, want %v ± %.0f%%", what, time.Duration(got), time.Duration(want), 100*tt.tolerance)
				}
			}
			within("sample mean", sum/n, tt.wantMean)
			within("Mean()", float64(tt.dist.Mean()), tt.wantMean)
			for _, q := range tt.quantiles {
				within("quantile "+strconv.FormatFloat(q.p, 'g', -1, 64), x[min(int(q.p*n), n-1)], q.want)
			}
		})
	}
}

func TestDistConstructorsRejectInvalidParameters(t *testing.T) {
	tests := []struct {
		name string
		make func()
		want string
	}{
		{"LogNormal with p99 below median", func() { LogNormal(10*time.Millisecond, 5*time.Millisecond) },
			"sim: LogNormal: need 0 < median <= p99, got median=10ms p99=5ms"},
		{"LogNormal with zero median", func() { LogNormal(0, time.Millisecond) },
			"sim: LogNormal: need 0 < median <= p99, got median=0s p99=1ms"},
		{"UniformDist with hi below lo", func() { UniformDist(2, 1) },
			"sim: UniformDist: need 0 <= lo <= hi, got lo=2ns hi=1ns"},
		{"negative Exponential mean", func() { Exponential(-1) },
			"sim: Exponential: mean must not be negative, got -1ns"},
		{"negative Constant", func() { Constant(-1) },
			"sim: Constant: duration must not be negative, got -1ns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustPanic(t, tt.make); got != tt.want {
				t.Errorf("panic %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDegenerateDistsYieldTheirOnlyValue(t *testing.T) {
	r := NewStream(1, "degenerate")
	tests := []struct {
		dist Dist
		want time.Duration
	}{
		{Dist{}, 0},
		{Constant(0), 0},
		{Exponential(0), 0},
		{UniformDist(time.Second, time.Second), time.Second},
		{LogNormal(time.Second, time.Second), time.Second},
	}
	for _, tt := range tests {
		for range 100 {
			if got := tt.dist.Sample(r); got != tt.want {
				t.Fatalf("%v.Sample() = %v, want %v", tt.dist, got, tt.want)
			}
		}
		if got := tt.dist.Mean(); got != tt.want {
			t.Errorf("%v.Mean() = %v, want %v", tt.dist, got, tt.want)
		}
	}
}

func TestDistString(t *testing.T) {
	tests := []struct {
		dist Dist
		want string
	}{
		{Dist{}, "Constant(0s)"},
		{Constant(5 * time.Millisecond), "Constant(5ms)"},
		{UniformDist(time.Millisecond, 2*time.Second), "Uniform(1ms, 2s)"},
		{Exponential(time.Second), "Exponential(mean=1s)"},
		{LogNormal(10*time.Millisecond, 80*time.Millisecond), "LogNormal(median=10ms, p99=80ms)"},
	}
	for _, tt := range tests {
		if got := tt.dist.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestSamplingAllocatesNothing(t *testing.T) {
	r := NewStream(1, "allocs")
	dists := []Dist{
		Constant(time.Millisecond),
		UniformDist(time.Millisecond, 2*time.Millisecond),
		Exponential(time.Millisecond),
		LogNormal(time.Millisecond, 10*time.Millisecond),
	}
	allocs := testing.AllocsPerRun(100, func() {
		for _, d := range dists {
			d.Sample(r)
		}
		r.Exp(time.Second)
		r.Jitter(time.Second, 0.2)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per round of draws, want 0", allocs)
	}
}

// TestBoundIsTheLargestDraw checks Bound for each distribution.
func TestBoundIsTheLargestDraw(t *testing.T) {
	for _, tt := range []struct {
		d     Dist
		want  time.Duration
		bound bool
	}{
		{Constant(3 * time.Millisecond), 3 * time.Millisecond, true},
		{UniformDist(time.Millisecond, 5*time.Millisecond), 5 * time.Millisecond, true},
		{Exponential(0), 0, true},
		{Exponential(time.Millisecond), 0, false},
		{LogNormal(time.Millisecond, time.Millisecond), time.Millisecond, true},
		{LogNormal(time.Millisecond, 10*time.Millisecond), 0, false},
		{Dist{}, 0, true},
	} {
		got, ok := tt.d.Bound()
		if ok != tt.bound || ok && got != tt.want {
			t.Errorf("%v.Bound() = %v, %v; want %v, %v", tt.d, got, ok, tt.want, tt.bound)
		}
		if !ok {
			continue
		}
		r := NewStream(1, "bound")
		for range 1000 {
			if x := tt.d.Sample(r); x > got {
				t.Fatalf("%v drew %v above its bound %v", tt.d, x, got)
			}
		}
	}
}

// TestPoissonHasItsMeanAndVariance checks the Poisson draws' moments, for
// a small and a large mean, and that they come from the stream.
func TestPoissonHasItsMeanAndVariance(t *testing.T) {
	for _, mean := range []float64{0.3, 5, 400} {
		r := NewStream(7, "poisson")
		const n = 20000
		var sum, sq float64
		for range n {
			k := float64(r.Poisson(mean))
			sum += k
			sq += k * k
		}
		m := sum / n
		v := sq/n - m*m
		// The sample mean's standard error is sqrt(mean/n).
		if se := math.Sqrt(mean / n); math.Abs(m-mean) > 5*se {
			t.Errorf("Poisson(%v): sample mean %v, more than 5 standard errors off", mean, m)
		}
		if math.Abs(v-mean)/mean > 0.1 {
			t.Errorf("Poisson(%v): sample variance %v, want about the mean", mean, v)
		}
		a, b := NewStream(7, "poisson"), NewStream(7, "poisson")
		if a.Poisson(mean) != b.Poisson(mean) {
			t.Errorf("Poisson(%v) is not deterministic", mean)
		}
	}
	if NewStream(1, "x").Poisson(0) != 0 || NewStream(1, "x").Poisson(-1) != 0 {
		t.Error("a mean that is not positive yielded events")
	}
}

// TestBinomialHasItsMeanAndVariance checks the binomial draws' moments,
// and the trials and probabilities that need no draw.
func TestBinomialHasItsMeanAndVariance(t *testing.T) {
	for _, tc := range []struct {
		n int
		p float64
	}{{1, 0.5}, {10, 0.1}, {1000, 0.3}, {100000, 0.001}} {
		r := NewStream(7, "binomial")
		const draws = 20000
		var sum, sq float64
		for range draws {
			k := float64(r.Binomial(tc.n, tc.p))
			sum += k
			sq += k * k
		}
		mean, variance := float64(tc.n)*tc.p, float64(tc.n)*tc.p*(1-tc.p)
		m := sum / draws
		v := sq/draws - m*m
		if se := math.Sqrt(variance / draws); math.Abs(m-mean) > 5*se {
			t.Errorf("Binomial(%d, %v): sample mean %v, want %v within 5 standard errors", tc.n, tc.p, m, mean)
		}
		if math.Abs(v-variance)/variance > 0.1 {
			t.Errorf("Binomial(%d, %v): sample variance %v, want about %v", tc.n, tc.p, v, variance)
		}
	}
	for _, tc := range []struct {
		n    int
		p    float64
		want int
	}{{0, 0.5, 0}, {-3, 0.5, 0}, {7, 0, 0}, {7, math.NaN(), 0}, {7, 1, 7}, {7, 1.5, 7}} {
		if got := NewStream(1, "x").Binomial(tc.n, tc.p); got != tc.want {
			t.Errorf("Binomial(%d, %v) = %d, want %d", tc.n, tc.p, got, tc.want)
		}
	}
}

// TestSurvivalIsTheShareOfLongerDraws checks Survival against the share of
// 100 000 draws longer than x, at points below, inside and past each
// distribution's range (within 5 standard errors of a binomial share).
func TestSurvivalIsTheShareOfLongerDraws(t *testing.T) {
	ms := time.Millisecond
	for _, tt := range []struct {
		d  Dist
		xs []time.Duration
	}{
		{Constant(3 * ms), []time.Duration{0, 2 * ms, 3 * ms, 4 * ms}},
		{UniformDist(10*ms, 30*ms), []time.Duration{5 * ms, 10 * ms, 15 * ms, 29 * ms, 30 * ms, 40 * ms}},
		{Exponential(100 * ms), []time.Duration{-ms, 0, 10 * ms, 100 * ms, 300 * ms}},
		{Exponential(0), []time.Duration{0, ms}},
		{LogNormal(10*ms, 80*ms), []time.Duration{0, ms, 10 * ms, 40 * ms, 80 * ms, 200 * ms}},
		{LogNormal(10*ms, 10*ms), []time.Duration{9 * ms, 10 * ms}},
	} {
		t.Run(tt.d.String(), func(t *testing.T) {
			const n = 100_000
			r := NewStream(3, "survival")
			draws := make([]time.Duration, n)
			for i := range draws {
				draws[i] = tt.d.Sample(r)
			}
			for _, x := range tt.xs {
				longer := 0
				for _, s := range draws {
					if s > x {
						longer++
					}
				}
				p := tt.d.Survival(x)
				share := float64(longer) / n
				if se := math.Sqrt(p * (1 - p) / n); math.Abs(share-p) > 5*se+1e-9 {
					t.Errorf("Survival(%v) = %.5f; %.5f of the draws are longer", x, p, share)
				}
			}
		})
	}
}

// TestConditionalDrawsAreRejectionSampling checks SampleAbove(x) and
// SampleBelow(x) against draws of Sample kept only when longer than x, or
// at most x (rejection sampling, the definition of the conditional
// distribution), x in the body and far in the tails of each distribution.
func TestConditionalDrawsAreRejectionSampling(t *testing.T) {
	ms := time.Millisecond
	for _, tt := range []struct {
		d     Dist
		x     time.Duration
		above bool
	}{
		{Constant(3 * ms), 2 * ms, true},
		{UniformDist(10*ms, 30*ms), 5 * ms, true},
		{UniformDist(10*ms, 30*ms), 22 * ms, true},
		{Exponential(100 * ms), 0, true},
		{Exponential(100 * ms), 250 * ms, true},
		{LogNormal(10*ms, 80*ms), 0, true},
		{LogNormal(10*ms, 80*ms), 5 * ms, true},
		{LogNormal(10*ms, 80*ms), 60 * ms, true},
		{LogNormal(10*ms, 10*ms), 9 * ms, true},
		{Constant(3 * ms), 3 * ms, false},
		{Constant(3 * ms), 5 * ms, false},
		{UniformDist(10*ms, 30*ms), 12 * ms, false},
		{UniformDist(10*ms, 30*ms), 40 * ms, false},
		{Exponential(100 * ms), 10 * ms, false},
		{Exponential(100 * ms), 250 * ms, false},
		{LogNormal(10*ms, 80*ms), 2 * ms, false},
		{LogNormal(10*ms, 80*ms), 10 * ms, false},
		{LogNormal(10*ms, 80*ms), 60 * ms, false},
		{LogNormal(10*ms, 10*ms), 11 * ms, false},
	} {
		in, draw, name := func(s time.Duration) bool { return s <= tt.x }, tt.d.SampleBelow, "<="
		if tt.above {
			in, draw, name = func(s time.Duration) bool { return s > tt.x }, tt.d.SampleAbove, ">"
		}
		t.Run(tt.d.String()+name+tt.x.String(), func(t *testing.T) {
			checkConditionalDraw(t, tt.d, in, func(r *Rand) time.Duration { return draw(r, tt.x) })
		})
	}
}

// checkConditionalDraw compares 40 000 draws of draw, each of which must
// satisfy in, with as many draws of d kept when they satisfy in: their
// means and medians must agree within 3 %.
func checkConditionalDraw(t *testing.T, d Dist, in func(time.Duration) bool, draw func(*Rand) time.Duration) {
	t.Helper()
	const n = 40_000
	r := NewStream(5, "conditional")
	var got, kept []float64
	for len(kept) < n {
		if s := d.Sample(r); in(s) {
			kept = append(kept, float64(s))
		}
	}
	for range n {
		s := draw(r)
		if !in(s) {
			t.Fatalf("drew %v, outside the condition", s)
		}
		got = append(got, float64(s))
	}
	slices.Sort(got)
	slices.Sort(kept)
	mean := func(xs []float64) float64 {
		var s float64
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	for _, c := range []struct {
		what      string
		got, want float64
	}{{"mean", mean(got), mean(kept)}, {"median", got[n/2], kept[n/2]}} {
		if math.Abs(c.got-c.want) > 0.03*c.want {
			t.Errorf("%s %v, rejection sampling's %v", c.what, time.Duration(c.got), time.Duration(c.want))
		}
	}
}
