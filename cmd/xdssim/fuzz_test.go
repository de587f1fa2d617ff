package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xdssim/xdssim/scenarios"
	"github.com/xdssim/xdssim/sweep"
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

// fuzzSweepLimits keep each sweep, compare and merge of the fuzz targets
// small: one worker, few seeds, runs refused above these estimates.
var fuzzSweepLimits = []string{"--workers", "1", "--max-memory", "96MiB", "--max-events", "100000"}

// fuzzMaxRuns bounds the runs a fuzzed sweep may make; a larger grid is
// resolved (its size checked) but not run.
const fuzzMaxRuns = 64

// heapPeak samples the live heap every few milliseconds while f runs and
// returns how far above its level before f it went.
func heapPeak(f func()) uint64 {
	runtime.GC()
	base := newHeapWatch()
	base.sample()
	watch := newHeapWatch()
	stop := make(chan bool)
	done := make(chan bool)
	go func() {
		defer close(done)
		for {
			watch.sample()
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	f()
	close(stop)
	<-done
	watch.sample()
	if watch.peak < base.peak {
		return 0
	}
	return watch.peak - base.peak
}

// fuzzSweepSeeds are the inputs of issue 27 for sweep and compare, as
// (document, --param, compare's --b).
var fuzzSweepSeeds = []struct{ doc, param, b string }{
	{"outage", "", "fleet.restart[0].downtime=9s"},
	{"outage", "fleet.restart[0].fraction=0.2,0.4", "seed=4"},
	{"outage", `fleet."restart"[0].fraction=0.2`, `"seed"=4`},
	{"outage", "seed=1,2", ""},
	{"outage", "sweep.seeds=1,2", "fleet.group[0].clients=0"},
	{"outage", "fleet.restart[0].fraction=0.4,0.4", "fleet.restart[0].fraction=2"},
	{"outage", "fleet.group[0].clients=1..512:512", "fleet.group[0].clients=5"},
	{"outage", "control_plane[0].workers=1..3:3", "fleet.group[0].servers=[\"primary\", \"fallback\"]"},
	{"default", "fleet.group[0].rpc.rate=0.5,1", "fleet.group[0].profile=\"grpc-java\""},
	{"outage+dup", "", ""},
}

// FuzzSweep runs what a user runs to tune a scenario, on any document
// (its [sweep] table included), any --param and any compare variant:
// xdssim sweep, then xdssim compare. It checks the contract of issue 27:
//   - nothing panics or exits 1: every failure is bad input (2), no
//     setting known to meet the constraints (3) or a run stopped at
//     --max-events (4);
//   - a sweep or compare that ends writes its outputs, which parse, and
//     one that fails writes none;
//   - memory is bounded: the heap grows by at most 256 MiB (each run is
//     refused above 96 MiB, one at a time).
//
// A grid of more than 64 runs is resolved (its size checked against the
// cap, its keys and values checked) but not run. Plain go test runs the
// seeds and the corpus in testdata/fuzz/FuzzSweep.
func FuzzSweep(f *testing.F) {
	outageDoc, err := os.ReadFile(outage)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range fuzzSweepSeeds {
		doc := outageDoc
		switch s.doc {
		case "default":
			src, err := scenarios.Open("default")
			if err != nil {
				f.Fatal(err)
			}
			doc = src.Data
		case "outage+dup":
			doc = append(append([]byte{}, outageDoc...), "\n[[sweep.param]]\nkey = \"control_plane[0].workers\"\nvalues = [4, 4]\n"...)
		}
		f.Add(doc, s.param, s.b)
	}
	f.Fuzz(func(t *testing.T, doc []byte, param, b string) {
		dir := t.TempDir()
		file := filepath.Join(dir, "s.toml")
		if err := os.WriteFile(file, doc, 0o644); err != nil {
			t.Fatal(err)
		}
		vals := flagValues{"seeds": {"1"}, "max-seeds": {"2"}}
		args := append([]string{"sweep", file, "--out", filepath.Join(dir, "sweep"), "--seeds", "1", "--max-seeds", "2", "--quiet"}, fuzzSweepLimits...)
		if param != "" {
			vals["param"] = []string{param}
			args = append(args, "--param", param)
		}
		if src, sets, s, err := sweepSource("sweep", vals, []string{file}, io.Discard); err == nil {
			if spec, err := sweepSpec(s, vals); err == nil {
				if p, err := sweep.Resolve(src, sets, spec); err == nil && p.Points()*p.MaxSeeds > fuzzMaxRuns {
					return // resolved: its size is within the cap; too many runs to fuzz
				}
			}
		}
		var code int
		var stderr string
		grew := heapPeak(func() { code, _, stderr = runMain(t, args...) })
		checkClass(t, "sweep", code, stderr)
		checkOutputs(t, "sweep", code, filepath.Join(dir, "sweep"), "sweep.json", "sweep.csv", "sweep.html")
		if grew > 256<<20 {
			t.Fatalf("sweep: the heap grew by %s", formatBytes(grew))
		}

		cargs := append([]string{"compare", file, "--out", filepath.Join(dir, "compare"), "--seeds", "2", "--quiet"}, fuzzSweepLimits...)
		if b != "" {
			cargs = append(cargs, "--b", b)
		}
		grew = heapPeak(func() { code, _, stderr = runMain(t, cargs...) })
		checkClass(t, "compare", code, stderr)
		checkOutputs(t, "compare", code, filepath.Join(dir, "compare"), "compare.json", "compare.html")
		if grew > 256<<20 {
			t.Fatalf("compare: the heap grew by %s", formatBytes(grew))
		}
	})
}

// checkOutputs fails when a command that ended (exit 0 or 3) did not
// write its outputs in dir, with a first one that parses as JSON, or one
// that failed wrote any.
func checkOutputs(t *testing.T, cmd string, code int, dir string, names ...string) {
	t.Helper()
	for i, name := range names {
		b, err := os.ReadFile(filepath.Join(dir, name))
		switch code {
		case exitOK, exitBreached:
			if err != nil || len(b) == 0 {
				t.Fatalf("%s exits %d but %s is missing: %v", cmd, code, name, err)
			}
			var v map[string]any
			if i == 0 && json.Unmarshal(b, &v) != nil {
				t.Fatalf("%s exits %d but %s does not parse", cmd, code, name)
			}
		default:
			if err == nil {
				t.Fatalf("%s exits %d but wrote %s", cmd, code, name)
			}
		}
	}
}

// FuzzMerge gives xdssim merge any two shard files. It checks that
// nothing panics or exits 1, that a merge that ends writes its outputs
// and one that fails writes none, and that memory is bounded by what the
// files hold, never by what they claim: the heap grows by at most 64 MiB
// plus 64 times their size. Its seeds are the two shards of a real sweep
// and issue 27's hostile edits of them; plain go test runs them and the
// corpus in testdata/fuzz/FuzzMerge.
func FuzzMerge(f *testing.F) {
	dir := f.TempDir()
	for _, s := range []string{"0/2", "1/2"} {
		var stderr strings.Builder
		if code := Main([]string{"sweep", outage, "--seeds", "1", "--max-seeds", "1", "--shard", s, "--out", dir, "--quiet", "--workers", "1"}, io.Discard, &stderr); code != exitOK {
			f.Fatalf("shard %s: exit %d: %s", s, code, stderr.String())
		}
	}
	a, err := os.ReadFile(filepath.Join(dir, "shard-0000-of-0002.json"))
	if err != nil {
		f.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "shard-0001-of-0002.json"))
	if err != nil {
		f.Fatal(err)
	}
	edit := func(doc []byte, old, new string) []byte { return []byte(strings.Replace(string(doc), old, new, 1)) }
	f.Add(a, b)
	f.Add(edit(a, `"point": 0`, `"point": -1`), b)
	f.Add(edit(a, `"point": 0`, `"point": 99`), b)
	f.Add(edit(a, `"shards": 2`, `"shards": 1e9`), b)
	f.Add(edit(a, `"shards": 2`, `"shards": 10000000`), edit(b, `"shards": 2`, `"shards": 10000000`))
	f.Add(edit(a, `"max_seeds": 1`, `"max_seeds": 1099511627776`), b)
	f.Add(append(append([]byte{}, a...), "garbage{"...), b)
	f.Add(edit(a, `"seeds": [`, `"seeds": [], "x": [`), b)
	f.Add([]byte("{}"), []byte(""))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		dir := t.TempDir()
		shards := filepath.Join(dir, "shards")
		os.Mkdir(shards, 0o755)
		os.WriteFile(filepath.Join(shards, "shard-0000-of-0002.json"), a, 0o644)
		os.WriteFile(filepath.Join(shards, "shard-0001-of-0002.json"), b, 0o644)
		out := filepath.Join(dir, "out")
		var code int
		var stderr string
		grew := heapPeak(func() { code, _, stderr = runMain(t, "merge", shards, "--out", out, "--quiet") })
		checkClass(t, "merge", code, stderr)
		checkOutputs(t, "merge", code, out, "sweep.json", "sweep.csv", "sweep.html")
		if limit := uint64(64<<20 + 64*(len(a)+len(b))); grew > limit {
			t.Fatalf("merge: the heap grew by %s, more than %s for %d bytes of shards", formatBytes(grew), formatBytes(limit), len(a)+len(b))
		}
	})
}
