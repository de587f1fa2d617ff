package fleet

import (
	"runtime"
	"testing"
	"time"

	"github.com/xdssim/xdssim/model/xdsclient"
	"github.com/xdssim/xdssim/sim"
)

// idleHeap returns the live heap that a world of n idle grpc-go clients
// holds: each connected to one server, every resource ACKed, no RPCs.
func idleHeap(t *testing.T, n int) uint64 {
	t.Helper()
	cfg := xdsConfig(n, xdsclient.GRPCGo())
	cfg.ControlPlanes = cfg.ControlPlanes[:1]
	cfg.Groups[0].Servers = []int{0}
	cfg.Duration = 30 * time.Second
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	w, err := build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.kernel.Run(sim.Time(0).Add(cfg.Duration))
	if got := w.fx.complete; got != n {
		t.Fatalf("%d of %d clients have their config: not idle yet", got, n)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(w)
	return after.HeapAlloc - before.HeapAlloc
}

// TestAnIdleClientHoldsLittleMemory measures what one more idle client
// costs: the difference between two fleet sizes, so that what a world
// holds whatever its size (the event queue's spare arrays, the control
// plane's resources) does not count. The target is 4 KB; the test fails
// above 5 KB.
func TestAnIdleClientHoldsLittleMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 14 000 clients")
	}
	const small, large = 2000, 12000
	a, b := idleHeap(t, small), idleHeap(t, large)
	per := float64(int64(b)-int64(a)) / (large - small)
	t.Logf("live heap per idle client: %.0f B (%d clients: %d B each; %d clients: %d B each)", per, small, a/small, large, b/large)
	if per > 5120 {
		t.Errorf("an idle client holds %.0f B of live heap, want at most 5 KB (target 4 KB)", per)
	}
}
