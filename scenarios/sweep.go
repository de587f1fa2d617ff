package scenarios

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xdssim/xdssim/model/fleet"
)

// Sweep is the [sweep] table: what `xdssim sweep` varies over the scenario,
// over how many seeds, which figures it charts and what "better" means.
// A plain `xdssim run` ignores it.
type Sweep struct {
	// Params are the keys varied, each over its values: the grid is every
	// combination of them, the first param varying slowest.
	Params []SweepParam `toml:"param"`
	// Seeds is how many seeds each point of the grid runs with: the
	// scenario's seed and the ones after it.
	Seeds int `toml:"seeds"`
	// Metrics are the summary.json paths of the figures the sweep records
	// and charts; empty: the report's headline figures.
	Metrics []string `toml:"metrics"`
	// Objectives are "minimize PATH" or "maximize PATH": the first picks
	// the best point; with two, the report draws their trade-off.
	Objectives []string `toml:"objectives"`
	// Constraints are "PATH <= N" (or <, >=, >), judged on every run: a
	// point meets one when the share of its runs that breach it is below
	// Risk with 95 % confidence. "mean PATH <= N" judges the mean over
	// the seeds instead.
	Constraints []string `toml:"constraints"`
	// Risk is the share of runs breaching a constraint that is accepted.
	Risk float64 `toml:"risk"`
	// MaxSeeds bounds the seeds a point may get when its verdict, or its
	// rank against the best, is still open; 0: the fewest seeds in which
	// no breach decides Risk (59 at 5 %), or Seeds if that is more.
	MaxSeeds int `toml:"max_seeds"`
	// Indifference is the smallest difference in the first objective
	// that matters: a number in the objective's unit, or a share of the
	// largest mean among the candidates ("5%").
	Indifference string `toml:"indifference"`
}

// SweepParam is one key a sweep varies: a list of values, or a range.
type SweepParam struct {
	// Key is the key's path, as --set takes it.
	Key string `toml:"key"`
	// Values are the values to try, each as --set takes it: numbers and
	// booleans as they are (values = [500, 1000]), durations and strings
	// quoted ("15s", "grpc-java").
	Values []string `toml:"values,scalar"`
	// Range is "lo..hi:steps": steps evenly spaced values from lo to hi,
	// durations or numbers.
	Range string `toml:"range"`
	// Role is "knob" (what the operator chooses: the sweep recommends
	// one of its values) or "condition" (the world the choice must hold
	// under); "": KeyRole's answer for the key.
	Role string `toml:"role"`
}

func (s *Sweep) setDefaults() {
	s.Seeds = 5
	s.Risk = DefaultRisk
	s.Indifference = DefaultIndifference.String()
}

// DefaultRisk is the share of runs breaching a constraint that a sweep
// accepts unless told otherwise: 5 %.
const DefaultRisk = 0.05

// Indifference is the smallest difference in an objective that matters
// to whoever picks a setting: an absolute value in the objective's unit,
// or a share of the largest mean among the candidates.
type Indifference struct {
	Value    float64
	Relative bool
}

// DefaultIndifference is 5 % of the largest mean among the candidates.
var DefaultIndifference = Indifference{Value: 0.05, Relative: true}

func (d Indifference) String() string {
	if d.Relative {
		return strconv.FormatFloat(d.Value*100, 'g', -1, 64) + "%"
	}
	return strconv.FormatFloat(d.Value, 'g', -1, 64)
}

// ParseIndifference reads "5%" (a share of the largest mean, under
// 100 %) or "12.5" (in the objective's unit), both above 0.
func ParseIndifference(s string) (Indifference, error) {
	t := strings.TrimSpace(s)
	rel := strings.HasSuffix(t, "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(t, "%")), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 || (rel && v >= 100) {
		return Indifference{}, fmt.Errorf("expected an indifference zone: a number above 0 in the objective's unit (12.5), or a share of the largest mean above 0 and under 100 %% (5%%), found %q", s)
	}
	if rel {
		v /= 100
	}
	return Indifference{Value: v, Relative: rel}, nil
}

// ParseShare reads a share above 0 and below 1, written 0.05 or 5%.
func ParseShare(s string) (float64, error) {
	t := strings.TrimSpace(s)
	scale := 1.0
	if strings.HasSuffix(t, "%") {
		t, scale = strings.TrimSpace(strings.TrimSuffix(t, "%")), 0.01
	}
	v, err := strconv.ParseFloat(t, 64)
	v *= scale
	if err != nil || !(v > 0 && v < 1) {
		return 0, fmt.Errorf("expected a share above 0 and below 1, such as 0.05 or 5%%, found %q", s)
	}
	return v, nil
}

// ParseRisk reads an accepted risk: a share above 0 and at most 0.5,
// written 0.05 or 5%.
func ParseRisk(s string) (float64, error) {
	v, err := ParseShare(s)
	if err != nil || !validRisk(v) {
		return 0, fmt.Errorf("expected an accepted risk above 0 and at most 0.5 (0.05 or 5%%), found %q", s)
	}
	return v, nil
}

func validRisk(v float64) bool { return v > 0 && v <= 0.5 }

// The roles of a swept key.
const (
	// Knob is a key the operator chooses: a sweep recommends a value of
	// its knobs, never of a condition.
	Knob = "knob"
	// Condition is a key of the world the choice must hold under (fleet
	// size, outage length, restart fraction, profile, load).
	Condition = "condition"
)

// maxSweepSeeds bounds a sweep's seeds, and maxSweepSteps a range's steps.
const (
	maxSweepSeeds = 10000
	maxSweepSteps = 1000
)

// Objective is one goal of a sweep: the metric to minimize or maximize.
type Objective struct {
	Metric   string
	Maximize bool
}

func (o Objective) String() string {
	if o.Maximize {
		return "maximize " + o.Metric
	}
	return "minimize " + o.Metric
}

// Better reports whether a is better than b for o.
func (o Objective) Better(a, b float64) bool {
	if o.Maximize {
		return a > b
	}
	return a < b
}

// ParseObjective reads "minimize PATH" or "maximize PATH".
func ParseObjective(s string) (Objective, error) {
	verb, metric, _ := strings.Cut(strings.TrimSpace(s), " ")
	metric = strings.TrimSpace(metric)
	switch {
	case metric == "" || strings.ContainsAny(metric, " \t"):
	case verb == "minimize" || verb == "min":
		return Objective{Metric: metric}, nil
	case verb == "maximize" || verb == "max":
		return Objective{Metric: metric, Maximize: true}, nil
	}
	return Objective{}, fmt.Errorf("expected \"minimize PATH\" or \"maximize PATH\" (PATH a summary.json metric), found %q", s)
}

// Constraint bounds a metric: on every run ("PATH <= N"), or on the mean
// over a point's seeds ("mean PATH <= N").
type Constraint struct {
	Metric string
	// Op is one of <=, <, >=, >.
	Op    string
	Bound float64
	// Mean says the bound is on the mean over the seeds, not on each run.
	Mean bool
}

func (c Constraint) String() string {
	s := c.Metric + " " + c.Op + " " + strconv.FormatFloat(c.Bound, 'g', -1, 64)
	if c.Mean {
		return "mean " + s
	}
	return s
}

// Holds reports whether v meets the constraint; NaN never does.
func (c Constraint) Holds(v float64) bool {
	switch c.Op {
	case "<=":
		return v <= c.Bound
	case "<":
		return v < c.Bound
	case ">=":
		return v >= c.Bound
	case ">":
		return v > c.Bound
	}
	return false
}

// ParseConstraint reads "PATH <= N" (or <, >=, >), a bound on every run,
// or "mean PATH <= N", a bound on the mean over the seeds.
func ParseConstraint(s string) (Constraint, error) {
	body, onMean := strings.CutPrefix(strings.TrimSpace(s), "mean ")
	for _, op := range []string{"<=", ">=", "<", ">"} {
		metric, bound, ok := strings.Cut(body, op)
		if !ok {
			continue
		}
		metric, bound = strings.TrimSpace(metric), strings.TrimSpace(bound)
		b, err := strconv.ParseFloat(bound, 64)
		if metric == "" || strings.ContainsAny(metric, " \t") || err != nil || math.IsNaN(b) || math.IsInf(b, 0) {
			break
		}
		return Constraint{Metric: metric, Op: op, Bound: b, Mean: onMean}, nil
	}
	return Constraint{}, fmt.Errorf("expected \"PATH <= N\" on every run or \"mean PATH <= N\" on the mean (or <, >=, >; PATH a summary.json metric, N a finite number), found %q", s)
}

// ParseRange expands "lo..hi:steps" into steps evenly spaced values from lo
// to hi inclusive, written as --set takes them. lo and hi are both
// durations ("1s..30s:5", rounded to the millisecond) or both numbers
// ("100..1000:4"; integers when both are, "0.1..0.5:5" otherwise).
func ParseRange(s string) ([]string, error) {
	bad := func(why string) error {
		return fmt.Errorf("expected lo..hi:steps such as 1s..30s:5 or 100..1000:4, found %q: %s", s, why)
	}
	span, stepsText, ok := strings.Cut(s, ":")
	if !ok {
		return nil, bad("no :steps")
	}
	loText, hiText, ok := strings.Cut(span, "..")
	if !ok {
		return nil, bad("no ..")
	}
	loText, hiText = strings.TrimSpace(loText), strings.TrimSpace(hiText)
	steps, err := strconv.Atoi(strings.TrimSpace(stepsText))
	if err != nil || steps < 1 || steps > maxSweepSteps {
		return nil, bad(fmt.Sprintf("steps must be an integer from 1 to %d", maxSweepSteps))
	}
	at := func(lo, hi float64, i int) float64 {
		if steps == 1 {
			return lo
		}
		return lo + (hi-lo)*float64(i)/float64(steps-1)
	}
	var out []string
	add := func(v string) error {
		if slices.Contains(out, v) {
			return bad("too many steps: two are equal (" + v + ")")
		}
		out = append(out, v)
		return nil
	}
	if lo, err1 := time.ParseDuration(loText); err1 == nil {
		hi, err2 := time.ParseDuration(hiText)
		if err2 != nil || hi < lo || lo < 0 {
			return nil, bad("lo and hi must both be durations, 0 <= lo <= hi")
		}
		for i := range steps {
			d := time.Duration(math.Round(at(float64(lo), float64(hi), i)/1e6)) * time.Millisecond
			if err := add(d.String()); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	loI, errLo := strconv.ParseInt(loText, 10, 64)
	hiI, errHi := strconv.ParseInt(hiText, 10, 64)
	if errLo == nil && errHi == nil {
		if hiI < loI {
			return nil, bad("hi must be >= lo")
		}
		for i := range steps {
			if err := add(strconv.FormatInt(int64(math.Round(at(float64(loI), float64(hiI), i))), 10)); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	lo, errLo := strconv.ParseFloat(loText, 64)
	hi, errHi := strconv.ParseFloat(hiText, 64)
	if errLo != nil || errHi != nil || hi < lo || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return nil, bad("lo and hi must both be durations or both be finite numbers, lo <= hi")
	}
	for i := range steps {
		// Twelve significant digits: 0.1..0.3:3 gives 0.2, not 0.20000000000000004.
		v, _ := strconv.ParseFloat(strconv.FormatFloat(at(lo, hi, i), 'g', 12, 64), 64)
		text := strconv.FormatFloat(v, 'f', -1, 64)
		if !strings.Contains(text, ".") {
			text += ".0" // a float key needs a float, and 1.0 is one
		}
		if err := add(text); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ParamValues returns the values of a sweep param: its Values, or its
// Range expanded.
func (p SweepParam) ParamValues() ([]string, error) {
	if p.Range != "" {
		return ParseRange(p.Range)
	}
	return p.Values, nil
}

// validateSweep checks the [sweep] table: each param has a key and either
// values or a range; the objectives and constraints parse; every metric
// named is one a run of the scenario reports (checked, as for [[expect]],
// once the rest of the scenario is valid). Whether each value suits its
// key is checked when the sweep resolves each point of its grid.
func (s *Scenario) validateSweep(c *checker) {
	if s.Sweep == nil {
		return
	}
	sw := s.Sweep
	c.check(sw.Seeds >= 1 && sw.Seeds <= maxSweepSeeds, "sweep.seeds", "expected a number of seeds from 1 to %d, found %d", maxSweepSeeds, sw.Seeds)
	c.check(validRisk(sw.Risk), "sweep.risk", "expected an accepted share of runs breaching a constraint, above 0 and at most 0.5 (0.05 is 5 %%), found %v", sw.Risk)
	c.check(sw.MaxSeeds == 0 || (sw.MaxSeeds >= sw.Seeds && sw.MaxSeeds <= maxSweepSeeds), "sweep.max_seeds",
		"expected 0 (as many as deciding the risk takes) or a number of seeds from sweep.seeds (%d) to %d, found %d", sw.Seeds, maxSweepSeeds, sw.MaxSeeds)
	if _, err := ParseIndifference(sw.Indifference); err != nil {
		c.check(false, "sweep.indifference", "%v", err)
	}
	keys := map[string]int{}
	for i, p := range sw.Params {
		path := fmt.Sprintf("sweep.param[%d]", i)
		if c.check(p.Key != "", path+".key", "is required: the path of the key to vary, as --set takes it (key = \"fleet.group[0].clients\")") {
			norm, err := NormalizeKey(p.Key)
			if c.check(err == nil, path+".key", "%v", err) {
				if j, dup := keys[norm]; dup {
					c.check(false, path+".key", "%s is already varied by sweep.param[%d]", p.Key, j)
				}
				keys[norm] = i
			}
		}
		c.check(p.Role == "" || p.Role == Knob || p.Role == Condition, path+".role",
			"expected \"knob\" (a setting the sweep may recommend) or \"condition\" (the world it must hold under), found %q", p.Role)
		switch {
		case p.Range != "" && len(p.Values) > 0:
			c.check(false, path+".range", "give values or a range, not both")
		case p.Range != "":
			_, err := ParseRange(p.Range)
			c.check(err == nil, path+".range", "%v", err)
		default:
			if c.check(len(p.Values) > 0, path+".values", "expected at least one value, or a range = \"lo..hi:steps\"") {
				for j, v := range p.Values {
					if k := slices.Index(p.Values, v); k < j {
						c.check(false, fmt.Sprintf("%s.values[%d]", path, j), "%s is given twice (values[%d] and values[%d])", v, k, j)
					}
				}
			}
		}
	}
	c.check(len(sw.Objectives) <= 2, "sweep.objectives", "expected one objective, or two to chart their trade-off, found %d", len(sw.Objectives))
	type named struct{ path, metric string }
	var refs []named
	for i, m := range sw.Metrics {
		refs = append(refs, named{fmt.Sprintf("sweep.metrics[%d]", i), m})
	}
	for i, o := range sw.Objectives {
		p := fmt.Sprintf("sweep.objectives[%d]", i)
		ob, err := ParseObjective(o)
		if c.check(err == nil, p, "%v", err) {
			refs = append(refs, named{p, ob.Metric})
		}
	}
	for i, k := range sw.Constraints {
		p := fmt.Sprintf("sweep.constraints[%d]", i)
		con, err := ParseConstraint(k)
		if c.check(err == nil, p, "%v", err) {
			refs = append(refs, named{p, con.Metric})
		}
	}
	if len(refs) == 0 || c.p.hasErrorsOutside("sweep") {
		return
	}
	paths := append(slices.Clip(c.metricPaths(s)), fleet.HeaderPaths...)
	for _, r := range refs {
		if !slices.Contains(paths, r.metric) {
			c.check(false, r.path, "no metric %q in summary.json%s", r.metric, MetricHint(r.metric, paths))
		}
	}
}
