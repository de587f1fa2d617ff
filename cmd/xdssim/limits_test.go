package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
			[]string{"the run would need about 1", "GiB of memory at its peak, more than", "fleet.group[0].clients (9999900 clients × 1 target(s))", "--force"}},
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
