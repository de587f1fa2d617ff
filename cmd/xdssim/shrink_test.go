package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/xdssim/xdssim/scenarios"
	"github.com/xdssim/xdssim/shrink"
)

// TestShrinkFindsASmallScenarioThatStillBreaches: a library scenario
// given an expectation it cannot meet (fallback-during-restarts, 1000
// clients, with every RPC to succeed) shrinks to at most a tenth of its
// clients; the smaller scenario, run as the file says, still breaches it;
// and shrinking again writes the same file, byte for byte.
func TestShrinkFindsASmallScenarioThatStillBreaches(t *testing.T) {
	dir := t.TempDir()
	args := []string{"shrink", "fallback-during-restarts", "--set", "expect[3].min=1", "--set", "expect[3].max=1", "--expect", "rpc.success_ratio"}
	var files [2][]byte
	for i := range files {
		out := filepath.Join(dir, "shrunk.toml")
		code, stdout, stderr := runMain(t, append(args, "--out", out)...)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if want := "xdssim run " + out + " --seed 1"; !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks the command that reproduces it, %q:\n%s", want, stdout)
		}
		var err error
		if files[i], err = os.ReadFile(out); err != nil {
			t.Fatal(err)
		}
	}
	if string(files[0]) != string(files[1]) {
		t.Error("shrinking twice wrote two different scenarios")
	}
	small, err := scenarios.Load(filepath.Join(dir, "shrunk.toml"), nil)
	if err != nil {
		t.Fatalf("the shrunk scenario does not load: %v", err)
	}
	orig, err := scenarios.Load("fallback-during-restarts", nil)
	if err != nil {
		t.Fatal(err)
	}
	c0, _, _, _ := shrink.Size(orig)
	c1, _, _, _ := shrink.Size(small)
	if c1*10 > c0 {
		t.Errorf("shrunk to %d of %d clients, want at most 10 %%", c1, c0)
	}
	if len(small.Expect) != 1 || small.Expect[0].Metric != "rpc.success_ratio" {
		t.Errorf("expectations %+v, want only the breached rpc.success_ratio", small.Expect)
	}
	code, _, stderr := runMain(t, "run", filepath.Join(dir, "shrunk.toml"), "--out", filepath.Join(dir, "out"), "--quiet")
	if code != exitBreached {
		t.Errorf("running the shrunk scenario: exit %d, want %d (breached): %s", code, exitBreached, stderr)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"shrink", "default"}, "every expectation holds in this run"},
		{[]string{"shrink", "default", "--expect", "9"}, "--expect 9: the scenario has expectations 0 to 4"},
		{[]string{"shrink", "default", "--expect", "rpc.total"}, "--expect rpc.total: no expectation of the scenario bounds it"},
	} {
		if code, _, stderr := runMain(t, tt.args...); code != exitInput || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %s; want %d and %q", tt.args, code, stderr, exitInput, tt.want)
		}
	}
}

// TestABreachedRunSaysHowToReproduceAndShrinkIt: a run that breaches an
// expectation prints its seed and the commands that reproduce and shrink
// it, with the overrides it was given, quoted for a shell.
func TestABreachedRunSaysHowToReproduceAndShrinkIt(t *testing.T) {
	code, _, stderr := runMain(t, "run", "default", "--seed", "4", "--set", "expect[0].min=1e9", "--out", t.TempDir(), "--quiet")
	if code != exitBreached {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"breached with seed 4; reproduce: xdssim run default --seed 4 --set 'expect[0].min=1e9'",
		"xdssim shrink default --seed 4 --set 'expect[0].min=1e9'",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// TestShrinkWritesTheSameFileOnAnyNumberOfCores: issue 27's reproducer,
// shrink --max-runs 5, gave a duration of 2m30s on one core and 5m0s on
// two, and a different "in N runs" every time; now the same file.
func TestShrinkWritesTheSameFileOnAnyNumberOfCores(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var files []string
	out := filepath.Join(t.TempDir(), "shrunk.toml")
	for _, procs := range []int{1, 2, 3} {
		runtime.GOMAXPROCS(procs)
		code, _, stderr := runMain(t, "shrink", "default", "--set", "expect[0].min=1e9", "--max-runs", "5", "--out", out)
		if code != exitOK {
			t.Fatalf("GOMAXPROCS=%d: exit %d:\n%s", procs, code, stderr)
		}
		b, _ := os.ReadFile(out)
		files = append(files, string(b))
	}
	if files[0] != files[1] || files[0] != files[2] || !strings.Contains(files[0], ", in 5 runs.") {
		t.Errorf("the shrunk scenario depends on GOMAXPROCS:\n%.400s\n--\n%.400s\n--\n%.400s", files[0], files[1], files[2])
	}
}
