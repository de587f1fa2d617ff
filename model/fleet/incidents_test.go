package fleet_test

import (
	"testing"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/scenarios"
)

// TestRecoveryIsCreditedToWhatCausedTheWindows: in the default scenario
// the primary is down while a fifth of each group restarts. The batch
// clients that restart fail until they reach a server: every window is
// the outage's, none the restarts' (a restarted client fails because of
// what keeps its config from it), and web's clients, which fall back,
// fail not at all. Each fault, restart, backend event and change is
// listed as what it is.
func TestRecoveryIsCreditedToWhatCausedTheWindows(t *testing.T) {
	s, err := scenarios.Load("default", nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := fleet.Run(s.FleetConfig(), fleet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	windows := 0
	for _, in := range r.Intervals {
		if _, ok := in.WindowCause(); ok {
			windows++
			if in.Source != "server-down [primary]" {
				t.Errorf("window %s %v–%v is credited to %q, want the outage", in.Entity, in.Start, in.End, in.Source)
			}
		}
	}
	byLabel := map[string]fleet.Fault{}
	for _, f := range r.Faults {
		byLabel[f.Label] = f
	}
	outage, web := byLabel["server-down [primary]"], byLabel["restart 0: 20% of web"]
	if outage.Kind != fleet.KindFault || outage.Windows != windows || outage.Recovery <= 0 {
		t.Errorf("the outage: %+v; want a fault that caused all %d windows and recovered after its end", outage, windows)
	}
	if web.Kind != fleet.KindRestart || web.Windows != 0 || web.Recovery != 0 {
		t.Errorf("web's restart: %+v; want a restart with no window and no recovery", web)
	}
}

// TestAChangeIsListedAsAChange: a config change is no fault; the windows
// of its service after it are its own.
func TestAChangeIsListedAsAChange(t *testing.T) {
	s, err := scenarios.Load("accidental-deletion", nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := fleet.Run(s.FleetConfig(), fleet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	changes := 0
	for _, f := range r.Faults {
		if f.Kind == fleet.KindChange {
			changes++
			if f.End != f.Start {
				t.Errorf("change %q spans %v–%v, want one time", f.Label, f.Start, f.End)
			}
		}
	}
	if changes == 0 {
		t.Fatalf("no change listed: %+v", r.Faults)
	}
	for _, in := range r.Intervals {
		if _, ok := in.WindowCause(); ok && in.Source == "" {
			t.Errorf("window %s %s %v–%v is credited to nothing", in.Entity, in.Kind, in.Start, in.End)
		}
	}
}
