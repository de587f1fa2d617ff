package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/scenarios"
	"github.com/xdssim/xdssim/stamp"
	"github.com/xdssim/xdssim/viz"
)

// The reduced-size library test runs each scenario with every group's
// clients divided by reduceBy (rounded up), but never below minClients
// (a group that has fewer keeps them). Restarts and faults choose by
// fraction, so they scale with it.
const (
	reduceBy   = 10
	minClients = 5
)

// testDirective is a library scenario's instruction to the reduced-size
// test, a comment line outside its header: "# test: full-size (why)" keeps
// the scenario at full size, for expectations that count clients or need
// a herd. Expectations are never loosened to fit a smaller fleet.
var testDirective = regexp.MustCompile(`(?m)^# test: (.*)$`)

var fullSize = regexp.MustCompile(`^full-size \(\S.*\)$`)

// keepsFullSize reports whether the scenario asks to be run at full size
// by the reduced-size test, and fails t on a directive it does not know.
func keepsFullSize(t *testing.T, data []byte) bool {
	t.Helper()
	keep := false
	for _, m := range testDirective.FindAllSubmatch(data, -1) {
		if !fullSize.Match(m[1]) {
			t.Fatalf("unknown test directive %q: want \"# test: full-size (the reason)\"", m[0])
		}
		keep = true
	}
	return keep
}

// openReduced opens library scenario name and returns it, resolved at its
// full size, and the overrides of its reduced size (none if it keeps its
// full size).
func openReduced(t *testing.T, name string) (src *scenarios.Source, full *scenarios.Scenario, sets []string) {
	t.Helper()
	src, err := scenarios.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	if full, err = scenarios.Parse(src, nil); err != nil {
		t.Fatal(err)
	}
	if !keepsFullSize(t, src.Data) {
		sets = reduced(full)
	}
	return src, full, sets
}

// reduced returns the --set overrides that scale the scenario's fleet
// down for the reduced-size test.
func reduced(s *scenarios.Scenario) []string {
	var sets []string
	for i, g := range s.Fleet.Groups {
		n := max(min(g.Clients, minClients), (g.Clients+reduceBy-1)/reduceBy)
		if n != g.Clients {
			sets = append(sets, fmt.Sprintf("fleet.group[%d].clients=%d", i, n))
		}
	}
	return sets
}

// runSummary runs the scenario with the overrides and returns its
// summary.json and its checked expectations.
func runSummary(t *testing.T, src *scenarios.Source, sets []string) ([]byte, []viz.Expectation) {
	t.Helper()
	s, err := scenarios.Parse(src, sets)
	if err != nil {
		t.Fatalf("%s with %v: %v", src.File, sets, err)
	}
	res, err := fleet.Run(s.FleetConfig(), fleet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	exps := viz.Evaluate(res, s.Expect)
	var b bytes.Buffer
	if err := viz.WriteSummary(&b, res, stamp.Run{Build: stamp.Read(), ScenarioSHA256: s.SHA256()}, exps...); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), exps
}

// TestLibraryScenariosAtReducedSize runs every library scenario with its
// fleet scaled down (see reduced), unless it keeps its full size
// ("# test: full-size (why)"), twice: the expectations it carries must
// hold, and the two runs must write byte-identical summary.json.
// Reference: docs/architecture.md, "Determinism contract".
func TestLibraryScenariosAtReducedSize(t *testing.T) {
	for _, e := range scenarios.Library() {
		t.Run(e.Name, func(t *testing.T) {
			t.Parallel()
			src, full, sets := openReduced(t, e.Name)
			if len(full.Expect) == 0 {
				t.Fatal("a library scenario must carry expectations ([[expect]])")
			}
			first, exps := runSummary(t, src, sets)
			if n := viz.Breached(exps); n > 0 {
				var table bytes.Buffer
				_ = viz.WriteExpectations(&table, exps)
				t.Errorf("with %v, %d expectations breached:\n%s", sets, n, table.String())
			}
			again, _ := runSummary(t, src, sets)
			if !bytes.Equal(first, again) {
				t.Errorf("two runs with %v wrote different summary.json:\n%s\n---\n%s", sets, first, again)
			}
		})
	}
}

// TestLibraryScenariosMeetTheirExpectations runs every library scenario
// at full size, as `xdssim run NAME` does, and checks that its
// expectations hold: the library's stories are what the simulator really
// does. A scenario the reduced-size test keeps at full size is checked
// there already.
func TestLibraryScenariosMeetTheirExpectations(t *testing.T) {
	if testing.Short() {
		t.Skip("full-size runs; TestLibraryScenariosAtReducedSize covers the library in -short")
	}
	for _, e := range scenarios.Library() {
		t.Run(e.Name, func(t *testing.T) {
			src, err := scenarios.Open(e.Name)
			if err != nil {
				t.Fatal(err)
			}
			if keepsFullSize(t, src.Data) {
				t.Skip("TestLibraryScenariosAtReducedSize runs it at full size")
			}
			t.Parallel()
			code, stdout, stderr := runMain(t, "run", e.Name, "--quiet", "--out", filepath.Join(t.TempDir(), e.Name))
			if code != 0 {
				t.Fatalf("xdssim run %s exited %d\nstdout:\n%s\nstderr:\n%s", e.Name, code, stdout, stderr)
			}
			if !strings.Contains(stdout, "expectations: 0 of") {
				t.Errorf("xdssim run %s printed no expectations table:\n%s", e.Name, stdout)
			}
		})
	}
}

// TestLibraryHeadersSaySituationSourceAndWhatToLookAt keeps the library's
// header comments, which `xdssim explain` prints, in their shape: a
// summary, then the situation, its source (a gRFC section or a public
// issue) and what to look at in the report.
func TestLibraryHeadersSaySituationSourceAndWhatToLookAt(t *testing.T) {
	for _, e := range scenarios.Library() {
		t.Run(e.Name, func(t *testing.T) {
			for _, w := range []string{"\nSituation: ", "\nSource: ", "\nWhat to look at: "} {
				if !strings.Contains(e.Header, w) {
					t.Errorf("header lacks a paragraph starting %q:\n%s", strings.TrimSpace(w), e.Header)
				}
			}
			if strings.Contains(e.Header, "test: ") {
				t.Errorf("a test directive belongs after the header, not in it:\n%s", e.Header)
			}
		})
	}
}
