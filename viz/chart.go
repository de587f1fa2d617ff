package viz

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"time"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/stamp"
)

// chart is one echarts chart of the report: the options go-echarts built,
// and what the page's runtime (reportJS) does with them.
type chart struct {
	ID string
	// Title is the chart's title, also its container's aria-label.
	Title  string
	Height int // pixels
	// option is the chart's echarts option, as go-echarts builds it.
	option map[string]any
	// Runtime is handed to the page's xdssim.chart with the option.
	Runtime runtimeOpts
	// OptionJS and RuntimeJS are option and Runtime as script-safe JSON,
	// set just before the page is written.
	OptionJS, RuntimeJS template.JS
}

// runtimeOpts is what reportJS does to a chart beyond its option.
type runtimeOpts struct {
	// Time marks a chart over virtual time: its axis labels and tooltips
	// read as durations, and it zooms with every other time chart.
	Time bool `json:"time,omitempty"`
	// Patch is merged into the option by echarts after it is set: option
	// fields go-echarts has no type for (a piecewise visualMap by value, a
	// grid's background).
	Patch map[string]any `json:"patch,omitempty"`
	// States names the values of a heatmap's cells, for its tooltip.
	States []string `json:"states,omitempty"`
	// Columns is the virtual time one heatmap column covers, in seconds.
	Columns float64 `json:"columns,omitempty"`
}

// page is what the head of every page (report.html, sweep.html,
// compare.html) needs: its title and the assets it inlines so that it
// works offline (the stylesheet, the error banner, echarts, the charts'
// runtime). Each page's view embeds one.
type page struct {
	PageTitle                 string
	CSS                       template.CSS
	ErrorJS, EchartsJS, AppJS template.JS
	// Stamp is what the page's footer says of how it was made.
	Stamp pageStamp
}

// pageStamp is a page's footer: the build of xdssim that made its runs
// (and, for merged shards, the one that merged them, when another), and
// the SHA-256 of each scenario it ran.
type pageStamp struct {
	Build     stamp.Build
	MergedBy  *stamp.Build
	Scenarios []scenarioHash
}

// scenarioHash is one scenario's SHA-256, named for the footer ("B").
type scenarioHash struct{ Name, SHA256 string }

func newPage(title string, st pageStamp) page {
	return page{PageTitle: title, CSS: template.CSS(reportCSS), ErrorJS: template.JS(errorCatcherJS),
		EchartsJS: template.JS(echartsJS), AppJS: template.JS(reportJS), Stamp: st}
}

// pageHead defines the templates every page shares: "head", the start of
// a page up to its <body>; "section", a titled card of charts; "chart",
// one chart and the script that draws it; "footer", the build of xdssim
// and the scenario hashes, last in the <body>.
const pageHead = `{{define "head"}}<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.PageTitle}}</title>
<style>{{.CSS}}</style>
<script>{{.ErrorJS}}</script>
<script>{{.EchartsJS}}</script>
<script>{{.AppJS}}</script>
</head>
<body>{{end}}
{{- define "chart"}}
  <h3 class="chart-title" id="{{.ID}}-title">{{.Title}}</h3>
  <div class="chart" id="{{.ID}}" style="height:{{.Height}}px" role="img" aria-labelledby="{{.ID}}-title"></div>
  <script>xdssim.chart({{.ID}}, {{.OptionJS}}, {{.RuntimeJS}});</script>{{end}}
{{- define "section"}}<section class="card" id="{{.ID}}">
  <h2>{{.Title}}</h2>
  <p class="lead">{{.Lead}}</p>
  {{- range .Charts}}{{template "chart" .}}{{end}}
  {{- if .Empty}}
  <p class="muted empty">Zero the whole run, so not drawn: {{range $i, $e := .Empty}}{{if $i}}; {{end}}{{$e}}{{end}}.</p>
  {{- end}}
</section>{{end}}
{{- define "footer"}}
<footer class="stamp muted" id="stamp">
  {{- with .Stamp}}Made by xdssim {{.Build.Version}}, revision <code>{{.Build.Revision}}</code>, dirty {{.Build.Dirty}}, {{.Build.Go}}
  {{- with .MergedBy}}; merged by xdssim {{.Version}}, revision <code>{{.Revision}}</code>, dirty {{.Dirty}}, {{.Go}}{{end}}.
  {{- range .Scenarios}} Scenario{{if .Name}} {{.Name}}{{end}} SHA-256 <code>{{.SHA256}}</code>.{{end}}{{end}}
</footer>{{end}}`

// pageTemplate parses a page: the shared head, then its body, which
// starts with {{template "head" .}}.
func pageTemplate(name, body string) *template.Template {
	return template.Must(template.Must(template.New(name).Parse(pageHead)).Parse(body))
}

// encode sets OptionJS and RuntimeJS from the option and Runtime, as JSON
// that is safe inside <script>: encoding/json escapes <, >, &, U+2028 and
// U+2029, and sorts map keys.
func (c *chart) encode() error {
	opt, err := json.Marshal(c.option)
	if err != nil {
		return fmt.Errorf("chart %s: %w", c.ID, err)
	}
	rt, err := json.Marshal(c.Runtime)
	if err != nil {
		return fmt.Errorf("chart %s: %w", c.ID, err)
	}
	c.OptionJS, c.RuntimeJS = template.JS(opt), template.JS(rt)
	return nil
}

// renderPage is the last step of every page (report.html, sweep.html,
// compare.html): it encodes the charts, which v's template shows, and
// executes t with v.
func renderPage(name string, t *template.Template, v any, charts ...[]chart) ([]byte, error) {
	for _, cs := range charts {
		for i := range cs {
			if err := cs[i].encode(); err != nil {
				return nil, fmt.Errorf("viz: %s: %w", name, err)
			}
		}
	}
	var b bytes.Buffer
	if err := t.Execute(&b, v); err != nil {
		return nil, fmt.Errorf("viz: %s: %w", name, err)
	}
	return b.Bytes(), nil
}

// sectionCharts lists the charts of every section, for renderPage.
func sectionCharts(ss []section) [][]chart {
	out := make([][]chart, len(ss))
	for i := range ss {
		out[i] = ss[i].Charts
	}
	return out
}

// line is one series of a time chart.
type line struct {
	name   string
	values []float64 // one per sample
	color  string    // "" for the palette's next colour
	right  bool      // on the right-hand y axis
	area   bool      // a stacked area; every area line of a chart stacks
}

// timeSpec describes a chart of series over virtual time.
type timeSpec struct {
	id, title string
	// left and right name the y axes, with their units; right is "" when
	// no line uses it.
	left, right string
	lines       []line
	// percent caps the left axis at 100: a share.
	percent bool
}

// extent returns the largest value the chart draws on each axis (stacked
// areas summed sample by sample) and whether any value on its left axis
// is not zero: the right axis says something about the left one (a
// retry amplification of 1 when nothing was retried), never on its own.
func (spec timeSpec) extent() (left, right float64, nonzero bool) {
	var stacked []float64
	for _, ln := range spec.lines {
		for i, v := range ln.values {
			if !finite(v) {
				continue
			}
			nonzero = nonzero || (v != 0 && !ln.right)
			switch {
			case ln.right:
				right = max(right, v)
			case ln.area:
				if stacked == nil {
					stacked = make([]float64, len(ln.values))
				}
				if i < len(stacked) {
					stacked[i] += v
					left = max(left, stacked[i])
				}
			default:
				left = max(left, v)
			}
		}
	}
	return left, right, nonzero
}

// niceMax is the axis maximum for data up to v > 0: the first of 1, 1.2,
// 1.5, 2, 2.5, 3, 4, 5, 6, 8 times a power of ten at or above v, so the
// axis spans at most 1.25 times the data.
func niceMax(v float64) float64 {
	if !(v > 0) || !finite(v) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if m*p >= v*(1-1e-12) {
			return m * p
		}
	}
	return 10 * p
}

// maxPoints bounds the points of one series in the report. A run with more
// samples draws each point as the mean of the samples it covers.
const maxPoints = 1500

// stride is how many samples one point of a series covers.
func stride(samples int) int { return max(1, (samples+maxPoints-1)/maxPoints) }

// timeChart builds a line chart over virtual time with every fault shaded
// and labelled, a zoom slider, and one colour per line.
func timeChart(r *fleet.Results, spec timeSpec) chart {
	l := charts.NewLine()
	// A time axis in milliseconds of virtual time since 0: echarts stacks
	// the areas of a chart on the y values only when x is a category or
	// time axis (with two value axes it stacks x).
	xAxis := opts.XAxis{Type: "time", Name: "virtual time", NameLocation: "middle", NameGap: 28, Min: 0}
	if r.Duration > 0 {
		xAxis.Max = millis(r.Duration)
	}
	// The y axes scale to the data (a share capped at 100 %), from 0:
	// every series of the report is a count, a rate, a share or a time.
	lmax, rmax, _ := spec.extent()
	left := opts.YAxis{Type: "value", Name: spec.left, Min: 0, Max: niceMax(lmax)}
	if spec.percent {
		left.Max = min(100, niceMax(lmax))
	}
	l.SetGlobalOptions(frame(spec.id, spec.title, "axis", true, true)...)
	l.SetGlobalOptions(charts.WithXAxisOpts(xAxis), charts.WithYAxisOpts(left))
	if spec.right != "" {
		l.ExtendYAxis(opts.YAxis{Type: "value", Name: spec.right, Min: 0, Max: niceMax(rmax), SplitLine: &opts.SplitLine{Show: opts.Bool(false)}})
	}
	for _, ln := range spec.lines {
		l.AddSeries(ln.name, nil)
		s := &l.MultiSeries[len(l.MultiSeries)-1]
		s.Data = seriesPoints(r.SampleInterval, ln.values)
		styleLine(s, ln.color, 1.5)
		if ln.right {
			s.YAxisIndex = 1
		}
		if ln.area {
			s.Stack = "total"
			s.AreaStyle = &opts.AreaStyle{Opacity: opts.Float(0.7)}
			s.LineStyle.Width = 0.5
		}
	}
	// The first series carries the shading, so the data draws over it;
	// the labels sit in lanes above the plot, never over the data.
	lanes := 0
	if n := len(l.MultiSeries); n > 0 && len(r.Faults) > 0 {
		var areas *opts.MarkAreas
		areas, lanes = faultAreas(r.Faults, r.Duration)
		l.MultiSeries[0].MarkAreas = areas
	}
	top := legendTop + faultLabelLine*lanes + 8
	if lanes > 0 {
		top += faultLabelLine
	}
	return chart{ID: spec.id, Title: spec.title, Height: 360 + faultLabelLine*lanes, option: options(l),
		Runtime: runtimeOpts{Time: true, Patch: map[string]any{"grid": map[string]any{"top": top}}}}
}

// legendTop is the room a chart's legend takes at its top, in pixels.
const legendTop = 30

// frame returns the options every chart shares: its ID, no animation, a
// tooltip triggered by trigger ("axis" or "item"), a scrolling legend at
// the top when legend is set, a grid that leaves room for it and for the
// x axis's name, and, when zoom is set, a zoom slider under the x axis with
// mouse-wheel zoom on the plot. The chart's title is the page's, above
// it, where it wraps instead of being cut.
func frame(id, _, trigger string, legend, zoom bool) []charts.GlobalOpts {
	grid := opts.Grid{Left: "16", Right: "24", Top: "48", Bottom: "40", ContainLabel: opts.Bool(true)}
	o := []charts.GlobalOpts{
		charts.WithInitializationOpts(opts.Initialization{ChartID: id}),
		charts.WithAnimation(false),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(legend), Type: "scroll", Left: "8", Right: "8", Top: "4"}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: trigger}),
	}
	if zoom {
		grid.Bottom = "70"
		o = append(o, charts.WithDataZoomOpts(
			opts.DataZoom{Type: "slider", XAxisIndex: 0, Start: 0, End: 100},
			opts.DataZoom{Type: "inside", XAxisIndex: 0, Start: 0, End: 100},
		))
	}
	return append(o, charts.WithGridOpts(grid))
}

// styleLine draws a line series without symbols, width pixels wide, in
// color (the palette's next colour when "").
func styleLine(s *charts.SingleSeries, color string, width float32) {
	s.ShowSymbol, s.Symbol = opts.Bool(false), "none"
	s.LineStyle = &opts.LineStyle{Width: width, Color: color}
	if color != "" {
		s.ItemStyle = &opts.ItemStyle{Color: color}
	}
}

// appendPoint appends the echarts point [x,y] to b.
func appendPoint(b []byte, x, y string) []byte {
	b = append(b, '[')
	b = append(b, x...)
	b = append(b, ',')
	b = append(b, y...)
	return append(b, ']')
}

// echartsChart is a chart go-echarts builds.
type echartsChart interface {
	Validate()
	JSON() map[string]any
}

// options returns the echarts option go-echarts built for c.
func options(c echartsChart) map[string]any {
	c.Validate()
	return c.JSON()
}

// faultArea is one end of a shaded fault: echarts wants each area as a
// [start, end] pair of these. (go-echarts' WithMarkAreaNameXAxisItemOpts
// appends single objects instead of pairs, and its MarkAreaData.YAxis has
// the JSON tag "YAxis".)
type faultArea struct {
	Name  string      `json:"name,omitempty"`
	XAxis float64     `json:"xAxis"`
	Label *faultLabel `json:"label,omitempty"`
}

// faultLabel places the label of one fault: Offset moves it up by whole
// lines so that the labels of overlapping faults do not overprint.
type faultLabel struct {
	Offset [2]int `json:"offset"`
}

// faultLabelLine is the height of one line of fault labels, in pixels.
const faultLabelLine = 14

// Fault labels take about labelCharPx pixels per character on a plot about
// plotPx pixels wide.
const (
	labelCharPx = 6.5
	plotPx      = 1100
)

// faultAreas shades every fault in a neutral grey (the colours of the data
// are the causes'), labelled with its Label centred above the plot, and
// returns how many lanes of labels that takes. A fault whose span or
// label overlaps an earlier fault's gets its label on the first lane not
// used by any of those.
func faultAreas(faults []fleet.Fault, duration time.Duration) (*opts.MarkAreas, int) {
	// The span of virtual time each fault's shading and label cover.
	type extent struct{ lo, hi float64 }
	ext := make([]extent, len(faults))
	perChar := duration.Seconds() * labelCharPx / plotPx
	for i, f := range faults {
		mid := (f.Start + f.End).Seconds() / 2
		half := float64(len([]rune(f.Label))) * perChar / 2
		ext[i] = extent{min(f.Start.Seconds(), mid-half), max(f.End.Seconds(), mid+half)}
	}
	lanes := make([]int, len(faults))
	used := 0
	data := make([]interface{}, len(faults))
	// taken marks the lanes of the earlier faults that overlap this one:
	// a slice reused across faults (lanes number at most len(faults)), not
	// a map per fault, which cost most of a report of 20 000 faults.
	taken := make([]bool, len(faults)+1)
	for i, f := range faults {
		clear(taken[:used+1])
		for j := 0; j < i; j++ {
			if ext[j].lo < ext[i].hi && ext[i].lo < ext[j].hi {
				taken[lanes[j]] = true
			}
		}
		for taken[lanes[i]] {
			lanes[i]++
		}
		used = max(used, lanes[i]+1)
		start := faultArea{Name: f.Label, XAxis: millis(f.Start)}
		if lanes[i] > 0 {
			start.Label = &faultLabel{Offset: [2]int{0, -lanes[i] * faultLabelLine}}
		}
		data[i] = [2]faultArea{start, {XAxis: millis(f.End)}}
	}
	return &opts.MarkAreas{
		Data: data,
		MarkAreaStyle: opts.MarkAreaStyle{
			Label:     &opts.Label{Show: opts.Bool(true), Position: "top", Color: "#4b5563", FontSize: 11},
			ItemStyle: &opts.ItemStyle{Color: "rgba(107, 114, 128, 0.10)", BorderColor: "rgba(75, 85, 99, 0.45)", BorderWidth: 1},
		},
	}, used
}

// millis is d in milliseconds, the unit of the time axis.
func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// seriesPoints renders the samples of a series as echarts [x, y] pairs, x in
// milliseconds of virtual time, NaN and infinities as "-" (a gap). With more
// than maxPoints samples, each point is the mean of the finite samples of
// its stride, placed at the first of them.
func seriesPoints(interval time.Duration, values []float64) json.RawMessage {
	k := stride(len(values))
	b := make([]byte, 0, 16*(len(values)/k+1)+2)
	b = append(b, '[')
	for i := 0; i < len(values); i += k {
		sum, n := 0.0, 0
		for _, v := range values[i:min(i+k, len(values))] {
			if finite(v) {
				sum += v
				n++
			}
		}
		if i > 0 {
			b = append(b, ',')
		}
		y := `"-"`
		if n > 0 {
			y = formatNumber(sum / float64(n))
		}
		b = appendPoint(b, formatNumber(millis(time.Duration(i)*interval)), y)
	}
	return append(b, ']')
}

// bar is one series of a bar chart: one value per category.
type bar struct {
	name   string
	values []float64
	color  string
}

// barChart builds a bar chart over named categories.
func barChart(id, title, xName, yName string, categories []string, bars []bar) chart {
	top := 0.0
	for _, s := range bars {
		for _, v := range s.values {
			if finite(v) {
				top = max(top, v)
			}
		}
	}
	b := charts.NewBar()
	b.SetGlobalOptions(frame(id, title, "axis", true, false)...)
	b.SetGlobalOptions(
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: xName, NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: yName, Min: 0, Max: niceMax(top)}),
	)
	b.SetXAxis(categories)
	for _, s := range bars {
		data := make([]opts.BarData, len(s.values))
		for i, v := range s.values {
			data[i] = opts.BarData{Value: v}
		}
		b.AddSeries(s.name, data)
		if s.color != "" {
			b.MultiSeries[len(b.MultiSeries)-1].ItemStyle = &opts.ItemStyle{Color: s.color}
		}
	}
	return chart{ID: id, Title: title, Height: 340, option: options(b)}
}

// curve is one series of an x-y chart: points in ascending x.
type curve struct {
	name  string
	x, y  []float64
	color string
}

// cdfChart builds a step chart of cumulative distributions, x on a log
// axis.
func cdfChart(id, title, xName, yName string, curves []curve) chart {
	l := charts.NewLine()
	l.SetGlobalOptions(frame(id, title, "item", true, false)...)
	l.SetGlobalOptions(
		charts.WithXAxisOpts(opts.XAxis{Type: "log", Name: xName, NameLocation: "middle", NameGap: 28}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: yName, Min: 0, Max: 100}),
	)
	for _, c := range curves {
		l.AddSeries(c.name, nil)
		s := &l.MultiSeries[len(l.MultiSeries)-1]
		b := []byte{'['}
		for i := range c.x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendPoint(b, formatNumber(c.x[i]), formatNumber(c.y[i]))
		}
		s.Data = json.RawMessage(append(b, ']'))
		s.Step = "end"
		styleLine(s, c.color, 2)
	}
	return chart{ID: id, Title: title, Height: 360, option: options(l)}
}

// heatmapChart draws every track as a row and every column of time as a
// cell, coloured by the track's state. Cells in which the instance was up
// are left out: the grid's background shows them.
func heatmapChart(r *fleet.Results) chart {
	const id, title = "chart_tracks", "Sampled client channels over time, by state"
	cols := 0
	entities := make([]string, len(r.Tracks))
	present := make([]bool, fleet.NumTrackStates)
	b := []byte{'['}
	for y, tr := range r.Tracks {
		entities[y] = tr.Entity
		cols = max(cols, len(tr.States))
		for x, s := range tr.States {
			if s == fleet.TrackUp || s >= fleet.NumTrackStates {
				continue
			}
			present[s] = true
			if len(b) > 1 {
				b = append(b, ',')
			}
			b = fmt.Appendf(b, "[%d,%d,%d]", x, y, s)
		}
	}
	b = append(b, ']')
	labels := make([]string, cols)
	for x := range labels {
		labels[x] = formatSeconds(time.Duration(x) * r.TrackInterval)
	}
	names := make([]string, fleet.NumTrackStates)
	var pieces []map[string]any
	for s := fleet.TrackState(0); s < fleet.NumTrackStates; s++ {
		names[s] = stateLabel(s)
		if present[s] {
			pieces = append(pieces, map[string]any{"value": int(s), "label": names[s], "color": stateColor(s)})
		}
	}

	h := charts.NewHeatMap()
	// The legend's place holds the visualMap of the states (Runtime.Patch).
	h.SetGlobalOptions(frame(id, title, "item", false, true)...)
	h.SetGlobalOptions(
		charts.WithXAxisOpts(opts.XAxis{Type: "category", Name: "virtual time (s)", NameLocation: "middle", NameGap: 28,
			Data: labels, SplitArea: &opts.SplitArea{Show: opts.Bool(false)}}),
		charts.WithYAxisOpts(opts.YAxis{Type: "category", Name: "client/target", Data: entities, Inverse: opts.Bool(true),
			AxisLabel: &opts.AxisLabel{FontSize: 9}}),
	)
	h.AddSeries("state", nil)
	h.MultiSeries[0].Data = json.RawMessage(b)
	return chart{
		ID: id, Title: title,
		Height: max(260, 4*len(r.Tracks)+160),
		option: options(h),
		Runtime: runtimeOpts{
			Patch: map[string]any{
				"visualMap": map[string]any{
					"type": "piecewise", "pieces": pieces, "dimension": 2,
					"orient": "horizontal", "left": 8, "top": 4, "itemWidth": 14, "itemHeight": 10,
				},
				"grid": map[string]any{"show": true, "backgroundColor": stateColor(fleet.TrackUp), "borderWidth": 0},
				// Drawn in one pass: echarts' progressive rendering of a
				// large heatmap can stall headless Chromium's virtual time.
				"series": map[string]any{"progressive": 0},
			},
			States:  names,
			Columns: r.TrackInterval.Seconds(),
		},
	}
}
