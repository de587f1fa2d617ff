package viz

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/stamp"
)

// testStamp is the stamp of the tests' outputs: fixed, so that what they
// pin does not change with the commit the tests run at.
var testStamp = stamp.Run{
	Build:          stamp.Build{Version: "v1.2.3", Revision: "879b914b08c1adee68d666f822139378c2cedf88", Dirty: "false", Go: "go1.26.8"},
	ScenarioSHA256: "3f2a91c0d3b54e6f8a9b0c1d2e3f405162738495a6b7c8d9e0f1a2b3c4d5e6f7",
}

// TestSummaryKeyOrderAndNesting pins summary.json byte for byte: the header
// keys first in their fixed order, then the metrics nested by dotted path
// with keys sorted at every level, 2-space indentation, a final newline.
// Reference: docs/architecture.md, Outputs and Determinism contract.
func TestSummaryKeyOrderAndNesting(t *testing.T) {
	r := &fleet.Results{
		Scenario: "primary-outage",
		Seed:     42,
		Clients:  300,
		Duration: 10 * time.Minute,
		Events:   1234567,
		Faults:   []fleet.Fault{{Kind: fleet.KindFault, Label: "server-down [primary]", Start: time.Minute, End: 3 * time.Minute, Windows: 7, Recovery: 1500 * time.Millisecond}},
		// Deliberately not sorted by Path: the output must not depend on it.
		Metrics: []fleet.Metric{
			{Path: "xds.resource_timer.fired", Value: 17},
			{Path: "fleet.clients_started", Value: 300},
			{Path: "rpc.failure_window.p99_seconds", Value: 4.25},
			{Path: "rpc.failed", Value: 1234},
			{Path: "a_first", Value: 0.1},
			{Path: "rpc.failure_window.p50_seconds", Value: 1.5},
		},
	}
	const want = `{
  "schema": "xdssim.summary/v2",
  "build": {"version": "v1.2.3", "revision": "879b914b08c1adee68d666f822139378c2cedf88", "dirty": "false", "go": "go1.26.8"},
  "scenario": "primary-outage",
  "scenario_sha256": "3f2a91c0d3b54e6f8a9b0c1d2e3f405162738495a6b7c8d9e0f1a2b3c4d5e6f7",
  "seed": 42,
  "clients": 300,
  "virtual_seconds": 600,
  "events": 1234567,
  "faults": [
    {"kind": "fault", "label": "server-down [primary]", "start_seconds": 60, "end_seconds": 180, "windows": 7, "recovery_seconds": 1.5}
  ],
  "a_first": 0.1,
  "fleet": {
    "clients_started": 300
  },
  "rpc": {
    "failed": 1234,
    "failure_window": {
      "p50_seconds": 1.5,
      "p99_seconds": 4.25
    }
  },
  "xds": {
    "resource_timer": {
      "fired": 17
    }
  }
}
`
	got, err := Summary(r, testStamp)
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
	if err := WriteSummary(&buf, r, testStamp); err != nil {
		t.Fatal(err)
	}
	if buf.String() != want {
		t.Errorf("WriteSummary() wrote other bytes than Summary()")
	}
}

// TestSummaryWithoutMetricsHasOnlyTheHeader pins the header alone (and no faults), with a
// scenario name that needs JSON escaping and a seed above 2^53.
func TestSummaryWithoutMetricsHasOnlyTheHeader(t *testing.T) {
	r := &fleet.Results{Scenario: "a \"quoted\" <name>\n", Seed: math.MaxUint64, Duration: 1500 * time.Millisecond}
	const want = `{
  "schema": "xdssim.summary/v2",
  "build": {"version": "v1.2.3", "revision": "879b914b08c1adee68d666f822139378c2cedf88", "dirty": "false", "go": "go1.26.8"},
  "scenario": "a \"quoted\" <name>\n",
  "scenario_sha256": "3f2a91c0d3b54e6f8a9b0c1d2e3f405162738495a6b7c8d9e0f1a2b3c4d5e6f7",
  "seed": 18446744073709551615,
  "clients": 0,
  "virtual_seconds": 1.5,
  "events": 0,
  "faults": []
}
`
	got, err := Summary(r, testStamp)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("Summary() =\n%s\nwant\n%s", got, want)
	}
}

// TestNumbersPrintAsShortestDecimal pins the number format shared by
// summary.json and the report: integral values without a fraction, others
// as the shortest decimal that reads back as the same float64, exponents
// only outside [1e-6, 1e21).
func TestNumbersPrintAsShortestDecimal(t *testing.T) {
	tenth, fifth := 0.1, 0.2 // variables: constant arithmetic would be exact
	tests := []struct {
		v    float64
		want string
	}{
		{300, "300"},
		{0, "0"},
		{math.Copysign(0, -1), "0"},
		{-3, "-3"},
		{0.5, "0.5"},
		{4.25, "4.25"},
		{tenth + fifth, "0.30000000000000004"},
		{1.0 / 3, "0.3333333333333333"},
		{123456789.25, "123456789.25"},
		{1 << 53, "9007199254740992"},
		{1e20, "100000000000000000000"},
		{1e21, "1e+21"},
		{1.5e300, "1.5e+300"},
		{0.000001, "0.000001"},
		{1e-7, "1e-7"},
		{-2.5e-10, "-2.5e-10"},
		{5e-324, "5e-324"},
	}
	for _, tt := range tests {
		got := formatNumber(tt.v)
		if got != tt.want {
			t.Errorf("formatNumber(%v) = %q, want %q", tt.v, got, tt.want)
		}
		// Through summary.json and back, every value survives exactly.
		r := &fleet.Results{Metrics: []fleet.Metric{{Path: "m", Value: tt.v}}}
		b, err := Summary(r, testStamp)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"m": `+tt.want+"\n") {
			t.Errorf("summary.json for %v lacks %q:\n%s", tt.v, `"m": `+tt.want, b)
		}
		if back, ok := LookupSummary(b, "m"); !ok || back != tt.v {
			t.Errorf("LookupSummary(summary of %v) = %v, %v; want the same value", tt.v, back, ok)
		}
	}
}

// TestSummaryRejectsWhatJSONCannotHoldOrNest checks that a non-finite value,
// an empty path segment and every kind of path collision are errors that
// name the metric.
func TestSummaryRejectsWhatJSONCannotHoldOrNest(t *testing.T) {
	tests := []struct {
		name    string
		metrics []fleet.Metric
		want    []string // substrings of the error
	}{
		{"NaN", []fleet.Metric{{Path: "rpc.p99", Value: math.NaN()}}, []string{`"rpc.p99"`, "NaN"}},
		{"+Inf", []fleet.Metric{{Path: "rpc.max", Value: math.Inf(1)}}, []string{`"rpc.max"`, "+Inf"}},
		{"-Inf", []fleet.Metric{{Path: "rpc.min", Value: math.Inf(-1)}}, []string{`"rpc.min"`, "-Inf"}},
		{"leaf then object", []fleet.Metric{{Path: "a", Value: 1}, {Path: "a.b", Value: 2}}, []string{`"a.b"`, `"a"`}},
		{"object then leaf", []fleet.Metric{{Path: "a.b", Value: 1}, {Path: "a", Value: 2}}, []string{`"a"`, `"a.b"`}},
		{"deep collision", []fleet.Metric{{Path: "a.b.c", Value: 1}, {Path: "a.b", Value: 2}}, []string{`"a.b"`, `"a.b.c"`}},
		{"duplicate path", []fleet.Metric{{Path: "a.b", Value: 1}, {Path: "a.b", Value: 2}}, []string{`"a.b"`}},
		{"header key", []fleet.Metric{{Path: "seed", Value: 1}}, []string{`"seed"`, "header"}},
		{"under a header key", []fleet.Metric{{Path: "events.total", Value: 1}}, []string{`"events.total"`, `"events"`}},
		{"schema", []fleet.Metric{{Path: "schema", Value: 1}}, []string{`"schema"`}},
		{"empty path", []fleet.Metric{{Path: "", Value: 1}}, []string{`""`, "empty segment"}},
		{"empty segment", []fleet.Metric{{Path: "a..b", Value: 1}}, []string{`"a..b"`, "empty segment"}},
		{"leading dot", []fleet.Metric{{Path: ".a", Value: 1}}, []string{`".a"`, "empty segment"}},
		{"trailing dot", []fleet.Metric{{Path: "a.", Value: 1}}, []string{`"a."`, "empty segment"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Summary(&fleet.Results{Metrics: tt.metrics}, testStamp)
			if err == nil {
				t.Fatalf("Summary(%v) succeeded, want an error", tt.metrics)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %s", err, w)
				}
			}
			if err := WriteSummary(&bytes.Buffer{}, &fleet.Results{Metrics: tt.metrics}, testStamp); err == nil {
				t.Errorf("WriteSummary succeeded, want the same error")
			}
		})
	}
}

// TestLookupResolvesDottedPaths checks Lookup on Results and LookupSummary
// on the bytes of summary.json: they agree on every path, numbers only.
func TestLookupResolvesDottedPaths(t *testing.T) {
	r := fixture(2, 10)
	summary, err := Summary(r, testStamp)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want float64
		ok   bool
	}{
		{"seed", 42, true},
		{"clients", 300, true},
		{"virtual_seconds", 10, true},
		{"events", 1234567, true},
		{"fleet.clients_started", 300, true},
		{"rpc.failure_window.p99_seconds", 4.25, true},
		{"xds.resource_timer.fired", 17, true},
		{"fleet", 0, false},                   // an object, not a number
		{"rpc.failure_window", 0, false},      // an object, not a number
		{"schema", 0, false},                  // a string
		{"scenario", 0, false},                // a string
		{"fleet.clients_started.x", 0, false}, // below a number
		{"fleet.nope", 0, false},              // missing
		{"", 0, false},                        // missing
		{"rpc..failed", 0, false},             // empty segment
		{"rpc.failure_window.p99_seconds.", 0, false},
	}
	for _, tt := range tests {
		got, ok := Lookup(r, tt.path)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Lookup(%q) = %v, %v; want %v, %v", tt.path, got, ok, tt.want, tt.ok)
		}
		got, ok = LookupSummary(summary, tt.path)
		if got != tt.want || ok != tt.ok {
			t.Errorf("LookupSummary(%q) = %v, %v; want %v, %v", tt.path, got, ok, tt.want, tt.ok)
		}
	}
	for _, m := range r.Metrics {
		if got, ok := LookupSummary(summary, m.Path); !ok || got != m.Value {
			t.Errorf("LookupSummary(%q) = %v, %v; want %v, true", m.Path, got, ok, m.Value)
		}
	}
	if _, ok := Lookup(nil, "seed"); ok {
		t.Error("Lookup(nil, \"seed\") found a value")
	}
	if _, ok := LookupSummary([]byte("not json"), "seed"); ok {
		t.Error("LookupSummary(invalid JSON) found a value")
	}
}

// TestSummaryListsTheWhatIfs checks that a hypothetical run says so: its
// what-ifs come right after the header keys, each with its key, value,
// what shipping clients have and why; a faithful run has no "what_if".
// Reference: docs/architecture.md, "Faithful by default, what-if by name".
func TestSummaryListsTheWhatIfs(t *testing.T) {
	r := &fleet.Results{Scenario: "s", Seed: 1, Clients: 1, Duration: time.Second,
		WhatIf: []fleet.WhatIf{{Key: "fleet.group[0].rpc.throttle_max_tokens", Value: "10", Ships: "0", Why: `no "retryThrottling"`}}}
	b, err := Summary(r, testStamp)
	if err != nil {
		t.Fatal(err)
	}
	const want = `  "events": 0,
  "what_if": [
    {"key": "fleet.group[0].rpc.throttle_max_tokens", "value": "10", "ships": "0", "why": "no \"retryThrottling\""}
  ],
  "faults": []`
	if !strings.Contains(string(b), want) {
		t.Errorf("summary.json:\n%s\nwant it to contain:\n%s", b, want)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	r.WhatIf = nil
	if b, _ := Summary(r, testStamp); strings.Contains(string(b), "what_if") {
		t.Errorf("a faithful run's summary.json has what_if:\n%s", b)
	}
	r.Metrics = []fleet.Metric{{Path: "what_if.count", Value: 1}}
	if _, err := Summary(r, testStamp); err == nil {
		t.Error("a metric under what_if was accepted")
	}
}
