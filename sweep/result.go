package sweep

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/xdssim/xdssim/scenarios"
)

// Schema is the "schema" of every sweep.json; it changes when the meaning
// or layout of a key changes.
const Schema = "xdssim.sweep/v1"

// Result is a finished sweep: its header, every point summarised over its
// seeds, the best point and the trade-off, and every run.
type Result struct {
	Header
	Points []Point
	// Best is the index of the best point: the best mean of the first
	// objective among the feasible points (the lowest index on a tie); -1
	// without objectives or feasible points.
	Best int
	// Pareto lists, with two objectives, the feasible points no other
	// feasible point is at least as good as in both and better in one.
	Pareto []int
	Runs   []Run
}

// Point is one point of the grid, summarised over its seeds.
type Point struct {
	Index int
	// Values holds each param's value.
	Values []string
	// Stats holds each metric's Stat, in the order of Header.Metrics.
	Stats []Stat
	// Feasible says the point's means meet every constraint.
	Feasible bool
}

// Summarize builds the Result of a sweep from its header and all its runs,
// in any order. It is an error for a run to be missing or given twice.
func Summarize(h Header, runs []Run) (*Result, error) {
	n := h.Runs()
	byIndex := make([]*Run, n)
	for i := range runs {
		r := &runs[i]
		if r.Index < 0 || r.Index >= n {
			return nil, fmt.Errorf("sweep: run %d is out of range (0 to %d)", r.Index, n-1)
		}
		if byIndex[r.Index] != nil {
			return nil, fmt.Errorf("sweep: run %d is given twice", r.Index)
		}
		if len(r.Values) != len(h.Metrics) {
			return nil, fmt.Errorf("sweep: run %d has %d metric values, want %d", r.Index, len(r.Values), len(h.Metrics))
		}
		byIndex[r.Index] = r
	}
	res := &Result{Header: h, Best: -1, Runs: make([]Run, n)}
	for i, r := range byIndex {
		if r == nil {
			return nil, fmt.Errorf("sweep: run %d is missing (%d of %d runs given)", i, len(runs), n)
		}
		res.Runs[i] = *r
	}
	objectives, constraints, err := h.goals()
	if err != nil {
		return nil, err
	}
	seeds := len(h.Seeds)
	for pt := range h.Points() {
		p := Point{Index: pt, Values: h.PointValues(pt), Feasible: true}
		xs := make([]float64, seeds)
		for m := range h.Metrics {
			for k := range seeds {
				xs[k] = res.Runs[pt*seeds+k].Values[m]
			}
			p.Stats = append(p.Stats, Describe(xs))
		}
		for _, c := range constraints {
			if !c.Holds(p.Stats[h.metricIndex(c.Metric)].Mean) {
				p.Feasible = false
			}
		}
		res.Points = append(res.Points, p)
	}
	if len(objectives) > 0 {
		m := h.metricIndex(objectives[0].Metric)
		for _, p := range res.Points {
			v := p.Stats[m].Mean
			if !p.Feasible || math.IsNaN(v) {
				continue
			}
			if res.Best < 0 || objectives[0].Better(v, res.Points[res.Best].Stats[m].Mean) {
				res.Best = p.Index
			}
		}
	}
	if len(objectives) == 2 {
		res.Pareto = pareto(res.Points, h.metricIndex(objectives[0].Metric), h.metricIndex(objectives[1].Metric), objectives)
	}
	return res, nil
}

// pareto returns the feasible points that no other feasible point
// dominates on the two objectives' means, by index.
func pareto(points []Point, m0, m1 int, obj []scenarios.Objective) []int {
	// worse reports whether a is at least as bad as b for o.
	atLeastAsGood := func(o scenarios.Objective, a, b float64) bool { return !o.Better(b, a) }
	var out []int
	for _, p := range points {
		a0, a1 := p.Stats[m0].Mean, p.Stats[m1].Mean
		if !p.Feasible || math.IsNaN(a0) || math.IsNaN(a1) {
			continue
		}
		dominated := false
		for _, q := range points {
			b0, b1 := q.Stats[m0].Mean, q.Stats[m1].Mean
			if q.Index == p.Index || !q.Feasible || math.IsNaN(b0) || math.IsNaN(b1) {
				continue
			}
			if atLeastAsGood(obj[0], b0, a0) && atLeastAsGood(obj[1], b1, a1) &&
				(obj[0].Better(b0, a0) || obj[1].Better(b1, a1)) {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, p.Index)
		}
	}
	return out
}

// goals parses the header's objectives and constraints.
func (h *Header) goals() ([]scenarios.Objective, []scenarios.Constraint, error) {
	var obj []scenarios.Objective
	for _, o := range h.Objectives {
		ob, err := scenarios.ParseObjective(o)
		if err != nil {
			return nil, nil, fmt.Errorf("sweep: objective: %w", err)
		}
		if h.metricIndex(ob.Metric) < 0 {
			return nil, nil, fmt.Errorf("sweep: objective %q: the sweep does not record %s", o, ob.Metric)
		}
		obj = append(obj, ob)
	}
	var cons []scenarios.Constraint
	for _, c := range h.Constraints {
		con, err := scenarios.ParseConstraint(c)
		if err != nil {
			return nil, nil, fmt.Errorf("sweep: constraint: %w", err)
		}
		if h.metricIndex(con.Metric) < 0 {
			return nil, nil, fmt.Errorf("sweep: constraint %q: the sweep does not record %s", c, con.Metric)
		}
		cons = append(cons, con)
	}
	return obj, cons, nil
}

// metricIndex is the place of metric m in Metrics, or -1.
func (h *Header) metricIndex(m string) int { return slices.Index(h.Metrics, m) }

// Feasible reports whether some point meets every constraint (true
// without constraints).
func (r *Result) Feasible() bool {
	return slices.ContainsFunc(r.Points, func(p Point) bool { return p.Feasible })
}

// BestSets returns the --set overrides that reproduce the best point, or
// nil when there is none.
func (r *Result) BestSets() []string {
	if r.Best < 0 {
		return nil
	}
	return r.PointSets(r.Best)
}

// The JSON form of a Result. Numbers that are NaN are null.
type (
	resultJSON struct {
		Schema string `json:"schema"`
		Header
		Points []pointJSON `json:"points"`
		Best   *bestJSON   `json:"best"`
		Pareto []int       `json:"pareto"`
		Runs   []runJSON   `json:"runs"`
	}
	pointJSON struct {
		Point    int                 `json:"point"`
		Values   []string            `json:"values"`
		Set      []string            `json:"set"`
		Feasible bool                `json:"feasible"`
		Metrics  map[string]statJSON `json:"metrics"`
	}
	statJSON struct {
		N    int         `json:"n"`
		Mean *float64    `json:"mean"`
		SD   *float64    `json:"sd"`
		CI95 [2]*float64 `json:"ci95"`
	}
	bestJSON struct {
		Point int      `json:"point"`
		Set   []string `json:"set"`
	}
	runJSON struct {
		Run     int                 `json:"run"`
		Point   int                 `json:"point"`
		Seed    uint64              `json:"seed"`
		Events  uint64              `json:"events"`
		Metrics map[string]*float64 `json:"metrics"`
	}
)

// marshalIndent renders v as 2-space indented JSON ending in a newline,
// without escaping <, > and & (constraints read "x <= 3").
func marshalIndent(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// num is v for JSON: nil when NaN or infinite.
func num(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// unnum reads a JSON number back: NaN for null.
func unnum(v *float64) float64 {
	if v == nil {
		return math.NaN()
	}
	return *v
}

// JSON renders r as sweep.json: 2-space indented, keys in a fixed order
// (objects keyed by metric sorted), NaN as null, ending with a newline.
func (r *Result) JSON() ([]byte, error) {
	out := resultJSON{Schema: Schema, Header: r.Header, Pareto: r.Pareto, Points: []pointJSON{}, Runs: []runJSON{}}
	if out.Pareto == nil {
		out.Pareto = []int{}
	}
	for _, p := range r.Points {
		pj := pointJSON{Point: p.Index, Values: p.Values, Set: r.pointSets(p.Index), Feasible: p.Feasible, Metrics: map[string]statJSON{}}
		for i, m := range r.Metrics {
			s := p.Stats[i]
			pj.Metrics[m] = statJSON{N: s.N, Mean: num(s.Mean), SD: num(s.SD), CI95: [2]*float64{num(s.Low), num(s.High)}}
		}
		out.Points = append(out.Points, pj)
	}
	if r.Best >= 0 {
		out.Best = &bestJSON{Point: r.Best, Set: r.BestSets()}
	}
	for _, run := range r.Runs {
		out.Runs = append(out.Runs, toRunJSON(run, r.Metrics))
	}
	b, err := marshalIndent(out)
	if err != nil {
		return nil, fmt.Errorf("sweep.json: %w", err)
	}
	return b, nil
}

func toRunJSON(run Run, metrics []string) runJSON {
	rj := runJSON{Run: run.Index, Point: run.Point, Seed: run.Seed, Events: run.Events, Metrics: map[string]*float64{}}
	for i, m := range metrics {
		rj.Metrics[m] = num(run.Values[i])
	}
	return rj
}

func fromRunJSON(rj runJSON, metrics []string) (Run, error) {
	r := Run{Index: rj.Run, Point: rj.Point, Seed: rj.Seed, Events: rj.Events, Values: make([]float64, len(metrics))}
	if len(rj.Metrics) != len(metrics) {
		return Run{}, fmt.Errorf("run %d has %d metrics, want %d", rj.Run, len(rj.Metrics), len(metrics))
	}
	for i, m := range metrics {
		v, ok := rj.Metrics[m]
		if !ok {
			return Run{}, fmt.Errorf("run %d has no value of %s", rj.Run, m)
		}
		r.Values[i] = unnum(v)
	}
	return r, nil
}

// CSV renders r as sweep.csv: one row per run, tidy: run, point, seed,
// one column per param (named by its key) and one per metric (named by
// its path); a metric the run did not report is empty.
func (r *Result) CSV() ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	head := []string{"run", "point", "seed"}
	for _, p := range r.Params {
		head = append(head, p.Key)
	}
	head = append(head, r.Metrics...)
	if err := w.Write(head); err != nil {
		return nil, err
	}
	for _, run := range r.Runs {
		row := []string{strconv.Itoa(run.Index), strconv.Itoa(run.Point), strconv.FormatUint(run.Seed, 10)}
		row = append(row, r.PointValues(run.Point)...)
		for _, v := range run.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				row = append(row, "")
			} else {
				row = append(row, strconv.FormatFloat(v, 'g', -1, 64))
			}
		}
		if err := w.Write(row); err != nil {
			return nil, err
		}
	}
	w.Flush()
	return b.Bytes(), w.Error()
}

// WriteJSON writes r.JSON() to w.
func (r *Result) WriteJSON(w io.Writer) error {
	b, err := r.JSON()
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// WriteCSV writes r.CSV() to w.
func (r *Result) WriteCSV(w io.Writer) error {
	b, err := r.CSV()
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
