package fleet

import (
	"testing"
	"time"

	"github.com/xdssim/xdssim/model/controlplane"
	"github.com/xdssim/xdssim/model/xdsclient"
	"github.com/xdssim/xdssim/sim"
)

// kinds counts the events it is handed, by kind.
type kinds map[uint32]int

func (k kinds) HandleEvent(_ *sim.Kernel, ev sim.Event) { k[ev.Kind]++ }

// TestTheKernelHoldsAboutOneCompletionPerServer: a control plane whose
// queue holds thousands of requests (a fleet starting at once against
// few workers) has only the completions it handed out pending in the
// kernel (controlplane.Server.NextCompletion): about one, not one per
// queued request.
func TestTheKernelHoldsAboutOneCompletionPerServer(t *testing.T) {
	const clients = 2000
	tests := []struct {
		name     string
		capacity controlplane.Capacity
		most     int // completions pending at most
	}{
		// One worker, every request 10 ms: the one in service.
		{"one worker", controlplane.Capacity{Workers: 1, ServiceTime: sim.Constant(10 * time.Millisecond)}, 1},
		// Four workers, each request's time drawn: the first to
		// complete, and any that a later request, quicker, overtook.
		{"four workers", controlplane.Capacity{Workers: 4, ServiceTime: sim.LogNormal(2*time.Millisecond, 20*time.Millisecond)}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := xdsConfig(clients, xdsclient.GRPCGo())
			cfg.ControlPlanes = cfg.ControlPlanes[:1]
			cfg.ControlPlanes[0].Server.Capacity = tt.capacity
			cfg.Groups[0].Servers = []int{0}
			cfg.Groups[0].StartSpread = time.Second
			w, err := build(cfg)
			if err != nil {
				t.Fatal(err)
			}
			now := sim.Time(0).Add(3 * time.Second)
			w.kernel.Run(now)
			queued := w.servers[0].QueueDepth(now)
			if queued < clients {
				t.Fatalf("%d requests queued at %v, want at least %d: the test needs a full queue", queued, now, clients)
			}
			pending := kinds{}
			rest := sim.NewKernel(pending)
			w.kernel.MoveTo(rest)
			rest.Run(sim.Never)
			if got := pending[kindJobDone]; got < 1 || got > tt.most {
				t.Errorf("%d completions pending in the kernel with %d requests queued, want 1 to %d", got, queued, tt.most)
			}
		})
	}
}
