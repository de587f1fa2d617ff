package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/xdssim/xdssim/scenarios"
	"github.com/xdssim/xdssim/stamp"
)

// TestVersionSaysWhatTheBinaryRecords: `xdssim version` and `xdssim
// version --json` print the build every output names, as the binary
// records it (a test binary records no revision: "unknown").
func TestVersionSaysWhatTheBinaryRecords(t *testing.T) {
	b := stamp.Read()
	code, stdout, stderr := runMain(t, "version")
	if code != exitOK || stdout != "xdssim "+b.String()+"\n" {
		t.Errorf("version: exit %d, %q (%s), want xdssim %s", code, stdout, stderr, b)
	}
	code, stdout, stderr = runMain(t, "version", "--json")
	var got map[string]string
	if err := json.Unmarshal([]byte(stdout), &got); code != exitOK || err != nil {
		t.Fatalf("version --json: exit %d, %v:\n%s%s", code, err, stdout, stderr)
	}
	want := map[string]string{"version": b.Version, "revision": b.Revision, "dirty": b.Dirty, "go": b.Go}
	if len(got) != len(want) {
		t.Errorf("version --json = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("version --json %s = %q, want %q", k, got[k], v)
		}
	}
	if code, _, stderr := runMain(t, "version", "extra"); code != exitInput || !strings.Contains(stderr, `unexpected argument "extra"`) {
		t.Errorf("version extra: exit %d, %s", code, stderr)
	}
}

// readStamp reads the "build" and "scenario_sha256" of a JSON output.
func readStamp(t *testing.T, file string) (stamp.Build, json.RawMessage) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Build          stamp.Build     `json:"build"`
		ScenarioSHA256 json.RawMessage `json:"scenario_sha256"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return doc.Build, doc.ScenarioSHA256
}

// scenarioHash is the SHA-256 of the scenario file resolved with sets.
func scenarioHash(t *testing.T, file string, sets ...string) string {
	t.Helper()
	src, err := scenarios.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	s, err := scenarios.Parse(src, sets)
	if err != nil {
		t.Fatal(err)
	}
	return s.SHA256()
}

// TestEveryOutputIsStampedAndOneRunWritesTheSameBytes: the same scenario
// and seed run twice by one binary write byte-identical outputs, and each
// output of run, sweep, a shard, compare and sweep --find names the build
// of the binary and the SHA-256 of the scenario it ran, well formed.
func TestEveryOutputIsStampedAndOneRunWritesTheSameBytes(t *testing.T) {
	build := stamp.Read()
	scenario := tinyScenario(t)
	hash := scenarioHash(t, scenario, "seed=3")
	base := t.TempDir()
	dirs := []string{filepath.Join(base, "a"), filepath.Join(base, "b")}
	for _, dir := range dirs {
		if code, _, stderr := runMain(t, "run", scenario, "--seed", "3", "--quiet", "--out", dir, "--metrics", filepath.Join(dir, "metrics.om")); code != exitOK {
			t.Fatalf("exit %d:\n%s", code, stderr)
		}
	}
	for _, f := range []string{"summary.json", "report.html", "series.csv", "metrics.om", manifestName} {
		a, _ := os.ReadFile(filepath.Join(dirs[0], f))
		b, err := os.ReadFile(filepath.Join(dirs[1], f))
		if err != nil || len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s differs between two runs of one scenario and seed (%d and %d bytes, %v)", f, len(a), len(b), err)
		}
	}
	got, h := readStamp(t, filepath.Join(dirs[0], "summary.json"))
	if got != build || string(h) != `"`+hash+`"` {
		t.Errorf("summary.json: build %+v, scenario_sha256 %s; want %+v and %s", got, h, build, hash)
	}
	if err := (stamp.Run{Build: got, ScenarioSHA256: hash}).Check(); err != nil {
		t.Errorf("summary.json's stamp: %v", err)
	}
	report, _ := os.ReadFile(filepath.Join(dirs[0], "report.html"))
	if want := "Made by xdssim " + build.Version + ", revision <code>" + build.Revision + "</code>, dirty " + build.Dirty + ", " + build.Go +
		". Scenario SHA-256 <code>" + hash + "</code>."; !strings.Contains(string(report), want) {
		t.Errorf("report.html's footer lacks %q", want)
	}
	om, _ := os.ReadFile(filepath.Join(dirs[0], "metrics.om"))
	info := regexp.MustCompile(`(?m)^xdssim_build_info\{dirty="` + build.Dirty + `",go="` + regexp.QuoteMeta(build.Go) + `",revision="` + build.Revision +
		`",scenario_sha256="` + hash + `",version="` + regexp.QuoteMeta(build.Version) + `",xdssim_run="` + hash[:12] + `",xdssim_scenario="tiny",xdssim_seed="3"\} 1 0$`)
	if !info.Match(om) {
		t.Errorf("metrics.om has no xdssim_build_info of the build and the run:\n%.500s", om)
	}
	series, _ := os.ReadFile(filepath.Join(dirs[0], "series.csv"))
	if bytes.Contains(series, []byte(build.Go)) || bytes.Contains(series, []byte(hash)) {
		t.Error("series.csv carries the stamp: it stays tidy, one row per series and sample")
	}

	// A sweep, one of its shards, a comparison and a threshold search.
	outageHash := scenarioHash(t, outage)
	out := func(name string) string { return filepath.Join(base, name) }
	for _, args := range [][]string{
		{"sweep", outage, "--out", out("sweep"), "--quiet"},
		{"sweep", outage, "--out", out("shards"), "--shard", "1/4", "--quiet"},
		{"compare", outage, "--b", "fleet.restart[0].downtime=9s", "--seeds", "2", "--metric", "rpc.failed", "--out", out("compare"), "--quiet"},
		{"sweep", outage, "--seeds", "2", "--steps", "2", "--find", "fleet.restart[0].fraction=0.05..1.0",
			"--constraint", "failure_windows.client_seconds <= 200", "--out", out("find"), "--quiet"},
	} {
		if code, _, stderr := runMain(t, args...); code != exitOK && code != exitBreached {
			t.Fatalf("%v: exit %d:\n%s", args, code, stderr)
		}
	}
	compareHashes, _ := json.Marshal(map[string]string{"a": outageHash, "b": scenarioHash(t, outage, "fleet.restart[0].downtime=9s")})
	for _, tt := range []struct{ file, hash string }{
		{out("sweep/sweep.json"), `"` + outageHash + `"`},
		{out("shards/shard-0001-of-0004.json"), `"` + outageHash + `"`},
		{out("compare/compare.json"), string(compareHashes)},
		{out("find/find.json"), `"` + outageHash + `"`},
	} {
		got, h := readStamp(t, tt.file)
		var compact bytes.Buffer
		json.Compact(&compact, h)
		if got != build || compact.String() != tt.hash {
			t.Errorf("%s: build %+v, scenario_sha256 %s; want %+v and %s", tt.file, got, compact.String(), build, tt.hash)
		}
	}
	for _, f := range []string{out("sweep/sweep.html"), out("compare/compare.html")} {
		page, _ := os.ReadFile(f)
		if !strings.Contains(string(page), "Made by xdssim "+build.Version+", revision <code>"+build.Revision+"</code>") {
			t.Errorf("%s has no footer naming the build", f)
		}
	}
}
