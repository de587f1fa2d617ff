package fleet

import (
	"runtime"
	"testing"
	"time"

	"github.com/xdssim/xdssim/sim"
)

// BenchmarkRPCFleet1000 runs 1 000 clients sending 10 RPCs/s each for a
// minute of virtual time, with a backend crash and restart in the middle,
// and reports kernel events and RPCs per wall-clock second.
func BenchmarkRPCFleet1000(b *testing.B) {
	cfg := rpcConfig(1000)
	cfg.Duration = time.Minute
	cfg.BackendEvents = []BackendEvent{{At: 30 * time.Second, Duration: 10 * time.Second, Action: BackendDown,
		Backends: echoBackends(0, 1), Label: "echo 0 down"}}
	var events, rpcs float64
	b.ReportAllocs()
	for b.Loop() {
		r, err := Run(cfg, Options{})
		if err != nil {
			b.Fatal(err)
		}
		events += float64(r.Events)
		for _, m := range r.Metrics {
			if m.Path == "rpc.total" {
				rpcs += m.Value
			}
		}
	}
	s := b.Elapsed().Seconds()
	b.ReportMetric(events/s, "events/s")
	b.ReportMetric(rpcs/s, "rpcs/s")
}

// BenchmarkNACKStorm runs one client and a server that resends every
// NACK for 2 s of virtual time, with no processing time and with
// log-normal ones at both ends, and reports the cost per NACK: the
// processing adds a kernel event per response and a draw at each end,
// and must add no allocation (compare allocs/NACK of the two).
func BenchmarkNACKStorm(b *testing.B) {
	for _, bb := range []struct {
		name           string
		client, server sim.Dist
	}{
		{"no-processing", sim.Dist{}, sim.Dist{}},
		{"lognormal-processing", sim.LogNormal(100*time.Microsecond, 400*time.Microsecond), sim.LogNormal(15*time.Microsecond, 200*time.Microsecond)},
	} {
		b.Run(bb.name, func(b *testing.B) {
			cfg := stormConfig(bb.client, bb.server, 15*time.Microsecond)
			cfg.Groups[0].RPC = RPCLoad{}
			var nacks float64
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ReportAllocs()
			for b.Loop() {
				r, err := Run(cfg, Options{})
				if err != nil {
					b.Fatal(err)
				}
				for _, m := range r.Metrics {
					if m.Path == "xds.nacks_sent" {
						nacks += m.Value
					}
				}
			}
			runtime.ReadMemStats(&after)
			b.ReportMetric(b.Elapsed().Seconds()*1e9/nacks, "ns/NACK")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/nacks, "allocs/NACK")
		})
	}
}
