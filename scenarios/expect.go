package scenarios

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Expect bounds one headline figure of a run, so that a CI job can gate a
// change on the scenario: `xdssim run` exits with code 3 when a run
// breaches an expectation.
type Expect struct {
	// Metric is the figure's dotted path in summary.json ("fleet.starts"):
	// one of the paths fleet.MetricPaths lists for the scenario.
	Metric string `toml:"metric"`
	// Min and Max bound the figure, both inclusive; nil where the scenario
	// gives no bound. At least one is given, and Min <= Max.
	Min *float64 `toml:"min"`
	Max *float64 `toml:"max"`
}

// Holds reports whether v is within the bounds (both inclusive); NaN
// never is.
func (e Expect) Holds(v float64) bool {
	return !math.IsNaN(v) && (e.Min == nil || v >= *e.Min) && (e.Max == nil || v <= *e.Max)
}

// String writes the expectation as "PATH <= 10", "PATH >= 0.999" or
// "PATH in [0.5, 2]".
func (e Expect) String() string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	switch {
	case e.Min != nil && e.Max != nil:
		return e.Metric + " in [" + f(*e.Min) + ", " + f(*e.Max) + "]"
	case e.Min != nil:
		return e.Metric + " >= " + f(*e.Min)
	case e.Max != nil:
		return e.Metric + " <= " + f(*e.Max)
	}
	return e.Metric
}

// validateExpect checks the expectations; it runs after every other
// check. A metric must be one a run of this scenario reports, and which
// those are depends on the scenario (control_plane.<name>.requests):
// fleet.MetricPaths lists them for the scenario's fleet config. Only a
// valid scenario converts to a fleet config, so metric paths are checked
// when the rest of the scenario has no problem.
func (s *Scenario) validateExpect(c *checker) {
	if len(s.Expect) == 0 {
		return
	}
	var paths []string
	checkPaths := !c.p.hasErrorsOutside("expect")
	if checkPaths {
		paths = c.metricPaths(s)
	}
	for i, e := range s.Expect {
		p := fmt.Sprintf("expect[%d]", i)
		if c.check(c.given(p+".metric"), p+".metric",
			"is required: the summary.json path of the figure to bound (metric = \"fleet.starts\")") &&
			c.check(e.Metric != "", p+".metric",
				"expected the summary.json path of a figure, such as \"fleet.starts\", found \"\"") &&
			checkPaths && !slices.Contains(paths, e.Metric) {
			// The hint is computed only for a metric that is not there:
			// it costs an edit distance to every path.
			c.check(false, p+".metric", "no metric %q in summary.json%s", e.Metric, MetricHint(e.Metric, paths))
		}
		if e.Min == nil && e.Max == nil && !c.p.bad[p+".min"] && !c.p.bad[p+".max"] {
			c.check(false, p, "expected a bound: min = N, max = N, or both")
		}
		if e.Min != nil && e.Max != nil {
			c.check(*e.Min <= *e.Max, p+".max", "expected max >= min (%v), found %v", *e.Min, *e.Max)
		}
	}
}

// MetricHint helps with a metric path that is not in paths: the path it
// was probably meant to be, else the names one level below the longest part
// of it that is a metric object ("xds", "control_plane.primary").
func MetricHint(metric string, paths []string) string {
	if best, ok := nearest(metric, paths, max(2, len(metric)/5)); ok {
		return fmt.Sprintf("; did you mean %q?", best)
	}
	segs := strings.Split(metric, ".")
	for n := len(segs); n >= 0; n-- {
		prefix := strings.Join(segs[:n], ".")
		var under []string
		for _, p := range paths {
			rest, ok := strings.CutPrefix(p, prefix+".")
			if n == 0 {
				rest, ok = p, true
			}
			if !ok {
				continue
			}
			next, _, _ := strings.Cut(rest, ".")
			if !slices.Contains(under, next) {
				under = append(under, next)
			}
		}
		if len(under) == 0 {
			continue
		}
		slices.Sort(under)
		if n == 0 {
			return fmt.Sprintf(" (its metrics are under: %s)", strings.Join(under, ", "))
		}
		return fmt.Sprintf(" (%s holds: %s)", prefix, strings.Join(under, ", "))
	}
	return " (a run of this scenario reports no metrics)"
}
