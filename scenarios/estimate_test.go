package scenarios

import (
	"fmt"
	"testing"
)

func TestTheEstimateNamesTheKeysThatDriveTheCost(t *testing.T) {
	s, err := parse(t, withServer, "fleet.group[0].clients=100000", "control_plane[0].service[0].endpoints=1000", `sample_interval="10ms"`)
	if err != nil {
		t.Fatal(err)
	}
	e := s.Estimate()
	if e.Drivers[0].Keys != "control_plane[0].service[0].endpoints, fleet.group[0].clients" || e.Drivers[1].Keys != "fleet.group[0].clients" {
		t.Errorf("drivers, largest first: %+v", e.Drivers)
	}
	var sum int64
	for i, d := range e.Drivers {
		sum += d.Cost
		if i > 0 && d.Cost > e.Drivers[i-1].Cost {
			t.Errorf("drivers not sorted: %+v", e.Drivers)
		}
	}
	if sum != e.Memory {
		t.Errorf("Memory %d is not the sum of its drivers %d", e.Memory, sum)
	}
	if main := e.Main(e.Drivers, 2); main != "control_plane[0].service[0].endpoints, fleet.group[0].clients (100000 instances × 1000 endpoints); fleet.group[0].clients (100000 clients × 1 target(s))" {
		t.Errorf("Main = %q", main)
	}
}

// The benchmark of a million clients (scenarios/bench/storm-1m.toml)
// peaks at 11.9 GB; its estimate must stay under 75 % of a 24 GiB machine
// (18 GiB), the default --max-memory there, or bench would be refused.
func TestTheMillionClientBenchmarkFitsTheDefaultLimitOfA24GiBMachine(t *testing.T) {
	s, err := Load("bench/storm-1m.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	e := s.Estimate()
	if e.Memory < 6<<30 || e.Memory > 18<<30 {
		t.Errorf("storm-1m's estimate is %.1f GiB; its measured peak is 11.9 GB", float64(e.Memory)/(1<<30))
	}
}

// TestTheEstimateCountsEveryEndpointAServiceHasAtOnce: a service's
// endpoints at their peak are its configured ones, the largest
// scale_endpoints on it, and every endpoint a replace_endpoints renews.
func TestTheEstimateCountsEveryEndpointAServiceHasAtOnce(t *testing.T) {
	change := func(action string, count int) string {
		return fmt.Sprintf("\n[[change]]\nat = \"10s\"\naction = %q\nservice = \"svc\"\ncount = %d\n", action, count)
	}
	tests := []struct {
		name    string
		changes string
		want    int64
	}{
		{"configured", "", 3},
		{"scaled up", change("scale_endpoints", 1000), 1003},
		{"scaled twice: the largest counts", change("scale_endpoints", 10) + change("scale_endpoints", 500), 503},
		{"replaced, twice", change("replace_endpoints", 2) + change("replace_endpoints", 3), 8},
		{"a change that adds none", change("drain_endpoints", 2), 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := parse(t, withServer+tt.changes, "control_plane[0].service[0].endpoints=3")
			if err != nil {
				t.Fatal(err)
			}
			svc := &s.ControlPlanes[0].Services[0]
			if got := s.peakEndpoints(svc); got != tt.want {
				t.Errorf("peak endpoints %d, want %d", got, tt.want)
			}
		})
	}
}
