package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestNoRunSilentlyReplacesAnothersOutputs: an output directory that holds
// another run's outputs is refused, exit 2, naming it, what it holds and
// both ways out, and nothing in it changes; the same run again may replace
// its own; --overwrite replaces another's, --force does not; a run with
// another seed or override writes to a default directory of its own.
func TestNoRunSilentlyReplacesAnothersOutputs(t *testing.T) {
	scenario := tinyScenario(t)
	outageFile, err := filepath.Abs(outage)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	run := func(args ...string) (int, string) {
		code, _, stderr := runMain(t, append([]string{"run", scenario, "--quiet"}, args...)...)
		return code, stderr
	}
	refused := func(t *testing.T, dir string, code int, stderr string, holds ...string) {
		t.Helper()
		if code != exitInput {
			t.Errorf("exit %d, want 2:\n%s", code, stderr)
		}
		for _, w := range append([]string{dir + ": holds ", "--out DIR", "--overwrite", "nothing was run"}, holds...) {
			if !strings.Contains(stderr, w) {
				t.Errorf("the refusal does not say %q:\n%s", w, stderr)
			}
		}
	}
	unchanged := func(t *testing.T, dir string, before map[string]string) {
		t.Helper()
		after, temps := snapshot(t, dir)
		if !sameFiles(before, after) || len(temps) > 0 {
			t.Errorf("%s changed: %v, was %v; temporaries %v", dir, fileNames(after), fileNames(before), temps)
		}
	}

	t.Run("two seeds into the default directory: the second writes elsewhere", func(t *testing.T) {
		if code, stderr := run(); code != exitOK {
			t.Fatalf("exit %d:\n%s", code, stderr)
		}
		first, _ := snapshot(t, filepath.Join("xdssim-out", "tiny"))
		stdout, _ := runOK(t, "run", scenario, "--quiet", "--seed", "7")
		if !regexp.MustCompile(`^xdssim-out/tiny-seed7-[0-9a-f]{8}/report\.html$`).MatchString(strings.TrimSpace(stdout)) {
			t.Errorf("the second run wrote %q, want xdssim-out/tiny-seed7-<ID>/report.html", stdout)
		}
		unchanged(t, filepath.Join("xdssim-out", "tiny"), first)
		// The default again, and the seed the scenario has: its own directory.
		if code, stdout, stderr := runMain(t, "run", scenario, "--quiet", "--seed", "1"); code != exitOK || strings.TrimSpace(stdout) != "xdssim-out/tiny/report.html" {
			t.Errorf("--seed 1 (the scenario's own): exit %d, %q\n%s", code, stdout, stderr)
		}
		code, stdout, _ := runMain(t, "run", scenario, "--quiet", "--set", "fleet.group[0].clients=3")
		if code != exitOK || !regexp.MustCompile(`^xdssim-out/tiny-[0-9a-f]{8}/report\.html$`).MatchString(strings.TrimSpace(stdout)) {
			t.Errorf("an override: exit %d, wrote %q, want xdssim-out/tiny-<ID>/report.html", code, stdout)
		}
	})

	t.Run("an edited scenario into the default directory: beside the first", func(t *testing.T) {
		edited := filepath.Join(t.TempDir(), "tiny.toml")
		doc, err := os.ReadFile(scenario)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(edited, []byte(strings.Replace(string(doc), `duration = "10s"`, `duration = "12s"`, 1)), 0o644)
		first, _ := snapshot(t, filepath.Join("xdssim-out", "tiny"))
		code, stdout, stderr := runMain(t, "run", edited, "--quiet")
		if code != exitOK || !regexp.MustCompile(`^xdssim-out/tiny-[0-9a-f]{8}/report\.html$`).MatchString(strings.TrimSpace(stdout)) {
			t.Errorf("the edited scenario: exit %d, wrote %q, want xdssim-out/tiny-<ID>/report.html\n%s", code, stdout, stderr)
		}
		unchanged(t, filepath.Join("xdssim-out", "tiny"), first)
		if code, again, _ := runMain(t, "run", edited, "--quiet"); code != exitOK || again != stdout {
			t.Errorf("the edited scenario again: exit %d, wrote %q, want %q", code, again, stdout)
		}
	})

	dir := filepath.Join(t.TempDir(), "out")
	if code, stderr := run("--out", dir); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644)
	before, _ := snapshot(t, dir)

	t.Run("two seeds into one --out: the second is refused", func(t *testing.T) {
		code, stderr := run("--out", dir, "--seed", "7")
		refused(t, dir, code, stderr, "xdssim run of tiny, seed 1", "this is xdssim run of tiny, seed 7")
		unchanged(t, dir, before)
	})
	t.Run("--force is not --overwrite", func(t *testing.T) {
		code, stderr := run("--out", dir, "--seed", "7", "--force")
		refused(t, dir, code, stderr)
		unchanged(t, dir, before)
	})
	t.Run("another override, another run", func(t *testing.T) {
		code, stderr := run("--out", dir, "--set", "fleet.group[0].clients=3")
		refused(t, dir, code, stderr, "this is xdssim run of tiny, seed 1, --set 'fleet.group[0].clients=3'")
		unchanged(t, dir, before)
	})
	t.Run("--exact-rpcs, another run", func(t *testing.T) {
		code, stderr := run("--out", dir, "--exact-rpcs")
		refused(t, dir, code, stderr)
		unchanged(t, dir, before)
	})
	t.Run("the same run again replaces its own outputs", func(t *testing.T) {
		if code, stderr := run("--out", dir, "--seed", "1"); code != exitOK {
			t.Fatalf("exit %d:\n%s", code, stderr)
		}
		unchanged(t, dir, before)
	})
	t.Run("--overwrite replaces another run's", func(t *testing.T) {
		if code, stderr := run("--out", dir, "--seed", "7", "--overwrite"); code != exitOK {
			t.Fatalf("exit %d:\n%s", code, stderr)
		}
		after, _ := snapshot(t, dir)
		if !strings.Contains(after["summary.json"], `"seed": 7,`) || after["notes.txt"] != "mine" {
			t.Errorf("after --overwrite: %v\n%.300s", fileNames(after), after["summary.json"])
		}
	})
	t.Run("an edited scenario is another run", func(t *testing.T) {
		edited := filepath.Join(t.TempDir(), "tiny.toml")
		b, _ := os.ReadFile(scenario)
		os.WriteFile(edited, bytes.Replace(b, []byte("clients = 2"), []byte("clients = 3"), 1), 0o644)
		now, _ := snapshot(t, dir)
		code, _, stderr := runMain(t, "run", edited, "--quiet", "--out", dir, "--seed", "7")
		refused(t, dir, code, stderr, "xdssim run of tiny, seed 7 (scenario SHA-256 ")
		unchanged(t, dir, now)
	})
	t.Run("an older xdssim's outputs, without a manifest", func(t *testing.T) {
		old := filepath.Join(t.TempDir(), "old")
		os.Mkdir(old, 0o755)
		for _, f := range []string{"summary.json", "sweep.json", "notes.txt"} {
			os.WriteFile(filepath.Join(old, f), []byte("older"), 0o644)
		}
		was, _ := snapshot(t, old)
		code, stderr := run("--out", old)
		refused(t, old, code, stderr, "outputs of xdssim (summary.json, sweep.json) that do not say which run wrote them (an older xdssim's: no .xdssim-set.json names the run)")
		unchanged(t, old, was)
		if code, stderr := run("--out", old, "--overwrite"); code != exitOK {
			t.Fatalf("--overwrite: exit %d:\n%s", code, stderr)
		}
		now, _ := snapshot(t, old)
		if got, want := strings.Join(fileNames(now), " "), ".xdssim-set.json notes.txt report.html series.csv summary.json"; got != want {
			t.Errorf("after --overwrite the directory holds %s, want %s (the older set replaced whole, the user's file kept)", got, want)
		}
	})
	t.Run("a sweep into a run's directory", func(t *testing.T) {
		now, _ := snapshot(t, dir)
		code, _, stderr := runMain(t, "sweep", outageFile, "--out", dir, "--quiet")
		refused(t, dir, code, stderr, "xdssim run of tiny, seed 7", "this is xdssim sweep of outage, seeds 1–3")
		unchanged(t, dir, now)
	})
}

// TestCompareSweepAndMergeRefuseAnotherRunsOutputs: compare's default
// directory names the comparison's ID, so two comparisons of one scenario
// write two directories; a sweep, a shard and a merge refuse another
// sweep's outputs unless --overwrite, and the same sweep again (merged
// shards of it too) replaces its own.
func TestCompareSweepAndMergeRefuseAnotherRunsOutputs(t *testing.T) {
	scenario, err := filepath.Abs(outage)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	main := func(t *testing.T, want int, args ...string) string {
		t.Helper()
		code, stdout, stderr := runMain(t, append(args, "--quiet")...)
		if code != want {
			t.Fatalf("%v: exit %d, want %d:\n%s", args, code, want, stderr)
		}
		return stdout + stderr
	}

	compare := []string{"compare", scenario, "--seeds", "2", "--metric", "rpc.failed", "--b"}
	first := main(t, exitOK, append(compare, "fleet.restart[0].downtime=1s")...)
	second := main(t, exitOK, append(compare, "fleet.restart[0].downtime=5s")...)
	again := main(t, exitOK, append(compare, "fleet.restart[0].downtime=1s")...)
	dirOf := regexp.MustCompile(`xdssim-out/compare-outage-outage-[0-9a-f]{8}/compare\.html`)
	if a, b := dirOf.FindString(first), dirOf.FindString(second); a == "" || b == "" || a == b || dirOf.FindString(again) != a {
		t.Errorf("compare --b 1s, --b 5s, --b 1s again wrote %q, %q and %q: want two directories, the first twice", a, b, dirOf.FindString(again))
	}

	sweep := []string{"sweep", scenario, "--seeds", "1", "--max-seeds", "1"}
	for _, sh := range []string{"0/2", "1/2", "1/2"} {
		main(t, exitOK, append(sweep, "--out", "shards", "--shard", sh)...)
	}
	out := main(t, exitInput, append(sweep, "--out", "shards", "--shard", "1/2", "--seed", "5")...)
	for _, w := range []string{"--out shards: shard-0001-of-0002.json is a shard of another sweep, of outage, seed 1; this is a sweep of outage, seed 5", "--overwrite"} {
		if !strings.Contains(out, w) {
			t.Errorf("a shard of another sweep: the refusal does not say %q:\n%s", w, out)
		}
	}
	main(t, exitOK, "merge", "shards", "--out", "merged")
	main(t, exitOK, "merge", "shards", "--out", "merged")
	main(t, exitOK, append(sweep, "--out", "merged")...) // what the merge wrote
	out = main(t, exitInput, append(sweep, "--out", "merged", "--seed", "5")...)
	if !strings.Contains(out, "--out merged: holds the outputs of another run, xdssim sweep of outage, seed 1") {
		t.Errorf("a sweep over another's outputs:\n%s", out)
	}
	main(t, exitOK, append(sweep, "--out", "other", "--seed", "5")...)
	out = main(t, exitInput, "merge", "shards", "--out", "other")
	if !strings.Contains(out, "--out other: holds the outputs of another run, xdssim sweep of outage, seed 5 (") {
		t.Errorf("a merge over another sweep's outputs:\n%s", out)
	}
	main(t, exitOK, "merge", "shards", "--out", "other", "--overwrite")
	main(t, exitOK, append(sweep, "--out", "shards", "--shard", "1/2", "--seed", "5", "--overwrite")...)

	// A sweep that may add seeds writes another set than its shards,
	// which never add any: neither replaces the other's outputs.
	adaptive := []string{"sweep", scenario, "--seeds", "1", "--max-seeds", "2"}
	for _, sh := range []string{"0/2", "1/2"} {
		main(t, exitOK, append(adaptive, "--out", "ashards", "--shard", sh)...)
	}
	main(t, exitOK, "merge", "ashards", "--out", "amerged")
	main(t, exitOK, "merge", "ashards", "--out", "amerged")
	out = main(t, exitInput, append(adaptive, "--out", "amerged")...)
	if !strings.Contains(out, "--out amerged: holds the outputs of another run, xdssim merge of outage, seed 1") {
		t.Errorf("an adaptive sweep over its merged shards' outputs:\n%s", out)
	}
	main(t, exitOK, append(adaptive, "--out", "asweep")...)
	if out = main(t, exitInput, "merge", "ashards", "--out", "asweep"); !strings.Contains(out, "holds the outputs of another run, xdssim sweep of outage") {
		t.Errorf("merged shards over their adaptive sweep's outputs:\n%s", out)
	}
}

// TestDefaultOutNamesWhatMakesTheRunDifferent: the default directory is
// the command's plain one for the run it makes with no flag, and else
// carries the seed when it is not the scenario's own and the first 8 hex
// digits of the run's ID, so that two runs that differ never share one.
func TestDefaultOutNamesWhatMakesTheRunDifferent(t *testing.T) {
	seven := newIdentity("run", "default", []string{"a"}, []uint64{7}, nil, runInputs{"a", false})
	set := newIdentity("run", "default", []string{"b"}, []uint64{1}, []string{"--set x=1"}, runInputs{"b", false})
	compare := newIdentity("compare", "a vs b", []string{"a", "b"}, []uint64{1, 2}, nil, []string{"a", "b"})
	tests := []struct {
		name, base string
		id         runIdentity
		plain      string
		own        uint64
		want       string
	}{
		{"the scenario's own run", "default", seven, seven.ID, 7, "xdssim-out/default"},
		{"another seed", "default", seven, set.ID, 1, "xdssim-out/default-seed7-" + seven.ID[:8]},
		{"an override at the scenario's seed", "default", set, seven.ID, 1, "xdssim-out/default-" + set.ID[:8]},
		{"compare, which has no plain run", "compare-a-b", compare, "", 1, "xdssim-out/compare-a-b-" + compare.ID[:8]},
		{"a sweep from another seed", "outage-sweep", compare, "", 5, "xdssim-out/outage-sweep-seed1-" + compare.ID[:8]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := defaultOut(tt.base, tt.id, tt.plain, tt.own); got != filepath.FromSlash(tt.want) {
				t.Errorf("defaultOut = %q, want %q", got, tt.want)
			}
		})
	}
	if seven.ID == set.ID || len(seven.ID) != 64 {
		t.Errorf("two runs' IDs: %q and %q, want two SHA-256s", seven.ID, set.ID)
	}
}

// TestSeedsTextStaysShort: a message names a run's seeds as a range when
// they are consecutive and at most ten of them otherwise, since the
// seeds of a manifest on disk may be any number.
func TestSeedsTextStaysShort(t *testing.T) {
	many := make([]uint64, 1000)
	for i := range many {
		many[i] = uint64(2 * i)
	}
	for _, tt := range []struct {
		seeds []uint64
		want  string
	}{
		{nil, "no seed"},
		{[]uint64{7}, "seed 7"},
		{[]uint64{1, 2, 3}, "seeds 1–3"},
		{[]uint64{1, 4}, "seeds 1, 4"},
		{many, "seeds 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, … (1000 in all)"},
	} {
		if got := seedsText(tt.seeds); got != tt.want {
			t.Errorf("seedsText(%d seeds) = %q, want %q", len(tt.seeds), got, tt.want)
		}
	}
}
