package viz

import (
	"bytes"
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
		cmpRes, sweepErr = sweep.Compare(
			sweep.Variant{Name: "A", Src: src},
			sweep.Variant{Name: "B", Src: src, Sets: []string{"fleet.restart[0].downtime=9s"}},
			[]uint64{1, 2, 3}, nil, sweep.Options{})
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
	for _, s := range []string{"what-if</span>: ", "deployable</span>", "Pareto front", "Hypothetical values", "Every point"} {
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
