package viz

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/xdssim/xdssim/scenarios"
	"github.com/xdssim/xdssim/sweep"
)

// lineColors colour the lines of a sweep chart, one per value of its
// second param, in order.
var lineColors = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"}

// WriteSweep writes sweep.html for a finished sweep to w: one
// self-contained HTML file like report.html. From the top: the sweep (its
// params, each labelled deployable or what-if, seeds, objectives,
// constraints and the best point with the --set overrides that reproduce
// it); for each metric, a chart against each param (the mean over seeds
// and its 95 % interval as a band, one line per value of a second param,
// the other params pooled); with two or more params, a heatmap of each
// metric's mean over the first two; with two objectives, every point's
// means on both and the Pareto front; and a table of every point. It
// depends only on r, so merged shards give the same bytes as one sweep.
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
	Sets        []string
	Params      []sweep.ParamInfo
	WhatIf      bool
	Objectives  []string
	Constraints []string
	Feasible    bool
	Best        *sweepPointRow
	// Reproduce runs the best point; the scenario is named as the
	// sweep knew it (a file's own path is not in the result, which
	// shards on other machines share).
	Reproduce string
	Metrics   []string
	Rows      []sweepPointRow
	Sections  []section

	page
}

type sweepPointRow struct {
	Index    int
	Values   []string
	Stats    []string
	Feasible bool
}

func sweepPage(r *sweep.Result) ([]byte, error) {
	if r == nil {
		return nil, fmt.Errorf("viz: sweep.html: no result")
	}
	v := sweepView{
		Scenario:    r.Scenario,
		Runs:        len(r.Runs),
		Points:      len(r.Points),
		Sets:        r.Sets,
		Params:      r.Params,
		Objectives:  r.Objectives,
		Constraints: r.Constraints,
		Feasible:    r.Feasible(),
		Metrics:     r.Metrics,
		page:        newPage("xdssim sweep: " + r.Scenario),
	}
	seeds := make([]string, len(r.Seeds))
	for i, s := range r.Seeds {
		seeds[i] = strconv.FormatUint(s, 10)
	}
	v.Seeds = strings.Join(seeds, ", ")
	for _, p := range r.Params {
		v.WhatIf = v.WhatIf || p.Label == sweep.WhatIf
	}
	for _, p := range r.Points {
		row := sweepPointRow{Index: p.Index, Values: p.Values, Feasible: p.Feasible}
		for _, s := range p.Stats {
			row.Stats = append(row.Stats, s.Text(short, "–"))
		}
		v.Rows = append(v.Rows, row)
	}
	if r.Best >= 0 {
		v.Best = &v.Rows[r.Best]
		v.Reproduce = scenarios.Command("run", r.Scenario, r.Seeds[0], r.BestSets())
	}
	v.Sections = sweepSections(r)
	return renderPage("sweep.html", sweepTemplate, &v, sectionCharts(v.Sections)...)
}

// sweepSections are the chart sections of sweep.html.
func sweepSections(r *sweep.Result) []section {
	ids := idSet{}
	var out []section
	if len(r.Params) > 0 {
		s := section{ID: "params", Title: "Metrics against params",
			Lead: "Each metric's mean over the seeds against each param, the band its 95 % interval (Student's t). " +
				"One line per value of another param; params not on the chart are pooled."}
		for m := range r.Metrics {
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
			Lead: "Each metric's mean over the seeds for every pair of values of the first two params (others pooled)."}
		for m := range r.Metrics {
			s.Charts = append(s.Charts, sweepHeatmap(r, ids, m))
		}
		out = append(out, s)
	}
	if len(r.Objectives) == 2 {
		out = append(out, section{ID: "tradeoff", Title: "Trade-off between the objectives",
			Lead:   "Every point's means on the two objectives; the line joins the Pareto front: the points that meet the constraints and that no other such point beats on both.",
			Charts: []chart{paretoChart(r, ids)}})
	}
	return out
}

// pooled returns the Stat of metric m over the runs whose point has value
// index va of param a and, when b >= 0, value index vb of param b.
func pooled(r *sweep.Result, m, a, va, b, vb int) sweep.Stat {
	var xs []float64
	for _, run := range r.Runs {
		vals := r.Points[run.Point].Values
		if vals[a] != r.Params[a].Values[va] || (b >= 0 && vals[b] != r.Params[b].Values[vb]) {
			continue
		}
		xs = append(xs, run.Values[m])
	}
	return sweep.Describe(xs)
}

// dataOrGap is v as a chart value, "-" (a gap) when not finite.
func dataOrGap(v float64) any {
	if !finite(v) {
		return "-"
	}
	return v
}

// paramChart draws metric m against param a: one line (with its 95 %
// band) per value of param b, or one line when b < 0.
func paramChart(r *sweep.Result, ids idSet, m, a, b int) chart {
	metric, pa := r.Metrics[m], r.Params[a]
	id := ids.unique("chart_" + slug(metric) + "_by_" + slug(pa.Key))
	title := metric + " by " + pa.Key
	if pa.Label == sweep.WhatIf {
		title += " (what-if)"
	}
	l := charts.NewLine()
	l.SetGlobalOptions(frame(id, title, "item", true, false)...)
	l.SetGlobalOptions(
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: pa.Key, NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: metric, Scale: opts.Bool(true)}),
	)
	l.SetXAxis(pa.Values)
	lines := 1
	if b >= 0 {
		lines = len(r.Params[b].Values)
	}
	var legend []string
	for k := range lines {
		name := "mean"
		if b >= 0 {
			name = r.Params[b].Key + " = " + r.Params[b].Values[k]
		}
		color := lineColors[k%len(lineColors)]
		low, width, mean := make([]opts.LineData, len(pa.Values)), make([]opts.LineData, len(pa.Values)), make([]opts.LineData, len(pa.Values))
		for va := range pa.Values {
			s := pooled(r, m, a, va, b, k)
			mean[va] = opts.LineData{Value: dataOrGap(s.Mean)}
			low[va] = opts.LineData{Value: dataOrGap(s.Low)}
			width[va] = opts.LineData{Value: dataOrGap(s.High - s.Low)}
		}
		stack := "band" + strconv.Itoa(k)
		l.AddSeries(name+" 95% low", low)
		bs := &l.MultiSeries[len(l.MultiSeries)-1]
		bs.Stack, bs.ShowSymbol, bs.Symbol = stack, opts.Bool(false), "none"
		bs.LineStyle = &opts.LineStyle{Opacity: opts.Float(0)}
		l.AddSeries(name+" 95% interval", width)
		ws := &l.MultiSeries[len(l.MultiSeries)-1]
		ws.Stack, ws.ShowSymbol, ws.Symbol = stack, opts.Bool(false), "none"
		ws.LineStyle = &opts.LineStyle{Opacity: opts.Float(0)}
		ws.AreaStyle = &opts.AreaStyle{Color: color, Opacity: opts.Float(0.15)}
		l.AddSeries(name, mean)
		s := &l.MultiSeries[len(l.MultiSeries)-1]
		s.LineStyle = &opts.LineStyle{Width: 2, Color: color}
		s.ItemStyle = &opts.ItemStyle{Color: color}
		legend = append(legend, name)
	}
	return chart{ID: id, Title: title, Height: 340, option: options(l),
		Runtime: runtimeOpts{Patch: map[string]any{
			"legend": map[string]any{"data": legend},
			"yAxis":  map[string]any{"nameTextStyle": map[string]any{"align": "left"}},
		}}}
}

// sweepHeatmap draws metric m's mean over the first two params.
func sweepHeatmap(r *sweep.Result, ids idSet, m int) chart {
	metric, p0, p1 := r.Metrics[m], r.Params[0], r.Params[1]
	id := ids.unique("chart_heatmap_" + slug(metric))
	title := metric + ": mean over " + p0.Key + " × " + p1.Key
	lo, hi := math.Inf(1), math.Inf(-1)
	b := []byte{'['}
	for x := range p0.Values {
		for y := range p1.Values {
			s := pooled(r, m, 0, x, 1, y)
			if !finite(s.Mean) {
				continue
			}
			lo, hi = min(lo, s.Mean), max(hi, s.Mean)
			if len(b) > 1 {
				b = append(b, ',')
			}
			// Four significant digits: the cells are labelled with them.
			v, _ := strconv.ParseFloat(strconv.FormatFloat(s.Mean, 'g', 4, 64), 64)
			b = fmt.Appendf(b, "[%d,%d,%s]", x, y, formatNumber(v))
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
	h.MultiSeries[0].Label = &opts.Label{Show: opts.Bool(true)}
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

// paretoChart draws every point's means on the two objectives, feasible
// and not, with the Pareto front joined.
func paretoChart(r *sweep.Result, ids idSet) chart {
	o0, o1 := objectiveMetric(r.Objectives[0]), objectiveMetric(r.Objectives[1])
	m0, m1 := slices.Index(r.Metrics, o0), slices.Index(r.Metrics, o1)
	id := ids.unique("chart_pareto")
	title := "Trade-off: " + r.Objectives[0] + ", " + r.Objectives[1]
	point := func(p sweep.Point) (string, bool) {
		x, y := p.Stats[m0].Mean, p.Stats[m1].Mean
		if !finite(x) || !finite(y) {
			return "", false
		}
		return fmt.Sprintf(`{"value":[%s,%s],"name":%s}`, formatNumber(x), formatNumber(y),
			strconv.Quote(strings.Join(p.Values, ", "))), true
	}
	var feasible, infeasible []string
	for _, p := range r.Points {
		if s, ok := point(p); ok {
			if p.Feasible {
				feasible = append(feasible, s)
			} else {
				infeasible = append(infeasible, s)
			}
		}
	}
	front := slices.Clone(r.Pareto)
	slices.SortStableFunc(front, func(a, b int) int {
		x, y := r.Points[a].Stats[m0].Mean, r.Points[b].Stats[m0].Mean
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	var frontPts []string
	for _, i := range front {
		if s, ok := point(r.Points[i]); ok {
			frontPts = append(frontPts, s)
		}
	}
	l := charts.NewLine()
	l.SetGlobalOptions(frame(id, title, "item", true, false)...)
	l.SetGlobalOptions(
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: o0, NameLocation: "middle", NameGap: 28, Scale: opts.Bool(true)}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: o1, Scale: opts.Bool(true)}),
	)
	add := func(name string, pts []string, color string, scatter bool) {
		l.AddSeries(name, nil)
		s := &l.MultiSeries[len(l.MultiSeries)-1]
		s.Data = json.RawMessage([]byte("[" + strings.Join(pts, ",") + "]"))
		s.ItemStyle = &opts.ItemStyle{Color: color}
		if scatter {
			s.Type = "scatter"
			s.SymbolSize = 9
		} else {
			s.LineStyle = &opts.LineStyle{Width: 2, Color: color}
			s.SymbolSize = 11
		}
	}
	add("points meeting the constraints", feasible, "#1f77b4", true)
	add("points breaking a constraint", infeasible, "#b8bec7", true)
	add("Pareto front", frontPts, "#d62728", false)
	return chart{ID: id, Title: title, Height: 420, option: options(l),
		Runtime: runtimeOpts{Patch: map[string]any{"yAxis": map[string]any{"nameTextStyle": map[string]any{"align": "left"}}}}}
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
    <div><dt>seeds per point</dt><dd>{{.Seeds}}</dd></div>
    <div><dt>runs</dt><dd>{{.Runs}}</dd></div>
  </dl>
  {{- if .Sets}}
  <p class="lead">Every run has <code>{{range $i, $s := .Sets}}{{if $i}} {{end}}--set {{$s}}{{end}}</code>.</p>
  {{- end}}
  <h2>Params</h2>
  {{- if .Params}}
  <table>
    <thead><tr><th>key</th><th>values</th><th>deployable today?</th></tr></thead>
    <tbody>
    {{- range .Params}}
      <tr><td><code>{{.Key}}</code></td><td>{{range $i, $v := .Values}}{{if $i}}, {{end}}{{$v}}{{end}}</td><td>{{if eq .Label "what-if"}}<span class="fail">what-if</span>: {{.Why}}{{else}}<span class="pass">deployable</span>{{end}}</td></tr>
    {{- end}}
    </tbody>
  </table>
  {{- else}}
  <p class="muted">No params: every run is the scenario itself, seed by seed.</p>
  {{- end}}
  {{- if .WhatIf}}
  <div class="whatif" role="note"><h2>Hypothetical values</h2><p>Some values of the params above are what-ifs: no shipping gRPC client can be configured to have them, only a change to its code would give them (docs/scenario-reference.md).</p></div>
  {{- end}}
  {{- if or .Objectives .Constraints}}
  <h2>Goal</h2>
  <table>
    {{- range .Objectives}}<tr><th>objective</th><td><code>{{.}}</code> <span class="muted">(mean over seeds)</span></td></tr>{{end}}
    {{- range .Constraints}}<tr><th>constraint</th><td><code>{{.}}</code> <span class="muted">(mean over seeds)</span></td></tr>{{end}}
  </table>
  {{- if not .Feasible}}
  <p class="fail">No point meets every constraint.</p>
  {{- end}}
  {{- if .Best}}
  <h2>Best point: {{.Best.Index}}</h2>
  <p>Reproduce it with <code>{{.Reproduce}}</code> (for a scenario file, give its path instead of the name).</p>
  {{- end}}
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
  <p class="lead">Mean over the seeds [95 % interval].{{if .Constraints}} Points that break a constraint are marked ✗.{{end}}</p>
  <div class="scroll">
  <table>
    <thead><tr><th>point</th>{{range .Params}}<th>{{.Key}}</th>{{end}}{{range .Metrics}}<th class="num">{{.}}</th>{{end}}</tr></thead>
    <tbody>
    {{- range .Rows}}
      <tr><td>{{.Index}}{{if not .Feasible}} <span class="fail">✗</span>{{end}}</td>{{range .Values}}<td>{{.}}</td>{{end}}{{range .Stats}}<td class="num">{{.}}</td>{{end}}</tr>
    {{- end}}
    </tbody>
  </table>
  </div>
</section>
</body>
</html>
`)
