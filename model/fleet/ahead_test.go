package fleet

import (
	"testing"
	"time"

	"github.com/xdssim/xdssim/model/xdsclient"
	"github.com/xdssim/xdssim/sim"
)

// TestAheadsIndexesFollowTheInstances: the arrays Ahead reads to find an
// event's state name each connection's instance and each instance's
// XdsClient as the instances do, before, during and after a restart that
// takes every client down and gives it new XdsClients.
func TestAheadsIndexesFollowTheInstances(t *testing.T) {
	cfg := xdsConfig(10, xdsclient.GRPCGo())
	cfg.Restarts = []Restart{{At: 25 * time.Second, Fraction: 1, Downtime: 10 * time.Second}}
	w, err := build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// live: the instances with an XdsClient then (-1: not checked).
	for _, step := range []struct {
		at   time.Duration
		live int
	}{{0, -1}, {20 * time.Second, 10}, {30 * time.Second, 0}, {time.Minute, 10}} {
		at := step.at
		w.kernel.Run(sim.Time(0).Add(at))
		if len(w.connInst) != len(w.conns) || len(w.xdsOf) != len(w.insts) {
			t.Fatalf("at %v: %d and %d entries for %d conns and %d instances", at, len(w.connInst), len(w.xdsOf), len(w.conns), len(w.insts))
		}
		for ci := range w.conns {
			if w.connInst[ci] != w.conns[ci].inst {
				t.Errorf("at %v: conn %d: instance %d, Ahead's %d", at, ci, w.conns[ci].inst, w.connInst[ci])
			}
		}
		live := 0
		for ii := range w.insts {
			if w.xdsOf[ii] != w.insts[ii].xds {
				t.Errorf("at %v: instance %d: Ahead's XdsClient is not the instance's", at, ii)
			}
			if w.insts[ii].xds != nil {
				live++
			}
		}
		if step.live >= 0 && live != step.live {
			t.Errorf("at %v: %d instances have an XdsClient, want %d: the restart is not where the test needs it", at, live, step.live)
		}
	}
}
