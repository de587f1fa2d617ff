package sweep

import (
	"math"
	"slices"

	"github.com/xdssim/xdssim/scenarios"
)

// Verdict is what the runs of a point (or of a setting, over its
// conditions) say of the constraints, with 95 % confidence.
type Verdict int

const (
	// Undecided: the runs are not enough to tell, either way.
	Undecided Verdict = iota
	// Meets: every constraint holds, with 95 % confidence.
	Meets
	// Breaks: some constraint does not hold, with 95 % confidence.
	Breaks
)

func (v Verdict) String() string {
	switch v {
	case Meets:
		return "meets"
	case Breaks:
		return "breaks"
	}
	return "undecided"
}

// and combines the verdicts of two checks that must both hold.
func (v Verdict) and(w Verdict) Verdict {
	switch {
	case v == Breaks || w == Breaks:
		return Breaks
	case v == Meets && w == Meets:
		return Meets
	}
	return Undecided
}

// Check is one constraint judged on the runs of a point.
type Check struct {
	// N is the number of runs that reported the metric.
	N int
	// Breaches is the number of those runs whose value breaks the bound
	// (a per-run constraint).
	Breaches int
	// Low and High bound, with 95 % confidence each, the share of runs
	// that breach (a per-run constraint: exact binomial bounds), or the
	// mean (a constraint on the mean: the mean's interval).
	Low, High float64
	Verdict   Verdict
}

// judgeRuns judges a per-run constraint c at accepted risk on values, one
// per run: a point meets it when the share of runs breaching it is below
// risk with 95 % confidence (the one-sided Clopper–Pearson upper bound of
// the share is below risk), breaks it when the share is above risk with
// 95 % confidence (the lower bound is above it), and is undecided
// otherwise. A run that reported no value is left out.
func judgeRuns(c scenarios.Constraint, risk float64, values []float64) Check {
	var k Check
	for _, v := range values {
		if math.IsNaN(v) {
			continue
		}
		k.N++
		if !c.Holds(v) {
			k.Breaches++
		}
	}
	k.Low, k.High = BinomialLower(k.Breaches, k.N), BinomialUpper(k.Breaches, k.N)
	switch {
	case k.N > 0 && k.High < risk:
		k.Verdict = Meets
	case k.N > 0 && k.Low > risk:
		k.Verdict = Breaks
	}
	return k
}

// judgeMean judges a constraint on the mean with the mean's 95 % interval
// s: it meets when the whole interval is within the bound, breaks when
// the whole interval is outside it, and is undecided otherwise.
func judgeMean(c scenarios.Constraint, s Stat) Check {
	k := Check{N: s.N, Low: s.Low, High: s.High}
	if s.N < 2 {
		return k
	}
	switch {
	case c.Holds(s.Low) && c.Holds(s.High):
		k.Verdict = Meets
	case !c.Holds(s.Low) && !c.Holds(s.High):
		k.Verdict = Breaks
	}
	return k
}

// knConstants returns h² of Kim and Nelson's procedure KN for k systems,
// a first stage of n0 observations and error α:
//
//	η = ½ [ (2α/(k−1))^(−2/(n0−1)) − 1 ],   h² = 2η(n0−1)
//
// Kim and Nelson, "A fully sequential procedure for indifference-zone
// selection in simulation", ACM TOMACS 11(3), 2001.
func knConstants(k, n0 int, alpha float64) float64 {
	if k < 2 || n0 < 2 {
		return 0
	}
	eta := 0.5 * (math.Pow(2*alpha/float64(k-1), -2/float64(n0-1)) - 1)
	return 2 * eta * float64(n0-1)
}

// knCompare compares systems i and l, whose values per seed are xi and xl
// (the same seeds in the same order; NaN where a run reported nothing),
// for objective o, with first stage n0, h² and indifference zone delta,
// at the looks given (increasing numbers of seeds): i is eliminated at
// look r when its mean over the first r seeds is worse than l's by more
// than
//
//	W(r) = max(0, δ/(2r) · (h²S²/δ² − r))
//
// S² the variance of the first n0 differences. Looking only at some of the
// stages keeps KN's guarantee: elimination needs a crossing at a stage it
// looks at, so fewer looks eliminate less (Kim and Nelson 2001, section
// 3). The seeds are common to both (common random numbers), which KN
// allows and which S² of the differences accounts for.
func knCompare(xi, xl []float64, o scenarios.Objective, n0 int, h2, delta float64, looks []int) (loserI, loserL, done bool) {
	n := min(len(xi), len(xl))
	if n < n0 || n0 < 2 {
		return false, false, false
	}
	d := make([]float64, n0)
	for j := range n0 {
		d[j] = xi[j] - xl[j]
	}
	s2 := 0.0
	if vs := finiteValues(d); len(vs) >= 2 {
		s := sd(vs, mean(vs))
		s2 = s * s
	}
	// The last stage KN may need: past it, W is 0.
	last := n0
	if s2 > 0 && delta > 0 {
		last = max(n0, int(math.Floor(h2*s2/(delta*delta)))+1)
	} else if s2 > 0 {
		last = math.MaxInt
	}
	sumI, sumL := 0.0, 0.0
	r := 0
	for _, look := range looks {
		if look > n {
			break
		}
		for ; r < look; r++ {
			sumI += nanZero(xi[r])
			sumL += nanZero(xl[r])
		}
		w := 0.0
		if s2 > 0 {
			if delta > 0 {
				w = max(0, delta/(2*float64(r))*(h2*s2/(delta*delta)-float64(r)))
			} else {
				w = math.Inf(1)
			}
		}
		diff := (sumI - sumL) / float64(r) // mean(i) − mean(l)
		if o.Maximize {
			diff = -diff
		}
		// diff > 0: i is worse.
		switch {
		case diff > w:
			return true, false, true
		case -diff > w:
			return false, true, true
		}
		if r >= last {
			return false, false, true
		}
	}
	return false, false, false
}

func nanZero(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}

// schedule returns the numbers of seeds a sweep looks at: n0, then
// doubling, up to maxSeeds.
func schedule(n0, maxSeeds int) []int {
	out := []int{n0}
	for n := n0; n < maxSeeds; {
		n = min(maxSeeds, 2*n)
		out = append(out, n)
	}
	return out
}

// nextLook is the number of seeds after n in the schedule; n when n is at
// or past its end.
func nextLook(looks []int, n int) int {
	for _, l := range looks {
		if l > n {
			return l
		}
	}
	return n
}

// delta is the indifference zone for candidates whose first-stage means
// are means.
func delta(d scenarios.Indifference, means []float64) float64 {
	if !d.Relative {
		return d.Value
	}
	m := 0.0
	for _, v := range means {
		if !math.IsNaN(v) {
			m = max(m, math.Abs(v))
		}
	}
	return d.Value * m
}

// competition is one choice among settings: the robust one (under every
// condition), or the one under a single condition.
type competition struct {
	// values[s] holds setting s's objective per seed; nil for a setting
	// not in the competition.
	values  [][]float64
	verdict []Verdict
	// sup is the support of the objective's metric.
	sup Support
}

// Pick is the answer of one competition: the best setting that meets the
// constraints, how sure that is, and what it could not tell apart.
type Pick struct {
	// Best is the setting picked: the best mean of the objective among
	// the settings that meet every constraint and that the selection did
	// not eliminate; -1 when no setting meets the constraints (or, without
	// an objective, always).
	Best int
	// Meeting lists every setting that meets the constraints.
	Meeting []int
	// Undecided lists the settings whose verdict is undecided, and
	// Breaking those that break a constraint.
	Undecided, Breaking []int
	// Better lists the undecided settings whose mean is better than
	// Best's: one of them may be the real best once decided.
	Better []int
	// Seeds is the number of seeds behind Best's figures.
	Seeds int
	// Objective is Best's objective over its seeds.
	Objective Stat
	// Separated says the selection ended: no setting left that it could
	// not tell from Best within the indifference zone. Only then does the
	// probability of correct selection hold.
	Separated bool
	// Survivors are the settings the selection did not eliminate, Best
	// among them.
	Survivors []int
	// Delta is the indifference zone, in the objective's unit.
	Delta float64
	// PCS is the probability of correct selection the procedure
	// guarantees when Separated: Confidence; 0 otherwise.
	PCS float64
	// RunnerUp is the next best setting not known to break a
	// constraint, -1 if none; Diff is the paired difference RunnerUp −
	// Best over their common seeds.
	RunnerUp int
	Diff     Stat
	// Tied lists the settings not known to break a constraint whose
	// paired difference from Best has an interval holding 0: the runs
	// cannot tell them from Best.
	Tied []int
}

// pick settles the competition c for objective o (nil: none), with n0
// first seeds and at most maxSeeds, and returns the pick and the settings
// that need more seeds.
func (c *competition) pick(o *scenarios.Objective, n0, maxSeeds int, looks []int, ind scenarios.Indifference, k int) (Pick, []int) {
	p := Pick{Best: -1, RunnerUp: -1}
	var cands []int
	for s, v := range c.values {
		if v == nil {
			continue
		}
		switch c.verdict[s] {
		case Meets:
			p.Meeting = append(p.Meeting, s)
			cands = append(cands, s)
		case Undecided:
			p.Undecided = append(p.Undecided, s)
			cands = append(cands, s)
		case Breaks:
			p.Breaking = append(p.Breaking, s)
		}
	}
	if o == nil {
		// Nothing to choose: every undecided setting needs seeds.
		return p, slices.Clone(p.Undecided)
	}
	var first []float64
	for _, s := range cands {
		first = append(first, avg(c.values[s][:min(n0, len(c.values[s]))]))
	}
	p.Delta = delta(ind, first)
	h2 := knConstants(max(k, 2), n0, 1-Confidence)
	eliminated := make(map[int]bool)
	for a, i := range cands {
		for _, l := range cands[a+1:] {
			li, ll, _ := knCompare(c.values[i], c.values[l], *o, n0, h2, p.Delta, looks)
			// Only a setting known to meet the constraints eliminates
			// another (Andradóttir and Kim, "Fully sequential procedures
			// for comparing constrained systems via simulation", Naval
			// Research Logistics 57(5), 2010).
			if li && c.verdict[l] == Meets {
				eliminated[i] = true
			}
			if ll && c.verdict[i] == Meets {
				eliminated[l] = true
			}
		}
	}
	mean := func(s int) float64 { return avg(c.values[s]) }
	for _, s := range cands {
		if !eliminated[s] {
			p.Survivors = append(p.Survivors, s)
		}
	}
	// undone marks the survivors KN has not finished comparing with
	// another survivor.
	undone := make(map[int]bool)
	for a, i := range p.Survivors {
		for _, l := range p.Survivors[a+1:] {
			if _, _, done := knCompare(c.values[i], c.values[l], *o, n0, h2, p.Delta, looks); !done {
				undone[i], undone[l] = true, true
			}
		}
	}
	// Seeds go where the answer is open. The leader is the survivor with
	// the best mean that meets the constraints or can still be shown to:
	// while its verdict is open, it alone gets seeds (a setting behind it
	// matters only if it breaks); once it meets them, every survivor it
	// is not yet separated from, or whose verdict is open, gets seeds.
	leader := -1
	for _, s := range p.Survivors {
		if c.verdict[s] != Meets && len(c.values[s]) >= maxSeeds {
			continue // undecided for good
		}
		if leader < 0 || o.Better(mean(s), mean(leader)) {
			leader = s
		}
	}
	var need []int
	switch {
	case leader < 0:
	case c.verdict[leader] == Undecided:
		need = []int{leader}
	default:
		for _, s := range p.Survivors {
			if c.verdict[s] == Undecided || undone[s] {
				need = append(need, s)
			}
		}
	}
	for _, s := range p.Survivors {
		if c.verdict[s] == Meets && (p.Best < 0 || o.Better(mean(s), mean(p.Best))) {
			p.Best = s
		}
	}
	if p.Best < 0 {
		return p, need
	}
	p.Objective = Mean(c.values[p.Best], c.sup)
	p.Seeds = len(c.values[p.Best])
	p.Separated = true
	for _, s := range p.Survivors {
		if s != p.Best && (undone[s] || c.verdict[s] == Undecided) {
			p.Separated = false
		}
	}
	if undone[p.Best] {
		// Best is still being compared with a survivor it cannot yet
		// tell apart.
		for _, s := range p.Survivors {
			if s != p.Best {
				p.Separated = false
			}
		}
	}
	if p.Separated {
		p.PCS = Confidence
	}
	for _, s := range p.Undecided {
		if o.Better(mean(s), mean(p.Best)) {
			p.Better = append(p.Better, s)
		}
	}
	for _, s := range cands {
		if s == p.Best {
			continue
		}
		if p.RunnerUp < 0 || o.Better(mean(s), mean(p.RunnerUp)) {
			p.RunnerUp = s
		}
		a, b := common(c.values[p.Best], c.values[s])
		if d := Paired(a, b); d.N >= 2 && d.Contains(0) {
			p.Tied = append(p.Tied, s)
		}
	}
	if p.RunnerUp >= 0 {
		a, b := common(c.values[p.Best], c.values[p.RunnerUp])
		p.Diff = Paired(a, b)
	}
	return p, need
}

// avg is the mean of the finite values of xs; NaN without one.
func avg(xs []float64) float64 {
	vs := finiteValues(xs)
	if len(vs) == 0 {
		return math.NaN()
	}
	return mean(vs)
}

// common returns the values of two settings on the seeds both have.
func common(a, b []float64) ([]float64, []float64) {
	n := min(len(a), len(b))
	return a[:n], b[:n]
}

// Front is one setting of the Pareto front of two objectives.
type Front struct {
	Setting int
	// Tied lists the other front settings it cannot be told from on
	// either objective (both paired intervals hold 0).
	Tied []int
}

// paretoFront returns the candidates that no other candidate dominates:
// q dominates p when q is better on both objectives with paired 95 %
// intervals that exclude 0, on their common seeds. Means alone would call
// a point dominated by a luckier one.
func paretoFront(cands []int, x, y [][]float64, o [2]scenarios.Objective) []Front {
	better := func(o scenarios.Objective, d Stat) bool {
		// d is q − p: q better when the interval lies wholly on the
		// better side of 0.
		if d.N < 2 {
			return false
		}
		if o.Maximize {
			return d.Low > 0
		}
		return d.High < 0
	}
	tied := func(d Stat) bool { return d.N >= 2 && d.Contains(0) }
	var out []Front
	for _, p := range cands {
		dominated := false
		for _, q := range cands {
			if q == p {
				continue
			}
			px, qx := common(x[p], x[q])
			py, qy := common(y[p], y[q])
			if better(o[0], Paired(px, qx)) && better(o[1], Paired(py, qy)) {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, Front{Setting: p})
		}
	}
	for i := range out {
		for j := range out {
			if i == j {
				continue
			}
			p, q := out[i].Setting, out[j].Setting
			px, qx := common(x[p], x[q])
			py, qy := common(y[p], y[q])
			if tied(Paired(px, qx)) && tied(Paired(py, qy)) {
				out[i].Tied = append(out[i].Tied, q)
			}
		}
	}
	return out
}
