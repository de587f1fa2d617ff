package sweep

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xdssim/xdssim/scenarios"
	"github.com/xdssim/xdssim/stamp"
)

// Find is a threshold search: for each seed, the value of Key between Lo
// and Hi at which Constraint stops (or starts) holding, found by bisection
// (for example the restart fraction at which a reconnect storm's queue
// outgrows a bound: the metastable threshold), and from the seeds' limits
// a bound that holds on a share of seeds with 95 % confidence.
type Find struct {
	Key string
	// Lo and Hi bound the search, both durations, both integers or both
	// numbers, as --set takes them.
	Lo, Hi     string
	Constraint scenarios.Constraint
	// MaxSteps bounds each seed's bisection steps after the two ends.
	MaxSteps int
	// Resolution, when above 0, is the bracket width at which a seed's
	// bisection stops; 0: a tenth of the seed-to-seed spread of the
	// thresholds (never coarser than the range / 256, never finer than
	// the key's grid).
	Resolution float64
	// Coverage is the share of seeds the safe bound must hold on (0.9).
	Coverage float64
	Seeds    []uint64
}

// ParseFind reads --find's "key=lo..hi".
func ParseFind(arg string) (key, lo, hi string, err error) {
	key, span, ok := strings.Cut(arg, "=")
	lo, hi, ok2 := strings.Cut(span, "..")
	key, lo, hi = strings.TrimSpace(key), strings.TrimSpace(lo), strings.TrimSpace(hi)
	if !ok || !ok2 || key == "" || lo == "" || hi == "" {
		return "", "", "", fmt.Errorf("--find %s: expected key=lo..hi, such as fleet.restart[0].fraction=0.1..1.0", arg)
	}
	return key, lo, hi, nil
}

// scale is how a key's values map to numbers: durations in seconds,
// integers, or floats.
type scale int

const (
	durationScale scale = iota
	intScale
	floatScale
)

func parseBounds(lo, hi string) (scale, float64, float64, error) {
	if a, err := time.ParseDuration(lo); err == nil {
		b, err := time.ParseDuration(hi)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("%s is a duration but %s is not", lo, hi)
		}
		return durationScale, a.Seconds(), b.Seconds(), nil
	}
	a, errA := strconv.ParseInt(lo, 10, 64)
	b, errB := strconv.ParseInt(hi, 10, 64)
	if errA == nil && errB == nil {
		return intScale, float64(a), float64(b), nil
	}
	x, errA := strconv.ParseFloat(lo, 64)
	y, errB := strconv.ParseFloat(hi, 64)
	if errA != nil || errB != nil || math.IsInf(x, 0) || math.IsInf(y, 0) || math.IsNaN(x) || math.IsNaN(y) {
		return 0, 0, 0, fmt.Errorf("expected lo and hi both durations or both finite numbers, found %s and %s", lo, hi)
	}
	return floatScale, x, y, nil
}

// text writes v as --set takes it.
func (s scale) text(v float64) string {
	switch s {
	case durationScale:
		return time.Duration(math.Round(v*1000) * float64(time.Millisecond)).String()
	case intScale:
		return strconv.FormatInt(int64(math.Round(v)), 10)
	}
	t := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.ContainsAny(t, ".e") {
		t += ".0"
	}
	return t
}

// round puts v on the key's grid: a whole millisecond or a whole number.
func (s scale) round(v float64) float64 {
	switch s {
	case durationScale:
		return math.Round(v*1000) / 1000
	case intScale:
		return math.Round(v)
	}
	return v
}

// grid is the finest step of the key: a millisecond, one, or 0.
func (s scale) grid() float64 {
	switch s {
	case durationScale:
		return 0.001
	case intScale:
		return 1
	}
	return 0
}

// The two ways a constraint can turn as the key grows.
const (
	HoldsBelow = "holds below"
	HoldsAbove = "holds above"
)

// SeedThreshold is one seed's outcome of a threshold search.
type SeedThreshold struct {
	Seed uint64 `json:"seed"`
	// HoldsAtLo and HoldsAtHi say whether the constraint holds at the
	// two ends.
	HoldsAtLo bool `json:"holds_at_lo"`
	HoldsAtHi bool `json:"holds_at_hi"`
	// Bracket is the last bracket of the bisection, [last value with the
	// answer at lo, first value with the answer at hi]: the threshold lies
	// in it. Null without a crossing.
	Bracket [2]*float64 `json:"bracket"`
	// Threshold is the first value found from the safe side at which the
	// constraint breaks: Bracket's end on the unsafe side. Null without
	// a crossing.
	Threshold *float64 `json:"threshold"`
	// Limit is the last value known to hold on this seed, coming from the
	// safe side: Bracket's safe end; lo or hi's side at infinity when the
	// constraint holds (or breaks) on the whole range.
	Limit float64 `json:"-"`
	Steps int     `json:"steps"`
}

// FindResult is the outcome of a threshold search.
type FindResult struct {
	// Build is the build of xdssim that made the runs (Options.Build).
	Build stamp.Build `json:"build"`
	// ScenarioSHA256 is the SHA-256 of the scenario resolved with the
	// search's overrides (scenarios.Scenario.SHA256), before the searched
	// key and the seeds are set.
	ScenarioSHA256 string `json:"scenario_sha256"`
	Key            string `json:"key"`
	Constraint     string `json:"constraint"`
	// Unit is "s" for a duration key, "" otherwise.
	Unit string  `json:"unit"`
	Lo   float64 `json:"lo"`
	Hi   float64 `json:"hi"`
	// Direction is HoldsBelow or HoldsAbove: the side of the threshold
	// where the constraint holds, on most seeds.
	Direction string          `json:"direction"`
	Seeds     []SeedThreshold `json:"seeds"`
	// Crossing is the number of seeds whose constraint turns between lo
	// and hi.
	Crossing int `json:"crossing"`
	// Median is the median of the thresholds of the crossing seeds.
	Median *float64 `json:"median"`
	// Spread is the standard deviation of those thresholds.
	Spread *float64 `json:"spread"`
	// Resolution is the bracket width the bisection refined to.
	Resolution float64 `json:"resolution"`
	// Safe is the bound the constraint holds up to (HoldsBelow: values
	// at or below it; HoldsAbove: at or above it) on at least
	// Safe.Share of seeds, with 95 % confidence: an order statistic of
	// the seeds' limits (a distribution-free tolerance bound).
	Safe SafeBound `json:"safe"`
	Runs int       `json:"runs"`
}

// SafeBound is the deployable answer of a threshold search.
type SafeBound struct {
	// Value is the bound; null when the seeds cannot give one inside
	// [lo, hi] (the constraint already breaks at the safe end on too
	// many seeds).
	Value *float64 `json:"value"`
	// Beyond says the constraint holds on the whole range on enough
	// seeds: Value is the range's end, and the bound may lie past it.
	Beyond bool `json:"beyond_range"`
	// Share is the share of seeds it holds on with 95 % confidence; the
	// coverage asked for when the seeds are Enough, else what they give.
	Share      float64 `json:"share"`
	Confidence float64 `json:"confidence"`
	Rank       int     `json:"rank"`
	Enough     bool    `json:"enough_seeds"`
	// Wanted is the coverage asked for.
	Wanted float64 `json:"wanted"`
}

// JSON renders the result as find.json.
func (r *FindResult) JSON() ([]byte, error) {
	return marshalIndent(struct {
		Schema string `json:"schema"`
		*FindResult
	}{"xdssim.find/v2", r})
}

// RunFind runs the threshold search over the scenario src with the
// overrides sets: every seed's bisection advances one step per round, the
// seeds' runs of a round on the pool, so the result does not depend on the
// number of workers. A seed's bisection goes on until its bracket is no
// wider than the resolution: f.Resolution, or a tenth of the spread of
// the thresholds found so far (recomputed each round), so that the
// bisection's step is well below the seed-to-seed spread.
func RunFind(src *scenarios.Source, sets []string, f Find, o Options) (*FindResult, error) {
	sc, lo, hi, err := parseBounds(f.Lo, f.Hi)
	if err != nil {
		return nil, fmt.Errorf("--find %s: %w", f.Key, err)
	}
	if hi <= lo {
		return nil, fmt.Errorf("--find %s: expected lo < hi, found %s..%s", f.Key, f.Lo, f.Hi)
	}
	if len(f.Seeds) == 0 || f.MaxSteps < 1 {
		return nil, fmt.Errorf("--find: expected at least one seed and one step")
	}
	if f.Coverage <= 0 || f.Coverage >= 1 {
		return nil, fmt.Errorf("--find: expected a coverage above 0 and below 1, found %v", f.Coverage)
	}
	base, err := scenarios.Parse(src, sets)
	if err != nil {
		return nil, err
	}
	n := len(f.Seeds)
	res := &FindResult{Build: o.Build, ScenarioSHA256: base.SHA256(), Key: f.Key, Constraint: f.Constraint.String(), Lo: lo, Hi: hi, Seeds: make([]SeedThreshold, n)}
	if sc == durationScale {
		res.Unit = "s"
	}
	type probe struct {
		seed int
		x    float64
	}
	holds := func(batch []probe) ([]bool, error) {
		out := make([]bool, len(batch))
		err := forEach(len(batch), o, func(i int) error {
			p := batch[i]
			s := append(slices.Clone(sets), f.Key+"="+sc.text(p.x), "seed="+strconv.FormatUint(f.Seeds[p.seed], 10))
			r, _, err := runScenario(src, s, o)
			if err != nil {
				return fmt.Errorf("--find run of %v: %w", s, err)
			}
			v, ok := r.Value(f.Constraint.Metric)
			if !ok {
				return fmt.Errorf("--find: the run of %v reports no %s", s, f.Constraint.Metric)
			}
			out[i] = f.Constraint.Holds(v)
			return nil
		})
		res.Runs += len(batch)
		return out, err
	}
	var ends []probe
	for k := range n {
		ends = append(ends, probe{k, lo}, probe{k, hi})
	}
	atEnds, err := holds(ends)
	if err != nil {
		return nil, err
	}
	a, b := make([]float64, n), make([]float64, n)
	crossing := make([]bool, n)
	below, above := 0, 0
	for k := range n {
		st := &res.Seeds[k]
		st.Seed, st.HoldsAtLo, st.HoldsAtHi = f.Seeds[k], atEnds[2*k], atEnds[2*k+1]
		a[k], b[k] = lo, hi
		crossing[k] = st.HoldsAtLo != st.HoldsAtHi
		if st.HoldsAtLo {
			below++
		}
		if st.HoldsAtHi {
			above++
		}
	}
	res.Direction = HoldsBelow
	if above > below {
		res.Direction = HoldsAbove
	}
	// target is the resolution the brackets must reach, from the
	// brackets so far.
	target := func() float64 {
		if f.Resolution > 0 {
			return max(f.Resolution, sc.grid())
		}
		var mids []float64
		for k := range n {
			if crossing[k] {
				mids = append(mids, (a[k]+b[k])/2)
			}
		}
		t := (hi - lo) / 256
		if len(mids) >= 2 {
			if s := sd(mids, mean(mids)); s > 0 {
				t = min(t, s/10)
			}
		}
		return max(t, sc.grid())
	}
	for range f.MaxSteps {
		res.Resolution = target()
		var batch []probe
		for k := range n {
			if !crossing[k] || b[k]-a[k] <= res.Resolution {
				continue
			}
			mid := sc.round((a[k] + b[k]) / 2)
			if mid <= a[k] || mid >= b[k] {
				continue // the bracket is as narrow as the key allows
			}
			batch = append(batch, probe{k, mid})
		}
		if len(batch) == 0 {
			break
		}
		h, err := holds(batch)
		if err != nil {
			return nil, err
		}
		for i, p := range batch {
			k := p.seed
			res.Seeds[k].Steps++
			if h[i] == res.Seeds[k].HoldsAtLo {
				a[k] = p.x
			} else {
				b[k] = p.x
			}
		}
	}
	res.Resolution = target()
	var thresholds, limits []float64
	for k := range n {
		st := &res.Seeds[k]
		if crossing[k] {
			st.Bracket = [2]*float64{num(a[k]), num(b[k])}
			res.Crossing++
		}
		// The safe limit, seen from the side the constraint holds on.
		switch {
		case res.Direction == HoldsBelow && st.HoldsAtLo && st.HoldsAtHi:
			st.Limit = math.Inf(1)
		case res.Direction == HoldsBelow && st.HoldsAtLo:
			st.Limit, st.Threshold = a[k], num(b[k])
			thresholds = append(thresholds, b[k])
		case res.Direction == HoldsBelow:
			st.Limit = math.Inf(-1) // breaks at lo already
			if st.HoldsAtHi {
				st.Threshold = num(b[k])
			}
		case st.HoldsAtHi && st.HoldsAtLo:
			st.Limit = math.Inf(-1)
		case st.HoldsAtHi:
			st.Limit, st.Threshold = b[k], num(a[k])
			thresholds = append(thresholds, a[k])
		default:
			st.Limit = math.Inf(1) // breaks at hi already
			if st.HoldsAtLo {
				st.Threshold = num(a[k])
			}
		}
		limits = append(limits, st.Limit)
	}
	if len(thresholds) > 0 {
		slices.Sort(thresholds)
		m := len(thresholds)
		med := (thresholds[(m-1)/2] + thresholds[m/2]) / 2
		res.Median = num(med)
		if m >= 2 {
			res.Spread = num(sd(thresholds, mean(thresholds)))
		}
	}
	var qb QuantileBound
	if res.Direction == HoldsBelow {
		qb = LowerQuantileBound(limits, f.Coverage)
	} else {
		qb = UpperQuantileBound(limits, f.Coverage)
	}
	res.Safe = SafeBound{Share: qb.Share, Confidence: Confidence, Rank: qb.Rank, Enough: qb.Enough, Wanted: f.Coverage}
	switch {
	case math.IsInf(qb.Value, 1) && res.Direction == HoldsBelow:
		res.Safe.Value, res.Safe.Beyond = num(hi), true
	case math.IsInf(qb.Value, -1) && res.Direction == HoldsAbove:
		res.Safe.Value, res.Safe.Beyond = num(lo), true
	case !math.IsInf(qb.Value, 0):
		res.Safe.Value = num(qb.Value)
	}
	return res, nil
}
