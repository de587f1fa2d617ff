package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// steadyFile writes a small fleet whose RPCs are steady (no event ends
// them) into dir, with extra appended, and returns its path.
func steadyFile(t *testing.T, dir, extra string) string {
	t.Helper()
	file := filepath.Join(dir, "steady.toml")
	src := inFlightSource("steady", "none", `{ dist = "constant", value = "2ms" }`, "rate = 1", extra)
	if err := os.WriteFile(file, src.Data, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestExactRPCsFlagTakesEveryRPCOneByOne runs a small fleet whose RPCs are
// steady with and without --exact-rpcs, through each command that takes
// the flag and reports the events it ran: run (summary.json) and sweep
// (each run's, and the flag in sweep.json's header). The exact runs take
// at least five times the events: two per RPC instead of a few per
// client.
func TestExactRPCsFlagTakesEveryRPCOneByOne(t *testing.T) {
	dir := t.TempDir()
	file := steadyFile(t, dir, "")
	small := []string{"--set", "fleet.group[0].clients=50", "--set", "fleet.group[0].rpc.rate=10"}
	readJSON := func(t *testing.T, name string, v any) {
		t.Helper()
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		// events runs the command into out, with the extra flags, and
		// returns the kernel events of its run(s).
		events func(t *testing.T, out string, extra []string) uint64
	}{
		{"run", func(t *testing.T, out string, extra []string) uint64 {
			if code, _, stderr := runMain(t, append([]string{"run", file, "--quiet", "--out", out}, append(small, extra...)...)...); code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var s struct{ Events uint64 }
			readJSON(t, filepath.Join(out, "summary.json"), &s)
			return s.Events
		}},
		{"sweep", func(t *testing.T, out string, extra []string) uint64 {
			args := append([]string{"sweep", file, "--quiet", "--out", out, "--seeds", "1", "--param", "data_plane.window_gap=\"5s\""}, append(small, extra...)...)
			if code, _, stderr := runMain(t, args...); code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var s struct {
				ExactRPCs bool `json:"exact_rpcs"`
				Runs      []struct{ Events uint64 }
			}
			readJSON(t, filepath.Join(out, "sweep.json"), &s)
			if exact := len(extra) > 0; s.ExactRPCs != exact {
				t.Errorf("sweep.json exact_rpcs = %v, want %v", s.ExactRPCs, exact)
			}
			return s.Runs[0].Events
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bulk := tc.events(t, filepath.Join(dir, tc.name+"-bulk"), nil)
			exact := tc.events(t, filepath.Join(dir, tc.name+"-exact"), []string{"--exact-rpcs"})
			if exact < 5*bulk {
				t.Errorf("%d events with --exact-rpcs, %d without: want at least five times as many", exact, bulk)
			}
		})
	}
}

// TestTraceWithExactRPCsTellsEveryRPC: trace tells a steady channel's
// RPCs in one line each bulk run, and with --exact-rpcs one by one.
func TestTraceWithExactRPCsTellsEveryRPC(t *testing.T) {
	file := steadyFile(t, t.TempDir(), "")
	for _, exact := range []bool{false, true} {
		args := []string{"trace", file, "--client", "group-0/0", "--set", "fleet.group[0].clients=5"}
		if exact {
			args = append(args, "--exact-rpcs")
		}
		code, stdout, stderr := runMain(t, args...)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if bulk := strings.Contains(stdout, "went at once to READY backends"); bulk == exact {
			t.Errorf("--exact-rpcs %v: a line of RPCs accounted in bulk: %v, want %v", exact, bulk, !exact)
		}
		if exact && !strings.Contains(stdout, "more RPCs like") {
			t.Errorf("--exact-rpcs: the steady RPCs are not told one by one (folded into a count):\n%s", stdout)
		}
	}
}

// TestABreachedRunReproducesWithExactRPCs: the command a breached run
// prints to reproduce it keeps --exact-rpcs, which the run's outputs
// depend on.
func TestABreachedRunReproducesWithExactRPCs(t *testing.T) {
	dir := t.TempDir()
	file := steadyFile(t, dir, "\n[[expect]]\nmetric = \"rpc.total\"\nmax = 1\n")
	code, _, stderr := runMain(t, "run", file, "--quiet", "--out", filepath.Join(dir, "out"), "--set", "fleet.group[0].clients=20", "--exact-rpcs")
	if code != exitBreached {
		t.Fatalf("exit %d, want %d: %s", code, exitBreached, stderr)
	}
	for _, cmd := range []string{"reproduce: xdssim run", "breaches it: xdssim shrink"} {
		i := strings.Index(stderr, cmd)
		if i < 0 {
			t.Fatalf("no %q in:\n%s", cmd, stderr)
		}
		if line, _, _ := strings.Cut(stderr[i:], "\n"); !strings.HasSuffix(line, " --exact-rpcs") {
			t.Errorf("%s: no --exact-rpcs", line)
		}
	}
}
