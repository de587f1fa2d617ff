package fleet

import (
	"fmt"
	"testing"
	"time"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"

	"github.com/xdssim/xdssim/model/xdsclient"
)

// a78 returns the values of the A78 series of instrument inst whose label
// values are labels.
func a78(t *testing.T, r *Results, inst int, labels ...string) []float64 {
	t.Helper()
	for _, m := range r.XdsClientMetrics {
		if m.Instrument == inst && fmt.Sprint(m.Labels) == fmt.Sprint(labels) {
			if len(m.Values) != r.Samples {
				t.Fatalf("%s %v has %d values, want %d", Instruments[inst].Name, labels, len(m.Values), r.Samples)
			}
			return m.Values
		}
	}
	t.Fatalf("no series %s %v", Instruments[inst].Name, labels)
	return nil
}

// TestA78MetricsFollowTheFleet: the gRFC A78 series sum the clients'
// own metrics: every client connected and its four resources ACKed once
// it runs, none connected to the primary while it is down, and the
// counters never going down, though restarts replace the XdsClients
// that counted.
func TestA78MetricsFollowTheFleet(t *testing.T) {
	r := run(t, outageFleet(20, xdsclient.GRPCGo(), 0.3))
	at := func(vs []float64, d time.Duration) float64 { return vs[int(d/r.SampleInterval)] }
	target := "xds:///echo"
	if got := at(a78(t, r, InstrumentConnected, target, "primary"), 10*time.Second); got != 20 {
		t.Errorf("connected to primary at 10s = %v, want 20", got)
	}
	if got := at(a78(t, r, InstrumentConnected, target, "primary"), 40*time.Second); got != 0 {
		t.Errorf("connected to primary during its outage = %v, want 0", got)
	}
	for _, typ := range []string{"envoy.config.listener.v3.Listener", "envoy.config.route.v3.RouteConfiguration",
		"envoy.config.cluster.v3.Cluster", "envoy.config.endpoint.v3.ClusterLoadAssignment"} {
		if got := at(a78(t, r, InstrumentResources, target, "#old", "acked", typ), 10*time.Second); got != 20 {
			t.Errorf("%s acked at 10s = %v, want 20", typ, got)
		}
		valid := a78(t, r, InstrumentUpdatesValid, target, "primary", typ)
		if got := at(valid, 10*time.Second); got < 20 {
			t.Errorf("valid %s updates from primary by 10s = %v, want at least one per client", typ, got)
		}
		for k := 1; k < len(valid); k++ {
			if valid[k] < valid[k-1] {
				t.Fatalf("resource_updates_valid %s went down at sample %d: %v -> %v", typ, k, valid[k-1], valid[k])
			}
		}
	}
	fails := a78(t, r, InstrumentServerFailure, target, "primary")
	for k := 1; k < len(fails); k++ {
		if fails[k] < fails[k-1] {
			t.Fatalf("server_failure went down at sample %d: %v -> %v", k, fails[k-1], fails[k])
		}
	}
	if fails[len(fails)-1] < 20 {
		t.Errorf("server_failure at the end = %v, want at least one per client", fails[len(fails)-1])
	}
	// The fleet's cache status series are the same sums, by CSDS status.
	for s := range xdsclient.NumCacheStates {
		if s.Status() != adminpb.ClientResourceStatus_ACKED {
			continue
		}
		total := 0.0
		for _, m := range r.XdsClientMetrics {
			if m.Instrument == InstrumentResources && m.Labels[2] == s.String() {
				total += at(m.Values, time.Minute)
			}
		}
		if got := value(t, r, "xds.resources.acked", time.Minute); got != total {
			t.Errorf("xds.resources.acked at 1m = %v, the A78 acked series sum to %v", got, total)
		}
	}
	// Reference: gRFC A78, XdsClient metrics.
}

// TestInspectingARunDoesNotChangeIt: pausing the run to look at a
// client's CSDS leaves it as it is without, and the client's cache is
// what it had then.
func TestInspectingARunDoesNotChangeIt(t *testing.T) {
	cfg := xdsConfig(10, xdsclient.GRPCGo())
	cfg.Restarts = []Restart{{At: 25 * time.Second, Fraction: 1, Downtime: 10 * time.Second}}
	plain := fmt.Sprintf("%+v", run(t, cfg))
	states := map[time.Duration]ClientState{}
	entries := map[time.Duration]int{}
	r, err := Run(cfg, Options{InspectAt: []time.Duration{30 * time.Second, 0, time.Minute}, Inspect: func(at time.Duration, in *Inspector) {
		ccs, st, err := in.CSDS("web/3")
		if err != nil {
			t.Fatal(err)
		}
		states[at] = st
		for _, cc := range ccs {
			if cc.GetClientScope() != "xds:///echo" {
				t.Errorf("client_scope %q, want xds:///echo", cc.GetClientScope())
			}
			entries[at] += len(cc.GetGenericXdsConfigs())
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprintf("%+v", r) != plain {
		t.Error("an inspected run differs from the same run without inspection")
	}
	want := map[time.Duration]ClientState{0: ClientNotStarted, 30 * time.Second: ClientDown, time.Minute: ClientUp}
	for at, st := range want {
		if states[at] != st {
			t.Errorf("web/3 at %v: state %v, want %v", at, states[at], st)
		}
	}
	if entries[time.Minute] != 4 {
		t.Errorf("web/3's cache at 1m has %d entries, want its listener, route, cluster and endpoints", entries[time.Minute])
	}
}
