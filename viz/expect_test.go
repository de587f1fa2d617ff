package viz

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/scenarios"
)

func bound(v float64) *float64 { return &v }

// TestEvaluateChecksBoundsInclusively pins what passes: min <= value <=
// max over the bounds given, a value equal to a bound passes, and NaN (a
// metric the run did not report, or reported as NaN) never does.
// Reference: docs/scenario-reference.md, Expectations.
func TestEvaluateChecksBoundsInclusively(t *testing.T) {
	r := &fleet.Results{Metrics: []fleet.Metric{
		{Path: "fleet.starts", Value: 10},
		{Path: "xds.nacks_sent", Value: 0},
		{Path: "odd.nan", Value: math.NaN()},
	}}
	tests := []struct {
		name   string
		expect scenarios.Expect
		value  float64
		pass   bool
	}{
		{"min only, above", scenarios.Expect{Metric: "fleet.starts", Min: bound(9.5)}, 10, true},
		{"min only, below", scenarios.Expect{Metric: "fleet.starts", Min: bound(10.5)}, 10, false},
		{"max only, below", scenarios.Expect{Metric: "fleet.starts", Max: bound(11)}, 10, true},
		{"max only, above", scenarios.Expect{Metric: "fleet.starts", Max: bound(9.999)}, 10, false},
		{"both, within", scenarios.Expect{Metric: "fleet.starts", Min: bound(1), Max: bound(100)}, 10, true},
		{"both, below", scenarios.Expect{Metric: "fleet.starts", Min: bound(11), Max: bound(100)}, 10, false},
		{"both, above", scenarios.Expect{Metric: "fleet.starts", Min: bound(1), Max: bound(9)}, 10, false},
		{"equal to min passes", scenarios.Expect{Metric: "fleet.starts", Min: bound(10)}, 10, true},
		{"equal to max passes", scenarios.Expect{Metric: "xds.nacks_sent", Max: bound(0)}, 0, true},
		{"min equal to max equal to value passes", scenarios.Expect{Metric: "fleet.starts", Min: bound(10), Max: bound(10)}, 10, true},
		{"NaN fails a min", scenarios.Expect{Metric: "odd.nan", Min: bound(math.Inf(-1))}, math.NaN(), false},
		{"NaN fails a max", scenarios.Expect{Metric: "odd.nan", Max: bound(math.Inf(1))}, math.NaN(), false},
		{"a metric the run did not report is NaN and fails", scenarios.Expect{Metric: "rpc.success_ratio", Max: bound(1)}, math.NaN(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Evaluate(r, []scenarios.Expect{tt.expect})
			if len(got) != 1 {
				t.Fatalf("Evaluate returned %d expectations, want 1", len(got))
			}
			e := got[0]
			sameValue := e.Value == tt.value || math.IsNaN(e.Value) && math.IsNaN(tt.value)
			if e.Metric != tt.expect.Metric || !sameValue || e.Pass != tt.pass {
				t.Errorf("got %s = %v pass %v, want %s = %v pass %v", e.Metric, e.Value, e.Pass, tt.expect.Metric, tt.value, tt.pass)
			}
		})
	}
}

func TestEvaluateKeepsTheScenarioOrderAndBounds(t *testing.T) {
	r := &fleet.Results{Metrics: []fleet.Metric{{Path: "a", Value: 1}, {Path: "b", Value: 2}}}
	lo := bound(3)
	got := Evaluate(r, []scenarios.Expect{{Metric: "b", Min: lo}, {Metric: "a", Max: bound(1)}})
	*lo = 0 // the result does not share the scenario's bounds
	if len(got) != 2 || got[0].Metric != "b" || got[1].Metric != "a" {
		t.Fatalf("got %+v, want b then a", got)
	}
	if got[0].Min == nil || *got[0].Min != 3 || got[0].Max != nil || got[0].Pass || !got[1].Pass {
		t.Errorf("got %+v", got)
	}
	if Breached(got) != 1 {
		t.Errorf("Breached = %d, want 1", Breached(got))
	}
	if Evaluate(r, nil) != nil {
		t.Error("Evaluate of no expectations is not nil")
	}
}

func TestBoundSaysWhichValuesPass(t *testing.T) {
	tests := []struct {
		e    Expectation
		want string
	}{
		{Expectation{Min: bound(0.999)}, ">= 0.999"},
		{Expectation{Max: bound(10)}, "<= 10"},
		{Expectation{Min: bound(0.5), Max: bound(2)}, "in [0.5, 2]"},
		{Expectation{Min: bound(1e-9)}, ">= 1e-9"},
		{Expectation{}, "any"},
	}
	for _, tt := range tests {
		if got := tt.e.Bound(); got != tt.want {
			t.Errorf("Bound() = %q, want %q", got, tt.want)
		}
	}
}

// TestValuesPrintBriefButNeverAsABound pins how the table and the report
// print a value: 6 significant digits (all of an integer part), integers in
// full, and every digit where the brief form would equal a bound the value
// does not equal (0.9999996 against >= 1 must not read "1 ... FAIL").
func TestValuesPrintBriefButNeverAsABound(t *testing.T) {
	tests := []struct {
		e    Expectation
		want string
	}{
		{Expectation{Value: 0.99421}, "0.99421"},
		{Expectation{Value: 1.0042480847401296}, "1.00425"},
		{Expectation{Value: 59687}, "59687"},
		{Expectation{Value: 1234567.25}, "1234567"},
		{Expectation{Value: 1e-7 / 3}, "3.33333e-8"},
		{Expectation{Value: -2.5}, "-2.5"},
		{Expectation{Value: math.NaN()}, "NaN"},
		{Expectation{Value: 0.9999996, Min: bound(1)}, "0.9999996"},
		{Expectation{Value: 0.12345678, Max: bound(0.123457)}, "0.12345678"},
		{Expectation{Value: 0.9999996, Min: bound(0.5)}, "1"},
	}
	for _, tt := range tests {
		if got := tt.e.valueText(); got != tt.want {
			t.Errorf("value %v (bound %s) prints %q, want %q", tt.e.Value, tt.e.Bound(), got, tt.want)
		}
	}
}

// TestWriteExpectationsPrintsAnAlignedTable pins the table `xdssim run`
// prints, byte for byte.
func TestWriteExpectationsPrintsAnAlignedTable(t *testing.T) {
	es := []Expectation{
		{Metric: "rpc.success_ratio", Min: bound(0.999), Value: 0.99421},
		{Metric: "failure_windows.count", Max: bound(10), Value: 3, Pass: true},
		{Metric: "control_plane.primary.requests", Min: bound(1), Max: bound(2500), Value: 1234, Pass: true},
		{Metric: "x", Max: bound(1), Value: math.NaN()},
	}
	const want = `expectations: 2 of 4 breached
  metric                           bound          value     result
  rpc.success_ratio                >= 0.999       0.99421   FAIL
  failure_windows.count            <= 10          3         pass
  control_plane.primary.requests   in [1, 2500]   1234      pass
  x                                <= 1           NaN       FAIL
`
	var b bytes.Buffer
	if err := WriteExpectations(&b, es); err != nil {
		t.Fatal(err)
	}
	if b.String() != want {
		t.Errorf("WriteExpectations wrote\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := WriteExpectations(&b, nil); err != nil || b.Len() != 0 {
		t.Errorf("WriteExpectations(nil) wrote %q, %v; want nothing", b.String(), err)
	}
}

// TestSummaryListsExpectationsAfterTheHeader pins the "expectations" array
// byte for byte: after the header keys, before the metrics, in the
// scenario's order, each bound only when given, a value the run did not
// report as null. Reference: docs/architecture.md, Outputs.
func TestSummaryListsExpectationsAfterTheHeader(t *testing.T) {
	r := &fleet.Results{
		Scenario: "gate",
		Seed:     7,
		Clients:  3,
		Duration: time.Minute,
		Events:   99,
		Metrics:  []fleet.Metric{{Path: "fleet.starts", Value: 3}, {Path: "xds.nacks_sent", Value: 0}},
	}
	es := Evaluate(r, []scenarios.Expect{
		{Metric: "xds.nacks_sent", Max: bound(0)},
		{Metric: "fleet.starts", Min: bound(4), Max: bound(1e6)},
		{Metric: "rpc.success_ratio", Min: bound(0.999)},
	})
	const want = `{
  "schema": "xdssim.summary/v2",
  "build": {"version": "v1.2.3", "revision": "879b914b08c1adee68d666f822139378c2cedf88", "dirty": "false", "go": "go1.26.8"},
  "scenario": "gate",
  "scenario_sha256": "3f2a91c0d3b54e6f8a9b0c1d2e3f405162738495a6b7c8d9e0f1a2b3c4d5e6f7",
  "seed": 7,
  "clients": 3,
  "virtual_seconds": 60,
  "events": 99,
  "expectations": [
    {
      "metric": "xds.nacks_sent",
      "max": 0,
      "value": 0,
      "pass": true
    },
    {
      "metric": "fleet.starts",
      "min": 4,
      "max": 1000000,
      "value": 3,
      "pass": false
    },
    {
      "metric": "rpc.success_ratio",
      "min": 0.999,
      "value": null,
      "pass": false
    }
  ],
  "faults": [],
  "fleet": {
    "starts": 3
  },
  "xds": {
    "nacks_sent": 0
  }
}
`
	got, err := Summary(r, testStamp, es...)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("Summary() =\n%s\nwant\n%s", got, want)
	}
	if !json.Valid(got) {
		t.Error("Summary() is not valid JSON")
	}
	var buf bytes.Buffer
	if err := WriteSummary(&buf, r, testStamp, es...); err != nil || buf.String() != want {
		t.Errorf("WriteSummary() wrote other bytes than Summary(): %v", err)
	}
	plain, err := Summary(r, testStamp)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(plain), "expectations") {
		t.Errorf("summary.json without expectations has the key:\n%s", plain)
	}
}

func TestSummaryRejectsWhatExpectationsCannotHold(t *testing.T) {
	r := &fleet.Results{Metrics: []fleet.Metric{{Path: "expectations.count", Value: 1}}}
	if _, err := Summary(r, testStamp); err == nil || !strings.Contains(err.Error(), `collides with the key "expectations"`) {
		t.Errorf("a metric under expectations: got %v, want a collision", err)
	}
	r = &fleet.Results{Metrics: []fleet.Metric{{Path: "a", Value: 1}}}
	es := []Expectation{{Metric: "a", Max: bound(math.Inf(1)), Value: 1}}
	if _, err := Summary(r, testStamp, es...); err == nil || !strings.Contains(err.Error(), `expectation "a" has the bound +Inf`) {
		t.Errorf("an infinite bound: got %v, want an error naming it", err)
	}
}

// TestReportShowsExpectationsNearTheTop checks the report's Expectations
// table: in the header card, before the faults and metrics, with each
// bound, value and result, and escaped like all scenario text.
func TestReportShowsExpectationsNearTheTop(t *testing.T) {
	t.Parallel()
	r := fixture(2, 60)
	es := Evaluate(r, []scenarios.Expect{
		{Metric: "rpc.failed", Max: bound(100)},
		{Metric: "fleet.clients_started", Min: bound(300)},
		{Metric: "z.<i>", Min: bound(1)},
	})
	var b bytes.Buffer
	if err := WriteReport(&b, r, testStamp, es...); err != nil {
		t.Fatal(err)
	}
	page := body(b.String())
	expect, faults, metrics := strings.Index(page, "<h2>Expectations"), strings.Index(page, "<h2>What the scenario did"), strings.Index(page, "<h2>Metrics")
	if expect < 0 || expect > faults || expect > metrics {
		t.Fatalf("Expectations at %d, want before what the scenario did (%d) and Metrics (%d)", expect, faults, metrics)
	}
	for _, want := range []string{
		`<span class="fail">2 of 3 breached</span>`,
		`<tr><td><code>rpc.failed</code></td><td>&lt;= 100</td><td class="num">1234</td><td class="fail">FAIL</td></tr>`,
		`<tr><td><code>fleet.clients_started</code></td><td>&gt;= 300</td><td class="num">300</td><td class="pass">pass</td></tr>`,
		`<tr><td><code>z.&lt;i&gt;</code></td><td>&gt;= 1</td><td class="num">NaN</td><td class="fail">FAIL</td></tr>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %s", want)
		}
	}
	remote := regexp.MustCompile(`(?i)\b(src|href)\s*=\s*["']?\s*(https?:)?//`)
	if m := remote.FindString(b.String()); m != "" {
		t.Errorf("report loads something remotely: %q", m)
	}
	var again bytes.Buffer
	if err := WriteReport(&again, r, testStamp, es...); err != nil || again.String() != b.String() {
		t.Errorf("two renders with the same expectations differ (%v)", err)
	}
	if strings.Contains(render(t, r), "<h2>Expectations") {
		t.Error("a report without expectations has an Expectations table")
	}
}
