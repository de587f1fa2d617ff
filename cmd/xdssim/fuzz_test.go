package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/xdssim/xdssim/scenarios"
)

// fuzzLimits keep each run of FuzzPipeline small: a scenario whose
// estimate is above them is refused (exit 2), one that runs past them
// stops (exit 4).
var fuzzLimits = []string{"--max-memory", "96MiB", "--max-events", "400000"}

// fuzzReproducers are the inputs of issue 16 that made a run panic or
// exhaust memory, as (document, --set) pairs.
var fuzzReproducers = []struct{ lib, set string }{
	{"default", "control_plane[0].service[0].endpoints=9223372036854775807"},
	{"default", "control_plane[0].workers=9223372036854775807"},
	{"default", "control_plane[0].workers=1000000000"},
	{"default", `network.latency.value="1000000h"`},
	{"reconnect-storm", `control_plane[0].service_time.p99="719h59m59s"`},
	{"default", `fleet.group[0].profile_fields={backoff_jitter="1.5"}`},
	{"default", `fleet.group[0].profile_fields={resource_timeout="0s"}`},
	{"default", "fleet.group[0].rpc.rate=1e-12"},
	{"default", "fleet.group[0].clients=10000000"},
	{"bad-cds-rollout", `change[0].at="0s"`},
	{"default", `fleet.group[1].name="web.rpc.failed"`},
	{"default", "fleet.group[0].clients=5\nno_such_key=1"},
	{"default", `network.latency={dist="constant",value="5ms"}`},
	{"session-drain", "control_plane[0].service[0].override_host_status=[]"},
	{"default", "seed=18446744073709551615"},
	{"default", "fleet.group[0].rpc.session_rpcs=4294967296"},
	{"default", `what_if=true`},
}

// FuzzPipeline runs what a user runs, on any document and --set: validate,
// then run (a small fleet: the limits refuse anything bigger) and render
// the report. It checks the contract of issue 16:
//   - nothing panics or exits 1: every failure is bad input (2), a
//     breached expectation (3) or a run stopped at --max-events (4);
//   - validate and run agree: a scenario validate refuses, run refuses;
//   - a run that ends writes a summary.json that parses, and one that
//     fails writes nothing;
//   - memory is bounded: the run's peak heap stays within twice its
//     estimate.
//
// Run it with go test -fuzz FuzzPipeline -parallel 2 ./cmd/xdssim; plain go
// test runs the seeds and the corpus in testdata/fuzz/FuzzPipeline.
func FuzzPipeline(f *testing.F) {
	for _, e := range scenarios.Library() {
		src, err := scenarios.Open(e.Name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src.Data, "")
	}
	for _, r := range fuzzReproducers {
		src, err := scenarios.Open(r.lib)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src.Data, r.set)
	}
	f.Add([]byte("a = "+strings.Repeat("{b = ", 100)+"1"+strings.Repeat("}", 100)), "")
	f.Fuzz(func(t *testing.T, doc []byte, set string) {
		dir := t.TempDir()
		file := filepath.Join(dir, "s.toml")
		if err := os.WriteFile(file, doc, 0o644); err != nil {
			t.Fatal(err)
		}
		common := append([]string{file}, fuzzLimits...)
		if set != "" {
			common = append(common, "--set", set)
		}
		vcode, _, vstderr := runMain(t, append([]string{"validate"}, common...)...)
		checkClass(t, "validate", vcode, vstderr)

		out := filepath.Join(dir, "out")
		// The run's peak heap counts what this process held before it:
		// the fuzzing engine's corpus, earlier runs' garbage.
		runtime.GC()
		before := newHeapWatch()
		before.sample()
		code, _, stderr := runMain(t, append([]string{"run", "--out", out}, common...)...)
		checkClass(t, "run", code, stderr)
		if (vcode == exitInput) != (code == exitInput) {
			t.Fatalf("validate exits %d but run exits %d:\nvalidate: %s\nrun: %s", vcode, code, vstderr, stderr)
		}
		switch code {
		case exitOK, exitBreached:
			b, err := os.ReadFile(filepath.Join(out, "summary.json"))
			var v map[string]any
			if err != nil || json.Unmarshal(b, &v) != nil {
				t.Fatalf("run exits %d but summary.json is missing or broken: %v", code, err)
			}
			if st, err := os.Stat(filepath.Join(out, "report.html")); err != nil || st.Size() == 0 {
				t.Fatalf("run exits %d but report.html is missing: %v", code, err)
			}
			checkPeak(t, stderr, float64(before.peak))
		default:
			for _, name := range []string{"summary.json", "report.html"} {
				if _, err := os.Stat(filepath.Join(out, name)); err == nil {
					t.Fatalf("run exits %d but wrote %s", code, name)
				}
			}
		}
	})
}

// checkClass fails on an exit code that is not one of bad input, a
// breached expectation or a run stopped at --max-events.
func checkClass(t *testing.T, cmd string, code int, stderr string) {
	t.Helper()
	switch code {
	case exitOK, exitInput, exitBreached, exitEventLimit:
	default:
		t.Fatalf("%s exits %d:\n%s", cmd, code, stderr)
	}
	if strings.Contains(stderr, "internal error") || strings.Contains(stderr, "panic") {
		t.Fatalf("%s reports an internal error:\n%s", cmd, stderr)
	}
}

var (
	estimateLine = regexp.MustCompile(`peak memory about ([0-9.]+) (KiB|MiB|GiB)`)
	peakLine     = regexp.MustCompile(`peak heap ([0-9.]+) (KiB|MiB|GiB)`)
)

// checkPeak fails when the heap the run added to what the process held
// before it (base) is more than twice its estimate of peak memory.
func checkPeak(t *testing.T, stderr string, base float64) {
	t.Helper()
	est, peak := parseSize(estimateLine, stderr), parseSize(peakLine, stderr)
	if est <= 0 || peak <= 0 {
		t.Fatalf("no estimate or peak heap on stderr:\n%s", stderr)
	}
	if peak-base > 2*est {
		t.Fatalf("the run's heap grew by %s, more than twice the estimate %s:\n%s",
			formatBytes(uint64(peak-base)), formatBytes(uint64(est)), stderr)
	}
}

func parseSize(re *regexp.Regexp, s string) float64 {
	m := re.FindStringSubmatch(s)
	if m == nil {
		return 0
	}
	x, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		panic(fmt.Sprint("bad size ", m[1]))
	}
	return x * map[string]float64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[m[2]]
}
