package viz

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/components"
	"github.com/go-echarts/go-echarts/v2/opts"
	"github.com/go-echarts/go-echarts/v2/types"

	"github.com/xdssim/xdssim/model/fleet"
)

// maxIntervalRows bounds the interval table of the report.
const maxIntervalRows = 200

// WriteReport writes report.html for r to w: one self-contained HTML file
// that opens offline. It holds a header card (scenario, description, seed,
// clients, virtual duration, events, the expectations when any are given,
// with how many were breached, faults and every Metric), one line
// chart per Series over virtual time with every Fault shaded as a labelled
// area, a table of the first 200 Intervals, and the Resolved scenario.
// Charts are drawn by the inlined echarts runtime; each has the ChartID
// "chart_" followed by its series name in lower case with every run of other
// characters than a-z and 0-9 turned into "_" ("clients.running" →
// "chart_clients_running"; a repeated ID gets "_2", "_3", …), so the same
// Results always give the same bytes.
//
// A sample that is NaN or infinite is drawn as a gap. It is an error for a
// Series to hold another number of values than Samples, or for Samples > 1
// with a SampleInterval that is not positive.
func WriteReport(w io.Writer, r *fleet.Results, expectations ...Expectation) error {
	b, err := report(r, expectations)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// report renders the bytes WriteReport writes.
func report(r *fleet.Results, expectations []Expectation) (out []byte, err error) {
	if r == nil {
		return nil, fmt.Errorf("viz: report.html: no results")
	}
	if r.Samples > 1 && r.SampleInterval <= 0 {
		return nil, fmt.Errorf("viz: report.html: %d samples with a sample interval of %v; the interval must be positive", r.Samples, r.SampleInterval)
	}
	for _, s := range r.Series {
		if len(s.Values) != r.Samples {
			return nil, fmt.Errorf("viz: report.html: series %q has %d values, want one per sample (%d)", s.Name, len(s.Values), r.Samples)
		}
	}

	ids := chartIDs(r.Series)
	lines := make([]*charts.Line, len(r.Series))
	for i, s := range r.Series {
		lines[i] = seriesChart(r, s, ids[i])
	}

	page := components.NewPage()
	page.SetPageTitle(echartsText("xdssim report: " + r.Scenario))
	page.SetLayout(components.PageNoneLayout)
	for _, l := range lines {
		page.AddCharts(l)
	}
	page.ClearPresetJSAssets()
	page.AddCustomizedHeaders(
		`<meta name="viewport" content="width=device-width, initial-scale=1">`,
		"<style>"+reportCSS+"</style>",
		"<script>"+errorCatcherJS+"</script>",
		"<script>"+echartsJS+"</script>",
	)

	// go-echarts panics when its own templates fail; report that as an error.
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("viz: report.html: rendering the charts: %v", p)
		}
	}()
	rendered := page.RenderContent()

	// go-echarts writes each chart's options into a <script> as JSON with
	// HTML escaping turned off, so a title holding "</script>" would end the
	// element. JSON has < > & only inside strings, where \u escapes mean the
	// same, so swap each option object for an escaped copy.
	for _, l := range lines {
		raw := []byte(l.JSONNotEscaped())
		if n := bytes.Count(rendered, raw); n != 1 {
			return nil, fmt.Errorf("viz: report.html: found the options of chart %s %d times in the rendered page, want once", l.ChartID, n)
		}
		rendered = bytes.Replace(rendered, raw, scriptSafeJSON(raw), 1)
	}

	var header, footer bytes.Buffer
	data := reportData(r, expectations)
	if err := reportTemplate.ExecuteTemplate(&header, "header", data); err != nil {
		return nil, fmt.Errorf("viz: report.html: %w", err)
	}
	if err := reportTemplate.ExecuteTemplate(&footer, "footer", data); err != nil {
		return nil, fmt.Errorf("viz: report.html: %w", err)
	}

	// The page template has one <body> after the head; the head holds the
	// echarts runtime, so look for <body> only after </head>.
	head := bytes.Index(rendered, []byte("</head>"))
	if head < 0 {
		return nil, fmt.Errorf("viz: report.html: the rendered page has no </head>")
	}
	body := bytes.Index(rendered[head:], []byte("<body>"))
	end := bytes.LastIndex(rendered, []byte("</body>"))
	if body < 0 || end < head+body {
		return nil, fmt.Errorf("viz: report.html: the rendered page has no <body>…</body>")
	}
	body += head + len("<body>")

	var b bytes.Buffer
	b.Grow(len(rendered) + header.Len() + footer.Len())
	b.Write(rendered[:body])
	b.WriteString("\n")
	b.Write(header.Bytes())
	b.Write(rendered[body:end])
	b.Write(footer.Bytes())
	b.Write(rendered[end:])
	return b.Bytes(), nil
}

// seriesChart builds the line chart of one series, with every fault shaded.
func seriesChart(r *fleet.Results, s fleet.Series, id string) *charts.Line {
	title := s.Title
	if title == "" {
		title = s.Name
	}
	xAxis := opts.XAxis{
		Type:         "value",
		Name:         "virtual time (s)",
		NameLocation: "middle",
		NameGap:      28,
		Min:          0,
	}
	if r.Duration > 0 {
		xAxis.Max = r.Duration.Seconds()
	}

	l := charts.NewLine()
	l.SetGlobalOptions(
		charts.WithInitializationOpts(opts.Initialization{
			ChartID: id,
			Width:   "100%",
			Height:  "380px",
		}),
		charts.WithAnimation(false),
		charts.WithTitleOpts(opts.Title{
			Title: echartsText(title),
			Left:  "8",
			Top:   "6",
		}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Right: "16", Top: "8"}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}),
		charts.WithGridOpts(opts.Grid{Left: "24", Right: "40", Top: "64", Bottom: "84", ContainLabel: opts.Bool(true)}),
		charts.WithXAxisOpts(xAxis),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Name: echartsText(s.Unit)}),
		charts.WithDataZoomOpts(
			opts.DataZoom{Type: "slider", XAxisIndex: 0, Start: 0, End: 100},
			opts.DataZoom{Type: "inside", XAxisIndex: 0, Start: 0, End: 100},
		),
	)

	seriesOpts := []charts.SeriesOpts{
		charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false), Symbol: "none"}),
		charts.WithLineStyleOpts(opts.LineStyle{Width: 1.5}),
	}
	l.AddSeries(echartsText(s.Name), nil, seriesOpts...)
	series := &l.MultiSeries[0]
	series.Data = seriesPoints(r.SampleInterval, s.Values)
	if len(r.Faults) > 0 {
		series.MarkAreas = faultAreas(r.Faults)
	}
	// echarts does not follow the window size by itself.
	l.AddJSFuncStrs(types.FuncStr("window.addEventListener('resize', function () { %MY_ECHARTS%.resize(); });"))
	return l
}

// faultArea is one end of a shaded fault: echarts wants each area as a
// [start, end] pair of these. (go-echarts' WithMarkAreaNameXAxisItemOpts
// appends single objects instead of pairs, and its MarkAreaData.YAxis has
// the JSON tag "YAxis"; notes/dependencies.md §6.)
type faultArea struct {
	Name  string      `json:"name,omitempty"`
	XAxis float64     `json:"xAxis"`
	Label *faultLabel `json:"label,omitempty"`
}

// faultLabel places the label of one fault: Offset moves it down by whole
// lines so that the labels of overlapping faults do not overprint.
type faultLabel struct {
	Offset [2]int `json:"offset"`
}

// faultLabelLine is the height of one line of fault labels, in pixels.
const faultLabelLine = 14

// faultAreas shades every fault, labelled with its Label at the top of its
// span. A fault whose span overlaps an earlier fault's gets its label on the
// first line of labels not used by any of those.
func faultAreas(faults []fleet.Fault) *opts.MarkAreas {
	lanes := make([]int, len(faults))
	data := make([]interface{}, len(faults))
	for i, f := range faults {
		used := map[int]bool{}
		for j := 0; j < i; j++ {
			if faults[j].Start < f.End && f.Start < faults[j].End {
				used[lanes[j]] = true
			}
		}
		for used[lanes[i]] {
			lanes[i]++
		}
		start := faultArea{Name: echartsText(f.Label), XAxis: f.Start.Seconds()}
		if lanes[i] > 0 {
			start.Label = &faultLabel{Offset: [2]int{0, lanes[i] * faultLabelLine}}
		}
		data[i] = [2]faultArea{start, {XAxis: f.End.Seconds()}}
	}
	return &opts.MarkAreas{
		Data: data,
		MarkAreaStyle: opts.MarkAreaStyle{
			Label:     &opts.Label{Show: opts.Bool(true), Position: "insideTop", Color: "#9a2a2a", FontSize: 11},
			ItemStyle: &opts.ItemStyle{Color: "rgba(214, 69, 65, 0.13)"},
		},
	}
}

// seriesPoints renders the samples of a series as echarts [x, y] pairs, x in
// seconds of virtual time, NaN and infinities as "-" (a gap).
func seriesPoints(interval time.Duration, values []float64) json.RawMessage {
	b := make([]byte, 0, 16*len(values)+2)
	b = append(b, '[')
	for i, v := range values {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = append(b, formatSeconds(time.Duration(i)*interval)...)
		b = append(b, ',')
		if finite(v) {
			b = append(b, formatNumber(v)...)
		} else {
			b = append(b, `"-"`...)
		}
		b = append(b, ']')
	}
	return append(b, ']')
}

// chartIDs gives each series a ChartID that is stable, unique in the page
// and a valid part of a JavaScript identifier (go-echarts declares
// "goecharts_<ChartID>").
func chartIDs(series []fleet.Series) []string {
	ids := make([]string, len(series))
	used := map[string]bool{}
	for i, s := range series {
		base := "chart_" + slug(s.Name)
		id := base
		for n := 2; used[id]; n++ {
			id = base + "_" + strconv.Itoa(n)
		}
		used[id] = true
		ids[i] = id
	}
	return ids
}

// slug lowers s and turns every run of characters other than a-z and 0-9
// into one "_", trimmed at both ends; "series" if nothing is left.
func slug(s string) string {
	var b strings.Builder
	gap := false
	for _, c := range strings.ToLower(s) {
		if ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') {
			if gap && b.Len() > 0 {
				b.WriteByte('_')
			}
			gap = false
			b.WriteRune(c)
		} else {
			gap = true
		}
	}
	if b.Len() == 0 {
		return "series"
	}
	return b.String()
}

// echartsText guards text that goes through go-echarts' templates: they
// delete every "__f__" (their marker for inline JavaScript), which could
// unbalance a JSON string. A zero-width space keeps the text as it looks.
func echartsText(s string) string {
	return strings.ReplaceAll(s, "__f__", "__f\u200b__")
}

// scriptSafeJSON escapes the characters of JSON text that could end or
// confuse the <script> element it is written into.
func scriptSafeJSON(raw []byte) []byte {
	var b bytes.Buffer
	b.Grow(len(raw))
	for _, r := range string(raw) {
		switch r {
		case '<':
			b.WriteString(`\u003c`)
		case '>':
			b.WriteString(`\u003e`)
		case '&':
			b.WriteString(`\u0026`)
		case '\u2028':
			b.WriteString(`\u2028`)
		case '\u2029':
			b.WriteString(`\u2029`)
		default:
			b.WriteRune(r)
		}
	}
	return b.Bytes()
}

// reportView is what the header and footer templates show.
type reportView struct {
	Scenario, Description     string
	Seed, Clients, Events     string
	Seconds, Duration, Sample string
	Samples                   int
	Expectations              []expectationRow
	Breached                  int
	Faults                    []faultRow
	Metrics                   []metricRow
	Intervals                 []intervalRow
	IntervalsTotal            int
	Resolved                  string
}

type faultRow struct{ Label, Start, End string }

type metricRow struct{ Path, Value string }

type expectationRow struct {
	Metric, Bound, Value, Result string
	Pass                         bool
}

type intervalRow struct{ Entity, Kind, Start, End, Length string }

func reportData(r *fleet.Results, expectations []Expectation) reportView {
	v := reportView{
		Scenario:       r.Scenario,
		Description:    r.Description,
		Seed:           strconv.FormatUint(r.Seed, 10),
		Clients:        strconv.Itoa(r.Clients),
		Events:         strconv.FormatUint(r.Events, 10),
		Seconds:        formatSeconds(r.Duration),
		Duration:       r.Duration.String(),
		Sample:         formatSeconds(r.SampleInterval),
		Samples:        r.Samples,
		IntervalsTotal: len(r.Intervals),
		Resolved:       r.Resolved,
		Breached:       Breached(expectations),
	}
	for _, e := range expectations {
		v.Expectations = append(v.Expectations, expectationRow{e.Metric, e.Bound(), e.valueText(), e.result(), e.Pass})
	}
	for _, f := range r.Faults {
		v.Faults = append(v.Faults, faultRow{f.Label, formatSeconds(f.Start), formatSeconds(f.End)})
	}
	for _, m := range r.Metrics {
		// NaN, +Inf, -Inf print as such here; summary.json refuses them.
		v.Metrics = append(v.Metrics, metricRow{m.Path, formatAny(m.Value)})
	}
	for i, in := range r.Intervals {
		if i == maxIntervalRows {
			break
		}
		v.Intervals = append(v.Intervals, intervalRow{
			Entity: in.Entity,
			Kind:   in.Kind,
			Start:  formatSeconds(in.Start),
			End:    formatSeconds(in.End),
			Length: formatSeconds(in.End - in.Start),
		})
	}
	return v
}

var reportTemplate = template.Must(template.New("report").Parse(`
{{- define "header" -}}
<section class="card head">
  <h1><span class="brand">xdssim</span> {{.Scenario}}</h1>
  {{- if .Description}}
  <p class="desc">{{.Description}}</p>
  {{- end}}
  <dl class="facts">
    <div><dt>seed</dt><dd>{{.Seed}}</dd></div>
    <div><dt>clients</dt><dd>{{.Clients}}</dd></div>
    <div><dt>virtual duration</dt><dd>{{.Seconds}} s <span class="muted">({{.Duration}})</span></dd></div>
    <div><dt>events</dt><dd>{{.Events}}</dd></div>
    <div><dt>samples</dt><dd>{{.Samples}} <span class="muted">every {{.Sample}} s</span></dd></div>
  </dl>
  {{- if .Expectations}}
  <h2>Expectations <span class="{{if .Breached}}fail{{else}}pass{{end}}">{{.Breached}} of {{len .Expectations}} breached</span></h2>
  <table>
    <thead><tr><th>metric</th><th>bound</th><th class="num">value</th><th>result</th></tr></thead>
    <tbody>
    {{- range .Expectations}}
      <tr><td><code>{{.Metric}}</code></td><td>{{.Bound}}</td><td class="num">{{.Value}}</td><td class="{{if .Pass}}pass{{else}}fail{{end}}">{{.Result}}</td></tr>
    {{- end}}
    </tbody>
  </table>
  {{- end}}
  {{- if .Faults}}
  <h2>Faults</h2>
  <table>
    <thead><tr><th>fault</th><th class="num">start (s)</th><th class="num">end (s)</th></tr></thead>
    <tbody>
    {{- range .Faults}}
      <tr><td>{{.Label}}</td><td class="num">{{.Start}}</td><td class="num">{{.End}}</td></tr>
    {{- end}}
    </tbody>
  </table>
  {{- end}}
  <h2>Metrics</h2>
  {{- if .Metrics}}
  <table>
    <thead><tr><th>path</th><th class="num">value</th></tr></thead>
    <tbody>
    {{- range .Metrics}}
      <tr><td><code>{{.Path}}</code></td><td class="num">{{.Value}}</td></tr>
    {{- end}}
    </tbody>
  </table>
  {{- else}}
  <p class="muted">No metrics.</p>
  {{- end}}
</section>
{{end}}

{{- define "footer" -}}
{{- if .Intervals}}
<section class="card">
  <h2>Intervals</h2>
  {{- if gt .IntervalsTotal (len .Intervals)}}
  <p class="muted">The first {{len .Intervals}} of {{.IntervalsTotal}}, by start.</p>
  {{- end}}
  <div class="scroll">
  <table>
    <thead><tr><th>entity</th><th>kind</th><th class="num">start (s)</th><th class="num">end (s)</th><th class="num">length (s)</th></tr></thead>
    <tbody>
    {{- range .Intervals}}
      <tr><td>{{.Entity}}</td><td>{{.Kind}}</td><td class="num">{{.Start}}</td><td class="num">{{.End}}</td><td class="num">{{.Length}}</td></tr>
    {{- end}}
    </tbody>
  </table>
  </div>
</section>
{{- end}}
<section class="card">
  <h2>Scenario as run</h2>
  <pre class="toml">{{.Resolved}}</pre>
</section>
{{end}}
`))

// errorCatcherJS runs before anything else on the page. A script error or
// a console.error (echarts reports bad options there) is listed in a
// banner at the top of the page instead of leaving a chart silently
// blank; the browser test reads the same list.
const errorCatcherJS = `(function () {
  var errs = [];
  function show(msg) {
    errs.push(String(msg));
    var el = document.getElementById("report-errors");
    if (!el) {
      el = document.createElement("pre");
      el.id = "report-errors";
      el.className = "card fail";
      (document.body || document.documentElement).insertBefore(el, document.body ? document.body.firstChild : null);
    }
    el.textContent = "This report failed to render completely:\n" + errs.join("\n");
  }
  window.addEventListener("error", function (e) { show(e.message + " (" + e.filename + ":" + e.lineno + ")"); });
  var orig = console.error;
  console.error = function () { show(Array.prototype.join.call(arguments, " ")); return orig.apply(console, arguments); };
})();`

const reportCSS = `
body{margin:0;padding:16px;background:#f3f4f6;color:#1f2328;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
.card,.container{box-sizing:border-box;max-width:1200px;margin:0 auto 16px;background:#fff;border:1px solid #d8dde3;border-radius:8px;padding:16px 20px}
.container{padding:8px}
.item{width:100%}
h1{margin:0 0 4px;font-size:22px}
h1 .brand{color:#6b7280;font-weight:500}
h2{margin:18px 0 8px;font-size:16px}
.desc{margin:0 0 12px;color:#374151}
.muted{color:#6b7280}
dl.facts{display:flex;flex-wrap:wrap;gap:8px 28px;margin:12px 0 0}
dl.facts div{min-width:120px}
dt{color:#6b7280;font-size:12px;text-transform:uppercase;letter-spacing:.04em}
dd{margin:0;font-size:18px;font-variant-numeric:tabular-nums}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}
th,td{padding:3px 14px 3px 0;border-bottom:1px solid #eceff2;text-align:left;vertical-align:top}
th{font-weight:600;color:#4b5563}
.num{text-align:right}
.pass{color:#1a7f37;font-weight:600}
.fail{color:#cf222e;font-weight:700}
.scroll{max-height:420px;overflow:auto;display:inline-block;padding-right:8px}
.scroll th{position:sticky;top:0;background:#fff}
code,pre{font:12.5px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre.toml{margin:0;padding:12px;background:#f6f8fa;border-radius:6px;overflow:auto;white-space:pre}
`
