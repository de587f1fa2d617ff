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

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/scenarios"
	"github.com/xdssim/xdssim/stamp"
)

// Schema is the "schema" of every sweep.json; it changes when the meaning
// or layout of a key changes.
const Schema = "xdssim.sweep/v2"

// Result is a finished sweep: every point summarised over its seeds and
// judged against the constraints, the settings of the knobs judged under
// every condition, the recommended setting (and the best one per
// condition) with how sure each is, the trade-off of two objectives, and
// every run.
type Result struct {
	Header
	// Build is the build of xdssim that made the runs: for merged shards,
	// the build every shard names.
	Build stamp.Build
	// MergedBy is, for merged shards, the build of xdssim that merged them
	// when it is not Build; nil otherwise.
	MergedBy *stamp.Build
	Points   []Point
	// Settings are the combinations of the knobs' values, each over every
	// condition.
	Settings []Setting
	// Robust is the recommendation: the best setting that meets the
	// constraints under every swept condition.
	Robust Pick
	// PerCondition holds, when the sweep has conditions, the best setting
	// under each condition alone, by condition index.
	PerCondition []Pick
	// Pareto is, with two objectives, the front of the settings that are
	// not known to break a constraint (robust values).
	Pareto []Front
	Runs   []Run
	// looks are the numbers of seeds the selection looks at.
	looks []int
}

// Point is one point of the grid, summarised over its seeds.
type Point struct {
	Index int
	// Values holds each param's value.
	Values []string
	// Setting and Condition are the point's setting of the knobs and
	// condition.
	Setting, Condition int
	// Seeds is the number of seeds the point ran.
	Seeds int
	// Stats holds each metric's Stat, in the order of Header.Metrics.
	Stats []Stat
	// Checks holds each constraint judged on the point's runs, in the
	// order of Header.Constraints.
	Checks []Check
	// Verdict is every check's verdict together.
	Verdict Verdict
	// Expect holds, for each of Header.Expect, how many of the point's
	// runs breached it.
	Expect []int
}

// Setting is one combination of the knobs' values, judged under every
// condition.
type Setting struct {
	Index  int
	Values []string
	// Points holds the setting's point under each condition.
	Points []int
	// Verdict is its points' verdicts together: it meets the constraints
	// only when it meets them under every condition.
	Verdict Verdict
	// Seeds is the number of seeds all its points ran.
	Seeds int
	// Objective is the first objective, seed by seed the mean over the
	// conditions, over those seeds; N is 0 without an objective.
	Objective Stat
}

// Feasible reports whether some setting meets every constraint under
// every condition (true without constraints).
func (r *Result) Feasible() bool {
	return slices.ContainsFunc(r.Settings, func(s Setting) bool { return s.Verdict == Meets })
}

// support returns the support of metric m.
func support(metric string) Support {
	lo, hi, count := fleet.MetricRange(metric)
	return Support{Min: lo, Max: hi, Count: count}
}

// Summarize builds the Result of a sweep from its header and all its runs,
// in any order, deciding nothing more: what merged shards give. It is an
// error for a run to be out of range or given twice, or for a point to
// lack one of its first seeds.
func Summarize(h Header, runs []Run) (*Result, error) {
	res, _, err := judge(h, runs)
	return res, err
}

// judge builds the Result of the runs so far and returns with it the
// points that need more seeds for their answer.
func judge(h Header, runs []Run) (*Result, []int, error) {
	if len(h.Seeds) == 0 {
		return nil, nil, fmt.Errorf("sweep: no seeds")
	}
	np := h.Points()
	perPoint := make([][]*Run, np)
	seenIndex := make(map[int]bool, len(runs))
	for i := range runs {
		r := &runs[i]
		switch {
		case r.Point < 0 || r.Point >= np:
			return nil, nil, fmt.Errorf("sweep: run %d is of point %d, out of range (0 to %d)", r.Index, r.Point, np-1)
		case r.Seed < h.Seeds[0] || r.Seed-h.Seeds[0] >= uint64(h.MaxSeeds):
			return nil, nil, fmt.Errorf("sweep: run %d has seed %d, out of the sweep's seeds (%d to %d)", r.Index, r.Seed, h.Seeds[0], h.SeedAt(h.MaxSeeds-1))
		case len(r.Values) != len(h.Metrics):
			return nil, nil, fmt.Errorf("sweep: run %d has %d metric values, want %d", r.Index, len(r.Values), len(h.Metrics))
		case seenIndex[r.Index]:
			return nil, nil, fmt.Errorf("sweep: run %d is given twice", r.Index)
		}
		seenIndex[r.Index] = true
		k := int(r.Seed - h.Seeds[0])
		if k >= len(perPoint[r.Point]) {
			perPoint[r.Point] = append(perPoint[r.Point], make([]*Run, k+1-len(perPoint[r.Point]))...)
		}
		if perPoint[r.Point][k] != nil {
			return nil, nil, fmt.Errorf("sweep: point %d has two runs of seed %d", r.Point, r.Seed)
		}
		perPoint[r.Point][k] = r
		for _, e := range r.Breached {
			if e < 0 || e >= len(h.Expect) {
				return nil, nil, fmt.Errorf("sweep: run %d breached expectation %d of %d", r.Index, e, len(h.Expect))
			}
		}
	}
	for pt, rs := range perPoint {
		for k := range max(len(rs), len(h.Seeds)) {
			if k >= len(rs) || rs[k] == nil {
				return nil, nil, fmt.Errorf("sweep: point %d has no run of seed %d (%d runs given)", pt, h.SeedAt(k), len(runs))
			}
		}
	}
	objectives, constraints, err := h.goals()
	if err != nil {
		return nil, nil, err
	}
	res := &Result{Header: h, looks: schedule(len(h.Seeds), h.MaxSeeds)}
	res.Runs = make([]Run, len(runs))
	copy(res.Runs, runs)
	slices.SortFunc(res.Runs, func(a, b Run) int { return a.Index - b.Index })

	// values[pt][m] are the point's values of metric m, seed by seed.
	values := make([][][]float64, np)
	for pt, rs := range perPoint {
		values[pt] = make([][]float64, len(h.Metrics))
		for m := range h.Metrics {
			xs := make([]float64, len(rs))
			for k, r := range rs {
				xs[k] = r.Values[m]
			}
			values[pt][m] = xs
		}
		p := Point{Index: pt, Values: h.PointValues(pt), Setting: h.SettingOf(pt), Condition: h.ConditionOf(pt),
			Seeds: len(rs), Verdict: Meets, Expect: make([]int, len(h.Expect))}
		for m, metric := range h.Metrics {
			p.Stats = append(p.Stats, Mean(values[pt][m], support(metric)))
		}
		for _, c := range constraints {
			m := h.metricIndex(c.Metric)
			var k Check
			if c.Mean {
				k = judgeMean(c, p.Stats[m])
			} else {
				k = judgeRuns(c, h.Risk, values[pt][m])
			}
			p.Checks = append(p.Checks, k)
			p.Verdict = p.Verdict.and(k.Verdict)
		}
		for _, r := range rs {
			for _, e := range r.Breached {
				p.Expect[e]++
			}
		}
		res.Points = append(res.Points, p)
	}

	ns, nc := h.Settings(), h.Conditions()
	res.Settings = make([]Setting, ns)
	for s := range res.Settings {
		res.Settings[s] = Setting{Index: s, Values: h.SettingValues(s), Points: make([]int, nc), Verdict: Meets, Seeds: math.MaxInt}
	}
	for _, p := range res.Points {
		st := &res.Settings[p.Setting]
		st.Points[p.Condition] = p.Index
		st.Verdict = st.Verdict.and(p.Verdict)
		st.Seeds = min(st.Seeds, p.Seeds)
	}
	// robust returns a setting's values of metric m seed by seed: the
	// mean over its conditions.
	robust := func(s, m int) []float64 {
		st := res.Settings[s]
		out := make([]float64, st.Seeds)
		for k := range out {
			for _, pt := range st.Points {
				out[k] += values[pt][m][k]
			}
			out[k] /= float64(len(st.Points))
		}
		return out
	}
	var obj *scenarios.Objective
	om := -1
	if len(objectives) > 0 {
		obj, om = &objectives[0], h.metricIndex(objectives[0].Metric)
	}
	needed := make([]bool, np)
	var sup Support
	if len(objectives) > 0 {
		sup = support(objectives[0].Metric)
	}
	rc := competition{values: make([][]float64, ns), verdict: make([]Verdict, ns), sup: sup}
	for s, st := range res.Settings {
		rc.verdict[s] = st.Verdict
		if om >= 0 {
			rc.values[s] = robust(s, om)
			res.Settings[s].Objective = Mean(rc.values[s], support(objectives[0].Metric))
		} else {
			rc.values[s] = make([]float64, st.Seeds)
		}
	}
	ind, err := scenarios.ParseIndifference(h.Indifference)
	if err != nil {
		return nil, nil, fmt.Errorf("sweep: indifference: %w", err)
	}
	n0 := len(h.Seeds)
	var need []int
	res.Robust, need = rc.pick(obj, n0, h.MaxSeeds, res.looks, ind, ns)
	for _, s := range need {
		for _, pt := range res.Settings[s].Points {
			needed[pt] = true
		}
	}
	if nc > 1 {
		for c := range nc {
			cc := competition{values: make([][]float64, ns), verdict: make([]Verdict, ns), sup: sup}
			for s, st := range res.Settings {
				pt := st.Points[c]
				cc.verdict[s] = res.Points[pt].Verdict
				if om >= 0 {
					cc.values[s] = values[pt][om]
				} else {
					cc.values[s] = make([]float64, res.Points[pt].Seeds)
				}
			}
			pk, need := cc.pick(obj, n0, h.MaxSeeds, res.looks, ind, ns)
			res.PerCondition = append(res.PerCondition, pk)
			for _, s := range need {
				needed[res.Settings[s].Points[c]] = true
			}
		}
	}
	if len(objectives) == 2 {
		m1 := h.metricIndex(objectives[1].Metric)
		var cands []int
		xs, ys := make([][]float64, ns), make([][]float64, ns)
		for s, st := range res.Settings {
			if st.Verdict != Breaks {
				cands = append(cands, s)
				xs[s], ys[s] = rc.values[s], robust(s, m1)
			}
		}
		res.Pareto = paretoFront(cands, xs, ys, [2]scenarios.Objective{objectives[0], objectives[1]})
	}
	var out []int
	for pt, n := range needed {
		if n && res.Points[pt].Seeds < h.MaxSeeds {
			out = append(out, pt)
		}
	}
	return res, out, nil
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

// Hardest returns the condition under which setting s's first objective
// is worst (the first one without an objective): where to look at it.
func (r *Result) Hardest(s int) int {
	objectives, _, _ := r.goals()
	if len(objectives) == 0 || s < 0 {
		return 0
	}
	m := r.metricIndex(objectives[0].Metric)
	worst := 0
	for c, pt := range r.Settings[s].Points {
		if objectives[0].Better(r.Points[r.Settings[s].Points[worst]].Stats[m].Mean, r.Points[pt].Stats[m].Mean) {
			worst = c
		}
	}
	return worst
}

// The JSON form of a Result. Numbers that are NaN are null; an infinite
// bound is null too, and its "unbounded" flag says so.
type (
	resultJSON struct {
		Schema   string       `json:"schema"`
		Build    stamp.Build  `json:"build"`
		MergedBy *stamp.Build `json:"merged_by,omitempty"`
		Header
		Points         []pointJSON   `json:"points"`
		Settings       []settingJSON `json:"settings"`
		Recommendation pickJSON      `json:"recommendation"`
		PerCondition   []pickJSON    `json:"per_condition"`
		Pareto         []Front       `json:"pareto"`
		Runs           []runJSON     `json:"runs"`
	}
	pointJSON struct {
		Point       int                 `json:"point"`
		Values      []string            `json:"values"`
		Set         []string            `json:"set"`
		Setting     int                 `json:"setting"`
		Condition   int                 `json:"condition"`
		Seeds       int                 `json:"seeds"`
		Verdict     string              `json:"verdict"`
		Metrics     map[string]statJSON `json:"metrics"`
		Constraints []checkJSON         `json:"constraints"`
		Expect      []expectJSON        `json:"expect"`
	}
	statJSON struct {
		N     int         `json:"n"`
		Mean  *float64    `json:"mean"`
		SD    *float64    `json:"sd"`
		CI95  [2]*float64 `json:"ci95"`
		Equal bool        `json:"all_equal,omitempty"`
	}
	checkJSON struct {
		Constraint string `json:"constraint"`
		N          int    `json:"n"`
		Breaches   *int   `json:"breaches,omitempty"`
		// Bounds are the 95 % bounds of the share of runs breaching (a
		// per-run constraint) or of the mean.
		Bounds  [2]*float64 `json:"bounds"`
		Verdict string      `json:"verdict"`
	}
	expectJSON struct {
		Expect   string `json:"expect"`
		Breached int    `json:"breached"`
		Runs     int    `json:"runs"`
	}
	settingJSON struct {
		Setting   int      `json:"setting"`
		Values    []string `json:"values"`
		Set       []string `json:"set"`
		Points    []int    `json:"points"`
		Verdict   string   `json:"verdict"`
		Seeds     int      `json:"seeds"`
		Objective statJSON `json:"objective"`
	}
	pickJSON struct {
		Condition     *int     `json:"condition,omitempty"`
		ConditionSet  []string `json:"condition_set,omitempty"`
		Setting       *int     `json:"setting"`
		Set           []string `json:"set"`
		Seeds         int      `json:"seeds"`
		Objective     statJSON `json:"objective"`
		Separated     bool     `json:"separated"`
		PCS           float64  `json:"probability_correct_selection"`
		Indifference  *float64 `json:"indifference_zone"`
		RunnerUp      *int     `json:"runner_up"`
		Difference    statJSON `json:"difference_runner_up_minus_best"`
		Tied          []int    `json:"tied"`
		Survivors     []int    `json:"survivors"`
		Meeting       []int    `json:"meeting"`
		Undecided     []int    `json:"undecided"`
		BetterUnknown []int    `json:"undecided_better"`
	}
	runJSON struct {
		Run      int                 `json:"run"`
		Point    int                 `json:"point"`
		Seed     uint64              `json:"seed"`
		Events   uint64              `json:"events"`
		Metrics  map[string]*float64 `json:"metrics"`
		Breached []int               `json:"expect_breached,omitempty"`
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

func toStatJSON(s Stat) statJSON {
	return statJSON{N: s.N, Mean: num(s.Mean), SD: num(s.SD), CI95: [2]*float64{num(s.Low), num(s.High)}, Equal: s.Equal}
}

func ints(xs []int) []int {
	if xs == nil {
		return []int{}
	}
	return xs
}

func (r *Result) pickJSON(p Pick, cond int) pickJSON {
	j := pickJSON{Seeds: p.Seeds, Objective: toStatJSON(p.Objective), Separated: p.Separated, PCS: p.PCS,
		Difference: toStatJSON(p.Diff), Tied: ints(p.Tied), Survivors: ints(p.Survivors), Meeting: ints(p.Meeting),
		Undecided: ints(p.Undecided), BetterUnknown: ints(p.Better), Set: []string{}}
	if cond >= 0 {
		j.Condition, j.ConditionSet = &cond, r.ConditionSets(cond)
	}
	if p.Best >= 0 {
		b := p.Best
		j.Setting, j.Set = &b, r.SettingSets(b)
		j.Indifference = num(p.Delta)
	}
	if p.RunnerUp >= 0 {
		ru := p.RunnerUp
		j.RunnerUp = &ru
	}
	return j
}

// JSON renders r as sweep.json: 2-space indented, keys in a fixed order
// (objects keyed by metric sorted), NaN and infinite bounds as null,
// ending with a newline.
func (r *Result) JSON() ([]byte, error) {
	out := resultJSON{Schema: Schema, Build: r.Build, MergedBy: r.MergedBy, Header: r.Header, Points: []pointJSON{}, Settings: []settingJSON{},
		Recommendation: r.pickJSON(r.Robust, -1), PerCondition: []pickJSON{}, Pareto: r.Pareto, Runs: []runJSON{}}
	if out.Pareto == nil {
		out.Pareto = []Front{}
	}
	for i := range out.Pareto {
		out.Pareto[i].Tied = ints(out.Pareto[i].Tied)
	}
	for _, p := range r.Points {
		pj := pointJSON{Point: p.Index, Values: p.Values, Set: r.pointSets(p.Index), Setting: p.Setting, Condition: p.Condition,
			Seeds: p.Seeds, Verdict: p.Verdict.String(), Metrics: map[string]statJSON{}, Constraints: []checkJSON{}, Expect: []expectJSON{}}
		for i, m := range r.Metrics {
			pj.Metrics[m] = toStatJSON(p.Stats[i])
		}
		for i, k := range p.Checks {
			cj := checkJSON{Constraint: r.Constraints[i], N: k.N, Bounds: [2]*float64{num(k.Low), num(k.High)}, Verdict: k.Verdict.String()}
			if c, _ := scenarios.ParseConstraint(r.Constraints[i]); !c.Mean {
				b := k.Breaches
				cj.Breaches = &b
			}
			pj.Constraints = append(pj.Constraints, cj)
		}
		for i, n := range p.Expect {
			pj.Expect = append(pj.Expect, expectJSON{Expect: r.Expect[i], Breached: n, Runs: p.Seeds})
		}
		out.Points = append(out.Points, pj)
	}
	for _, s := range r.Settings {
		out.Settings = append(out.Settings, settingJSON{Setting: s.Index, Values: s.Values, Set: r.SettingSets(s.Index),
			Points: s.Points, Verdict: s.Verdict.String(), Seeds: s.Seeds, Objective: toStatJSON(s.Objective)})
	}
	for c, p := range r.PerCondition {
		out.PerCondition = append(out.PerCondition, r.pickJSON(p, c))
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
	rj := runJSON{Run: run.Index, Point: run.Point, Seed: run.Seed, Events: run.Events, Metrics: map[string]*float64{}, Breached: run.Breached}
	for i, m := range metrics {
		rj.Metrics[m] = num(run.Values[i])
	}
	return rj
}

func fromRunJSON(rj runJSON, metrics []string) (Run, error) {
	r := Run{Index: rj.Run, Point: rj.Point, Seed: rj.Seed, Events: rj.Events, Values: make([]float64, len(metrics)), Breached: rj.Breached}
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
// one column per param (named by its key), one per metric (named by its
// path; empty where the run reported none) and the number of the
// scenario's expectations the run breached.
func (r *Result) CSV() ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	head := []string{"run", "point", "seed"}
	for _, p := range r.Params {
		head = append(head, p.Key)
	}
	head = append(head, r.Metrics...)
	head = append(head, "expectations_breached")
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
		row = append(row, strconv.Itoa(len(run.Breached)))
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
