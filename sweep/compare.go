package sweep

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/scenarios"
	"github.com/xdssim/xdssim/stamp"
)

// Variant is one side of a comparison: a scenario with its overrides.
type Variant struct {
	// Name says what the variant is in the outputs ("A: slow-control-plane
	// --set …").
	Name string
	Src  *scenarios.Source
	Sets []string
}

// Comparison is two variants run on the same seeds (common random
// numbers), every metric's difference B − A paired by seed, and the
// interval the same runs would give unpaired, for contrast.
type Comparison struct {
	A, B string
	// ScenarioSHA256 holds, for A and B, the SHA-256 of the variant's
	// scenario resolved with its overrides (scenarios.Scenario.SHA256), at
	// the scenario's own seed.
	ScenarioSHA256 [2]string
	// Build is the build of xdssim that made the runs (Options.Build).
	Build stamp.Build
	Seeds []uint64
	Rows  []CompareRow
	// Expect holds, for each variant, its scenario's expectations and how
	// many of its runs breached each.
	Expect [2][]ExpectCount
	// First holds the Results of seed Seeds[0] of A and B, for the
	// timelines.
	First [2]*fleet.Results
}

// ExpectCount is one expectation ([[expect]]) and the runs that breached
// it, of the runs given.
type ExpectCount struct {
	Expect         string
	Breached, Runs int
}

// Breached reports whether some run of either variant breached one of its
// scenario's expectations.
func (c *Comparison) Breached() bool {
	for _, es := range c.Expect {
		for _, e := range es {
			if e.Breached > 0 {
				return true
			}
		}
	}
	return false
}

// CompareRow is one metric of a comparison.
type CompareRow struct {
	Metric string
	// A and B are the two variants' Stats over the seeds, each interval
	// inside the metric's support.
	A, B Stat
	// Paired is the Stat of the per-seed differences B − A (bootstrap-t):
	// its interval is the one to read; when it holds 0 the runs show no
	// difference.
	Paired Stat
	// Unpaired is Welch's interval of mean(B) − mean(A), as if the runs of
	// the two had independent seeds.
	Unpaired Stat
	// ValuesA and ValuesB are the runs' values, seed by seed.
	ValuesA, ValuesB []float64
}

// Compare runs a and b on every seed on the pool, and compares their
// metrics: metrics, or when empty the Headline figures both report.
func Compare(a, b Variant, seeds []uint64, metrics []string, o Options) (*Comparison, error) {
	var paths [2][]string
	c := &Comparison{A: a.Name, B: b.Name, Build: o.Build, Seeds: seeds}
	for i, v := range []Variant{a, b} {
		s, err := scenarios.Parse(v.Src, v.Sets)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v.Name, err)
		}
		c.ScenarioSHA256[i] = s.SHA256()
		cfg := s.FleetConfig()
		paths[i] = append(fleet.MetricPaths(&cfg), fleet.HeaderPaths...)
		c.Expect[i] = []ExpectCount{}
		for _, e := range s.Expect {
			c.Expect[i] = append(c.Expect[i], ExpectCount{Expect: e.String(), Runs: len(seeds)})
		}
	}
	if len(metrics) == 0 {
		for _, m := range Headline {
			if slices.Contains(paths[0], m) && slices.Contains(paths[1], m) {
				metrics = append(metrics, m)
			}
		}
	}
	for _, m := range metrics {
		for i, v := range []Variant{a, b} {
			if !slices.Contains(paths[i], m) {
				return nil, fmt.Errorf("%s reports no metric %q%s", v.Name, m, scenarios.MetricHint(m, paths[i]))
			}
		}
	}
	vals := make([][]float64, 2*len(seeds))
	breached := make([][]int, 2*len(seeds))
	err := forEach(2*len(seeds), o, func(j int) error {
		v, k := []Variant{a, b}[j%2], j/2
		sets := append(slices.Clone(v.Sets), "seed="+strconv.FormatUint(seeds[k], 10))
		r, br, err := runScenario(v.Src, sets, o)
		if err != nil {
			return fmt.Errorf("%s, seed %d: %w", v.Name, seeds[k], err)
		}
		vals[j], breached[j] = values(r, metrics), br
		if k == 0 {
			c.First[j%2] = r
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for j, br := range breached {
		for _, e := range br {
			if e < len(c.Expect[j%2]) {
				c.Expect[j%2][e].Breached++
			}
		}
	}
	for m, metric := range metrics {
		row := CompareRow{Metric: metric}
		for k := range seeds {
			row.ValuesA = append(row.ValuesA, vals[2*k][m])
			row.ValuesB = append(row.ValuesB, vals[2*k+1][m])
		}
		row.A, row.B = Mean(row.ValuesA, support(metric)), Mean(row.ValuesB, support(metric))
		row.Paired, row.Unpaired = Paired(row.ValuesA, row.ValuesB), Welch(row.ValuesA, row.ValuesB)
		c.Rows = append(c.Rows, row)
	}
	return c, nil
}

// JSON renders the comparison as compare.json.
func (c *Comparison) JSON() ([]byte, error) {
	js := toStatJSON
	type row struct {
		Metric   string     `json:"metric"`
		A        statJSON   `json:"a"`
		B        statJSON   `json:"b"`
		Paired   statJSON   `json:"paired_difference"`
		Unpaired statJSON   `json:"unpaired_difference"`
		ValuesA  []*float64 `json:"values_a"`
		ValuesB  []*float64 `json:"values_b"`
	}
	type expect struct {
		Expect   string `json:"expect"`
		Breached int    `json:"breached"`
		Runs     int    `json:"runs"`
	}
	exp := func(es []ExpectCount) []expect {
		out := []expect{}
		for _, e := range es {
			out = append(out, expect(e))
		}
		return out
	}
	out := struct {
		Schema string      `json:"schema"`
		Build  stamp.Build `json:"build"`
		A      string      `json:"a"`
		B      string      `json:"b"`
		// ScenarioSHA256 holds "a" and "b".
		ScenarioSHA256 map[string]string `json:"scenario_sha256"`
		Seeds          []uint64          `json:"seeds"`
		ExpectA        []expect          `json:"expect_a"`
		ExpectB        []expect          `json:"expect_b"`
		Rows           []row             `json:"metrics"`
	}{Schema: "xdssim.compare/v2", Build: c.Build, A: c.A, B: c.B, ScenarioSHA256: map[string]string{"a": c.ScenarioSHA256[0], "b": c.ScenarioSHA256[1]}, Seeds: c.Seeds, ExpectA: exp(c.Expect[0]), ExpectB: exp(c.Expect[1]), Rows: []row{}}
	for _, r := range c.Rows {
		jr := row{Metric: r.Metric, A: js(r.A), B: js(r.B), Paired: js(r.Paired), Unpaired: js(r.Unpaired)}
		for k := range r.ValuesA {
			jr.ValuesA = append(jr.ValuesA, num(r.ValuesA[k]))
			jr.ValuesB = append(jr.ValuesB, num(r.ValuesB[k]))
		}
		out.Rows = append(out.Rows, jr)
	}
	return marshalIndent(out)
}
