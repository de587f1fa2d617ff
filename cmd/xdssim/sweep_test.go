package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// outage is the sweep package's small test scenario: 2 × 2 points × 3 seeds.
const outage = "../../sweep/testdata/outage.toml"

func TestSweepWritesItsOutputsAndTheBestPoint(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runMain(t, "sweep", outage, "--out", out, "--workers", "2")
	if code != exitOK {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	for _, f := range []string{"sweep.json", "sweep.csv", "sweep.html"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	for _, want := range []string{"best: point 1 (0.2, 9s): failure_windows.client_seconds = ",
		"reproduce: xdssim run ../../sweep/testdata/outage.toml --seed 1 --set 'fleet.restart[0].fraction=0.2' --set 'fleet.restart[0].downtime=9s'",
		filepath.Join(out, "sweep.html")} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout has no %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "4 points × 3 seeds = 12 runs, 2 workers") {
		t.Errorf("stderr:\n%s", stderr)
	}
	var doc struct {
		Schema string
		Best   struct{ Point int }
	}
	b, _ := os.ReadFile(filepath.Join(out, "sweep.json"))
	if err := json.Unmarshal(b, &doc); err != nil || doc.Schema != "xdssim.sweep/v1" || doc.Best.Point != 1 {
		t.Errorf("sweep.json: %+v %v", doc, err)
	}
}

func TestSweepFlagsReplaceTheTable(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runMain(t, "sweep", outage, "--out", out, "--seeds", "2",
		"--param", "fleet.restart[0].fraction=0.1,0.3,0.5", "--param", "fleet.restart[0].downtime=2s",
		"--metric", "rpc.failed", "--objective", "maximize rpc.failed", "--constraint", "rpc.failed < 1e9")
	if code != exitOK {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "3 points × 2 seeds = 6 runs") || !strings.Contains(stdout, "best: point 2 (0.5, 2s): rpc.failed = ") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
}

func TestSweepExitCodes(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"no point meets the constraints", []string{"--constraint", "failure_windows.client_seconds <= 1"}, exitBreached,
			"xdssim: no point of the sweep meets every constraint (failure_windows.client_seconds <= 1)"},
		{"a malformed param", []string{"--param", "fleet.restart[0].fraction"}, exitInput, "expected key=v1,v2"},
		{"a value the scenario refuses", []string{"--param", "fleet.restart[0].fraction=0.5,2"}, exitInput,
			"sweep point 1 (fleet.restart[0].fraction=2): --set fleet.restart[0].fraction=2: "},
		{"an unknown metric", []string{"--metric", "rpc.faild"}, exitInput, `no metric "rpc.faild"`},
		{"a malformed constraint", []string{"--constraint", "rpc.failed = 3"}, exitInput, `--constraint: expected "PATH <= N"`},
		{"a bad shard", []string{"--shard", "4/4"}, exitInput, "expected a shard index from 0 to 3"},
		{"find without a constraint", []string{"--find", "fleet.restart[0].fraction=0.1..0.9"}, exitInput, "expected exactly one --constraint"},
		{"estimated above --max-memory", []string{"--max-memory", "1MiB"}, exitInput, "the run would need about "},
		{"estimated above --max-events", []string{"--max-events", "10"}, exitInput, "more than --max-events 10"},
		{"find estimated above --max-memory", []string{"--find", "fleet.restart[0].fraction=0.1..0.9", "--constraint", "rpc.failed >= 0", "--max-memory", "1MiB"}, exitInput,
			"the run would need about "},
		{"a run stopped at --max-events", []string{"--max-events", "1000", "--force"}, exitEventLimit, "xdssim: stopped at --max-events 1000, at "},
		{"find with a shard", []string{"--find", "fleet.restart[0].fraction=0.1..0.9", "--constraint", "rpc.failed >= 0", "--shard", "0/2"}, exitInput,
			"--find searches one key on its own"},
		{"a key given twice", []string{"--param", "fleet.restart[0].fraction=0.2", "--param", "fleet.restart[0].fraction=0.4"}, exitInput,
			"param fleet.restart[0].fraction is given twice"},
		{"--seed with --set seed", []string{"--seed", "5", "--set", "seed=3"}, exitInput, "--seed 5 and --set seed=3 both set the seed: give one"},
		{"an --out that cannot be made, refused before any run", []string{"--out", "/proc/xdssim-sweep"}, exitInput, "--out /proc/xdssim-sweep: "},
		{"find never crosses", []string{"--find", "fleet.restart[0].fraction=0.1..0.9", "--constraint", "rpc.failed >= 0", "--seeds", "1", "--steps", "1"}, exitBreached,
			"does not cross rpc.failed >= 0 between 0.1 and 0.9 for any seed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"sweep", outage, "--out", t.TempDir(), "--quiet"}, tt.args...)
			code, _, stderr := runMain(t, args...)
			if code != tt.code || !strings.Contains(stderr, tt.err) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and %q", code, stderr, tt.code, tt.err)
			}
		})
	}
}

// TestShardedSweepMergesToTheSameBytes: four shards, one of them told its
// index by JOB_COMPLETION_INDEX as a Kubernetes Indexed Job does, merged,
// write byte for byte the sweep.json, sweep.csv and sweep.html of one
// unsharded sweep. Reference: DESIGN.md, "Sweeps and sharding".
func TestShardedSweepMergesToTheSameBytes(t *testing.T) {
	whole, shards := t.TempDir(), t.TempDir()
	if code, _, stderr := runMain(t, "sweep", outage, "--out", whole, "--quiet"); code != exitOK {
		t.Fatalf("sweep: exit %d:\n%s", code, stderr)
	}
	for i, arg := range []string{"0/4", "1/4", "/4", "3/4"} {
		if arg == "/4" {
			t.Setenv("JOB_COMPLETION_INDEX", "2")
		}
		code, stdout, stderr := runMain(t, "sweep", outage, "--out", shards, "--shard", arg, "--workers", "1", "--quiet")
		if code != exitOK {
			t.Fatalf("shard %s: exit %d:\n%s", arg, code, stderr)
		}
		want := filepath.Join(shards, "shard-000"+string(rune('0'+i))+"-of-0004.json")
		if strings.TrimSpace(stdout) != want {
			t.Errorf("shard %s printed %q, want %q", arg, stdout, want)
		}
	}
	merged := t.TempDir()
	code, _, stderr := runMain(t, "merge", shards, "--out", merged, "--quiet")
	if code != exitOK {
		t.Fatalf("merge: exit %d:\n%s", code, stderr)
	}
	for _, f := range []string{"sweep.json", "sweep.csv", "sweep.html"} {
		a, _ := os.ReadFile(filepath.Join(whole, f))
		b, err := os.ReadFile(filepath.Join(merged, f))
		if err != nil || len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s: merged shards differ from the unsharded sweep (%d and %d bytes, %v)", f, len(a), len(b), err)
		}
	}
	os.Remove(filepath.Join(shards, "shard-0002-of-0004.json"))
	if code, _, stderr := runMain(t, "merge", shards, "--out", merged); code != exitInput || !strings.Contains(stderr, "missing shard(s) 2/4") {
		t.Errorf("merge with a shard missing: exit %d:\n%s", code, stderr)
	}
}

func TestFindPrintsTheThresholdWithItsInterval(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runMain(t, "sweep", outage, "--out", out, "--seeds", "3", "--steps", "4",
		"--find", "fleet.restart[0].fraction=0.05..1.0", "--constraint", "failure_windows.client_seconds <= 200")
	if code != exitOK {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	for _, want := range []string{"fleet.restart[0].fraction: seed 1: ", "threshold: fleet.restart[0].fraction = ", "below it failure_windows.client_seconds <= 200 holds"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout has no %q:\n%s", want, stdout)
		}
	}
}

func TestCompareReportsPairedDifferences(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runMain(t, "compare", outage, "--b", "fleet.restart[0].downtime=9s", "--seeds", "4", "--out", out,
		"--metric", "failure_windows.client_seconds")
	if code != exitOK {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "failure_windows.client_seconds") || !strings.Contains(stdout, "B − A paired") {
		t.Errorf("stdout:\n%s", stdout)
	}
	for _, f := range []string{"compare.json", "compare.html"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	code, stdout, stderr = runMain(t, "compare", outage, "--profiles", "grpc-go,grpc-java", "--seeds", "2", "--out", t.TempDir(), "--quiet")
	if code != exitOK || !strings.Contains(stderr, `--set 'fleet.group[0].profile="grpc-java"'`) || !strings.HasSuffix(strings.TrimSpace(stdout), "compare.html") {
		t.Errorf("--profiles: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, _, stderr := runMain(t, "compare", outage, "--b", "seed=2", "--max-memory", "1MiB"); code != exitInput || !strings.Contains(stderr, "variant A: the run would need about ") {
		t.Errorf("compare above --max-memory: exit %d:\n%s", code, stderr)
	}
	if code, _, stderr := runMain(t, "compare", outage); code != exitInput || !strings.Contains(stderr, "give --a, --b or --profiles") {
		t.Errorf("one scenario, no variant: exit %d:\n%s", code, stderr)
	}
}

func TestSweepProgressLineHasAnETA(t *testing.T) {
	got := sweepProgressLine(3, 12, 30*time.Second)
	if want := "[=======                       ] 3/12 runs, 1m30s left"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
