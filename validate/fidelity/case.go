package fidelity

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/scenarios"
)

// Case is one case's scenario, loaded.
type Case struct {
	Path   string
	Config fleet.Config
	// Notes say what the simulator does not use or model of the files
	// a case with resources of its own names (scenarios MeshNotes): the
	// real client acts on them, the simulated one does not.
	Notes []string
}

// LoadCases loads every *.toml in dir, sorted by name.
func LoadCases(dir string) ([]Case, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.toml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var out []Case
	for _, p := range paths {
		s, err := scenarios.Load(p, nil)
		if err != nil {
			return nil, err
		}
		cfg := s.FleetConfig()
		if err := supported(cfg); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, Case{Path: p, Config: cfg, Notes: s.MeshNotes()})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("fidelity: no cases in %s", dir)
	}
	return out, nil
}

// Outcome is a case's comparison and both observations.
type Outcome struct {
	// Duration is the case's timeline.
	Duration time.Duration
	Result   *Result
	Sim      *Observation
	Real     *RealRun
}

// RunCase simulates the case, runs it for real, and compares the two.
func RunCase(ctx context.Context, c Case) (*Outcome, error) {
	sim, err := Simulate(c.Config)
	if err != nil {
		return nil, err
	}
	real, err := Run(ctx, c.Config)
	if err != nil {
		return nil, err
	}
	res := Compare(c.Config, sim, real)
	res.Notes = c.Notes
	return &Outcome{Duration: c.Config.Duration, Result: res, Sim: sim, Real: real}, nil
}

// WriteTranscripts writes, per client, the simulated and the real xDS
// transcript and event times into dir, for a reader to diff.
func (o *Outcome) WriteTranscripts(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, side := range []struct {
		name string
		obs  *Observation
	}{{"sim", o.Sim}, {"real", o.Real.Observation}} {
		var b strings.Builder
		for _, n := range side.obs.Names() {
			c := side.obs.Clients[n]
			fmt.Fprintf(&b, "# client %s\n%s\n", n, Transcript(c))
			for i, s := range c.Streams {
				fmt.Fprintf(&b, "stream %d to %s at %v, as it happened:\n", i+1, s.Server, s.Open)
				for _, m := range s.Messages {
					fmt.Fprintf(&b, "  %9.3fs %s\n", m.At.Seconds(), m)
				}
			}
			fmt.Fprintf(&b, "RPC outcomes per 100 ms (. ok, x failed, ~ both):\n|%s|\n", c.Outcomes(100*time.Millisecond, o.Duration))
			for _, st := range c.States {
				fmt.Fprintf(&b, "csds %9.3fs %s %s %s %s\n", st.At.Seconds(), st.Type, st.Name, st.Status, st.Version)
			}
			for _, w := range c.Windows {
				fmt.Fprintf(&b, "window %v .. %v (%d failures)\n", w.Start, w.End, w.Failures)
			}
			for _, t := range c.Timers {
				fmt.Fprintf(&b, "timer %s %s at %v\n", t.Type, t.Name, t.At)
			}
			for _, s := range c.Switches {
				fmt.Fprintf(&b, "switch to %s (revert %v) at %v\n", s.Server, s.Revert, s.At)
			}
		}
		servers := make([]string, 0, len(side.obs.Conns))
		for s := range side.obs.Conns {
			servers = append(servers, s)
		}
		sort.Strings(servers)
		for _, s := range servers {
			for _, c := range side.obs.Conns[s] {
				what := "gives up a connection to"
				if c.Opened {
					what = "opens a connection to"
				}
				fmt.Fprintf(&b, "conn %9.3fs a client %s %s\n", c.At.Seconds(), what, s)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, side.name+".txt"), []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}
