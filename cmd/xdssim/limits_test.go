package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestARunAboveItsLimitsIsRefusedNamingTheKeysThatDriveTheCost(t *testing.T) {
	dir := t.TempDir()
	// 200 control planes × 1 000 000 samples used to exhaust memory.
	var b strings.Builder
	b.WriteString("duration = \"1000s\"\nsample_interval = \"1ms\"\n")
	for i := range 200 {
		fmt.Fprintf(&b, "[[control_plane]]\nname = \"cp%d\"\n[[control_plane.service]]\nname = \"svc\"\n", i)
	}
	b.WriteString("[[fleet.group]]\nclients = 1\nservers = [\"cp0\"]\n")
	samples := filepath.Join(dir, "samples.toml")
	os.WriteFile(samples, []byte(b.String()), 0o644)

	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"the documented maximum of clients", []string{"run", "default", "--set", "fleet.group[0].clients=9999900"},
			[]string{"the run would need about ", "GiB of memory at its peak, more than", "fleet.group[0].clients (9999900 clients × 1 target(s))", "--force"}},
		{"200 control planes × a million samples", []string{"run", samples},
			[]string{"of memory at its peak", "sample_interval, duration (1000001 samples"}},
		{"--max-memory below the estimate", []string{"validate", "default", "--max-memory", "10MiB"},
			[]string{"more than 10.0 MiB (--max-memory)", "fleet.group[0].clients (200 clients"}},
		{"--max-events below the estimate", []string{"run", "default", "--max-events", "1000"},
			[]string{"events, more than --max-events 1000", "fleet.group[0].clients"}},
		{"--max-memory that is not a size", []string{"run", "default", "--max-memory", "lots"},
			[]string{`--max-memory "lots": expected a size such as 8GiB or 512MB (0: no bound)`}},
		{"--max-events that is not a number", []string{"validate", "default", "--max-events", "-1"},
			[]string{`--max-events "-1": expected a number of events, 0 for no bound`}},
		{"--max-cpu that is not a duration", []string{"run", "default", "--max-cpu", "10"},
			[]string{`--max-cpu "10": expected a duration of CPU time such as 90s or 10m, 0 for no bound`}},
		{"--max-cpu below zero", []string{"sweep", "default", "--param", "fleet.group[0].clients=10,20", "--max-cpu", "-1s"},
			[]string{`--max-cpu "-1s": expected a duration`}},
		{"--max-cpu empty", []string{"validate", "default", "--max-cpu="},
			[]string{`--max-cpu: expected a value, found an empty one`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			args := tt.args
			if args[0] == "run" {
				args = append(args, "--out", out)
			}
			code, _, stderr := runMain(t, args...)
			if code != exitInput {
				t.Errorf("exit %d, want %d:\n%s", code, exitInput, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a refused run created its output directory")
			}
		})
	}
}

func TestForceRunsAboveTheLimits(t *testing.T) {
	code, _, stderr := runMain(t, "run", tinyScenario(t), "--out", t.TempDir(), "--max-memory", "1MiB", "--force")
	if code != exitOK {
		t.Errorf("exit %d:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "estimate: peak memory about") {
		t.Errorf("run does not print its estimate:\n%s", stderr)
	}
}

func TestARunStoppedAtMaxEventsExits4AndWritesNothing(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	code, _, stderr := runMain(t, "run", "default", "--out", out, "--max-events", "1000", "--force")
	if code != exitEventLimit {
		t.Fatalf("exit %d, want %d:\n%s", code, exitEventLimit, stderr)
	}
	if !strings.Contains(stderr, "stopped at --max-events 1000, at ") || !strings.Contains(stderr, "wrote no outputs") {
		t.Errorf("stderr:\n%s", stderr)
	}
	for _, f := range []string{"report.html", "summary.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err == nil {
			t.Errorf("%s written by an incomplete run", f)
		}
	}
}

func TestValidatePrintsTheEstimate(t *testing.T) {
	code, stdout, stderr := runMain(t, "validate", "default")
	if code != exitOK || !strings.HasPrefix(stderr, "xdssim: estimate: peak memory about ") || !strings.Contains(stderr, " events (limit ") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if !strings.Contains(stdout, "[[fleet.group]]") {
		t.Errorf("stdout is not the resolved scenario:\n%s", stdout)
	}
}

func TestARunFarPastItsEventEstimateWarnsOnce(t *testing.T) {
	var b bytes.Buffer
	w := &eventWatch{w: &b, est: 1000}
	w.update(99_999, 0, 0)
	if b.Len() != 0 {
		t.Errorf("warned below %d× the estimate: %s", farPast, b.String())
	}
	w.update(100_000, 5e9, 60e9)
	w.update(200_000, 6e9, 60e9)
	if got := strings.Count(b.String(), "warning"); got != 1 || !strings.Contains(b.String(), "100.0 k events at 5s of 1m0s of virtual time, 100× the estimate of 1.0 k") {
		t.Errorf("warnings:\n%s", b.String())
	}
}

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"8GiB", 8 << 30, true}, {"512MB", 512e6, true}, {"2G", 2 << 30, true}, {"1.5KiB", 1536, true},
		{"0", 0, true}, {"1e9", 1e9, true}, {"-1G", 0, false}, {"lots", 0, false}, {"1e30", 0, false}, {"NaN", 0, false},
	}
	for _, tt := range tests {
		got, err := parseBytes(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestTraceCsdsAndShrinkAreRefusedAboveMaxMemoryToo(t *testing.T) {
	for _, args := range [][]string{
		{"trace", "default", "--client", "web/0", "--set", "fleet.group[0].clients=9999900"},
		{"csds", "default", "--client", "web/0", "--at", "1m", "--max-memory", "1MiB"},
		{"shrink", "default", "--max-memory", "1MiB", "--out", filepath.Join(t.TempDir(), "s.toml")},
	} {
		code, _, stderr := runMain(t, args...)
		if code != exitInput || !strings.Contains(stderr, "of memory at its peak") {
			t.Errorf("%s: exit %d, stderr:\n%s", args[0], code, stderr)
		}
	}
	if code, _, stderr := runMain(t, "csds", "default", "--client", "web/0", "--at", "1m", "--max-memory", "1MiB", "--force"); code != exitOK {
		t.Errorf("csds --force: exit %d:\n%s", code, stderr)
	}
}

// TestTraceAndCsdsStopAtMaxEventsToo: the commands that replay a run stop
// at --max-events as run does (exit 4); --force only lifts the refusal by
// estimate, not the stop.
func TestTraceAndCsdsStopAtMaxEventsToo(t *testing.T) {
	for _, args := range [][]string{
		{"trace", "default", "--client", "web/0", "--max-events", "1000", "--force"},
		{"csds", "default", "--client", "web/0", "--at", "1m", "--max-events", "1000", "--force"},
	} {
		code, _, stderr := runMain(t, args...)
		if code != exitEventLimit || !strings.Contains(stderr, "stopped at --max-events 1000") {
			t.Errorf("%s: exit %d, want %d; stderr:\n%s", args[0], code, exitEventLimit, stderr)
		}
	}
	// Without --force the estimate refuses it first.
	if code, _, stderr := runMain(t, "trace", "default", "--client", "web/0", "--max-events", "1000"); code != exitInput ||
		!strings.Contains(stderr, "more than --max-events 1000") {
		t.Errorf("trace without --force: exit %d; stderr:\n%s", code, stderr)
	}
}

// TestTheMemoryBoundIsTheLowestTheKernelAllows: the pre-flight bound is
// the lowest of --max-memory (by default 75 % of the machine or of the
// cgroup), the cgroup's limit and what fits in RLIMIT_AS.
func TestTheMemoryBoundIsTheLowestTheKernelAllows(t *testing.T) {
	const gib = 1 << 30
	as := memoryFacts{addressSpace: 3 * gib, mapped: 1.5 * gib, resident: 25 << 20}
	asBound := int64(25<<20) + (3*gib-1.5*gib-asSlack)/asPerResident
	tests := []struct {
		name    string
		flag    string // --max-memory; "" when not given
		facts   memoryFacts
		want    int64
		wantWhy string
	}{
		{"the machine alone", "", memoryFacts{machine: 16 * gib}, 12 * gib, "75% of this machine's 16.0 GiB"},
		{"a cgroup below the machine", "", memoryFacts{machine: 16 * gib, cgroup: 4 * gib}, 3 * gib, "75% of the cgroup's 4.0 GiB"},
		{"a cgroup above the machine", "", memoryFacts{machine: 16 * gib, cgroup: 64 * gib}, 12 * gib, "75% of this machine's"},
		{"--max-memory below the cgroup", "2GiB", memoryFacts{machine: 16 * gib, cgroup: 4 * gib}, 2 * gib, "--max-memory"},
		{"--max-memory above the cgroup", "8GiB", memoryFacts{machine: 16 * gib, cgroup: 4 * gib}, 4 * gib, "the cgroup's memory limit"},
		{"--max-memory 0 lifts only its own bound", "0", memoryFacts{machine: 16 * gib, cgroup: 4 * gib}, 4 * gib, "the cgroup's memory limit"},
		{"--max-memory 0 and no kernel limit", "0", memoryFacts{machine: 16 * gib}, 0, ""},
		{"RLIMIT_AS below the default", "", memoryFacts{machine: 16 * gib, addressSpace: as.addressSpace, mapped: as.mapped, resident: as.resident}, asBound, "RLIMIT_AS (ulimit -v) of 3.0 GiB, beside the 1.5 GiB"},
		{"RLIMIT_AS below --max-memory", "8GiB", as, asBound, "RLIMIT_AS"},
		{"--max-memory below RLIMIT_AS", "100MiB", as, 100 << 20, "--max-memory"},
		{"RLIMIT_AS all mapped already", "", memoryFacts{machine: 16 * gib, addressSpace: 1 * gib, mapped: 1.5 * gib, resident: 25 << 20}, 25 << 20, "RLIMIT_AS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &runFlags{given: map[string]bool{}}
			if tt.flag != "" {
				f.given["max-memory"], f.maxMemory = true, tt.flag
			}
			l, err := parseLimitsWith(f, tt.facts)
			if err != nil {
				t.Fatal(err)
			}
			if l.memory != tt.want || !strings.Contains(l.memoryWhy, tt.wantWhy) {
				t.Errorf("bound %d (%s), want %d (%s)", l.memory, l.memoryWhy, tt.want, tt.wantWhy)
			}
		})
	}
}

// TestARunThatWouldNotFitItsAddressSpaceIsRefusedNotCrashed: under a
// lowered RLIMIT_AS (ulimit -v), a run that cannot fit is refused before
// it starts (exit 2, naming the limit), where it was accepted and died as
// "a bug in xdssim"; a run that fits still runs.
func TestARunThatWouldNotFitItsAddressSpaceIsRefusedNotCrashed(t *testing.T) {
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("no prlimit to lower RLIMIT_AS with")
	}
	mapped, _ := procStatus()
	if mapped == 0 || mapped > 8<<30 {
		t.Skipf("this process maps %d bytes (a race-detector build?): no room to test RLIMIT_AS", mapped)
	}
	// Room for about 150 MiB of resident memory beside what this binary's
	// runtime maps (the child maps about as much as this process).
	limit := mapped + asSlack + 2*150<<20
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{"a run that cannot fit", []string{"run", "default", "--set", "fleet.group[0].clients=200000", "--quiet"}, exitInput, "RLIMIT_AS (ulimit -v)"},
		{"validate says so too", []string{"validate", "default", "--set", "fleet.group[0].clients=200000"}, exitInput, "RLIMIT_AS (ulimit -v)"},
		{"above it even with --max-memory higher", []string{"validate", "default", "--set", "fleet.group[0].clients=200000", "--max-memory", "8GiB"}, exitInput, "RLIMIT_AS"},
		{"a run that fits", []string{"run", "default", "--quiet"}, exitOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if args[0] == "run" {
				args = append(args, "--out", filepath.Join(t.TempDir(), "out"))
			}
			code, stderr := runBinaryUnder(t, limit, nil, args...)
			if code != tt.wantCode || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, want %d with %q; stderr:\n%s", code, tt.wantCode, tt.want, stderr)
			}
		})
	}
}

// TestMaxCPUStopsTheCommandWithin100msOfCPU: a command that reaches
// --max-cpu stops with exit 4, says so, and writes nothing, whichever
// command it is and whatever it is doing; one that ends in time is not
// touched.
func TestMaxCPUStopsTheCommandSoonAfterTheBound(t *testing.T) {
	dir := t.TempDir()
	// A scenario whose dump of 300 000 endpoints takes seconds to load.
	mesh := filepath.Join(dir, "mesh.toml")
	if err := os.WriteFile(filepath.Join(dir, "dump.json"), []byte(meshDump(300_000)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mesh, []byte("duration = \"1m\"\n[[control_plane]]\nname = \"cp\"\nresources = [\"dump.json\"]\n[[fleet.group]]\nclients = 1\ntargets = [\"svc:1\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
	}{
		{"a run", []string{"run", "reconnect-storm", "--max-cpu", "300ms", "--quiet", "--out", filepath.Join(dir, "run")}, exitEventLimit},
		{"a sweep", []string{"sweep", "reconnect-storm", "--param", "fleet.group[0].clients=4000,5000", "--max-cpu", "300ms", "--out", filepath.Join(dir, "sweep")}, exitEventLimit},
		{"a run still loading its scenario", []string{"run", mesh, "--max-cpu", "300ms", "--quiet", "--out", filepath.Join(dir, "mesh")}, exitEventLimit},
		{"a sweep still checking its grid", []string{"sweep", "default", "--param", "fleet.group[0].clients=1..200:200", "--param", "fleet.group[1].clients=1..100:100", "--seeds", "1", "--max-seeds", "1", "--max-cpu", "300ms", "--out", filepath.Join(dir, "grid")}, exitEventLimit},
		{"a run with CPU to spare", []string{"run", tinyScenario(t), "--max-cpu", "1m", "--quiet", "--out", filepath.Join(dir, "tiny")}, exitOK},
	}
	re := regexp.MustCompile(`stopped at --max-cpu 300ms, having used ([0-9.]+m?s) of CPU time: the run is incomplete and wrote no outputs`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stderr := runBinary(t, nil, tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.wantCode, stderr)
			}
			out := tt.args[len(tt.args)-1]
			if code == exitOK {
				if _, err := os.Stat(filepath.Join(out, "summary.json")); err != nil {
					t.Errorf("a run within --max-cpu wrote no summary: %v", err)
				}
				return
			}
			m := re.FindStringSubmatch(stderr)
			if m == nil {
				t.Fatalf("stderr does not say where it stopped:\n%s", stderr)
			}
			// Read every 100 ms of wall time: on 2 cores, well within a
			// second of CPU time past the bound.
			if used, _ := time.ParseDuration(m[1]); used > 300*time.Millisecond+time.Second {
				t.Errorf("stopped after %s of CPU time, more than a second past --max-cpu 300ms", used)
			}
			if ents, _ := os.ReadDir(out); len(ents) > 0 {
				t.Errorf("a stopped command left outputs: %v", ents)
			}
		})
	}
}
