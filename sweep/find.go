package sweep

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/xdssim/xdssim/scenarios"
)

// Find is a threshold search: for each seed, the value of Key between Lo
// and Hi at which Constraint stops (or starts) holding, found by bisection
// (for example the restart fraction at which a reconnect storm's queue
// outgrows a bound: the metastable threshold).
type Find struct {
	Key string
	// Lo and Hi bound the search, both durations, both integers or both
	// numbers, as --set takes them.
	Lo, Hi     string
	Constraint scenarios.Constraint
	// Steps is the number of bisection steps after the two ends; an
	// integer key stops early when the bracket is one apart.
	Steps int
	Seeds []uint64
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

// FindResult is the outcome of a threshold search.
type FindResult struct {
	Key        string `json:"key"`
	Constraint string `json:"constraint"`
	// Unit is "s" for a duration key, "" otherwise.
	Unit  string   `json:"unit"`
	Lo    float64  `json:"lo"`
	Hi    float64  `json:"hi"`
	Seeds []uint64 `json:"seeds"`
	// HoldsAtLo says, per seed, whether the constraint holds at Lo.
	HoldsAtLo []bool `json:"holds_at_lo"`
	// Thresholds are, per seed, the first value found from Lo at which the
	// constraint's answer is the one it has at Hi: null where it is the
	// same at both ends.
	Thresholds []*float64 `json:"thresholds"`
	// Bracket is, per seed, the width of the last bracket: the threshold
	// is known to within it.
	Bracket []*float64 `json:"bracket"`
	// Mean and CI95 summarise the thresholds over the seeds that have one.
	N    int         `json:"n"`
	Mean *float64    `json:"mean"`
	CI95 [2]*float64 `json:"ci95"`
	Runs int         `json:"runs"`
}

// Stat returns the thresholds' Stat.
func (r *FindResult) Stat() Stat {
	xs := make([]float64, len(r.Thresholds))
	for i, t := range r.Thresholds {
		xs[i] = unnum(t)
	}
	return Describe(xs)
}

// JSON renders the result as find.json.
func (r *FindResult) JSON() ([]byte, error) {
	return marshalIndent(struct {
		Schema string `json:"schema"`
		*FindResult
	}{"xdssim.find/v1", r})
}

// RunFind runs the threshold search over the scenario src with the
// overrides sets: every seed's bisection advances one step per round, the
// seeds' runs of a round on the pool, so the result does not depend on the
// number of workers.
func RunFind(src *scenarios.Source, sets []string, f Find, o Options) (*FindResult, error) {
	sc, lo, hi, err := parseBounds(f.Lo, f.Hi)
	if err != nil {
		return nil, fmt.Errorf("--find %s: %w", f.Key, err)
	}
	if hi <= lo {
		return nil, fmt.Errorf("--find %s: expected lo < hi, found %s..%s", f.Key, f.Lo, f.Hi)
	}
	if len(f.Seeds) == 0 || f.Steps < 1 {
		return nil, fmt.Errorf("--find: expected at least one seed and one step")
	}
	n := len(f.Seeds)
	res := &FindResult{Key: f.Key, Constraint: f.Constraint.String(), Lo: lo, Hi: hi, Seeds: f.Seeds,
		HoldsAtLo: make([]bool, n), Thresholds: make([]*float64, n), Bracket: make([]*float64, n)}
	if sc == durationScale {
		res.Unit = "s"
	}
	// holds runs the key at each value for each seed of the batch.
	type probe struct {
		seed int
		x    float64
	}
	holds := func(batch []probe) ([]bool, error) {
		out := make([]bool, len(batch))
		err := forEach(len(batch), o, func(i int) error {
			p := batch[i]
			s := append(append([]string{}, sets...), f.Key+"="+sc.text(p.x), "seed="+strconv.FormatUint(f.Seeds[p.seed], 10))
			r, err := runScenario(src, s, o)
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
	active := make([]bool, n)
	for k := range n {
		res.HoldsAtLo[k] = atEnds[2*k]
		a[k], b[k] = lo, hi
		active[k] = atEnds[2*k] != atEnds[2*k+1]
	}
	for range f.Steps {
		var batch []probe
		var who []int
		for k := range n {
			if !active[k] {
				continue
			}
			mid := sc.round((a[k] + b[k]) / 2)
			if mid <= a[k] || mid >= b[k] {
				active[k] = false // the bracket is as narrow as the key allows
				continue
			}
			batch = append(batch, probe{k, mid})
			who = append(who, k)
		}
		if len(batch) == 0 {
			break
		}
		h, err := holds(batch)
		if err != nil {
			return nil, err
		}
		for i, k := range who {
			if h[i] == res.HoldsAtLo[k] {
				a[k] = batch[i].x
			} else {
				b[k] = batch[i].x
			}
		}
	}
	for k := range n {
		if atEnds[2*k] == atEnds[2*k+1] {
			continue
		}
		res.Thresholds[k] = num(b[k])
		res.Bracket[k] = num(b[k] - a[k])
	}
	st := res.Stat()
	res.N, res.Mean, res.CI95 = st.N, num(st.Mean), [2]*float64{num(st.Low), num(st.High)}
	return res, nil
}
