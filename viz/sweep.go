package viz

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/scenarios"
	"github.com/xdssim/xdssim/stamp"
	"github.com/xdssim/xdssim/sweep"
)

// lineColors colour the lines of a sweep chart, one per value of its
// second param, in order.
var lineColors = []string{"#1f77b4", "#9467bd", "#2ca02c", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#393b79"}

// Marks of sweep.html's charts: the recommended setting, and the points
// that break a constraint or are still undecided.
const (
	colorRecommended = "#1a7f37"
	colorBreaks      = "#cf222e"
	colorUndecided   = "#9ca3af"
)

// WriteSweep writes sweep.html for a finished sweep to w: one
// self-contained HTML file like report.html. From the top: the answer
// (the recommended setting of the knobs under every swept condition, how
// sure it is, its runner-up and ties, and the best setting under each
// condition); the sweep (its params, each a knob or a condition and
// deployable or a what-if, seeds, risk, goal and where it came from); for
// each metric, a chart against each param (numeric params on a value
// axis, logarithmic when their values are geometric; the mean over seeds
// and its 95 % interval as a band, one line per value of a second param,
// the other params pooled; the recommended setting, the points that break
// a constraint and the undecided ones marked); with two or more params, a
// heatmap of each metric's mean over the first two, marked alike; with two
// objectives, the settings' means on both with the Pareto front labelled;
// and a table of every point. It depends only on r, so merged shards give
// the same bytes as one sweep.
func WriteSweep(w io.Writer, r *sweep.Result) error {
	b, err := sweepPage(r)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

type sweepView struct {
	Scenario    string
	Runs        int
	Points      int
	Seeds       string
	MaxSeeds    int
	Risk        string
	Sets        []string
	Params      []sweep.ParamInfo
	WhatIf      bool
	Goals       []goalRow
	Recommended *pickView
	NoPick      string
	Conditions  []conditionRow
	Metrics     []template.HTML
	Constraints []string
	Expect      []string
	Rows        []sweepPointRow
	Sections    []section

	page
}

// goalRow is one objective or constraint, with how it is judged and where
// it came from.
type goalRow struct {
	Kind, Goal, How, From string
}

// pickView is the answer of a competition, written out.
type pickView struct {
	Setting   string
	Verdict   string
	Seeds     int
	Objective string
	Metric    string
	Sure      string
	RunnerUp  string
	Tied      string
	Better    string
	Reproduce string
}

// conditionRow is the best setting under one condition.
type conditionRow struct {
	Condition, Setting, Objective, Sure string
	Seeds                               int
}

type sweepPointRow struct {
	Index   int
	Values  []string
	Seeds   int
	Checks  []checkCell
	Stats   []string
	Expect  string
	Verdict string
	Best    bool
}

type checkCell struct {
	Text, Class string
}

func sweepPage(r *sweep.Result) ([]byte, error) {
	if r == nil {
		return nil, fmt.Errorf("viz: sweep.html: no result")
	}
	if err := (stamp.Run{Build: r.Build, ScenarioSHA256: r.ScenarioSHA256}).Check(); err != nil {
		return nil, fmt.Errorf("viz: sweep.html: stamp: %w", err)
	}
	v := sweepView{
		Scenario:    r.Scenario,
		Runs:        len(r.Runs),
		Points:      len(r.Points),
		MaxSeeds:    r.MaxSeeds,
		Risk:        sweep.Percent(r.Risk),
		Sets:        r.Sets,
		Params:      r.Params,
		Constraints: r.Constraints,
		Expect:      r.Expect,
		page: newPage("xdssim sweep: "+r.Scenario, pageStamp{Build: r.Build, MergedBy: r.MergedBy,
			Scenarios: []scenarioHash{{SHA256: r.ScenarioSHA256}}}),
	}
	for _, m := range r.Metrics {
		v.Metrics = append(v.Metrics, breakable(m))
	}
	seeds := make([]string, len(r.Seeds))
	for i, s := range r.Seeds {
		seeds[i] = strconv.FormatUint(s, 10)
	}
	v.Seeds = strings.Join(seeds, ", ")
	for _, p := range r.Params {
		v.WhatIf = v.WhatIf || p.Label == sweep.WhatIf
	}
	for _, o := range r.Objectives {
		v.Goals = append(v.Goals, goalRow{"objective", o, "the mean over the seeds (and over the conditions, for the recommendation)", r.ObjectivesFrom})
	}
	for _, c := range r.Constraints {
		how := "on every run: met when under " + v.Risk + " of runs breach it, with 95 % confidence (exact binomial bound)"
		if con, _ := scenarios.ParseConstraint(c); con.Mean {
			how = "on the mean: met when its 95 % interval is within the bound"
		}
		v.Goals = append(v.Goals, goalRow{"constraint", c, how, r.ConstraintsFrom})
	}
	v.Recommended, v.NoPick = recommendation(r)
	for c, p := range r.PerCondition {
		row := conditionRow{Condition: strings.Join(r.ConditionSets(c), " "), Seeds: p.Seeds}
		if p.Best < 0 {
			row.Setting = r.NoPickText(p, "under it")
		} else {
			row.Setting, row.Objective, row.Sure = r.SettingText(p.Best), p.Objective.Text("–"), r.SureText(p)
		}
		v.Conditions = append(v.Conditions, row)
	}
	for _, p := range r.Points {
		row := sweepPointRow{Index: p.Index, Values: p.Values, Seeds: p.Seeds, Verdict: p.Verdict.String(),
			Best: r.Robust.Best >= 0 && p.Setting == r.Robust.Best}
		for i, k := range p.Checks {
			row.Checks = append(row.Checks, checkCell{Text: r.CheckText(i, k), Class: verdictClass(k.Verdict)})
		}
		for _, s := range p.Stats {
			row.Stats = append(row.Stats, s.Text("–"))
		}
		var ex []string
		for i, n := range p.Expect {
			if n > 0 {
				ex = append(ex, fmt.Sprintf("%s: %d of %d", r.Expect[i], n, p.Seeds))
			}
		}
		row.Expect = strings.Join(ex, "; ")
		v.Rows = append(v.Rows, row)
	}
	v.Sections = sweepSections(r)
	return renderPage("sweep.html", sweepTemplate, &v, sectionCharts(v.Sections)...)
}

// breakable lets a long metric path wrap after its dots.
func breakable(s string) template.HTML {
	return template.HTML(strings.ReplaceAll(template.HTMLEscapeString(s), ".", ".<wbr>"))
}

func verdictClass(v sweep.Verdict) string {
	switch v {
	case sweep.Meets:
		return "pass"
	case sweep.Breaks:
		return "fail"
	}
	return "muted"
}

// recommendation writes the robust pick, or says why there is none.
func recommendation(r *sweep.Result) (*pickView, string) {
	p := r.Robust
	if p.Best < 0 {
		return nil, r.NoPickText(p, r.ConditionsText())
	}
	verdict := "meets every constraint "
	if len(r.Constraints) == 0 {
		verdict = "the best objective (no constraint) "
	}
	pv := &pickView{Setting: r.SettingText(p.Best), Verdict: verdict + r.ConditionsText(),
		Seeds: r.Settings[p.Best].Seeds, Objective: p.Objective.Text("–"), Metric: r.ObjectiveMetric(), Sure: r.SureText(p)}
	if r.Conditions() > 1 {
		pv.Metric += " (seed by seed, the mean over the conditions)"
	}
	if p.RunnerUp >= 0 && !r.EqualOnEverySeed(p) {
		pv.RunnerUp = r.VerdictText(p.RunnerUp) + ": " + sweep.Signed(p.Diff) + " (runner-up − recommended, paired by seed)"
	}
	if !r.EqualOnEverySeed(p) {
		pv.Tied = r.VerdictsText(p.Tied)
	}
	if !r.OnlyBetterUndecided(p) {
		pv.Better = r.SettingsText(p.Better)
	}
	pv.Reproduce, _ = r.Reproduce(r.Scenario)
	return pv, ""
}

// flatZero reports whether metric m is zero (or not reported) on every
// run: a chart of it would show nothing.
func flatZero(r *sweep.Result, m int) bool {
	for _, run := range r.Runs {
		if v := run.Values[m]; finite(v) && v != 0 {
			return false
		}
	}
	return true
}

// sweepSections are the chart sections of sweep.html. A metric that is
// zero on every run is named in one line instead of charted.
func sweepSections(r *sweep.Result) []section {
	ids := idSet{}
	var out []section
	var zero []string
	for m, metric := range r.Metrics {
		if flatZero(r, m) {
			zero = append(zero, metric)
		}
	}
	charted := func(m int) bool { return !slices.Contains(zero, r.Metrics[m]) }
	if len(r.Params) > 0 {
		s := section{ID: "params", Title: "Metrics against params",
			Lead: "Each metric's mean over the seeds against each param, the bar behind each point its 95 % interval (bootstrap-t, inside the metric's range; up to the chart's top when the runs cannot bound it). " +
				"One line per value of another param; params not on the chart are pooled. Numeric params are on a value axis (logarithmic when their values are geometric). " +
				"The recommended setting is marked ◆, points that break a constraint ✕, undecided ones ○."}
		s.Empty = zero
		for m := range r.Metrics {
			if !charted(m) {
				continue
			}
			for a := range r.Params {
				b := -1
				if len(r.Params) > 1 {
					b = 0
					if a == 0 {
						b = 1
					}
				}
				s.Charts = append(s.Charts, paramChart(r, ids, m, a, b))
			}
		}
		out = append(out, s)
	}
	if len(r.Params) >= 2 {
		s := section{ID: "heatmaps", Title: "Heatmaps over " + r.Params[0].Key + " × " + r.Params[1].Key,
			Lead: "Each metric's mean over the seeds for every pair of values of the first two params (others pooled). ◆ the recommended setting, ✕ breaks a constraint, ○ undecided."}
		for m := range r.Metrics {
			if charted(m) {
				s.Charts = append(s.Charts, sweepHeatmap(r, ids, m))
			}
		}
		if len(s.Charts) > 0 {
			out = append(out, s)
		}
	}
	if len(r.Objectives) == 2 {
		out = append(out, section{ID: "tradeoff", Title: "Trade-off between the objectives",
			Lead: "Every setting's means on the two objectives (over the conditions). The labelled points are the Pareto front: settings not known to break a constraint that no other such setting beats on both objectives with paired 95 % intervals excluding 0. " +
				"Front points the runs cannot tell apart on either objective are labelled ≈.",
			Charts: []chart{paretoChart(r, ids)}})
	}
	return out
}

// axisScale says how a param's values sit on a chart's x axis.
type axisScale struct {
	// numeric says every value is a number or a duration (in seconds).
	numeric bool
	// log says the values are geometric: positive, with consecutive
	// ratios within 10 % of each other and above 1.5.
	log    bool
	values []float64
}

// paramAxis reads the values of param p as numbers, when they are.
func paramAxis(p sweep.ParamInfo) axisScale {
	var a axisScale
	for _, t := range p.Values {
		x, err := strconv.ParseFloat(strings.Trim(t, `"`), 64)
		if err != nil || !finite(x) {
			d, derr := time.ParseDuration(strings.Trim(t, `"`))
			if derr != nil {
				return axisScale{}
			}
			x = d.Seconds()
		}
		a.values = append(a.values, x)
	}
	a.numeric = len(a.values) > 1
	sorted := slices.Clone(a.values)
	slices.Sort(sorted)
	if a.numeric && len(sorted) >= 3 && sorted[0] > 0 {
		a.log = true
		r0 := sorted[1] / sorted[0]
		for i := 1; i < len(sorted); i++ {
			r := sorted[i] / sorted[i-1]
			if r < 1.5 || math.Abs(r-r0) > 0.1*r0 {
				a.log = false
			}
		}
	}
	return a
}

// cellPoints returns the points whose value of param a is index va and,
// when b >= 0, of param b is index vb.
func cellPoints(r *sweep.Result, a, va, b, vb int) []sweep.Point {
	var out []sweep.Point
	for _, p := range r.Points {
		if p.Values[a] == r.Params[a].Values[va] && (b < 0 || p.Values[b] == r.Params[b].Values[vb]) {
			out = append(out, p)
		}
	}
	return out
}

// pooled returns the Stat of metric m over the runs of pts.
func pooled(r *sweep.Result, m int, pts []sweep.Point) sweep.Stat {
	in := make(map[int]bool, len(pts))
	for _, p := range pts {
		in[p.Index] = true
	}
	var xs []float64
	for _, run := range r.Runs {
		if in[run.Point] {
			xs = append(xs, run.Values[m])
		}
	}
	lo, hi, count := fleet.MetricRange(r.Metrics[m])
	return sweep.Mean(xs, sweep.Support{Min: lo, Max: hi, Count: count})
}

// cellMark says what a cell of points is: "best" when it holds a point of
// the recommended setting, "breaks" when every point breaks a constraint,
// "undecided" when none meets and some is undecided, "" otherwise.
func cellMark(r *sweep.Result, pts []sweep.Point) string {
	if len(pts) == 0 {
		return ""
	}
	breaks, meets := 0, 0
	for _, p := range pts {
		if r.Robust.Best >= 0 && p.Setting == r.Robust.Best {
			return "best"
		}
		switch p.Verdict {
		case sweep.Breaks:
			breaks++
		case sweep.Meets:
			meets++
		}
	}
	switch {
	case len(r.Constraints) == 0:
		return ""
	case breaks == len(pts):
		return "breaks"
	case meets == 0:
		return "undecided"
	}
	return ""
}

// dataOrGap is v as a chart value, "-" (a gap) when not finite.
func dataOrGap(v float64) any {
	if !finite(v) {
		return "-"
	}
	return v
}

// paramChart draws metric m against param a: one line (with its 95 %
// band) per value of param b, or one line when b < 0, and the marks.
func paramChart(r *sweep.Result, ids idSet, m, a, b int) chart {
	metric, pa := r.Metrics[m], r.Params[a]
	id := ids.unique("chart_" + slug(metric) + "_by_" + slug(pa.Key))
	title := metric + " by " + pa.Key
	if pa.Label == sweep.WhatIf {
		title += " (what-if)"
	}
	ax := paramAxis(pa)
	// x is the axis position of value index va.
	x := func(va int) any {
		if ax.numeric {
			return ax.values[va]
		}
		return pa.Values[va]
	}
	// order is the value indices in the axis's order.
	order := make([]int, len(pa.Values))
	for i := range order {
		order[i] = i
	}
	if ax.numeric {
		slices.SortStableFunc(order, func(i, j int) int {
			switch {
			case ax.values[i] < ax.values[j]:
				return -1
			case ax.values[i] > ax.values[j]:
				return 1
			}
			return 0
		})
	}
	l := charts.NewLine()
	l.SetGlobalOptions(frame(id, title, "item", true, false)...)
	xAxis := opts.XAxis{Type: "category", Name: pa.Key, NameLocation: "middle", NameGap: 28}
	switch {
	case ax.log:
		xAxis.Type = "log"
	case ax.numeric:
		xAxis.Type, xAxis.Scale = "value", opts.Bool(true)
	default:
		xAxis.Data = pa.Values
	}
	l.SetGlobalOptions(
		charts.WithXAxisOpts(xAxis),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: metric, Scale: opts.Bool(true)}),
	)
	lines := 1
	if b >= 0 {
		lines = len(r.Params[b].Values)
	}
	var legend []string
	var marks [3][]string // best, breaks, undecided
	var pending []whiskerSeries
	top := math.Inf(-1)
	for k := range lines {
		name := "mean"
		if b >= 0 {
			name = r.Params[b].Key + " = " + r.Params[b].Values[k]
		}
		color := lineColors[k%len(lineColors)]
		var mean []opts.LineData
		var whiskers []string
		var highs []float64
		for _, va := range order {
			pts := cellPoints(r, a, va, b, k)
			s := pooled(r, m, pts)
			mean = append(mean, opts.LineData{Name: pa.Key + " = " + pa.Values[va] + ": " + s.Text("–"), Value: []any{x(va), dataOrGap(s.Mean)}})
			if !finite(s.Mean) {
				continue
			}
			if finite(s.Low) && s.High > s.Low {
				// The 95 % interval as a whisker: its two ends, then a
				// gap; an unbounded end is drawn to the top of the data.
				xs, _ := json.Marshal(x(va))
				whiskers = append(whiskers, fmt.Sprintf(`[%s,%s],[%s,%%s],[%s,"-"]`, xs, formatNumber(s.Low), xs, xs))
				highs = append(highs, s.High)
			}
			top = max(top, s.Mean)
			if finite(s.High) {
				top = max(top, s.High)
			}
			pt := markPoint(x(va), s.Mean, name+", "+pa.Key+" = "+pa.Values[va], pts)
			switch cellMark(r, pts) {
			case "best":
				marks[0] = append(marks[0], pt)
			case "breaks":
				marks[1] = append(marks[1], pt)
			case "undecided":
				marks[2] = append(marks[2], pt)
			}
		}
		l.AddSeries(name+" 95% interval", nil)
		pending = append(pending, whiskerSeries{len(l.MultiSeries) - 1, whiskers, highs})
		ws := &l.MultiSeries[len(l.MultiSeries)-1]
		ws.ShowSymbol, ws.Symbol = opts.Bool(false), "none"
		ws.LineStyle = &opts.LineStyle{Width: 6, Color: color, Opacity: opts.Float(0.25)}
		l.AddSeries(name, mean)
		s := &l.MultiSeries[len(l.MultiSeries)-1]
		s.LineStyle = &opts.LineStyle{Width: 2, Color: color}
		s.ItemStyle = &opts.ItemStyle{Color: color}
		legend = append(legend, name)
	}
	for _, w := range pending {
		parts := make([]string, len(w.whiskers))
		for i, t := range w.whiskers {
			hi := top
			if finite(w.highs[i]) {
				hi = w.highs[i]
			}
			parts[i] = fmt.Sprintf(t, formatNumber(hi))
		}
		l.MultiSeries[w.series].Data = json.RawMessage("[" + strings.Join(parts, ",") + "]")
	}
	legend = append(legend, addMarks(l, marks)...)
	if finite(top) && top > 0 {
		l.YAxisList[0].Max = niceMax(top)
	}
	return chart{ID: id, Title: title, Height: 340, option: options(l),
		Runtime: runtimeOpts{Patch: map[string]any{
			"legend": map[string]any{"data": legend},
			"yAxis":  map[string]any{"nameTextStyle": map[string]any{"align": "left"}},
		}}}
}

// whiskerSeries is a series of 95 % intervals drawn once the chart's
// top is known: whiskers are templates of the upper end, highs the ends.
type whiskerSeries struct {
	series   int
	whiskers []string
	highs    []float64
}

// markPoint is one marked point of a chart, as echarts data.
func markPoint(x any, y float64, name string, pts []sweep.Point) string {
	xs, _ := json.Marshal(x)
	ids := make([]string, len(pts))
	for i, p := range pts {
		ids[i] = strconv.Itoa(p.Index)
	}
	return fmt.Sprintf(`{"value":[%s,%s],"name":%s}`, xs, formatNumber(y), strconv.Quote(name+" (point "+strings.Join(ids, ", ")+")"))
}

// addMarks adds the scatter series of the marked points: the recommended
// setting, the points that break a constraint, the undecided ones; it
// returns their names for the legend.
func addMarks(l *charts.Line, marks [3][]string) []string {
	kinds := []struct {
		name, color, symbol string
		size                int
		hollow              bool
	}{
		{"recommended setting", colorRecommended, "diamond", 16, false},
		{"breaks a constraint", colorBreaks, "path://M2,0 L10,8 L18,0 L20,2 L12,10 L20,18 L18,20 L10,12 L2,20 L0,18 L8,10 L0,2 Z", 12, false},
		{"undecided", colorUndecided, "circle", 12, true},
	}
	var names []string
	for i, k := range kinds {
		if len(marks[i]) == 0 {
			continue
		}
		l.AddSeries(k.name, nil)
		s := &l.MultiSeries[len(l.MultiSeries)-1]
		s.Type, s.Symbol, s.SymbolSize = "scatter", k.symbol, k.size
		s.Data = json.RawMessage("[" + strings.Join(marks[i], ",") + "]")
		s.ItemStyle = &opts.ItemStyle{Color: k.color}
		if k.hollow {
			s.ItemStyle = &opts.ItemStyle{Color: "#ffffff", BorderColor: k.color, BorderWidth: 2}
		}
		names = append(names, k.name)
	}
	return names
}

// sweepHeatmap draws metric m's mean over the first two params, each cell
// labelled with its figure and mark.
func sweepHeatmap(r *sweep.Result, ids idSet, m int) chart {
	metric, p0, p1 := r.Metrics[m], r.Params[0], r.Params[1]
	id := ids.unique("chart_heatmap_" + slug(metric))
	title := metric + ": mean over " + p0.Key + " × " + p1.Key
	lo, hi := math.Inf(1), math.Inf(-1)
	b := []byte{'['}
	for x := range p0.Values {
		for y := range p1.Values {
			pts := cellPoints(r, 0, x, 1, y)
			s := pooled(r, m, pts)
			if !finite(s.Mean) {
				continue
			}
			lo, hi = min(lo, s.Mean), max(hi, s.Mean)
			if len(b) > 1 {
				b = append(b, ',')
			}
			label := sweep.FormatFigure(s.Mean)
			switch cellMark(r, pts) {
			case "best":
				label = "◆ " + label
			case "breaks":
				label = "✕ " + label
			case "undecided":
				label = "○ " + label
			}
			b = fmt.Appendf(b, "[%d,%d,%s,%s]", x, y, formatNumber(s.Mean), strconv.Quote(label))
		}
	}
	b = append(b, ']')
	if lo > hi {
		lo, hi = 0, 0
	}
	if lo == hi {
		hi = lo + 1
	}
	h := charts.NewHeatMap()
	h.SetGlobalOptions(frame(id, title, "item", false, false)...)
	h.SetGlobalOptions(
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: p0.Key, NameLocation: "middle", NameGap: 28, Data: p0.Values}),
		charts.WithYAxisOpts(opts.YAxis{Type: "category", Name: p1.Key, Data: p1.Values}),
	)
	h.AddSeries(metric, nil)
	h.MultiSeries[0].Data = json.RawMessage(b)
	h.MultiSeries[0].Label = &opts.Label{Show: opts.Bool(true), Formatter: "{@[3]}"}
	return chart{ID: id, Title: title, Height: max(260, 40*len(p1.Values)+160), option: options(h),
		Runtime: runtimeOpts{Patch: map[string]any{
			"visualMap": map[string]any{
				"type": "continuous", "min": lo, "max": hi, "calculable": true, "dimension": 2,
				"orient": "horizontal", "right": 8, "top": 30, "itemHeight": 160,
				"inRange": map[string]any{"color": []string{"#f7fbff", "#6baed6", "#08306b"}},
			},
			"grid":   map[string]any{"top": 90},
			"yAxis":  map[string]any{"nameTextStyle": map[string]any{"align": "left"}},
			"series": map[string]any{"progressive": 0},
		}}}
}

// paretoChart draws every setting's means on the two objectives, the
// settings that break a constraint greyed, and the Pareto front joined
// and labelled.
func paretoChart(r *sweep.Result, ids idSet) chart {
	o0, o1 := objectiveMetric(r.Objectives[0]), objectiveMetric(r.Objectives[1])
	m0, m1 := slices.Index(r.Metrics, o0), slices.Index(r.Metrics, o1)
	id := ids.unique("chart_pareto")
	title := "Trade-off: " + r.Objectives[0] + ", " + r.Objectives[1]
	// means returns a setting's means over its points' runs.
	means := func(s sweep.Setting) (float64, float64) {
		var pts []sweep.Point
		for _, pt := range s.Points {
			pts = append(pts, r.Points[pt])
		}
		return pooled(r, m0, pts).Mean, pooled(r, m1, pts).Mean
	}
	onFront := map[int]sweep.Front{}
	for _, f := range r.Pareto {
		onFront[f.Setting] = f
	}
	point := func(s sweep.Setting, label string) (string, bool) {
		x, y := means(s)
		if !finite(x) || !finite(y) {
			return "", false
		}
		lab := ""
		if label != "" {
			lab = fmt.Sprintf(`,"label":{"show":true,"formatter":%s,"position":"right"}`, strconv.Quote(label))
		}
		return fmt.Sprintf(`{"value":[%s,%s],"name":%s%s}`, formatNumber(x), formatNumber(y),
			strconv.Quote(r.SettingText(s.Index)), lab), true
	}
	var front, rest, breaking []string
	var frontSettings []sweep.Setting
	for _, s := range r.Settings {
		if f, ok := onFront[s.Index]; ok {
			label := strings.Join(s.Values, ", ")
			if len(f.Tied) > 0 {
				label = "≈ " + label
			}
			if pt, ok := point(s, label); ok {
				front = append(front, pt)
				frontSettings = append(frontSettings, s)
			}
			continue
		}
		if pt, ok := point(s, ""); ok {
			if s.Verdict == sweep.Breaks {
				breaking = append(breaking, pt)
			} else {
				rest = append(rest, pt)
			}
		}
	}
	slices.SortStableFunc(frontSettings, func(a, b sweep.Setting) int {
		x, _ := means(a)
		y, _ := means(b)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	var line []string
	for _, s := range frontSettings {
		if pt, ok := point(s, ""); ok {
			line = append(line, pt)
		}
	}
	ytop := 0.0
	for _, s := range r.Settings {
		if _, y := means(s); finite(y) {
			ytop = max(ytop, y)
		}
	}
	l := charts.NewLine()
	l.SetGlobalOptions(frame(id, title, "item", true, false)...)
	l.SetGlobalOptions(
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: o0, NameLocation: "middle", NameGap: 28, Scale: opts.Bool(true)}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: o1, Scale: opts.Bool(true), Max: niceMax(ytop)}),
	)
	add := func(name string, pts []string, color string, scatter bool) {
		l.AddSeries(name, nil)
		s := &l.MultiSeries[len(l.MultiSeries)-1]
		s.Data = json.RawMessage([]byte("[" + strings.Join(pts, ",") + "]"))
		s.ItemStyle = &opts.ItemStyle{Color: color}
		if scatter {
			s.Type = "scatter"
			s.SymbolSize = 11
		} else {
			s.LineStyle = &opts.LineStyle{Width: 2, Color: color, Type: "dashed"}
			s.ShowSymbol = opts.Bool(false)
		}
	}
	add("Pareto front", front, "#d62728", true)
	add("dominated", rest, "#1f77b4", true)
	add("breaks a constraint", breaking, "#b8bec7", true)
	add("front", line, "#d62728", false)
	return chart{ID: id, Title: title, Height: 420, option: options(l),
		Runtime: runtimeOpts{Patch: map[string]any{
			"legend": map[string]any{"data": []string{"Pareto front", "dominated", "breaks a constraint"}},
			"yAxis":  map[string]any{"nameTextStyle": map[string]any{"align": "left"}},
		}}}
}

// objectiveMetric is the metric of "minimize PATH".
func objectiveMetric(o string) string {
	_, m, _ := strings.Cut(o, " ")
	return m
}

var sweepTemplate = pageTemplate("sweep", `{{template "head" .}}
<section class="card head">
  <h1><span class="brand">xdssim sweep</span> {{.Scenario}}</h1>
  <dl class="facts">
    <div><dt>points</dt><dd>{{.Points}}</dd></div>
    <div><dt>first seeds</dt><dd>{{.Seeds}}</dd></div>
    <div><dt>most seeds a point may get</dt><dd>{{.MaxSeeds}}</dd></div>
    <div><dt>accepted risk</dt><dd>{{.Risk}}</dd></div>
    <div><dt>runs</dt><dd>{{.Runs}}</dd></div>
  </dl>
  <h2>Answer</h2>
  {{- with .Recommended}}
  <div class="answer">
  <p><b>Recommended: <code>{{.Setting}}</code></b>: {{.Verdict}} ({{.Seeds}} seeds each).</p>
  <p><code>{{.Metric}}</code> = {{.Objective}}</p>
  <p>{{.Sure}}.</p>
  {{- if .RunnerUp}}<p>Runner-up <code>{{.RunnerUp}}</code></p>{{end}}
  {{- if .Tied}}<p class="fail">Tied with it (the paired interval holds 0): <code>{{.Tied}}</code></p>{{end}}
  {{- if .Better}}<p class="muted">Maybe better, but not known to meet the constraints (undecided): <code>{{.Better}}</code></p>{{end}}
  <p>Reproduce it under its hardest condition: <code>{{.Reproduce}}</code> (for a scenario file, give its path instead of the name).</p>
  </div>
  {{- else}}
  <p class="{{if .Constraints}}fail{{else}}muted{{end}}">{{.NoPick}}</p>
  {{- end}}
  {{- if .Conditions}}
  <h2>Best setting under each condition</h2>
  <table class="fit">
    <thead><tr><th>condition</th><th>best setting</th><th class="num">objective</th><th>how sure</th><th class="num">seeds</th></tr></thead>
    <tbody>
    {{- range .Conditions}}
      <tr><td><code>{{.Condition}}</code></td><td><code>{{.Setting}}</code></td><td class="num">{{.Objective}}</td><td>{{.Sure}}</td><td class="num">{{.Seeds}}</td></tr>
    {{- end}}
    </tbody>
  </table>
  {{- end}}
  {{- if .Sets}}
  <p class="lead">Every run has <code>{{range $i, $s := .Sets}}{{if $i}} {{end}}--set {{$s}}{{end}}</code>.</p>
  {{- end}}
  <h2>Params</h2>
  {{- if .Params}}
  <table class="fit">
    <thead><tr><th>key</th><th>values</th><th>role</th><th>deployable today?</th></tr></thead>
    <tbody>
    {{- range .Params}}
      <tr><td><code>{{.Key}}</code></td><td>{{range $i, $v := .Values}}{{if $i}}, {{end}}{{$v}}{{end}}</td><td>{{if eq .Role "knob"}}knob: the sweep may recommend it{{else}}condition: the setting must hold under each{{end}}</td><td>{{if eq .Label "what-if"}}<span class="fail">what-if</span>: {{.Why}}{{else}}<span class="pass">deployable</span>{{end}}</td></tr>
    {{- end}}
    </tbody>
  </table>
  {{- else}}
  <p class="muted">No params: every run is the scenario itself, seed by seed.</p>
  {{- end}}
  {{- if .WhatIf}}
  <div class="whatif" role="note"><h2>Hypothetical values</h2><p>Some values of the params above are what-ifs: no shipping gRPC client can be configured to have them, only a change to its code would give them (docs/scenario-reference.md).</p></div>
  {{- end}}
  {{- if .Goals}}
  <h2>Goal</h2>
  <table class="fit">
    {{- range .Goals}}<tr><th>{{.Kind}}</th><td><code>{{.Goal}}</code> <span class="muted">{{.How}}; from {{.From}}</span></td></tr>{{end}}
  </table>
  {{- end}}
  <nav>
    {{- range .Sections}}<a href="#{{.ID}}">{{.Title}}</a>{{end}}<a href="#points">Every point</a>
  </nav>
</section>
{{- range .Sections}}
{{template "section" .}}
{{- end}}
<section class="card" id="points">
  <h2>Every point</h2>
  <p class="lead">Each point's seeds, each constraint's verdict (the share of runs breaching it, bounded with 95 % confidence), and each metric's mean over the seeds [95 % interval]; "all n = v" when every run gave v. ◆ marks the recommended setting's points.</p>
  <table class="fit points">
    <thead><tr><th>point</th>{{range .Params}}<th>{{.Key}}</th>{{end}}<th class="num">seeds</th>{{range .Constraints}}<th>{{.}}</th>{{end}}{{range .Metrics}}<th class="num">{{.}}</th>{{end}}{{if .Expect}}<th>expectations breached</th>{{end}}</tr></thead>
    <tbody>
    {{- $expect := .Expect}}
    {{- range .Rows}}
      <tr><td>{{.Index}}{{if .Best}} <span class="pass">◆</span>{{end}}</td>{{range .Values}}<td>{{.}}</td>{{end}}<td class="num">{{.Seeds}}</td>{{range .Checks}}<td class="{{.Class}}">{{.Text}}</td>{{end}}{{range .Stats}}<td class="num">{{.}}</td>{{end}}{{if $expect}}<td>{{.Expect}}</td>{{end}}</tr>
    {{- end}}
    </tbody>
  </table>
</section>
{{- template "footer" .}}
</body>
</html>
`)
