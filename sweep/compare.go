package sweep

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/scenarios"
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
	A, B  string
	Seeds []uint64
	Rows  []CompareRow
	// First holds the Results of seed Seeds[0] of A and B, for the
	// timelines.
	First [2]*fleet.Results
}

// CompareRow is one metric of a comparison.
type CompareRow struct {
	Metric string
	// A and B are the two variants' Stats over the seeds.
	A, B Stat
	// Paired is the Stat of the per-seed differences B − A: its interval
	// is the one to read.
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
	for i, v := range []Variant{a, b} {
		s, err := scenarios.Parse(v.Src, v.Sets)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v.Name, err)
		}
		cfg := s.FleetConfig()
		paths[i] = append(fleet.MetricPaths(&cfg), fleet.HeaderPaths...)
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
				return nil, fmt.Errorf("%s reports no metric %q", v.Name, m)
			}
		}
	}
	c := &Comparison{A: a.Name, B: b.Name, Seeds: seeds}
	vals := make([][]float64, 2*len(seeds))
	err := forEach(2*len(seeds), o, func(j int) error {
		v, k := []Variant{a, b}[j%2], j/2
		sets := append(slices.Clone(v.Sets), "seed="+strconv.FormatUint(seeds[k], 10))
		r, err := runScenario(v.Src, sets, o)
		if err != nil {
			return fmt.Errorf("%s, seed %d: %w", v.Name, seeds[k], err)
		}
		vals[j] = values(r, metrics)
		if k == 0 {
			c.First[j%2] = r
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for m, metric := range metrics {
		row := CompareRow{Metric: metric}
		for k := range seeds {
			row.ValuesA = append(row.ValuesA, vals[2*k][m])
			row.ValuesB = append(row.ValuesB, vals[2*k+1][m])
		}
		row.A, row.B = Describe(row.ValuesA), Describe(row.ValuesB)
		row.Paired, row.Unpaired = Paired(row.ValuesA, row.ValuesB), Welch(row.ValuesA, row.ValuesB)
		c.Rows = append(c.Rows, row)
	}
	return c, nil
}

// JSON renders the comparison as compare.json.
func (c *Comparison) JSON() ([]byte, error) {
	type stat struct {
		N    int         `json:"n"`
		Mean *float64    `json:"mean"`
		CI95 [2]*float64 `json:"ci95"`
	}
	js := func(s Stat) stat { return stat{s.N, num(s.Mean), [2]*float64{num(s.Low), num(s.High)}} }
	type row struct {
		Metric   string     `json:"metric"`
		A        stat       `json:"a"`
		B        stat       `json:"b"`
		Paired   stat       `json:"paired_difference"`
		Unpaired stat       `json:"unpaired_difference"`
		ValuesA  []*float64 `json:"values_a"`
		ValuesB  []*float64 `json:"values_b"`
	}
	out := struct {
		Schema string   `json:"schema"`
		A      string   `json:"a"`
		B      string   `json:"b"`
		Seeds  []uint64 `json:"seeds"`
		Rows   []row    `json:"metrics"`
	}{Schema: "xdssim.compare/v1", A: c.A, B: c.B, Seeds: c.Seeds, Rows: []row{}}
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
