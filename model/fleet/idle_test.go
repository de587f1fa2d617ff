package fleet

import (
	"runtime"
	rtmetrics "runtime/metrics"
	"testing"
	"time"

	"github.com/xdssim/xdssim/model/xdsclient"
	"github.com/xdssim/xdssim/sim"
)

// liveHeap returns the heap the last garbage collection found live
// (runtime/metrics /gc/heap/live:bytes), after a collection: what the
// program holds, without the garbage a HeapAlloc reading also counts.
func liveHeap() uint64 {
	runtime.GC()
	s := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
	rtmetrics.Read(s)
	if s[0].Value.Kind() != rtmetrics.KindUint64 {
		panic("runtime/metrics: /gc/heap/live:bytes is not supported")
	}
	return s[0].Value.Uint64()
}

// idleHeap returns the live heap that a world of n idle grpc-go clients
// holds: each connected to one server, every resource ACKed, no RPCs.
func idleHeap(t *testing.T, n int) uint64 {
	t.Helper()
	cfg := xdsConfig(n, xdsclient.GRPCGo())
	cfg.ControlPlanes = cfg.ControlPlanes[:1]
	cfg.Groups[0].Servers = []int{0}
	cfg.Duration = 30 * time.Second
	before := liveHeap()
	w, err := build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.kernel.Run(sim.Time(0).Add(cfg.Duration))
	if got := w.fx.complete; got != n {
		t.Fatalf("%d of %d clients have their config: not idle yet", got, n)
	}
	after := liveHeap()
	runtime.KeepAlive(w)
	return after - before
}

// TestAnIdleClientHoldsLittleMemory measures what one more idle client
// costs: the difference between two fleet sizes, so that what a world
// holds whatever its size (the control plane's resources) does not count.
// The event queue's spare arrays, which the startup burst grows up to a
// cap the smaller fleet does not reach, still count, for about 210 B.
// The heap is the live heap after a collection (/gc/heap/live:bytes),
// which garbage does not inflate.
//
// The target is 3 KB, and the test fails above it (maxIdleClient): a
// client holds about 2.75 KB (docs/performance.md, "Figures"), and the
// margin absorbs what differs between Go versions and machines.
func TestAnIdleClientHoldsLittleMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 14 000 clients")
	}
	const (
		small, large  = 2000, 12000
		maxIdleClient = 3000 // bytes: the 3 KB target
	)
	// A first world pays the program's one-time costs (protobuf
	// descriptors, go-control-plane's type tables), which would otherwise
	// count against the smaller fleet alone, or not at all when another
	// test ran first.
	idleHeap(t, small)
	a, b := idleHeap(t, small), idleHeap(t, large)
	per := float64(int64(b)-int64(a)) / (large - small)
	t.Logf("live heap per idle client: %.0f B (%d clients: %d B each; %d clients: %d B each)", per, small, a/small, large, b/large)
	if per > maxIdleClient {
		t.Errorf("an idle client holds %.0f B of live heap, want at most %d B (the 3 KB target)", per, maxIdleClient)
	}
}
