package shrink

import (
	"testing"
	"time"

	"github.com/xdssim/xdssim/scenarios"
)

const big = `
name = "big"
duration = "10m"
[[control_plane]]
name = "cp"
[[control_plane.service]]
name = "echo"
[[control_plane.service]]
name = "other"
[[fleet.group]]
name = "a"
clients = 800
[[fleet.group]]
name = "b"
clients = 200
start_at = "1m"
[[fleet.restart]]
group = "a"
at = "2m"
[[fault]]
kind = "server-down"
at = "1m"
duration = "1m"
[[fault]]
kind = "blackhole"
at = "3m"
groups = ["b"]
[[change]]
at = "4m"
action = "delete_service"
service = "echo"
`

// TestShrinkKeepsOnlyWhatTheFailureNeeds: with a test that fails while
// group b has at least 3 clients and the server-down fault is there, the
// result is group b alone with 3 clients, that fault, nothing else, and
// the shortest duration that still holds b's start; the same whether the
// candidates run one at a time or four at once. Reference: Zeller and
// Hildebrandt, ddmin.
func TestShrinkKeepsOnlyWhatTheFailureNeeds(t *testing.T) {
	s, err := scenarios.Parse(&scenarios.Source{File: "big.toml", Name: "big", Data: []byte(big)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	fails := func(c *scenarios.Scenario) (bool, error) {
		down := false
		for _, f := range c.Faults {
			down = down || f.Kind == "server-down"
		}
		for _, g := range c.Fleet.Groups {
			if g.Name == "b" && g.Clients >= 3 {
				return down, nil
			}
		}
		return false, nil
	}
	var results []string
	for _, workers := range []int{1, 4} {
		small, st, err := Shrink(s, Options{Fails: fails, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		clients, groups, events, d := Size(small)
		if groups != 1 || small.Fleet.Groups[0].Name != "b" || clients > 6 || clients < 3 || events != 1 || small.Faults[0].Kind != "server-down" {
			t.Errorf("workers %d: %d clients in %d groups, %d events (%+v)", workers, clients, groups, events, small.Faults)
		}
		if d > 5*time.Minute || d <= time.Minute {
			t.Errorf("workers %d: duration %v, want cut to what b's start and the fault need", workers, d)
		}
		if st.Runs == 0 || st.Steps == 0 || st.Exhausted {
			t.Errorf("workers %d: stats %+v", workers, st)
		}
		results = append(results, small.TOML())
	}
	if results[0] != results[1] {
		t.Error("the result depends on how many candidates run at once")
	}
	if got, _, _, _ := Size(s); got != 1000 {
		t.Errorf("Shrink changed its input: %d clients", got)
	}
}

// TestShrinkStopsAtItsBudget: MaxRuns bounds the runs, and the result
// says so.
func TestShrinkStopsAtItsBudget(t *testing.T) {
	s, err := scenarios.Parse(&scenarios.Source{File: "big.toml", Name: "big", Data: []byte(big)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, st, err := Shrink(s, Options{Fails: func(*scenarios.Scenario) (bool, error) { return false, nil }, MaxRuns: 3})
	if err != nil {
		t.Fatal(err)
	}
	if st.Runs != 3 || !st.Exhausted {
		t.Errorf("stats %+v, want 3 runs, exhausted", st)
	}
}

// TestShrinkDoesNotDependOnTheWorkers: the candidates are tried, and
// counted, in one order, whatever runs at the same time; so a budget of
// runs ends at the same candidate, and the result and its "in N runs" are
// the same with 1, 2 or 4 workers (issue 27: shrink --max-runs 5 gave
// 2m30s on one core and 5m0s on two).
func TestShrinkDoesNotDependOnTheWorkers(t *testing.T) {
	s, err := scenarios.Parse(&scenarios.Source{File: "big.toml", Name: "big", Data: []byte(big)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	fails := func(c *scenarios.Scenario) (bool, error) {
		for _, g := range c.Fleet.Groups {
			if g.Name == "b" && g.Clients >= 3 {
				return true, nil
			}
		}
		return false, nil
	}
	for _, maxRuns := range []int{1, 2, 3, 5, 8, 13, 0} {
		var want string
		var wantStats Stats
		for _, workers := range []int{1, 2, 4} {
			small, st, err := Shrink(s, Options{Fails: fails, Workers: workers, MaxRuns: maxRuns})
			if err != nil {
				t.Fatal(err)
			}
			if workers == 1 {
				want, wantStats = small.TOML(), st
				continue
			}
			if small.TOML() != want || st != wantStats {
				t.Errorf("--max-runs %d: %d workers give %+v, 1 worker %+v (or another scenario)", maxRuns, workers, st, wantStats)
			}
		}
	}
}
