package fleet

import (
	"testing"
	"time"
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
