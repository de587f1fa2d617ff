package viz

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xdssim/xdssim/model/dataplane"
	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/scenarios"
)

func render(t *testing.T, r *fleet.Results, e ...Expectation) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteReport(&b, r, testStamp, e...); err != nil {
		t.Fatalf("WriteReport: %v", err)
	}
	return b.String()
}

// body is the page after its head, which holds the echarts runtime.
func body(page string) string {
	return page[strings.Index(page, "</head>"):]
}

// pageChart is one chart as the page holds it.
type pageChart struct {
	ID      string
	Option  map[string]any
	Runtime runtimeOpts
}

var chartRE = regexp.MustCompile(`<div class="chart" id="([^"]+)" style="height:\d+px" role="img" aria-labelledby="[^"]*"></div>\s*<script>xdssim\.chart\("([^"]+)", `)

// pageCharts parses every chart of a page, in order: its container, and the
// option and runtime options its script hands to xdssim.chart.
func pageCharts(t *testing.T, page string) []pageChart {
	t.Helper()
	var out []pageChart
	for _, m := range chartRE.FindAllStringSubmatchIndex(page, -1) {
		id, script := page[m[2]:m[3]], page[m[4]:m[5]]
		if id != script {
			t.Fatalf("container %s is drawn by the script of %s", id, script)
		}
		dec := json.NewDecoder(strings.NewReader(page[m[1]:]))
		c := pageChart{ID: id}
		if err := dec.Decode(&c.Option); err != nil {
			t.Fatalf("chart %s: option is not JSON: %v", id, err)
		}
		rest := page[m[1]+int(dec.InputOffset()):]
		rest, ok := strings.CutPrefix(rest, ", ")
		if !ok {
			t.Fatalf("chart %s: no runtime options after the option", id)
		}
		if err := json.NewDecoder(strings.NewReader(rest)).Decode(&c.Runtime); err != nil {
			t.Fatalf("chart %s: runtime options are not JSON: %v", id, err)
		}
		out = append(out, c)
	}
	return out
}

// chartByID returns the chart with the ID, failing the test without one.
func chartByID(t *testing.T, cs []pageChart, id string) pageChart {
	t.Helper()
	for _, c := range cs {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no chart %s", id)
	return pageChart{}
}

// seriesOf returns the option's series.
func seriesOf(c pageChart) []map[string]any {
	var out []map[string]any
	for _, s := range c.Option["series"].([]any) {
		out = append(out, s.(map[string]any))
	}
	return out
}

var (
	runOnce sync.Once
	runRes  *fleet.Results
	runExp  []Expectation
	runErr  error
)

// libraryRun runs the library's fallback-during-restarts scenario once per
// test binary: two control planes, an outage, restarts, fallback, RPC
// failure windows and expectations.
func libraryRun(t *testing.T) (*fleet.Results, []Expectation) {
	t.Helper()
	runOnce.Do(func() {
		s, err := scenarios.Load("fallback-during-restarts", nil)
		if err != nil {
			runErr = err
			return
		}
		runRes, runErr = fleet.Run(s.FleetConfig(), fleet.Options{})
		if runErr == nil {
			runExp = Evaluate(runRes, s.Expect)
		}
	})
	if runErr != nil {
		t.Fatal(runErr)
	}
	return runRes, runExp
}

// TestReportOfARunHasEveryChart renders a real run and checks the page's
// structure: every chart the run has data for, in its section, each with a
// container, a JSON option, a title, named axes and a legend; the header's
// figures, the worst clients and the resolved scenario.
func TestReportOfARunHasEveryChart(t *testing.T) {
	t.Parallel()
	r, exp := libraryRun(t)
	page := render(t, r, exp...)
	cs := pageCharts(t, page)
	want := []string{
		"chart_rpc_clients_failing", "chart_rpc_error_rate", "chart_rpc_codes", "chart_rpc_latency",
		"chart_tracks",
		"chart_xds_connectivity", "chart_xds_connected_by_group", "chart_xds_resources", "chart_xds_fallback",
		"chart_a78_connected", "chart_a78_server_failure", "chart_a78_updates", "chart_a78_resources",
		"chart_cp_primary_streams", "chart_cp_primary_messages", "chart_cp_primary_load",
		"chart_cp_fallback_streams", "chart_cp_fallback_messages",
		"chart_fleet_clients",
		"chart_window_durations", "chart_histogram_network_connect_backoff",
	}
	if slices.ContainsFunc(r.Faults, func(f fleet.Fault) bool { return f.Recovery > 0 }) {
		want = slices.Insert(want, len(want)-1, "chart_recovery")
	}
	var got []string
	for _, c := range cs {
		got = append(got, c.ID)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("charts\n got %v\nwant %v", got, want)
	}
	if n := strings.Count(page, `<div class="chart"`); n != len(cs) {
		t.Errorf("%d chart containers, %d charts with a script", n, len(cs))
	}
	// No timer fired and the fallback's queue never held a request: those
	// charts are named in one line, not drawn.
	for _, title := range []string{"Does-not-exist timer firings", "fallback: queue depth and response latency", "Retries and retry amplification"} {
		if !regexp.MustCompile(`Zero the whole run, so not drawn: [^<]*` + regexp.QuoteMeta(title)).MatchString(page) {
			t.Errorf("the page does not say %q was zero the whole run", title)
		}
	}
	for _, c := range cs {
		if !strings.Contains(page, `<h3 class="chart-title" id="`+c.ID+`-title">`) {
			t.Errorf("%s has no title", c.ID)
		}
		if c.ID != "chart_tracks" && c.Option["legend"].(map[string]any)["show"] != true {
			t.Errorf("%s has no legend", c.ID)
		}
		if c.Option["tooltip"].(map[string]any)["show"] != true {
			t.Errorf("%s has no tooltip", c.ID)
		}
		for _, axis := range []string{"xAxis", "yAxis"} {
			for i, a := range c.Option[axis].([]any) {
				if name, _ := a.(map[string]any)["name"].(string); name == "" {
					t.Errorf("%s: %s[%d] has no name", c.ID, axis, i)
				}
			}
		}
	}
	// Each cause keeps its colour in every chart.
	for _, id := range []string{"chart_rpc_clients_failing", "chart_rpc_error_rate"} {
		for _, s := range seriesOf(chartByID(t, cs, id)) {
			name := s["name"].(string)
			c, ok := dataplane.ParseCause(name)
			if !ok {
				t.Errorf("%s: series %s is not a cause", id, name)
				continue
			}
			if got := s["itemStyle"].(map[string]any)["color"]; got != causeColor(c) {
				t.Errorf("%s: %s is drawn in %v, want %s", id, name, got, causeColor(c))
			}
		}
	}
	for _, want := range []string{
		"failed RPCs", "peak client channels failing", "p99 failure window",
		"client-seconds failing", "fallback switches",
		`<section class="card" id="worst">`, "<td>" + worst(r)[0].Entity + "</td>",
		`<pre class="toml">`, "group go", "× grpc-go", "group core", "× grpc-core",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if !strings.Contains(page, ">0 of "+fmt.Sprint(len(exp))+" breached<") {
		t.Errorf("report does not show the %d expectations as passed", len(exp))
	}
}

// TestReportDrawsEverySeries checks that no series is dropped: the ones no
// section knows get a chart each, with a stable ID derived from the name.
func TestReportDrawsEverySeries(t *testing.T) {
	t.Parallel()
	r := fixture(4, 500)
	cs := pageCharts(t, render(t, r))
	want := []struct{ id, series string }{
		{"chart_fleet_clients", "running"}, // clients.running, in the fleet section
		{"chart_series_rpc_failures", "rpc.failures"},
		{"chart_series_metric2_value", "metric2.value"},
		{"chart_series_metric3_value", "metric3.value"},
	}
	if len(cs) != len(want) {
		t.Fatalf("%d charts, want %d", len(cs), len(want))
	}
	for i, c := range cs {
		if c.ID != want[i].id {
			t.Errorf("chart %d is %s, want %s", i, c.ID, want[i].id)
		}
		s := seriesOf(c)
		if len(s) != 1 || s[0]["name"] != want[i].series {
			t.Errorf("%s draws %d series, want %s", c.ID, len(s), want[i].series)
		}
		if !c.Runtime.Time {
			t.Errorf("%s is not a time chart", c.ID)
		}
	}
}

// TestEveryTimeChartShadesEveryFault checks that each fault is shaded and
// labelled, in milliseconds of virtual time, on every time chart.
func TestEveryTimeChartShadesEveryFault(t *testing.T) {
	t.Parallel()
	r, _ := libraryRun(t)
	for _, c := range pageCharts(t, render(t, r)) {
		if !c.Runtime.Time {
			continue
		}
		s := seriesOf(c)
		ma, ok := s[0]["markArea"].(map[string]any)
		if !ok {
			t.Errorf("%s shades no fault", c.ID)
			continue
		}
		data := ma["data"].([]any)
		if len(data) != len(r.Faults) {
			t.Errorf("%s shades %d faults, want %d", c.ID, len(data), len(r.Faults))
			continue
		}
		for i, f := range r.Faults {
			pair := data[i].([]any)
			a, b := pair[0].(map[string]any), pair[1].(map[string]any)
			if a["name"] != f.Label || a["xAxis"] != float64(f.Start.Milliseconds()) || b["xAxis"] != float64(f.End.Milliseconds()) {
				t.Errorf("%s fault %d = %v, want %q %v–%v", c.ID, i, pair, f.Label, f.Start, f.End)
			}
		}
	}
}

// TestFaultLabelsDoNotOverprint checks the lanes of fault labels above
// the plot: a label moves up when its span, or the text centred over it,
// meets an earlier fault's.
func TestFaultLabelsDoNotOverprint(t *testing.T) {
	t.Parallel()
	f := func(label string, a, b time.Duration) fleet.Fault {
		return fleet.Fault{Label: label, Start: a * time.Second, End: b * time.Second}
	}
	for _, tt := range []struct {
		name   string
		faults []fleet.Fault
		lanes  []int
	}{
		{"apart", []fleet.Fault{f("a", 10, 20), f("b", 200, 210)}, []int{0, 0}},
		{"overlapping spans", []fleet.Fault{f("a", 10, 100), f("b", 50, 60), f("c", 55, 70)}, []int{0, 1, 2}},
		{"adjacent spans, long labels", []fleet.Fault{f("a long label of a fault", 100, 101), f("another long label", 102, 103)}, []int{0, 1}},
		{"lane reused once free", []fleet.Fault{f("a", 10, 100), f("b", 50, 60), f("c", 150, 160)}, []int{0, 1, 0}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ma, used := faultAreas(tt.faults, 600*time.Second)
			if want := slices.Max(tt.lanes) + 1; used != want {
				t.Errorf("%d lanes used, want %d", used, want)
			}
			for i, d := range ma.Data {
				lane := 0
				if l := d.([2]faultArea)[0].Label; l != nil {
					lane = -l.Offset[1] / faultLabelLine
				}
				if lane != tt.lanes[i] {
					t.Errorf("fault %d in lane %d, want %d", i, lane, tt.lanes[i])
				}
			}
		})
	}
}

// TestReportEscapesScenarioText checks that text from the scenario cannot
// inject markup or script: it is HTML-escaped in the page and \u-escaped in
// chart options, so the only <script> elements are the page's three and
// one per chart.
func TestReportEscapesScenarioText(t *testing.T) {
	t.Parallel()
	r := fixture(2, 500)
	r.Scenario = "<script>x</script>"
	r.Description = `a "quoted" & <b>bold</b> description`
	r.Series[1].Title = "</script><script>alert(1)</script>"
	r.Series[1].Unit = "<img src=x>"
	r.Faults[0].Label = "</script>fault & __f__ marker"
	r.Metrics = append(r.Metrics, fleet.Metric{Path: "z.<i>", Value: 1})
	r.Intervals[0].Entity = "<client>"
	r.Resolved = "name = \"</pre><script>alert(2)</script>\"\n"
	r.Groups = []fleet.GroupInfo{{Name: "<g>", Clients: 1, Profile: "<p>"}}
	page := render(t, r)

	for _, want := range []string{
		"<h1><span class=\"brand\">xdssim</span> &lt;script&gt;x&lt;/script&gt;</h1>",
		"a &#34;quoted&#34; &amp; &lt;b&gt;bold&lt;/b&gt; description",
		"<code>z.&lt;i&gt;</code>",
		"<td>&lt;client&gt;</td>",
		"&lt;/pre&gt;&lt;script&gt;alert(2)&lt;/script&gt;",
		"<title>xdssim report: &lt;script&gt;x&lt;/script&gt;</title>",
		"group &lt;g&gt;", "× &lt;p&gt;",
		`&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;</h3>`,
		`"name":"\u003cimg src=x\u003e"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %s", want)
		}
	}
	cs := pageCharts(t, page)
	wantScripts := 3 + len(cs) // the error catcher, echarts, the runtime, one per chart
	if n := strings.Count(strings.ToLower(page), "<script"); n != wantScripts {
		t.Errorf("%d <script elements, want %d", n, wantScripts)
	}
	if n := strings.Count(strings.ToLower(page), "</script"); n != wantScripts {
		t.Errorf("%d </script, want %d", n, wantScripts)
	}
	s := seriesOf(chartByID(t, cs, "chart_series_rpc_failures"))[0]
	label := s["markArea"].(map[string]any)["data"].([]any)[0].([]any)[0].(map[string]any)["name"]
	if label != "</script>fault & __f__ marker" {
		t.Errorf("fault label in the chart = %q", label)
	}
}

// TestReportOfARunIsByteIdentical checks the determinism contract on a
// real run: two runs of the same scenario and seed give the same report.
// Reference: docs/architecture.md, Determinism contract.
func TestReportOfARunIsByteIdentical(t *testing.T) {
	t.Parallel()
	s, err := scenarios.Load(scenarios.DefaultName, nil)
	if err != nil {
		t.Fatal(err)
	}
	var pages [2]string
	for i := range pages {
		r, err := fleet.Run(s.FleetConfig(), fleet.Options{})
		if err != nil {
			t.Fatal(err)
		}
		pages[i] = render(t, r, Evaluate(r, s.Expect)...)
	}
	if pages[0] != pages[1] {
		t.Error("two runs of the default scenario give different reports")
	}
}

// TestReportOfALargeFleetStaysUnder5MB renders the Results a 10 000-client
// run at its worst could give: an hour sampled every 10 ms on 40 series,
// 200 tracks failing in every column with changing causes, and a failure
// window per client every minute. The file stays under 5 MB.
func TestReportOfALargeFleetStaysUnder5MB(t *testing.T) {
	t.Parallel()
	const clients, samples = 10000, 360001
	r := fixture(40, samples)
	r.Clients, r.SampleInterval, r.Duration = clients, 10*time.Millisecond, time.Hour
	r.Intervals = nil
	for m := 0; m < 60; m++ {
		for c := 0; c < clients; c++ {
			start := time.Duration(m)*time.Minute + time.Duration(c)*time.Millisecond
			r.Intervals = append(r.Intervals, fleet.Interval{
				Entity: fmt.Sprintf("web/%d/echo", c), Kind: fleet.WindowKind(dataplane.Cause(c % int(dataplane.NumCauses))),
				Start: start, End: start + time.Duration(c%40)*time.Second,
			})
		}
	}
	r.TrackInterval = 9 * time.Second
	for i := 0; i < fleet.MaxTracks; i++ {
		tr := fleet.Track{Entity: fmt.Sprintf("web/%d/echo", i*50)}
		for k := 0; k < 400; k++ {
			tr.States = append(tr.States, fleet.FailingState(dataplane.Cause((i+k)%int(dataplane.NumCauses))))
		}
		r.Tracks = append(r.Tracks, tr)
	}
	page := render(t, r)
	const limit = 5 << 20
	t.Logf("report.html: %d bytes (echarts runtime %d)", len(page), len(echartsJS))
	if len(page) >= limit {
		t.Errorf("report is %d bytes, want < %d", len(page), limit)
	}
}

// TestSeriesPoints checks how samples become points: NaN and infinities,
// which JSON cannot hold, are gaps ("-"); with more than maxPoints samples
// each point is the mean of the finite samples it covers.
func TestSeriesPoints(t *testing.T) {
	t.Parallel()
	long := make([]float64, 2*maxPoints)
	for i := range long {
		long[i] = float64(i % 2)
	}
	long[2] = math.NaN()
	for _, tt := range []struct {
		name   string
		values []float64
		want   string
	}{
		{"gaps", []float64{1, math.NaN(), math.Inf(1), 0.25}, `[[0,1],[1000,"-"],[2000,"-"],[3000,0.25]]`},
		{"empty", nil, `[]`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(seriesPoints(time.Second, tt.values)); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
	var pts [][2]any
	if err := json.Unmarshal(seriesPoints(time.Second, long), &pts); err != nil {
		t.Fatal(err)
	}
	if len(pts) != maxPoints {
		t.Fatalf("%d points for %d samples, want %d", len(pts), len(long), maxPoints)
	}
	// Stride 2: (0, 1) → 0.5; (NaN, 1) → 1, the mean of the finite one.
	last := pts[maxPoints-1]
	if pts[0] != [2]any{0.0, 0.5} || pts[1] != [2]any{2000.0, 1.0} || last != [2]any{float64(2*maxPoints-2) * 1000, 0.5} {
		t.Errorf("points %v %v … %v", pts[0], pts[1], last)
	}
}

// TestReportListsTheFirst200Intervals checks the interval table's cap.
func TestReportListsTheFirst200Intervals(t *testing.T) {
	t.Parallel()
	r := fixture(1, 10)
	page := render(t, r)
	if !strings.Contains(page, "the first 200 of 250, by start") {
		t.Error("report does not say the interval table is cut")
	}
	if !strings.Contains(page, "<td>client-199</td>") || strings.Contains(page, "<td>client-200</td>") {
		t.Error("interval table does not hold exactly the first 200")
	}

	r.Intervals = r.Intervals[:3]
	page = body(render(t, r))
	if strings.Contains(page, "the first") || !strings.Contains(page, "<td>client-002</td>") {
		t.Error("a short interval table is cut or incomplete")
	}
	r.Intervals = nil
	if page = body(render(t, r)); strings.Contains(page, `id="intervals"`) {
		t.Error("report has an interval table without intervals")
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

// TestReportIsByteIdentical checks the determinism contract: two renders of
// the same Results are the same bytes. Reference: docs/architecture.md, Determinism
// contract.
func TestReportIsByteIdentical(t *testing.T) {
	t.Parallel()
	a := render(t, fixture(5, 300))
	b := render(t, fixture(5, 300))
	if a != b {
		t.Error("two renders of the same Results differ")
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
			err := WriteReport(&bytes.Buffer{}, r, testStamp)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("WriteReport error = %v, want one containing %q", err, tt.want)
			}
		})
	}
	if err := WriteReport(&bytes.Buffer{}, nil, testStamp); err == nil {
		t.Error("WriteReport(nil) succeeded")
	}
}

// TestEmbeddedEchartsIsInlineSafe checks the vendored runtime: it can sit
// inside <script> as is, and it is the pinned version, the same one
// assets/refresh.sh fetches. Reference: go-echarts v2.6.7 writes options for
// the echarts 5 API (its README names echarts v5.4.3), so the runtime is an
// echarts 5 release.
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

func TestChartIDsAreStableUniqueIdentifiers(t *testing.T) {
	t.Parallel()
	series := []fleet.Series{
		{Name: "clients.running"}, {Name: "clients-running"}, {Name: "Clients Running"},
		{Name: "rpc/failures (per s)"}, {Name: ""}, {Name: "日本"}, {Name: "_x_"},
	}
	want := []string{
		"chart_series_clients_running", "chart_series_clients_running_2", "chart_series_clients_running_3",
		"chart_series_rpc_failures_per_s", "chart_series_series", "chart_series_series_2", "chart_series_x",
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

// TestServersWithSimilarNamesGetTheirOwnCharts checks that two control
// planes whose names slug alike still get distinct chart and section IDs.
func TestServersWithSimilarNamesGetTheirOwnCharts(t *testing.T) {
	t.Parallel()
	r := fixture(0, 10)
	for _, srv := range []string{"cp.a", "cp-a"} {
		r.Series = append(r.Series, fleet.Series{Name: "control_plane." + srv + ".open_streams", Values: []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}})
	}
	page := render(t, r)
	cs := pageCharts(t, page)
	if len(cs) != 2 || cs[0].ID == cs[1].ID {
		t.Fatalf("charts %v, want two with distinct IDs", cs)
	}
	ids := regexp.MustCompile(` id="([^"]+)"`).FindAllStringSubmatch(page, -1)
	seen := map[string]bool{}
	for _, m := range ids {
		if seen[m[1]] {
			t.Errorf("id %q appears twice", m[1])
		}
		seen[m[1]] = true
	}
}

// TestHeadlineFiguresAreImpactFirst: the headline opens on what users
// felt (failed RPCs and their share, client-seconds failing), then the
// figures the scenario bounds; a tile is red only for a failure users
// feel, or a breached expectation, and green only for an expectation met;
// affinity breaks are their own figure, not a failure.
func TestHeadlineFiguresAreImpactFirst(t *testing.T) {
	t.Parallel()
	m := func(kv ...any) *fleet.Results {
		r := &fleet.Results{}
		for i := 0; i < len(kv); i += 2 {
			r.Metrics = append(r.Metrics, fleet.Metric{Path: kv[i].(string), Value: kv[i+1].(float64)})
		}
		return r
	}
	bound := func(metric string, pass bool) Expectation { return Expectation{Metric: metric, Pass: pass} }
	for _, tt := range []struct {
		name string
		r    *fleet.Results
		exp  []Expectation
		want []string // label=value class
	}{
		{"no RPCs, no xDS", m(), nil, nil},
		{"a clean run", m("rpc.total", 1000.0, "rpc.failed", 0.0, "failure_windows.client_seconds", 0.0, "failure_windows.count", 0.0,
			"xds.resource_timer_spurious", 0.0, "xds.resource_timer_fired", 0.0, "xds.fallback_switches", 3.0, "xds.fallback_reverts", 3.0), nil,
			[]string{"failed RPCs=0 ", "client-seconds failing=0 ", "fallback switches=3 warn"}},
		{"one failure in a million", m("rpc.total", 1e6, "rpc.failed", 1.0,
			"failure_windows.peak_clients_percent", 0.5, "failure_windows.duration_seconds.p99", 12.345, "failure_windows.count", 1.0, "failure_windows.client_seconds", 1234.5), nil,
			[]string{"failed RPCs=1 bad", "client-seconds failing=1234 bad", "p99 failure window=12.3 s bad", "peak client channels failing=0.5 % bad"}},
		{"sessions broken, no RPC failed, expectations first", m("rpc.total", 1000.0, "rpc.failed", 0.0, "failure_windows.client_seconds", 0.0,
			"sessions.started", 100.0, "sessions.affinity_breaks", 50.0), []Expectation{bound("sessions.affinity_breaks", true), bound("rpc.failed", true)},
			[]string{"failed RPCs=0 good", "client-seconds failing=0 ", "session affinity breaks=50 good"}},
		{"a breached expectation is red", m("rpc.total", 10.0, "rpc.failed", 0.0, "failure_windows.client_seconds", 0.0, "xds.resource_timer_spurious", 0.0),
			[]Expectation{bound("xds.resource_timer_spurious", false)},
			[]string{"failed RPCs=0 ", "client-seconds failing=0 ", "spurious timer firings=0 bad"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, f := range headline(tt.r, tt.exp) {
				got = append(got, f.Label+"="+f.Value+" "+f.Class)
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestWorstClientsAreTheLongestFailing checks the worst-clients table:
// summed over a client channel's windows, longest first, then by name, at
// most 20, with each cause the channel failed for.
func TestWorstClientsAreTheLongestFailing(t *testing.T) {
	t.Parallel()
	win := func(e string, c dataplane.Cause, a, b time.Duration) fleet.Interval {
		return fleet.Interval{Entity: e, Kind: fleet.WindowKind(c), Start: a * time.Second, End: b * time.Second}
	}
	r := &fleet.Results{Intervals: []fleet.Interval{
		{Entity: "a/0", Kind: "restart", Start: 0, End: 100 * time.Second},
		win("a/1/x", dataplane.NACK, 0, 10), win("a/1/x", dataplane.BackendDown, 20, 25),
		win("a/2/x", dataplane.Deadline, 5, 20),
		win("a/3/x", dataplane.Deadline, 7, 7),
	}}
	for i := 0; i < 30; i++ {
		r.Intervals = append(r.Intervals, win(fmt.Sprintf("b/%02d/x", i), dataplane.BackendError, 0, 1))
	}
	rows := worst(r)
	if len(rows) != worstClients {
		t.Fatalf("%d rows, want %d", len(rows), worstClients)
	}
	got := func(i int) string {
		var cs []string
		for _, c := range rows[i].Causes {
			cs = append(cs, c.Cause+":"+c.Seconds)
		}
		return fmt.Sprintf("%s %s %d %s-%s %s", rows[i].Entity, rows[i].Seconds, rows[i].Windows, rows[i].First, rows[i].Last, strings.Join(cs, ","))
	}
	for i, want := range []string{
		"a/1/x 15 2 0-25 nack:10,backend_down:5",
		"a/2/x 15 1 5-20 deadline:15",
		"b/00/x 1 1 0-1 backend_error:1",
	} {
		if g := got(i); g != want {
			t.Errorf("row %d = %q, want %q", i, g, want)
		}
	}
	if last := rows[worstClients-1].Entity; last != "b/17/x" {
		t.Errorf("last row %s, want b/17/x (a/3/x failed for 0 s)", last)
	}
}

// TestHeatmapDrawsEveryStateButUp checks the tracks' heatmap: a cell per
// column that was not up, a legend piece per state present, in its colour.
func TestHeatmapDrawsEveryStateButUp(t *testing.T) {
	t.Parallel()
	r := fixture(1, 10)
	r.TrackInterval = 2 * time.Second
	nack := fleet.FailingState(dataplane.NACK)
	r.Tracks = []fleet.Track{
		{Entity: "g/0/t", States: []fleet.TrackState{fleet.TrackNotRunning, fleet.TrackUp, nack}},
		{Entity: "g/5/t", States: []fleet.TrackState{fleet.TrackUp, fleet.TrackFallback, fleet.TrackUp}},
	}
	c := chartByID(t, pageCharts(t, render(t, r)), "chart_tracks")
	data, _ := json.Marshal(seriesOf(c)[0]["data"])
	if want := fmt.Sprintf("[[0,0,%d],[2,0,%d],[1,1,%d]]", fleet.TrackNotRunning, nack, fleet.TrackFallback); string(data) != want {
		t.Errorf("cells %s, want %s", data, want)
	}
	pieces := c.Runtime.Patch["visualMap"].(map[string]any)["pieces"].([]any)
	var got []string
	for _, p := range pieces {
		p := p.(map[string]any)
		got = append(got, fmt.Sprintf("%v %v %v", p["value"], p["label"], p["color"]))
	}
	want := []string{
		fmt.Sprintf("%d on fallback %s", fleet.TrackFallback, colorFallback),
		fmt.Sprintf("%d not running %s", fleet.TrackNotRunning, colorNotRunning),
		fmt.Sprintf("%d failing: nack %s", nack, causeColor(dataplane.NACK)),
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("pieces %q, want %q", got, want)
	}
	if c.Runtime.Columns != 2 || len(c.Runtime.States) != int(fleet.NumTrackStates) {
		t.Errorf("runtime %+v", c.Runtime)
	}
}

// TestRecoveryChartOnlyWhenSomethingRecovered checks the recovery chart:
// drawn when a fault left failures behind it, one bar per fault.
func TestRecoveryChartOnlyWhenSomethingRecovered(t *testing.T) {
	t.Parallel()
	r := fixture(1, 10)
	if slices.ContainsFunc(pageCharts(t, render(t, r)), func(c pageChart) bool { return c.ID == "chart_recovery" }) {
		t.Error("a recovery chart for faults that left nothing behind")
	}
	r.Faults[1].Recovery = 2500 * time.Millisecond
	c := chartByID(t, pageCharts(t, render(t, r)), "chart_recovery")
	data, _ := json.Marshal(seriesOf(c)[0]["data"])
	if string(data) != `[{"value":0},{"value":2.5}]` {
		t.Errorf("bars %s", data)
	}
}

// TestReportLabelsAHypotheticalRun checks the header's banner for a run
// with what-ifs: every setting, its value, what ships and why, escaped;
// a faithful run has no banner.
// Reference: docs/architecture.md, "Faithful by default, what-if by name".
func TestReportLabelsAHypotheticalRun(t *testing.T) {
	t.Parallel()
	r := fixture(2, 10)
	if page := render(t, r); strings.Contains(page, `class="whatif"`) {
		t.Error("a faithful run's report has a what-if banner")
	}
	r.WhatIf = []fleet.WhatIf{
		{Key: "fleet.group[0].xds_channel.jitter", Value: "0", Ships: "0.2", Why: "grpc-go <hard-codes> it"},
		{Key: "fleet.group[1].rpc.throttle_max_tokens", Value: "10", Ships: "0", Why: "the xDS resolver"},
	}
	page := render(t, r)
	for _, want := range []string{
		`<div class="whatif" role="note">`,
		"Hypothetical run",
		"<tr><td><code>fleet.group[0].xds_channel.jitter</code></td><td>0</td><td>0.2</td><td>grpc-go &lt;hard-codes&gt; it</td></tr>",
		"<tr><td><code>fleet.group[1].rpc.throttle_max_tokens</code></td><td>10</td><td>0</td><td>the xDS resolver</td></tr>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %s", want)
		}
	}
}

// TestSessionDrainsHeadlineShowsNoFailure: a backend drains under A55
// sessions and no RPC fails. The headline shows 0 failed RPCs and the
// affinity breaks as their own figure, and no tile is red: a session that
// lost its backend is not an RPC failure.
func TestSessionDrainsHeadlineShowsNoFailure(t *testing.T) {
	t.Parallel()
	s, err := scenarios.Load("session-drain", nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := fleet.Run(s.FleetConfig(), fleet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	figs := headline(r, Evaluate(r, s.Expect))
	var got []string
	for _, f := range figs {
		got = append(got, f.Label+"="+f.Value+" "+f.Class)
		if f.Class == "bad" {
			t.Errorf("a red tile: %+v", f)
		}
	}
	var breaks float64
	for _, m := range r.Metrics {
		if m.Path == "sessions.affinity_breaks" {
			breaks = m.Value
		}
	}
	want := strconv.FormatFloat(breaks, 'f', -1, 64)
	if len(figs) < 2 || figs[0].Label != "failed RPCs" || figs[0].Value != "0" || breaks == 0 ||
		!slices.ContainsFunc(figs, func(f figure) bool { return f.Label == "session affinity breaks" && f.Value == want }) {
		t.Errorf("headline %q, want 0 failed RPCs first and the run's %v affinity breaks", got, breaks)
	}
}

// TestDefaultsTableCreditsNoRecoveryToWebsRestart: in default, no web RPC
// failed, so web's restart caused no failure window and is credited no
// recovery; it is listed as a restart, not as a fault.
func TestDefaultsTableCreditsNoRecoveryToWebsRestart(t *testing.T) {
	t.Parallel()
	s, err := scenarios.Load("default", nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := fleet.Run(s.FleetConfig(), fleet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	page := render(t, r, Evaluate(r, s.Expect)...)
	row := `<tr><td class="muted">restart</td><td>restart 0: 20% of web</td><td class="num">90</td><td class="num">115</td><td class="num">0</td><td class="num">–</td></tr>`
	if !strings.Contains(page, row) {
		i := strings.Index(page, "What the scenario did")
		t.Errorf("no row %s in:\n%.1500s", row, page[max(i, 0):])
	}
}
