package viz

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/stamp"
	"github.com/xdssim/xdssim/sweep"
)

// Colours of the two sides of a comparison.
const (
	colorA = "#1f77b4"
	colorB = "#d62728"
)

// compareSeries are the series compare.html overlays, by name or, ending
// in ".", by prefix and then by the suffixes in compareSuffixes.
var compareSeries = []string{
	"rpc.clients_failing", "rpc.success_ratio", "xds.config_complete", "xds.on_fallback",
	"xds.resource_timer_firings", "xds.primary_ready", "clients.running", "control_plane.",
}

var compareSuffixes = []string{".queue_depth", ".latency_p99", ".open_streams", ".requests"}

// WriteCompare writes compare.html for a comparison to w: one
// self-contained page with both variants, every metric's mean over the
// seeds for each, the difference B − A paired by seed with its 95 %
// interval beside the wider interval unpaired runs would give, and the
// timelines of the first seed of A and B overlaid, faults shaded.
func WriteCompare(w io.Writer, c *sweep.Comparison) error {
	b, err := comparePage(c)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

type compareView struct {
	A, B, Seeds string
	FirstSeed   uint64
	Rows        []compareRow
	Expect      []compareExpect
	Note        string
	Charts      []chart
	// Empty names the overlays left out because both runs are zero the
	// whole time.
	Empty []string

	page
}

type compareRow struct {
	Metric, A, B, Paired, Unpaired, Ratio string
	Significant                           bool
}

// compareExpect is one expectation of a variant's scenario and how many of
// its runs breached it.
type compareExpect struct {
	Variant, Expect string
	Breached, Runs  int
}

func comparePage(c *sweep.Comparison) ([]byte, error) {
	for i, h := range c.ScenarioSHA256 {
		if err := (stamp.Run{Build: c.Build, ScenarioSHA256: h}).Check(); err != nil {
			return nil, fmt.Errorf("viz: compare.html: stamp of %s: %w", []string{"A", "B"}[i], err)
		}
	}
	v := compareView{A: c.A, B: c.B, page: newPage("xdssim compare", pageStamp{Build: c.Build,
		Scenarios: []scenarioHash{{"A", c.ScenarioSHA256[0]}, {"B", c.ScenarioSHA256[1]}}})}
	seeds := make([]string, len(c.Seeds))
	for i, s := range c.Seeds {
		seeds[i] = strconv.FormatUint(s, 10)
	}
	v.Seeds = strings.Join(seeds, ", ")
	if len(c.Seeds) > 0 {
		v.FirstSeed = c.Seeds[0]
	}
	for _, r := range c.Rows {
		row := compareRow{Metric: r.Metric, A: r.A.Text("–"), B: r.B.Text("–"), Paired: diffCell(r.Paired), Unpaired: diffCell(r.Unpaired)}
		if pw, uw := r.Paired.HalfWidth(), r.Unpaired.HalfWidth(); finite(pw) && finite(uw) && pw > 0 {
			row.Ratio = sweep.FormatFigure(uw/pw) + "×"
		}
		row.Significant = finite(r.Paired.Low) && (r.Paired.Low > 0 || r.Paired.High < 0)
		v.Rows = append(v.Rows, row)
	}
	for i, es := range c.Expect {
		for _, e := range es {
			v.Expect = append(v.Expect, compareExpect{Variant: []string{"A", "B"}[i], Expect: e.Expect, Breached: e.Breached, Runs: e.Runs})
		}
	}
	a, b := c.First[0], c.First[1]
	switch {
	case a == nil || b == nil:
	case a.SampleInterval != b.SampleInterval || a.Duration != b.Duration:
		v.Note = "The two variants sample time differently (duration or sample_interval), so their timelines are not overlaid."
	default:
		v.Charts, v.Empty = overlays(a, b)
	}
	return renderPage("compare.html", compareTemplate, &v, v.Charts)
}

// diffCell writes a difference and its interval, the mean with a sign.
func diffCell(s sweep.Stat) string {
	t := s.Text("–")
	if s.N > 0 && s.Mean > 0 {
		return "+" + t
	}
	return t
}

// overlays are the time charts of the series both runs have, A and B on
// one chart each; a series zero the whole time in both is only named.
func overlays(a, b *fleet.Results) ([]chart, []string) {
	byName := func(r *fleet.Results) map[string]fleet.Series {
		m := map[string]fleet.Series{}
		for _, s := range r.Series {
			m[s.Name] = s
		}
		return m
	}
	bs := byName(b)
	ids := idSet{}
	var out []chart
	var empty []string
	for _, s := range a.Series {
		t, ok := bs[s.Name]
		if !ok || !wantOverlay(s.Name) {
			continue
		}
		spec := timeSpec{
			id: ids.unique("chart_overlay_" + slug(s.Name)), title: s.Title, left: s.Unit,
			lines: []line{{name: "A: " + s.Title, values: s.Values, color: colorA}, {name: "B: " + t.Title, values: t.Values, color: colorB}},
		}
		if _, _, nonzero := spec.extent(); !nonzero {
			empty = append(empty, s.Title)
			continue
		}
		out = append(out, timeChart(a, spec))
	}
	return out, empty
}

func wantOverlay(name string) bool {
	for _, w := range compareSeries {
		if strings.HasSuffix(w, ".") {
			if strings.HasPrefix(name, w) {
				for _, suf := range compareSuffixes {
					if strings.HasSuffix(name, suf) {
						return true
					}
				}
			}
		} else if name == w {
			return true
		}
	}
	return false
}

var compareTemplate = pageTemplate("compare", `{{template "head" .}}
<section class="card head">
  <h1><span class="brand">xdssim compare</span></h1>
  <table>
    <tr><th style="color:#1f77b4">A</th><td><code>{{.A}}</code></td></tr>
    <tr><th style="color:#d62728">B</th><td><code>{{.B}}</code></td></tr>
    <tr><th>seeds</th><td>{{.Seeds}} <span class="muted">(the same for both: common random numbers)</span></td></tr>
  </table>
  <h2>Headline figures</h2>
  <p class="lead">Means over the seeds [95 % interval, inside the metric's range; "all n = v" when every run gave v]. B − A is paired by seed: the bootstrap-t interval of the mean of the per-seed differences, which is what to read; when it holds 0, the runs show no difference. The unpaired interval is what the same runs would give with independent seeds (Welch); the last column says how many times wider it is. A paired difference whose interval excludes 0 is in bold.</p>
  <table>
    <thead><tr><th>metric</th><th class="num">A</th><th class="num">B</th><th class="num">B − A, paired</th><th class="num">unpaired</th><th class="num">unpaired / paired width</th></tr></thead>
    <tbody>
    {{- range .Rows}}
      <tr><td><code>{{.Metric}}</code></td><td class="num">{{.A}}</td><td class="num">{{.B}}</td><td class="num">{{if .Significant}}<b>{{.Paired}}</b>{{else}}{{.Paired}}{{end}}</td><td class="num">{{.Unpaired}}</td><td class="num">{{.Ratio}}</td></tr>
    {{- end}}
    </tbody>
  </table>
  {{- if .Expect}}
  <h2>Expectations</h2>
  <table>
    <thead><tr><th>variant</th><th>expectation</th><th class="num">runs breaching it</th></tr></thead>
    <tbody>
    {{- range .Expect}}
      <tr><td>{{.Variant}}</td><td><code>{{.Expect}}</code></td><td class="num {{if .Breached}}fail{{else}}pass{{end}}">{{.Breached}} of {{.Runs}}</td></tr>
    {{- end}}
    </tbody>
  </table>
  {{- end}}
</section>
<section class="card" id="timelines">
  <h2>Timelines, seed {{.FirstSeed}}, overlaid</h2>
  {{- if .Note}}
  <p class="lead">{{.Note}}</p>
  {{- else}}
  <p class="lead">A in blue, B in red; the faults of A shaded. Every chart zooms with the others.</p>
  {{- end}}
  {{- range .Charts}}{{template "chart" .}}{{end}}
  {{- if .Empty}}
  <p class="muted empty">Zero the whole run in both, so not drawn: {{range $i, $e := .Empty}}{{if $i}}; {{end}}{{$e}}{{end}}.</p>
  {{- end}}
</section>
{{- template "footer" .}}
</body>
</html>
`)
