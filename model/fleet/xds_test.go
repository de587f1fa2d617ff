package fleet

import (
	"reflect"
	"testing"
	"time"

	"github.com/xdssim/xdssim/model/controlplane"
	"github.com/xdssim/xdssim/model/network"
	"github.com/xdssim/xdssim/model/xdsclient"
	"github.com/xdssim/xdssim/sim"
)

// xdsConfig is a fleet of clients on a primary and a fallback server, both
// serving service "echo".
func xdsConfig(clients int, profile xdsclient.Profile) Config {
	svc := controlplane.Service{Name: "echo", EndpointCount: 3}
	return Config{
		Name: "t", Seed: 1, Duration: 3 * time.Minute, SampleInterval: time.Second,
		Groups: []Group{{
			Name: "web", Clients: clients, StartSpread: 5 * time.Second,
			Profile: profile, Servers: []int{0, 1}, Targets: []string{"echo"},
		}},
		ControlPlanes: []ControlPlane{
			{Server: controlplane.Config{Name: "primary", Services: []controlplane.Service{svc}}},
			{Server: controlplane.Config{Name: "fallback", Services: []controlplane.Service{svc}}},
		},
		Link: network.LinkConfig{Latency: sim.Constant(5 * time.Millisecond)},
	}
}

func value(t *testing.T, r *Results, name string, at time.Duration) float64 {
	t.Helper()
	return series(t, r, name)[int(at/r.SampleInterval)]
}

func TestFleetGetsItsConfigFromThePrimary(t *testing.T) {
	r := run(t, xdsConfig(50, xdsclient.GRPCGo()))
	if got := value(t, r, "xds.config_complete", 10*time.Second); got != 50 {
		t.Errorf("instances with their config at 10s = %v, want 50", got)
	}
	if got := value(t, r, "xds.primary_ready", 10*time.Second); got != 50 {
		t.Errorf("primary channels READY at 10s = %v, want 50", got)
	}
	if got := value(t, r, "control_plane.primary.open_streams", 10*time.Second); got != 50 {
		t.Errorf("primary open streams = %v, want 50", got)
	}
	if got := metric(t, r, "control_plane.fallback.streams_opened"); got != 0 {
		t.Errorf("fallback streams opened = %v, want 0", got)
	}
	// Each instance subscribes LDS, RDS, CDS, EDS: 4 requests and 4 ACKs.
	if got := metric(t, r, "control_plane.primary.acks"); got != 200 {
		t.Errorf("ACKs = %v, want 200", got)
	}
	if got := metric(t, r, "xds.resource_timer_fired"); got != 0 {
		t.Errorf("timers fired = %v, want 0", got)
	}
}

// Reference: gRFC A71, "Fallback": fallback happens only when a resource
// is not cached; clients that start while the primary is down fall back,
// and revert when the primary answers again.
func TestClientsStartingDuringAnOutageFallBackAndRevert(t *testing.T) {
	cfg := xdsConfig(50, xdsclient.GRPCGo())
	cfg.Faults = []network.Fault{{Kind: network.ServerDown, Start: 0, Duration: time.Minute, Servers: []int{0}}}
	r := run(t, cfg)
	if got := value(t, r, "xds.on_fallback", 30*time.Second); got != 50 {
		t.Errorf("on fallback at 30s = %v, want 50", got)
	}
	if got := value(t, r, "xds.config_complete", 30*time.Second); got != 50 {
		t.Errorf("config complete at 30s = %v, want 50 (served by the fallback)", got)
	}
	if got := value(t, r, "xds.on_fallback", 170*time.Second); got != 0 {
		t.Errorf("on fallback at 170s = %v, want 0 (reverted)", got)
	}
	if s, rv := metric(t, r, "xds.fallback_switches"), metric(t, r, "xds.fallback_reverts"); s != 50 || rv != 50 {
		t.Errorf("switches %v reverts %v, want 50 each", s, rv)
	}
}

// Reference: gRFC A71, "Fallback": with everything cached, an outage of
// the primary does not make clients fall back.
func TestOutageWithEverythingCachedDoesNotFallBack(t *testing.T) {
	cfg := xdsConfig(50, xdsclient.GRPCGo())
	cfg.Faults = []network.Fault{{Kind: network.ServerDown, Start: sim.Time(30 * time.Second), Duration: time.Minute, Servers: []int{0}}}
	r := run(t, cfg)
	if got := metric(t, r, "xds.fallback_switches"); got != 0 {
		t.Errorf("fallback switches = %v, want 0", got)
	}
	if got := value(t, r, "xds.config_complete", 60*time.Second); got != 50 {
		t.Errorf("config complete during the outage = %v, want 50 (cached)", got)
	}
	if got := value(t, r, "xds.primary_ready", 60*time.Second); got != 0 {
		t.Errorf("primary READY during the outage = %v, want 0", got)
	}
	if got := value(t, r, "xds.primary_ready", 170*time.Second); got != 50 {
		t.Errorf("primary READY after the outage = %v, want 50", got)
	}
}

func TestXDSRunIsDeterministic(t *testing.T) {
	cfg := xdsConfig(100, xdsclient.GRPCGo())
	cfg.Faults = []network.Fault{{Kind: network.ServerRestart, Start: sim.Time(30 * time.Second), Duration: 5 * time.Second, Servers: []int{0}}}
	a, b := run(t, cfg), run(t, cfg)
	if !reflect.DeepEqual(a, b) {
		t.Error("two runs with the same seed differ")
	}
}

func TestGroupLatencyReplacesTheServersLink(t *testing.T) {
	cfg := xdsConfig(20, xdsclient.GRPCGo())
	cfg.Groups[0].StartSpread = 0
	far := cfg.Groups[0]
	far.Name, far.Link = "far", &network.LinkConfig{Latency: sim.Constant(2 * time.Second)}
	cfg.Groups = append(cfg.Groups, far)
	r := run(t, cfg)
	// Near clients have all four resources within a few 5 ms round trips;
	// far ones need two round trips to connect and one per resource.
	if got := value(t, r, "xds.config_complete", 5*time.Second); got != 20 {
		t.Errorf("complete at 5s = %v, want only the 20 near clients", got)
	}
	if got := value(t, r, "xds.config_complete", 60*time.Second); got != 40 {
		t.Errorf("complete at 60s = %v, want all 40", got)
	}
}
