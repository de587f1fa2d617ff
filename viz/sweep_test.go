package viz

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/xdssim/xdssim/scenarios"
	"github.com/xdssim/xdssim/sweep"
)

var (
	sweepOnce sync.Once
	sweepRes  *sweep.Result
	cmpRes    *sweep.Comparison
	sweepErr  error
)

// sweepFixtures runs the sweep package's test scenario: a 2 × 2 grid × 3
// seeds with two objectives, the downtime param a what-if-free world key
// and the ADS backoff cap a what-if; and a comparison of two downtimes.
func sweepFixtures(t *testing.T) (*sweep.Result, *sweep.Comparison) {
	t.Helper()
	sweepOnce.Do(func() {
		src, err := scenarios.Open("../sweep/testdata/outage.toml")
		if err != nil {
			sweepErr = err
			return
		}
		spec := sweep.Spec{Seeds: 3,
			Params: []sweep.Param{
				{Key: "fleet.group[0].profile_fields.backoff_max", Values: []string{"30s", "2m"}},
				{Key: "fleet.restart[0].downtime", Values: []string{"1s", "5s", "9s"}},
			},
			Metrics: []string{"failure_windows.client_seconds", "control_plane.primary.requests"},
		}
		for _, o := range []string{"minimize failure_windows.client_seconds", "minimize control_plane.primary.requests"} {
			ob, _ := scenarios.ParseObjective(o)
			spec.Objectives = append(spec.Objectives, ob)
		}
		p, err := sweep.NewPlan(src, []string{"what_if=true"}, spec)
		if err != nil {
			sweepErr = err
			return
		}
		runs, err := p.Execute(nil, sweep.Options{})
		if err != nil {
			sweepErr = err
			return
		}
		if sweepRes, sweepErr = sweep.Summarize(p.Header, runs); sweepErr != nil {
			return
		}
		sweepRes.Build = testStamp.Build
		cmpRes, sweepErr = sweep.Compare(
			sweep.Variant{Name: "A", Src: src},
			sweep.Variant{Name: "B", Src: src, Sets: []string{"fleet.restart[0].downtime=9s"}},
			[]uint64{1, 2, 3}, nil, sweep.Options{Build: testStamp.Build})
	})
	if sweepErr != nil {
		t.Fatal(sweepErr)
	}
	return sweepRes, cmpRes
}

func renderSweep(t *testing.T, r *sweep.Result) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteSweep(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestSweepPageHasEveryChart: a chart of each metric against each param,
// a heatmap of each metric over the two params, and the trade-off of the
// two objectives; the what-if param is labelled as one.
func TestSweepPageHasEveryChart(t *testing.T) {
	res, _ := sweepFixtures(t)
	page := renderSweep(t, res)
	var ids []string
	for _, c := range pageCharts(t, page) {
		ids = append(ids, c.ID)
	}
	want := []string{
		"chart_failure_windows_client_seconds_by_fleet_group_0_profile_fields_backoff_max",
		"chart_failure_windows_client_seconds_by_fleet_restart_0_downtime",
		"chart_control_plane_primary_requests_by_fleet_group_0_profile_fields_backoff_max",
		"chart_control_plane_primary_requests_by_fleet_restart_0_downtime",
		"chart_heatmap_failure_windows_client_seconds",
		"chart_heatmap_control_plane_primary_requests",
		"chart_pareto",
	}
	if strings.Join(ids, " ") != strings.Join(want, " ") {
		t.Errorf("charts:\n got %q\nwant %q", ids, want)
	}
	b := body(page)
	for _, s := range []string{"what-if</span>: ", "deployable</span>", "Pareto front", "Hypothetical values", "Every point",
		"Recommended: <code>", "knob: the sweep may recommend it", "condition: the setting must hold under each", "Best setting under each condition"} {
		if !strings.Contains(b, s) {
			t.Errorf("sweep.html has no %q", s)
		}
	}
	if again := renderSweep(t, res); again != page {
		t.Error("two renderings of one sweep differ")
	}
}

func TestComparePageOverlaysTheTimelines(t *testing.T) {
	_, c := sweepFixtures(t)
	var b bytes.Buffer
	if err := WriteCompare(&b, c); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	charts := pageCharts(t, page)
	if len(charts) < 3 {
		t.Fatalf("%d overlaid charts, want at least 3", len(charts))
	}
	for _, ch := range charts {
		series, _ := ch.Option["series"].([]any)
		if len(series) != 2 {
			t.Errorf("chart %s has %d series, want A and B", ch.ID, len(series))
		}
	}
	for _, s := range []string{"B − A, paired", "failure_windows.client_seconds", "common random numbers"} {
		if !strings.Contains(body(page), s) {
			t.Errorf("compare.html has no %q", s)
		}
	}
}

// TestSweepRendersInABrowser: sweep.html passes the check report.html
// does: no script or console error, every chart drawn.
func TestSweepRendersInABrowser(t *testing.T) {
	bin := browserOrSkip(t)
	res, _ := sweepFixtures(t)
	checkRendersInBrowser(t, bin, "sweep.html", renderSweep(t, res))
}

func TestCompareRendersInABrowser(t *testing.T) {
	bin := browserOrSkip(t)
	_, c := sweepFixtures(t)
	var b bytes.Buffer
	if err := WriteCompare(&b, c); err != nil {
		t.Fatal(err)
	}
	checkRendersInBrowser(t, bin, "compare.html", b.String())
}

// TestNumericParamsAreOnValueAxes: a param of numbers or durations is
// drawn on a value axis, a logarithmic one when its values are geometric;
// any other on a category axis.
func TestNumericParamsAreOnValueAxes(t *testing.T) {
	for _, tt := range []struct {
		values       []string
		numeric, log bool
	}{
		{[]string{"1s", "5s", "9s"}, true, false},
		{[]string{"4", "6", "8", "16"}, true, false},
		{[]string{"1s", "2s", "4s", "8s"}, true, true},
		{[]string{"100", "1000", "10000"}, true, true},
		{[]string{"0.1", "0.2"}, true, false},
		{[]string{`"grpc-go"`, `"grpc-java"`}, false, false},
		{[]string{`["primary"]`, `["primary", "fallback"]`}, false, false},
	} {
		a := paramAxis(sweep.ParamInfo{Values: tt.values})
		if a.numeric != tt.numeric || a.log != tt.log {
			t.Errorf("%q: numeric %v log %v, want %v %v", tt.values, a.numeric, a.log, tt.numeric, tt.log)
		}
	}
	res, _ := sweepFixtures(t)
	charts := pageCharts(t, renderSweep(t, res))
	for id, want := range map[string]string{
		"chart_failure_windows_client_seconds_by_fleet_restart_0_downtime":                 "value",
		"chart_failure_windows_client_seconds_by_fleet_group_0_profile_fields_backoff_max": "value",
	} {
		c := chartByID(t, charts, id)
		axes, _ := c.Option["xAxis"].([]any)
		if len(axes) == 0 {
			t.Fatalf("%s: no x axis", id)
		}
		if got := axes[0].(map[string]any)["type"]; got != want {
			t.Errorf("%s: x axis %v, want %s", id, got, want)
		}
	}
}

// TestEveryChartMarksTheRecommendationAndTheFrontIsLabelled: each chart
// of a metric against a param marks the recommended setting; the Pareto
// front's points carry their settings as labels.
func TestEveryChartMarksTheRecommendationAndTheFrontIsLabelled(t *testing.T) {
	res, _ := sweepFixtures(t)
	if res.Robust.Best < 0 {
		t.Fatal("the fixture recommends nothing")
	}
	for _, c := range pageCharts(t, renderSweep(t, res)) {
		series, _ := c.Option["series"].([]any)
		names := map[string]map[string]any{}
		for _, s := range series {
			m := s.(map[string]any)
			names[m["name"].(string)] = m
		}
		switch {
		case strings.HasPrefix(c.ID, "chart_heatmap_"):
			if !strings.Contains(string(mustJSON(t, series)), "◆") {
				t.Errorf("%s: no cell marked ◆", c.ID)
			}
		case c.ID == "chart_pareto":
			front := names["Pareto front"]
			if front == nil || !strings.Contains(string(mustJSON(t, front)), `"label":{"formatter"`) {
				t.Errorf("the Pareto front's points are not labelled: %s", mustJSON(t, front))
			}
		default:
			if names["recommended setting"] == nil {
				t.Errorf("%s: the recommended setting is not marked", c.ID)
			}
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
