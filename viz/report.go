package viz

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/stamp"
)

// maxIntervalRows bounds the interval table of the report.
const maxIntervalRows = 200

// WriteReport writes report.html for r to w: one self-contained HTML file
// that opens offline, with the echarts runtime inlined. From the top:
//
//   - a header card: scenario, description, seed, groups with their
//     profiles, fleet size, virtual duration; the headline figures (RPC
//     success, failed RPCs, peak share of client channels failing, p99
//     failure window, client-seconds of failure, spurious timer firings,
//     fallback switches); the expectations, passed or breached; the faults
//     with the time the fleet took to recover from each;
//   - sections of charts (see sections): RPC failures stacked by root
//     cause, a heatmap of sampled client channels with the 20 that failed
//     longest, xDS state, each control plane, the fleet, sessions and
//     retries, distributions, and every series no section draws;
//   - every Metric, the first 200 Intervals, and the Resolved scenario;
//   - a footer naming the build of xdssim and the scenario's SHA-256 (st).
//
// Every chart over virtual time shades every Fault as a labelled area and
// zooms together with the others. Each chart has a stable ID (the
// element's id), so the same Results always give the same bytes. A run
// with more than maxPoints samples draws each point as the mean of the
// samples it covers, which bounds the file's size whatever the fleet.
//
// A sample that is NaN or infinite is drawn as a gap. It is an error for a
// Series to hold another number of values than Samples, or for Samples > 1
// with a SampleInterval that is not positive.
func WriteReport(w io.Writer, r *fleet.Results, st stamp.Run, expectations ...Expectation) error {
	b, err := report(r, st, expectations)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// report renders the bytes WriteReport writes.
func report(r *fleet.Results, st stamp.Run, expectations []Expectation) ([]byte, error) {
	if r == nil {
		return nil, fmt.Errorf("viz: report.html: no results")
	}
	if err := st.Check(); err != nil {
		return nil, fmt.Errorf("viz: report.html: stamp: %w", err)
	}
	if r.Samples > 1 && r.SampleInterval <= 0 {
		return nil, fmt.Errorf("viz: report.html: %d samples with a sample interval of %v; the interval must be positive", r.Samples, r.SampleInterval)
	}
	for _, s := range r.Series {
		if len(s.Values) != r.Samples {
			return nil, fmt.Errorf("viz: report.html: series %q has %d values, want one per sample (%d)", s.Name, len(s.Values), r.Samples)
		}
	}
	v := reportData(r, expectations)
	v.Stamp = pageStamp{Build: st.Build, Scenarios: []scenarioHash{{SHA256: st.ScenarioSHA256}}}
	return renderPage("report.html", reportTemplate, &v, sectionCharts(v.Sections)...)
}

// reportView is what the page template shows.
type reportView struct {
	Scenario, Description     string
	Seed, Clients, Events     string
	Seconds, Duration, Sample string
	Samples                   int
	Groups                    []groupRow
	WhatIf                    []fleet.WhatIf
	Figures                   []figure
	Expectations              []expectationRow
	Breached                  int
	Faults                    []faultRow
	Routing                   *routingView
	Unmodelled                []unmodelledRow
	Sections                  []section
	HasTracks                 bool // the worst clients follow the tracks
	Worst                     []clientRow
	Metrics                   []metricRow
	Intervals                 []intervalRow
	IntervalsTotal            int
	Resolved                  string

	page
}

type groupRow struct{ Name, Clients, Profile string }

type faultRow struct{ Kind, Label, Start, End, Windows, Recovery string }

// routingView is where RPCs went, per cluster and locality and phase.
type routingView struct {
	Phases []string
	Rows   []routingRow
}

type routingRow struct {
	Name     string
	Locality bool
	Cells    []string // per phase: "RPCs (share %)"
}

// unmodelledRow is one field of a served resource the simulator does not
// model.
type unmodelledRow struct{ Resource, Path, What string }

// routingData lays out r's routing: each cluster's RPCs and its share of
// the phase's, then its localities'.
func routingData(rt *fleet.Routing) *routingView {
	if rt == nil {
		return nil
	}
	v := &routingView{}
	totals := make([]int, len(rt.Phases))
	for _, p := range rt.Phases {
		v.Phases = append(v.Phases, formatSeconds(p.From)+"–"+formatSeconds(p.To)+" s")
	}
	for _, c := range rt.Clusters {
		for i, n := range c.RPCs {
			totals[i] += n
		}
	}
	cells := func(n []int, of []int) []string {
		out := make([]string, len(n))
		for i, x := range n {
			out[i] = strconv.Itoa(x)
			if of[i] > 0 {
				out[i] += fmt.Sprintf(" (%.1f %%)", 100*float64(x)/float64(of[i]))
			}
		}
		return out
	}
	for _, c := range rt.Clusters {
		v.Rows = append(v.Rows, routingRow{Name: c.Name, Cells: cells(c.RPCs, totals)})
		for _, l := range c.Localities {
			v.Rows = append(v.Rows, routingRow{Name: l.Name, Locality: true, Cells: cells(l.RPCs, c.RPCs)})
		}
	}
	return v
}

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
		Figures:        headline(r, expectations),
		Sections:       sections(r),
		Worst:          worst(r),
		IntervalsTotal: len(r.Intervals),
		Resolved:       r.Resolved,
		WhatIf:         r.WhatIf,
		Breached:       Breached(expectations),
		page:           newPage("xdssim report: "+r.Scenario, pageStamp{}),
	}
	for _, s := range v.Sections {
		v.HasTracks = v.HasTracks || s.ID == "tracks"
	}
	for _, g := range r.Groups {
		p := g.Profile
		if p == "" {
			p = "no xDS"
		}
		v.Groups = append(v.Groups, groupRow{g.Name, strconv.Itoa(g.Clients), p})
	}
	for _, e := range expectations {
		v.Expectations = append(v.Expectations, expectationRow{e.Metric, e.Bound(), e.valueText(), e.result(), e.Pass})
	}
	for _, f := range r.Faults {
		row := faultRow{Kind: f.Kind, Label: f.Label, Start: formatMillis(f.Start), End: formatMillis(f.End),
			Windows: strconv.Itoa(f.Windows), Recovery: "–"}
		if f.Kind == fleet.KindChange {
			row.End = "–" // a change happens at one time
		}
		if f.Windows > 0 {
			row.Recovery = formatMillis(f.Recovery)
		}
		v.Faults = append(v.Faults, row)
	}
	v.Routing = routingData(r.Routing)
	for _, n := range r.Unmodelled {
		for _, f := range n.Fields {
			v.Unmodelled = append(v.Unmodelled, unmodelledRow{n.Server + " " + n.Kind + " " + n.Name, f.Path, f.What})
		}
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
			Start:  formatMillis(in.Start),
			End:    formatMillis(in.End),
			Length: formatMillis(in.End - in.Start),
		})
	}
	return v
}

// figure is one headline figure of the header card: what users of the
// fleet felt first.
type figure struct {
	Label, Value, Note string
	// Class colours the tile: "bad" (red) for a failure users feel, or an
	// expectation breached; "good" (green) for an expectation met; "warn"
	// for something that happened but that users do not feel; "" for
	// nothing to see.
	Class string
	// Link is the id of the chart or section that explains the figure.
	Link string
}

// tile is a candidate headline figure: the metric behind it, and how to
// show it.
type tile struct {
	metric string
	label  string
	// felt says a nonzero figure is a failure the fleet's users feel.
	felt bool
	// always says the tile is shown even when the figure is zero.
	always bool
	link   string
	value  func(v float64) (value, note string)
}

// headlineTiles are the candidate headline figures, impact first: what
// failed for users, then what the control plane went through.
func headlineTiles(r *fleet.Results) []tile {
	get := func(path string) float64 { v, _ := Lookup(r, path); return v }
	total := get("rpc.total")
	out := []tile{
		{metric: "rpc.failed", label: "failed RPCs", felt: true, always: true, link: "chart_rpc_error_rate",
			value: func(v float64) (string, string) {
				if total == 0 {
					return formatNumber(v), "no RPC was sent"
				}
				return formatNumber(v), shareText(v/total) + " of " + formatNumber(total) + " RPCs"
			}},
		{metric: "rpc.latency_seconds.p99", label: "RPC latency p99", always: true, link: "chart_rpc_latency",
			value: func(v float64) (string, string) {
				return secondsText(v), "p50 " + secondsText(get("rpc.latency_seconds.p50")) + ", deadlines and retries included"
			}},
		{metric: "failure_windows.client_seconds", label: "client-seconds failing", felt: true, always: true, link: "chart_rpc_clients_failing",
			value: func(v float64) (string, string) {
				return short(v), "summed over " + plural(int(get("failure_windows.count")), "failure window", "failure windows")
			}},
		{metric: "failure_windows.duration_seconds.p99", label: "p99 failure window", felt: true, link: "chart_window_durations",
			value: func(v float64) (string, string) {
				return short(v) + " s", "the longest: " + short(get("failure_windows.duration_seconds.max")) + " s"
			}},
		{metric: "failure_windows.peak_clients_percent", label: "peak client channels failing", felt: true, link: "chart_rpc_clients_failing",
			value: func(v float64) (string, string) { return short(v) + " %", "in a failure window at once" }},
		{metric: "sessions.affinity_breaks", label: "session affinity breaks", link: "chart_sessions",
			value: func(v float64) (string, string) {
				started := get("sessions.started")
				if started == 0 {
					return formatNumber(v), "no session started"
				}
				return formatNumber(v), shareText(v/started) + " of " + plural(int(started), "session", "sessions") + " (gRFC A55)"
			}},
		{metric: "xds.resource_timer_spurious", label: "spurious timer firings", link: "chart_xds_timer_firings",
			value: func(v float64) (string, string) {
				return formatNumber(v), "of " + plural(int(get("xds.resource_timer_fired")), "does-not-exist timer", "does-not-exist timers") + " fired"
			}},
		{metric: "xds.fallback_switches", label: "fallback switches", link: "xds",
			value: func(v float64) (string, string) {
				return formatNumber(v), plural(int(get("xds.fallback_reverts")), "revert", "reverts")
			}},
	}
	// The busiest control plane's peak queue.
	peak, server := -1.0, ""
	for _, name := range serverNames(r) {
		if v, ok := Lookup(r, "control_plane."+name+".peak_queue_depth"); ok && v > peak {
			peak, server = v, name
		}
	}
	if server != "" {
		out = append(out, tile{metric: "control_plane." + server + ".peak_queue_depth", label: "control plane's peak queue", link: "cp-" + slug(server),
			value: func(v float64) (string, string) {
				return formatNumber(v), plural(int(v), "request", "requests") + " waiting at " + server
			}})
	}
	return out
}

// headline returns the headline figures of the run, impact first: what
// users felt (failed RPCs, latency, failure windows), then the figures the
// scenario's expectations bound, in their order, then the others, in
// headlineTiles' order. A figure is shown when the scenario bounds it,
// when it is one users always look at (failed RPCs, latency,
// client-seconds failing), or when it is not zero.
func headline(r *fleet.Results, expectations []Expectation) []figure {
	tiles := headlineTiles(r)
	verdict := map[string]bool{} // metric → every expectation on it passed
	var order []string
	for _, t := range tiles {
		if t.felt || t.always {
			order = append(order, t.metric)
		}
	}
	for _, e := range expectations {
		if pass, seen := verdict[e.Metric]; seen {
			verdict[e.Metric] = pass && e.Pass
		} else {
			verdict[e.Metric] = e.Pass
		}
		if !slices.Contains(order, e.Metric) {
			order = append(order, e.Metric)
		}
	}
	for _, t := range tiles {
		if !slices.Contains(order, t.metric) {
			order = append(order, t.metric)
		}
	}
	var out []figure
	for _, m := range order {
		i := slices.IndexFunc(tiles, func(t tile) bool { return t.metric == m })
		if i < 0 {
			continue // an expectation on a figure without a tile: the table shows it
		}
		t := tiles[i]
		v, ok := Lookup(r, t.metric)
		if !ok {
			continue
		}
		pass, bound := verdict[t.metric]
		if !bound && !t.always && v == 0 {
			continue
		}
		f := figure{Label: t.label, Link: t.link}
		f.Value, f.Note = t.value(v)
		switch {
		case bound && pass:
			f.Class = "good"
		case bound:
			f.Class = "bad"
		case t.felt && v > 0:
			f.Class = "bad"
		case !t.felt && v > 0 && t.metric != "rpc.latency_seconds.p99":
			f.Class = "warn"
		}
		out = append(out, f)
	}
	return out
}

// shareText writes a share as a percentage, never rounding a share above
// zero to zero or one below one to 100 %.
func shareText(x float64) string {
	p := 100 * x
	switch {
	case p > 0 && p < 0.01:
		return "< 0.01 %"
	case p < 100 && p > 99.99:
		return "> 99.99 %"
	}
	return strconv.FormatFloat(p, 'f', 2, 64) + " %"
}

// secondsText writes a latency: milliseconds under a second.
func secondsText(s float64) string {
	if s < 1 {
		return short(1000*s) + " ms"
	}
	return short(s) + " s"
}

// plural writes n and the noun, singular for 1: "1 client", "0 clients".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// short renders v with three significant digits, without an exponent.
func short(v float64) string {
	if !finite(v) {
		return formatAny(v)
	}
	switch a := max(v, -v); {
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

// chartIDs gives each series a ChartID that is stable, unique in the page
// and a valid HTML id: "chart_series_" and the series name in lower case
// with every run of characters other than a-z and 0-9 turned into "_"; a
// repeated ID gets "_2", "_3", ….
func chartIDs(series []fleet.Series) []string {
	ids := make([]string, len(series))
	used := idSet{}
	for i, s := range series {
		ids[i] = used.unique("chart_series_" + slug(s.Name))
	}
	return ids
}

// idSet holds the IDs given out in a page.
type idSet map[string]bool

// unique returns id, or when it is taken the first of id_2, id_3, … that
// is not, and takes it.
func (u idSet) unique(id string) string {
	v := id
	for n := 2; u[v]; n++ {
		v = id + "_" + strconv.Itoa(n)
	}
	u[v] = true
	return v
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

var reportTemplate = pageTemplate("report", `{{template "head" .}}
<section class="card head">
  <h1><span class="brand">xdssim</span> {{.Scenario}}</h1>
  {{- if .Description}}
  <p class="desc">{{.Description}}</p>
  {{- end}}
  <dl class="facts">
    <div><dt>seed</dt><dd>{{.Seed}}</dd></div>
    <div><dt>clients</dt><dd>{{.Clients}}</dd></div>
    {{- range .Groups}}
    <div><dt>group {{.Name}}</dt><dd>{{.Clients}} <span class="muted">× {{.Profile}}</span></dd></div>
    {{- end}}
    <div><dt>virtual duration</dt><dd>{{.Seconds}} s <span class="muted">({{.Duration}})</span></dd></div>
    <div><dt>events</dt><dd>{{.Events}}</dd></div>
    <div><dt>samples</dt><dd>{{.Samples}} <span class="muted">every {{.Sample}} s</span></dd></div>
  </dl>
  {{- if .WhatIf}}
  <div class="whatif" role="note">
  <h2>Hypothetical run <span class="muted">(what_if = true)</span></h2>
  <p>No shipping gRPC client can be configured to behave like this run: these settings differ from what each implementation ships, and only a change to its code would give them.</p>
  <table>
    <thead><tr><th>setting</th><th>value</th><th>shipping clients</th><th>why</th></tr></thead>
    <tbody>
    {{- range .WhatIf}}
      <tr><td><code>{{.Key}}</code></td><td>{{.Value}}</td><td>{{.Ships}}</td><td>{{.Why}}</td></tr>
    {{- end}}
    </tbody>
  </table>
  </div>
  {{- end}}
  {{- if .Figures}}
  <div class="figures">
    {{- range .Figures}}
    <a class="figure {{.Class}}" href="#{{.Link}}"><div class="label">{{.Label}}</div><div class="value">{{.Value}}</div>{{if .Note}}<div class="note">{{.Note}}</div>{{end}}</a>
    {{- end}}
  </div>
  {{- end}}
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
  <h2>What the scenario did</h2>
  <p class="lead">Faults, restarts, backend events and config changes, each with the RPC failure windows it caused (the root cause of a window is known from the ground truth: what failed, where, when) and how long after its end they went on.</p>
  <table>
    <thead><tr><th>what</th><th></th><th class="num">start (s)</th><th class="num">end (s)</th><th class="num">failure windows it caused</th><th class="num">recovery after its end (s)</th></tr></thead>
    <tbody>
    {{- range .Faults}}
      <tr><td class="muted">{{.Kind}}</td><td>{{.Label}}</td><td class="num">{{.Start}}</td><td class="num">{{.End}}</td><td class="num">{{.Windows}}</td><td class="num">{{.Recovery}}</td></tr>
    {{- end}}
    </tbody>
  </table>
  {{- end}}
  {{- with .Routing}}
  <h2>Where RPCs went <span class="muted">(first attempts, per cluster and its localities, between config changes)</span></h2>
  <table>
    <thead><tr><th>cluster / locality</th>{{range .Phases}}<th class="num">{{.}}</th>{{end}}</tr></thead>
    <tbody>
    {{- range .Rows}}
      <tr><td>{{if .Locality}}&nbsp;&nbsp;{{.Name}}{{else}}<code>{{.Name}}</code>{{end}}</td>{{range .Cells}}<td class="num">{{.}}</td>{{end}}</tr>
    {{- end}}
    </tbody>
  </table>
  {{- end}}
  {{- if .Unmodelled}}
  <h2>Not modelled <span class="muted">(fields of the served resources that change what real clients do)</span></h2>
  <table>
    <thead><tr><th>resource</th><th>field</th><th>what real clients do</th></tr></thead>
    <tbody>
    {{- range .Unmodelled}}
      <tr><td><code>{{.Resource}}</code></td><td><code>{{.Path}}</code></td><td>{{.What}}</td></tr>
    {{- end}}
    </tbody>
  </table>
  {{- end}}
  <nav>
    {{- range .Sections}}<a href="#{{.ID}}">{{.Title}}</a>{{end}}<a href="#worst">Worst clients</a><a href="#metrics">Metrics</a><a href="#scenario">Scenario as run</a>
  </nav>
</section>
{{- range .Sections}}
{{template "section" .}}
{{- if eq .ID "tracks"}}{{template "worst" $}}{{end}}
{{- end}}
{{- if not .HasTracks}}{{template "worst" .}}{{end}}
<section class="card" id="metrics">
  <details>
  <summary><h2>Metrics</h2> <span class="muted">every figure of summary.json</span></summary>
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
  </details>
</section>
{{- if .Intervals}}
<section class="card" id="intervals">
  <details>
  <summary><h2>Intervals</h2> <span class="muted">{{if gt .IntervalsTotal (len .Intervals)}}the first {{len .Intervals}} of {{.IntervalsTotal}}, by start{{else}}{{.IntervalsTotal}}, by start{{end}}</span></summary>
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
  </details>
</section>
{{- end}}
<section class="card" id="scenario">
  <h2>Scenario as run</h2>
  <p class="lead">Every default filled in: save it as a .toml file and <code>xdssim run</code> it to reproduce this report.</p>
  <pre class="toml">{{.Resolved}}</pre>
</section>
{{- template "footer" .}}
</body>
</html>
{{define "worst"}}
<section class="card" id="worst">
  <h2>{{if not .Worst}}No client channel failed{{else if eq (len .Worst) 1}}The client channel that failed{{else}}The {{len .Worst}} client channels that failed longest{{end}}</h2>
  {{- if .Worst}}
  <table>
    <thead><tr><th>client/target</th><th class="num">failing (s)</th><th class="num">windows</th><th class="num">first failure (s)</th><th class="num">last failure (s)</th><th>root causes (s)</th></tr></thead>
    <tbody>
    {{- range .Worst}}
      <tr><td>{{.Entity}}</td><td class="num">{{.Seconds}}</td><td class="num">{{.Windows}}</td><td class="num">{{.First}}</td><td class="num">{{.Last}}</td><td>{{range .Causes}}<span class="cause"><i style="background:{{.Color}}"></i>{{.Cause}} {{.Seconds}}</span>{{end}}</td></tr>
    {{- end}}
    </tbody>
  </table>
  {{- else}}
  <p class="muted">No client channel had an RPC failure window.</p>
  {{- end}}
</section>
{{- end}}
`)
