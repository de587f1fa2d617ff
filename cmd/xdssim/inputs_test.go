package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAnEmptyFlagValueIsNeverTheDefault: every flag of every command that
// takes a value refuses an empty one (--shard= used to run the whole
// sweep, merge --out= to write into the shards' directory, csds --at ”
// to look at 0 s).
func TestAnEmptyFlagValueIsNeverTheDefault(t *testing.T) {
	for _, c := range commands() {
		for _, f := range c.flags {
			if f.arg == "" {
				continue
			}
			t.Run(c.name+" --"+f.name, func(t *testing.T) {
				code, _, stderr := runMain(t, c.name, "--"+f.name+"=", "default")
				if code != exitInput || !strings.Contains(stderr, "--"+f.name+": expected ") || !strings.Contains(stderr, "empty") {
					t.Errorf("exit %d, stderr:\n%s\nwant exit 2 saying --%s is empty", code, stderr, f.name)
				}
			})
		}
	}
}

// TestSweepGridsAreBoundedBeforeAnythingIsPlanned: the grids of issue 27
// (512^7 points used to panic, 512^8 to report "0 points" and run out of
// memory, 512^7 with --shard 0/2 to write an empty shard) are refused at
// once, naming the grid.
func TestSweepGridsAreBoundedBeforeAnythingIsPlanned(t *testing.T) {
	keys := []string{"fleet.group[0].clients", "control_plane[0].workers", "control_plane[1].workers", "fleet.group[0].rpc.rate",
		"fleet.restart[0].fraction", "fleet.group[0].rpc.deadline", "fleet.restart[0].downtime", "fleet.restart[0].spread"}
	grid := func(n int) []string {
		var args []string
		for _, k := range keys[:n] {
			args = append(args, "--param", k+"=1..512:512")
		}
		return args
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"512^7 points", grid(7), "the grid has more than 10000000 points (512 × 512 × 512 × 512 × 512 × 512 × 512 values): at most 10000000 runs"},
		{"512^8 points", grid(8), "the grid has more than 10000000 points"},
		{"512^7 points, shard 0/2", append(grid(7), "--shard", "0/2"), "the grid has more than 10000000 points"},
		{"a grid within the points but not the seeds", append(grid(1), "--param", "fleet.restart[0].downtime=1..100:40", "--max-seeds", "1000"),
			"20480 points × up to 1000 seeds is more than 10000000 runs"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			start := time.Now()
			code, _, stderr := runMain(t, append([]string{"sweep", outage, "--out", out}, tt.args...)...)
			if code != exitInput || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and %q", code, stderr, tt.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %s to refuse", d)
			}
			if ents, _ := os.ReadDir(out); len(ents) > 0 {
				t.Errorf("wrote %v", ents)
			}
		})
	}
}

// TestASweepSaysWhatItPlansBeforeCheckingTheGrid: the first line comes
// before the points are checked (a large grid used to be planned in
// silence, minutes before any output).
func TestASweepSaysWhatItPlansBeforeCheckingTheGrid(t *testing.T) {
	code, _, stderr := runMain(t, "sweep", outage, "--out", t.TempDir(), "--param", "fleet.group[0].clients=1..40:40",
		"--param", "control_plane[0].workers=1..30:30", "--seeds", "1", "--max-seeds", "1", "--max-events", "10")
	lines := strings.Split(stderr, "\n")
	if code != exitInput || len(lines) < 3 ||
		lines[0] != "xdssim: sweep of outage: 1200 points × 1 seeds = 1200 runs, GOMAXPROCS workers" ||
		lines[1] != "xdssim: checking the 1200 points of the grid before any run" ||
		!strings.Contains(lines[2], "more than --max-events 10") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}

// TestSeedsPastTheLargestAreRefusedBeforeAnyRun: a seed is a TOML
// integer; sweep, --find and compare refuse seeds past 2^63-1 before they
// run anything, not when a run is made with one.
func TestSeedsPastTheLargestAreRefusedBeforeAnyRun(t *testing.T) {
	last := fmt.Sprint(int64(math.MaxInt64))
	for _, args := range [][]string{
		{"sweep", outage, "--seed", last, "--seeds", "2", "--max-seeds", "2"},
		{"sweep", outage, "--seed", last},
		{"sweep", outage, "--seed", last, "--seeds", "2", "--find", "fleet.restart[0].fraction=0.1..0.9", "--constraint", "rpc.failed >= 0"},
		{"compare", outage, "--seed", last, "--seeds", "2", "--b", "fleet.restart[0].downtime=9s"},
	} {
		code, _, stderr := runMain(t, append(args, "--out", t.TempDir())...)
		if code != exitInput || !strings.Contains(stderr, "pass the largest seed, "+last) || strings.Contains(stderr, "runs in") {
			t.Errorf("%s: exit %d, stderr:\n%s", strings.Join(args, " "), code, stderr)
		}
	}
}

// TestCompareRefusesTwoSeeds: compare runs both variants on the same
// seeds; a --set seed=4 beside --seed 3, or a variant's own seed, would
// be ignored.
func TestCompareRefusesTwoSeeds(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--seed", "3", "--set", "seed=4", "--b", "fleet.restart[0].downtime=9s"}, "--seed 3 and --set seed=4 both set the seed: give one"},
		{[]string{"--b", "seed=4"}, "--b seed=4: compare runs both variants on the same seeds"},
		{[]string{"--a", `"seed" = 4`, "--b", "fleet.restart[0].downtime=9s"}, "--a \"seed\" = 4: compare runs both variants on the same seeds"},
	} {
		code, _, stderr := runMain(t, append([]string{"compare", outage, "--out", t.TempDir()}, tt.args...)...)
		if code != exitInput || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant %q", tt.args, code, stderr, tt.want)
		}
	}
}

// TestMergeReadsOnlyRegularShardFilesOfBoundedSize: a named pipe (which
// used to hang merge), /dev/zero or /dev/urandom (which used to exhaust
// its memory) and a file larger than the cap are refused, naming the
// file, before anything is read from them.
func TestMergeReadsOnlyRegularShardFilesOfBoundedSize(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "shard-0000-of-0001.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no named pipes here:", err)
	}
	zero := filepath.Join(t.TempDir(), "shard-0000-of-0001.json")
	os.Symlink("/dev/zero", zero)
	random := filepath.Join(t.TempDir(), "shard-0000-of-0001.json")
	os.Symlink("/dev/urandom", random)
	big := filepath.Join(t.TempDir(), "shard-0000-of-0001.json")
	if f, err := os.Create(big); err == nil {
		f.Truncate(256<<20 + 1) // sparse: nothing is written
		f.Close()
	}
	for _, tt := range []struct{ name, arg, want string }{
		{"a named pipe", dir, fifo + ": is a named pipe (FIFO), expected a regular file"},
		{"/dev/zero", zero, zero + ": is a device, expected a regular file"},
		{"/dev/urandom", random, random + ": is a device, expected a regular file"},
		{"larger than the cap", big, big + ": larger than 256 MiB"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			done := make(chan bool)
			var code int
			var stderr string
			go func() {
				code, _, stderr = runMain(t, "merge", tt.arg, "--out", t.TempDir())
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("merge hangs")
			}
			if code != exitInput || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and %q", code, stderr, tt.want)
			}
		})
	}
}

// TestAClientIsNamedOneWay: --client web/00 (or +0) is not client 0.
func TestAClientIsNamedOneWay(t *testing.T) {
	for _, c := range []string{"group-0/00", "group-0/+0", "group-0/ 0"} {
		code, _, stderr := runMain(t, "trace", tinyScenario(t), "--client", c)
		if code != exitInput || !strings.Contains(stderr, "expected a client index (0, 1, …)") {
			t.Errorf("--client %q: exit %d, stderr:\n%s", c, code, stderr)
		}
	}
}
