package viz

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xdssim/xdssim/model/fleet"
)

func render(t *testing.T, r *fleet.Results) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteReport(&b, r); err != nil {
		t.Fatalf("WriteReport: %v", err)
	}
	return b.String()
}

// body is the page after its head, which holds the echarts runtime.
func body(page string) string {
	return page[strings.Index(page, "</head>"):]
}

// chartOption returns the parsed echarts option object of chart id.
func chartOption(t *testing.T, page, id string) map[string]any {
	t.Helper()
	start := "let option_" + id + " = "
	i := strings.Index(page, start)
	if i < 0 {
		t.Fatalf("no option for chart %s", id)
	}
	rest := page[i+len(start):]
	j := strings.Index(rest, "\n")
	var opt map[string]any
	if err := json.Unmarshal([]byte(rest[:j]), &opt); err != nil {
		t.Fatalf("option of chart %s is not JSON: %v", id, err)
	}
	return opt
}

// TestReportHasOneChartPerSeries checks that every series gets its own
// chart container, with the stable ChartID derived from its name, and the
// chart options the report promises.
func TestReportHasOneChartPerSeries(t *testing.T) {
	t.Parallel()
	r := fixture(4, 60)
	page := render(t, r)
	ids := []string{"chart_clients_running", "chart_rpc_failures", "chart_metric2_value", "chart_metric3_value"}
	if got := strings.Count(page, `<div class="item" id="`); got != len(ids) {
		t.Errorf("%d chart containers, want %d", got, len(ids))
	}
	for i, id := range ids {
		if !strings.Contains(page, `<div class="item" id="`+id+`"`) {
			t.Errorf("no container for series %q with id %q", r.Series[i].Name, id)
		}
		opt := chartOption(t, page, id)
		title := opt["title"].(map[string]any)["text"]
		if title != r.Series[i].Title {
			t.Errorf("chart %s title = %v, want %q", id, title, r.Series[i].Title)
		}
		x := opt["xAxis"].([]any)[0].(map[string]any)
		if x["type"] != "value" || x["name"] != "virtual time (s)" {
			t.Errorf("chart %s x axis = %v, want a value axis named \"virtual time (s)\"", id, x)
		}
		y := opt["yAxis"].([]any)[0].(map[string]any)
		if y["name"] != r.Series[i].Unit {
			t.Errorf("chart %s y axis name = %v, want the unit %q", id, y["name"], r.Series[i].Unit)
		}
		if tip := opt["tooltip"].(map[string]any); tip["trigger"] != "axis" {
			t.Errorf("chart %s tooltip = %v, want trigger axis", id, tip)
		}
		var zooms []string
		for _, z := range opt["dataZoom"].([]any) {
			zooms = append(zooms, z.(map[string]any)["type"].(string))
		}
		if strings.Join(zooms, ",") != "slider,inside" {
			t.Errorf("chart %s dataZoom types = %v, want slider and inside", id, zooms)
		}
		if _, ok := opt["legend"]; !ok {
			t.Errorf("chart %s has no legend", id)
		}
		s := opt["series"].([]any)[0].(map[string]any)
		if s["showSymbol"] != false {
			t.Errorf("chart %s shows symbols", id)
		}
		data := s["data"].([]any)
		if len(data) != r.Samples {
			t.Fatalf("chart %s has %d points, want %d", id, len(data), r.Samples)
		}
		if last := data[len(data)-1].([]any); last[0] != 59.0 || last[1] != r.Series[i].Values[59] {
			t.Errorf("chart %s last point = %v, want [59, %v]", id, last, r.Series[i].Values[59])
		}
	}
}

// TestChartIDsAreStableUniqueIdentifiers checks the ChartID scheme: it must
// be a valid part of a JavaScript identifier, since go-echarts declares
// "let goecharts_<ChartID>", and unique within the page.
func TestChartIDsAreStableUniqueIdentifiers(t *testing.T) {
	t.Parallel()
	series := []fleet.Series{
		{Name: "clients.running"}, {Name: "clients-running"}, {Name: "Clients Running"},
		{Name: "rpc/failures (per s)"}, {Name: ""}, {Name: "日本"}, {Name: "_x_"},
	}
	want := []string{
		"chart_clients_running", "chart_clients_running_2", "chart_clients_running_3",
		"chart_rpc_failures_per_s", "chart_series", "chart_series_2", "chart_x",
	}
	got := chartIDs(series)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("chartIDs = %v, want %v", got, want)
	}
	ident := regexp.MustCompile(`^[a-z0-9_]+$`)
	for _, id := range got {
		if !ident.MatchString(id) {
			t.Errorf("ChartID %q is not [a-z0-9_]+", id)
		}
	}
}

// TestReportShadesEveryFaultOnEveryChart checks that each fault is a
// labelled markArea [start, end] pair on every chart, and that the label of
// a fault overlapping an earlier one moves down a line.
// Reference: DESIGN.md, Outputs ("fault windows shaded on every time chart").
func TestReportShadesEveryFaultOnEveryChart(t *testing.T) {
	t.Parallel()
	r := fixture(3, 600)
	page := render(t, r)
	for _, id := range chartIDs(r.Series) {
		s := chartOption(t, page, id)["series"].([]any)[0].(map[string]any)
		ma, ok := s["markArea"].(map[string]any)
		if !ok {
			t.Fatalf("chart %s has no markArea", id)
		}
		data := ma["data"].([]any)
		if len(data) != len(r.Faults) {
			t.Fatalf("chart %s shades %d faults, want %d", id, len(data), len(r.Faults))
		}
		for i, f := range r.Faults {
			pair := data[i].([]any)
			start, end := pair[0].(map[string]any), pair[1].(map[string]any)
			if len(pair) != 2 || start["name"] != f.Label || start["xAxis"] != f.Start.Seconds() || end["xAxis"] != f.End.Seconds() {
				t.Errorf("chart %s area %d = %v, want [{name %q, xAxis %v}, {xAxis %v}]", id, i, pair, f.Label, f.Start.Seconds(), f.End.Seconds())
			}
			if _, ok := start["YAxis"]; ok {
				t.Errorf("chart %s area %d carries the bogus \"YAxis\" key", id, i)
			}
		}
		// "20% restart" (200–230 s) lies inside "primary down" (120–420 s).
		if l := data[1].([]any)[0].(map[string]any)["label"]; l == nil {
			t.Errorf("chart %s: the label of a nested fault is not moved down", id)
		}
		if l := data[0].([]any)[0].(map[string]any)["label"]; l != nil {
			t.Errorf("chart %s: the label of the first fault is moved (%v)", id, l)
		}
	}

	r.Faults = nil
	if page := render(t, r); strings.Contains(body(page), `"markArea"`) {
		t.Error("a run without faults has a markArea")
	}
}

// TestReportIsSelfContained checks that the report opens offline: nothing
// is loaded from http(s), and the echarts runtime is inlined unmodified.
func TestReportIsSelfContained(t *testing.T) {
	t.Parallel()
	page := render(t, fixture(3, 60))
	remote := regexp.MustCompile(`(?i)\b(src|href)\s*=\s*["']?\s*(https?:)?//`)
	if m := remote.FindString(page); m != "" {
		t.Errorf("report loads something remotely: %q", m)
	}
	if !strings.Contains(page, "<script>"+echartsJS+"</script>") {
		t.Error("the echarts runtime is not inlined byte for byte")
	}
	if strings.Contains(page, "<script src") || strings.Contains(page, "<link") {
		t.Error("report has an external script or stylesheet")
	}
}

// TestReportEscapesScenarioText checks that text from the scenario cannot
// inject markup or script: it is HTML-escaped in the page and \u-escaped in
// chart options, so the only <script> elements are the runtime's and one
// per chart.
func TestReportEscapesScenarioText(t *testing.T) {
	t.Parallel()
	r := fixture(2, 10)
	r.Scenario = "<script>x</script>"
	r.Description = `a "quoted" & <b>bold</b> description`
	r.Series[0].Title = "</script><script>alert(1)</script>"
	r.Series[1].Unit = "<img src=x>"
	r.Faults[0].Label = "</script>fault & __f__ marker"
	r.Metrics = append(r.Metrics, fleet.Metric{Path: "z.<i>", Value: 1})
	r.Intervals[0].Entity = "<client>"
	r.Resolved = "name = \"</pre><script>alert(2)</script>\"\n"
	page := render(t, r)

	for _, want := range []string{
		"<h1><span class=\"brand\">xdssim</span> &lt;script&gt;x&lt;/script&gt;</h1>",
		"a &#34;quoted&#34; &amp; &lt;b&gt;bold&lt;/b&gt; description",
		"<code>z.&lt;i&gt;</code>",
		"<td>&lt;client&gt;</td>",
		"&lt;/pre&gt;&lt;script&gt;alert(2)&lt;/script&gt;",
		"<title>xdssim report: &lt;script&gt;x&lt;/script&gt;</title>",
		`"text":"\u003c/script\u003e\u003cscript\u003ealert(1)\u003c/script\u003e"`,
		`"name":"\u003cimg src=x\u003e"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %s", want)
		}
	}
	wantScripts := 2 + len(r.Series) // the error catcher, the runtime, one per chart
	if n := strings.Count(strings.ToLower(page), "<script"); n != wantScripts {
		t.Errorf("%d <script elements, want %d", n, wantScripts)
	}
	if n := strings.Count(strings.ToLower(page), "</script"); n != wantScripts {
		t.Errorf("%d </script, want %d", n, wantScripts)
	}
	// go-echarts deletes every "__f__" from its output; the label survives
	// (with a zero-width space) and its JSON string stays balanced.
	s := chartOption(t, page, "chart_clients_running")["series"].([]any)[0].(map[string]any)
	label := s["markArea"].(map[string]any)["data"].([]any)[0].([]any)[0].(map[string]any)["name"]
	if label != "</script>fault & __f\u200b__ marker" {
		t.Errorf("fault label in the chart = %q", label)
	}
}

// TestReportIsByteIdentical checks the determinism contract: two renders of
// the same Results are the same bytes. Reference: DESIGN.md, Determinism
// contract.
func TestReportIsByteIdentical(t *testing.T) {
	t.Parallel()
	a := render(t, fixture(5, 300))
	b := render(t, fixture(5, 300))
	if a != b {
		t.Error("two renders of the same Results differ")
	}
}

// TestReportOfTenHourLongSeriesStaysSmall checks that 10 series of 3600
// samples give a report under 5 MB, runtime included.
func TestReportOfTenHourLongSeriesStaysSmall(t *testing.T) {
	t.Parallel()
	r := fixture(10, 3600)
	page := render(t, r)
	const limit = 5 << 20
	t.Logf("report.html for %d series x %d samples: %d bytes (echarts runtime %d)", len(r.Series), r.Samples, len(page), len(echartsJS))
	if len(page) >= limit {
		t.Errorf("report is %d bytes, want < %d", len(page), limit)
	}
}

// TestReportDrawsNonFiniteSamplesAsGaps checks that NaN and infinities,
// which JSON cannot hold, become echarts' empty value "-".
func TestReportDrawsNonFiniteSamplesAsGaps(t *testing.T) {
	t.Parallel()
	r := fixture(1, 4)
	r.Series[0].Values = []float64{1, math.NaN(), math.Inf(1), 0.25}
	page := render(t, r)
	if want := `"data":[[0,1],[1,"-"],[2,"-"],[3,0.25]]`; !strings.Contains(page, want) {
		t.Errorf("report lacks %s", want)
	}
}

// TestReportListsTheFirst200Intervals checks the interval table's cap.
func TestReportListsTheFirst200Intervals(t *testing.T) {
	t.Parallel()
	r := fixture(1, 10)
	page := render(t, r)
	if !strings.Contains(page, "The first 200 of 250, by start.") {
		t.Error("report does not say the interval table is cut")
	}
	if !strings.Contains(page, "<td>client-199</td>") || strings.Contains(page, "<td>client-200</td>") {
		t.Error("interval table does not hold exactly the first 200")
	}

	r.Intervals = r.Intervals[:3]
	page = body(render(t, r))
	if strings.Contains(page, "The first") || !strings.Contains(page, "<td>client-002</td>") {
		t.Error("a short interval table is cut or incomplete")
	}
	r.Intervals = nil
	if page = body(render(t, r)); strings.Contains(page, "<h2>Intervals</h2>") {
		t.Error("report has an interval table without intervals")
	}
}

// TestReportRejectsInconsistentResults checks the Results invariants the
// report relies on.
func TestReportRejectsInconsistentResults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		modify func(*fleet.Results)
		want   string
	}{
		{"short series", func(r *fleet.Results) { r.Series[1].Values = r.Series[1].Values[:5] }, `series "rpc.failures" has 5 values, want one per sample (10)`},
		{"no interval", func(r *fleet.Results) { r.SampleInterval = 0 }, "sample interval of 0s"},
		{"negative interval", func(r *fleet.Results) { r.SampleInterval = -time.Second }, "sample interval of -1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := fixture(2, 10)
			tt.modify(r)
			err := WriteReport(&bytes.Buffer{}, r)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("WriteReport error = %v, want one containing %q", err, tt.want)
			}
		})
	}
	if err := WriteReport(&bytes.Buffer{}, nil); err == nil {
		t.Error("WriteReport(nil) succeeded")
	}
}

// TestEmbeddedEchartsIsInlineSafe checks the vendored runtime: it can sit
// inside <script> as is, and it is the pinned version, the same one
// assets/refresh.sh fetches. Reference: notes/dependencies.md §9.
func TestEmbeddedEchartsIsInlineSafe(t *testing.T) {
	t.Parallel()
	if strings.Contains(strings.ToLower(echartsJS), "</script") {
		t.Error("echarts.min.js contains </script")
	}
	if strings.Contains(echartsJS, "__f__") {
		t.Error("echarts.min.js contains __f__, which go-echarts deletes from the page it renders")
	}
	if !strings.Contains(echartsJS, `.version="`+echartsVersion+`"`) {
		t.Errorf("echarts.min.js does not declare version %s", echartsVersion)
	}
	script, err := os.ReadFile("assets/refresh.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), "\nECHARTS_VERSION="+echartsVersion+"\n") {
		t.Errorf("assets/refresh.sh does not pin ECHARTS_VERSION=%s", echartsVersion)
	}
	for _, f := range []string{"assets/LICENSE-echarts", "assets/NOTICE-echarts"} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%s is missing beside the runtime: %v", f, err)
		}
	}
}
