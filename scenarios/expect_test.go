package scenarios

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// withExpect is a scenario with one control plane, "primary", whose last
// line opens an [[expect]] (line 7): the keys a test appends are on line 8
// and after.
const withExpect = `[[control_plane]]
name = "primary"
[[control_plane.service]]
name = "echo"
[[fleet.group]]
clients = 3
[[expect]]
`

func TestExpectationsRejectBadInputWithPositions(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		sets []string
		want []string
	}{
		{
			name: "metric left out",
			doc:  withExpect + "min = 1\n",
			want: []string{`s.toml:7:1: expect[0].metric: is required: the summary.json path of the figure to bound (metric = "fleet.starts")`},
		},
		{
			name: "empty metric",
			doc:  withExpect + "metric = \"\"\nmin = 1\n",
			want: []string{`s.toml:8:10: expect[0].metric: expected the summary.json path of a figure, such as "fleet.starts", found ""`},
		},
		{
			name: "metric of the wrong type",
			doc:  withExpect + "metric = 5\nmin = 1\n",
			want: []string{`s.toml:8:10: expect[0].metric: expected a string, found the integer 5`},
		},
		{
			name: "neither bound",
			doc:  withExpect + "metric = \"fleet.starts\"\n",
			want: []string{`s.toml:7:1: expect[0]: expected a bound: min = N, max = N, or both`},
		},
		{
			name: "min above max",
			doc:  withExpect + "metric = \"fleet.starts\"\nmin = 5\nmax = 2.5\n",
			want: []string{`s.toml:10:7: expect[0].max: expected max >= min (5), found 2.5`},
		},
		{
			name: "bound of the wrong type is not also reported as missing",
			doc:  withExpect + "metric = \"fleet.starts\"\nmin = \"high\"\n",
			want: []string{`s.toml:9:7: expect[0].min: expected a number, found the string "high"`},
		},
		{
			name: "bound that is not finite",
			doc:  withExpect + "metric = \"fleet.starts\"\nmax = inf\n",
			want: []string{`s.toml:9:7: expect[0].max: expected a finite number, found +Inf`},
		},
		{
			name: "misspelled metric says what it probably meant",
			doc:  withExpect + "metric = \"xds.nack_sent\"\nmax = 0\n",
			want: []string{`s.toml:8:10: expect[0].metric: no metric "xds.nack_sent" in summary.json; did you mean "xds.nacks_sent"?`},
		},
		{
			name: "metric of a control plane the scenario does not have",
			doc:  withExpect + "metric = \"control_plane.fallback.requests\"\nmax = 10\n",
			want: []string{`s.toml:8:10: expect[0].metric: no metric "control_plane.fallback.requests" in summary.json (control_plane holds: primary)`},
		},
		{
			name: "misspelled control plane in a metric",
			doc:  withExpect + "metric = \"control_plane.primry.requests\"\nmax = 10\n",
			want: []string{`s.toml:8:10: expect[0].metric: no metric "control_plane.primry.requests" in summary.json; did you mean "control_plane.primary.requests"?`},
		},
		{
			name: "unknown metric in an inline array of tables",
			doc:  "expect = [{ metric = \"fleet.start\", min = 1 }]\n" + strings.TrimSuffix(withExpect, "[[expect]]\n"),
			want: []string{`s.toml:1:22: expect[0].metric: no metric "fleet.start" in summary.json; did you mean "fleet.starts"?`},
		},
		{
			name: "--set of a bound is validated like the file",
			doc:  withExpect + "metric = \"fleet.starts\"\nmin = 1\n",
			sets: []string{"expect[0].max=0"},
			want: []string{`--set expect[0].max=0: expect[0].max: expected max >= min (1), found 0`},
		},
		{
			name: "every problem of the expectations at once",
			doc: withExpect + "metric = \"fleet.strats\"\nmin = \"x\"\n[[expect]]\nmetric = \"fleet.starts\"\nmin = 3\nmax = 1\n" +
				"[[expect]]\nmax = 1\n",
			want: []string{
				`s.toml:8:10: expect[0].metric: no metric "fleet.strats" in summary.json; did you mean "fleet.starts"?`,
				`s.toml:9:7: expect[0].min: expected a number, found the string "x"`,
				`s.toml:13:7: expect[1].max: expected max >= min (3), found 1`,
				`s.toml:14:1: expect[2].metric: is required: the summary.json path of the figure to bound (metric = "fleet.starts")`,
			},
		},
		{
			// Which metrics a run reports depends on the rest of the
			// scenario, which only converts to a fleet config when valid.
			name: "metric paths are checked once the rest of the scenario is valid",
			doc: "[network]\nlatency = { dist = \"lognormal\", median = \"5ms\", p99 = \"1ms\" }\n" + withExpect +
				"metric = \"fleet.strats\"\n[[expect]]\nmetric = \"fleet.starts\"\nmin = 3\nmax = 1\n",
			want: []string{
				`s.toml:2:55: network.latency.p99: expected 0 < median <= p99, found median 5ms, p99 1ms`,
				`s.toml:9:1: expect[0]: expected a bound: min = N, max = N, or both`,
				`s.toml:14:7: expect[1].max: expected max >= min (3), found 1`,
			},
		},
		{
			name: "metric paths are checked once the --set arguments are valid",
			doc:  withExpect + "metric = \"fleet.strats\"\nmin = 1\n",
			sets: []string{"fleet.group[0].clients=0"},
			want: []string{`--set fleet.group[0].clients=0: fleet.group[0].clients: expected a number of clients from 1 to 10000000, found 0`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, tt.doc, tt.sets...)
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("want an ErrorList, got %v", err)
			}
			if got := strings.Split(list.Error(), "\n"); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("errors:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestBoundsLeftOutAreNil pins the optional bounds: a bound left out is
// nil, one given is set even when it is 0, and an integer reads as a float.
func TestBoundsLeftOutAreNil(t *testing.T) {
	s, err := parse(t, withExpect+"metric = \"fleet.starts\"\nmin = 0\n[[expect]]\nmetric = \"xds.nacks_sent\"\nmax = 2\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []Expect{
		{Metric: "fleet.starts", Min: ptr(0.0)},
		{Metric: "xds.nacks_sent", Max: ptr(2.0)},
	}
	if !reflect.DeepEqual(s.Expect, want) {
		t.Errorf("expectations = %s, want %s", showExpects(s.Expect), showExpects(want))
	}
}

func TestExpectationsRoundTripThroughTheResolvedTOML(t *testing.T) {
	s, err := parse(t, withExpect+"metric = \"fleet.starts\"\nmin = 0\n[[expect]]\nmetric = \"control_plane.primary.requests\"\nmin = 0.25\nmax = 1e9\n")
	if err != nil {
		t.Fatal(err)
	}
	again, err := parse(t, s.TOML())
	if err != nil {
		t.Fatalf("resolved TOML does not parse: %v\n%s", err, s.TOML())
	}
	if !sameScenario(s, again) {
		t.Errorf("round trip changed the expectations:\n got %s\nwant %s\n%s", showExpects(again.Expect), showExpects(s.Expect), s.TOML())
	}
	if strings.Count(s.TOML(), "max =") != 1 {
		t.Errorf("a bound left out is written into the resolved TOML:\n%s", s.TOML())
	}
}

func TestOverridesSetExpectationBounds(t *testing.T) {
	s, err := parse(t, withExpect+"metric = \"fleet.starts\"\nmin = 1\n", "expect[0].min=0.5", "expect[0].max=7")
	if err != nil {
		t.Fatal(err)
	}
	want := []Expect{{Metric: "fleet.starts", Min: ptr(0.5), Max: ptr(7.0)}}
	if !reflect.DeepEqual(s.Expect, want) {
		t.Errorf("expectations = %s, want %s", showExpects(s.Expect), showExpects(want))
	}
}

func TestMetricHintNamesTheNearestPathOrWhatIsThere(t *testing.T) {
	paths := []string{
		"control_plane.fallback.requests", "control_plane.primary.requests",
		"fleet.restarts", "fleet.starts", "xds.nacks_sent",
	}
	tests := []struct{ metric, want string }{
		{"fleet.strts", `; did you mean "fleet.starts"?`},
		{"control_plane.fallbak.requests", `; did you mean "control_plane.fallback.requests"?`},
		{"control_plane.primary.reqs", `; did you mean "control_plane.primary.requests"?`},
		{"control_plane.primary.x", ` (control_plane.primary holds: requests)`},
		{"control_plane.other.requests", ` (control_plane holds: fallback, primary)`},
		{"fleet", ` (fleet holds: restarts, starts)`},
		{"rpc.success_ratio", ` (its metrics are under: control_plane, fleet, xds)`},
	}
	for _, tt := range tests {
		if got := MetricHint(tt.metric, paths); got != tt.want {
			t.Errorf("MetricHint(%q) = %q, want %q", tt.metric, got, tt.want)
		}
	}
	if got, want := MetricHint("x", nil), " (a run of this scenario reports no metrics)"; got != want {
		t.Errorf("metricHint with no paths = %q, want %q", got, want)
	}
}

func ptr(f float64) *float64 { return &f }

// showExpects prints expectations with their bounds, not the pointers.
func showExpects(es []Expect) string {
	var b strings.Builder
	for _, e := range es {
		b.WriteString("{" + e.Metric)
		if e.Min != nil {
			b.WriteString(" min " + strconv.FormatFloat(*e.Min, 'g', -1, 64))
		}
		if e.Max != nil {
			b.WriteString(" max " + strconv.FormatFloat(*e.Max, 'g', -1, 64))
		}
		b.WriteString("}")
	}
	return b.String()
}
