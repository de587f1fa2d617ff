package fleet

import (
	"math"
	"testing"
	"time"

	"github.com/xdssim/xdssim/model/controlplane"
	"github.com/xdssim/xdssim/model/network"
)

// splitConfig is rpcConfig with "echo" split 90/10 between a stable and a
// canary cluster.
func splitConfig(clients int) Config {
	cfg := rpcConfig(clients)
	cfg.ControlPlanes[0].Server.Services[0].Clusters = []controlplane.Cluster{
		{Name: "stable", Weight: 90, EndpointCount: 3}, {Name: "canary", Weight: 10, EndpointCount: 1}}
	return cfg
}

// TestDeletingACanaryClusterFailsOnlyItsShare deletes only the canary's
// Cluster and ClusterLoadAssignment at 60 s: the CDS deletion reaches every
// client (SotW full state), the canary's cluster fails its picks with
// cause resource_deleted, and the 10 % of RPCs routed to it fail while
// the stable cluster serves the rest. Restoring it at 90 s ends that.
func TestDeletingACanaryClusterFailsOnlyItsShare(t *testing.T) {
	cfg := splitConfig(20)
	cfg.Duration = 2 * time.Minute
	cfg.Changes = []Change{
		{At: 60 * time.Second, Action: DeleteService, Service: "echo", Cluster: "canary",
			Resources: controlplane.TypesOf(controlplane.CDS, controlplane.EDS)},
		{At: 90 * time.Second, Action: RestoreService, Service: "echo", Cluster: "canary",
			Resources: controlplane.TypesOf(controlplane.CDS, controlplane.EDS)},
	}
	r := run(t, cfg)
	total, failed := metric(t, r, "rpc.total"), metric(t, r, "rpc.failed")
	// 30 s of 120 s, 10 % of the RPCs: 2.5 % of them fail.
	if share := failed / total; math.Abs(share-0.025) > 0.005 {
		t.Errorf("failed share = %.4f, want about 0.025", share)
	}
	if got, all := metric(t, r, "failure_windows.by_cause.resource_deleted.count"), metric(t, r, "failure_windows.count"); got != all || got < 20 {
		t.Errorf("resource_deleted windows = %v of %v, want every one, at least one per client", got, all)
	}
	// Reference: gRFC A28 (weighted_clusters), A74 (a cluster's error
	// fails only the RPCs routed to it).
}

// TestNoConfigCauseTellsReachableFromUnreachable: clients whose server
// is up but withholds the route wait for a config that does not come
// (no_config_resource_not_sent, until the route's does-not-exist timer
// fires after 15 s); clients whose server is blackholed cannot reach it
// (no_config_cp_unreachable).
func TestNoConfigCauseTellsReachableFromUnreachable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(*Config)
		cause string
	}{
		{"withheld route", func(c *Config) {
			c.ControlPlanes[0].Server.Services[0].Withhold = controlplane.TypesOf(controlplane.RDS)
		},
			"no_config_resource_not_sent"},
		{"blackholed server", func(c *Config) {
			c.Faults = []network.Fault{{Kind: network.Blackhole, Start: 0, Duration: network.Forever, Servers: []int{0}}}
		}, "no_config_cp_unreachable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := rpcConfig(5)
			cfg.Duration = 12 * time.Second
			cfg.Groups[0].StartAt, cfg.Groups[0].StartSpread = time.Second, 0
			tc.setup(&cfg)
			r := run(t, cfg)
			if got, all := metric(t, r, "failure_windows.by_cause."+tc.cause+".count"), metric(t, r, "failure_windows.count"); got != 5 || all != 5 {
				t.Errorf("%s windows = %v of %v, want 5 of 5", tc.cause, got, all)
			}
		})
	}
	// The simulator's ground truth (docs/architecture.md, Fidelity rules): a READY
	// channel whose messages the network delivers reaches its server.
}

// TestHeldBlackholeHealsAtOnce: the primary is blackholed for the first
// 8 s while the clients start. Behind a hold (TCP accepted, bytes held)
// the connect attempt in flight completes as the hold clears; behind
// dropped SYNs it completes only at the SYN retransmitted 15 s after it
// began (1 + 2 + 4 + 8 s). The clients fail until they have a config.
func TestHeldBlackholeHealsAtOnce(t *testing.T) {
	for _, tc := range []struct {
		kind     network.FaultKind
		min, max float64
	}{
		{network.BlackholeHold, 6.5, 7.5},
		{network.Blackhole, 13.5, 14.5},
	} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			cfg := rpcConfig(5)
			cfg.Duration = 30 * time.Second
			cfg.Groups[0].StartAt, cfg.Groups[0].StartSpread = 0, 0
			cfg.Faults = []network.Fault{{Kind: tc.kind, Start: 0, Duration: 8 * time.Second, Servers: []int{0}}}
			r := run(t, cfg)
			if got := metric(t, r, "failure_windows.duration_seconds.max"); got < tc.min || got > tc.max {
				t.Errorf("longest window = %.2f s, want %v to %v", got, tc.min, tc.max)
			}
		})
	}
	// Reference: grpc-go clientconn.go createTransport (the preface awaited
	// until the connect deadline); RFC 6298 §2 (SYN retransmission).
}

// TestSingleResourceChangesActLikeTheirType changes one type of a
// service: a client reacts as that type makes it. A route withheld from
// the start is waited for, then its does-not-exist timer fires (gRFC
// A57); a route or endpoints deleted after the client has them are never
// announced in state-of-the-world xDS and nothing fails; a Cluster deleted
// is a deletion, and the RPCs fail resource_deleted.
func TestSingleResourceChangesActLikeTheirType(t *testing.T) {
	deleteAt := func(ts ...controlplane.ResourceType) func(*Config) {
		return func(c *Config) {
			c.Changes = []Change{{At: 20 * time.Second, Action: DeleteService, Service: "echo", Resources: controlplane.TypesOf(ts...)}}
		}
	}
	for _, tc := range []struct {
		name          string
		setup         func(*Config)
		timers        float64
		failedWindows map[string]bool // the causes of every window
	}{
		{"route withheld from the start", func(c *Config) {
			c.ControlPlanes[0].Server.Services[0].Withhold = controlplane.TypesOf(controlplane.RDS)
		},
			5, map[string]bool{"resource_does_not_exist": true}},
		{"route deleted once cached", deleteAt(controlplane.RDS), 0, nil},
		{"endpoints deleted once cached", deleteAt(controlplane.EDS), 0, nil},
		{"cluster deleted once cached", deleteAt(controlplane.CDS), 0, map[string]bool{"resource_deleted": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := rpcConfig(5)
			cfg.Duration = 50 * time.Second
			cfg.Groups[0].StartAt, cfg.Groups[0].StartSpread = time.Second, 0
			tc.setup(&cfg)
			r := run(t, cfg)
			if got := metric(t, r, "xds.resource_timer_fired"); got != tc.timers {
				t.Errorf("timers fired = %v, want %v", got, tc.timers)
			}
			windows := metric(t, r, "failure_windows.count")
			if len(tc.failedWindows) == 0 && windows != 0 {
				t.Errorf("%v failure windows, want none", windows)
			}
			for cause := range tc.failedWindows {
				if got := metric(t, r, "failure_windows.by_cause."+cause+".count"); got != windows || got < 5 {
					t.Errorf("%s windows = %v of %v, want all, at least one per client", cause, got, windows)
				}
			}
		})
	}
	// Reference: the xDS protocol (SotW: LDS and CDS responses are full
	// state, RDS and EDS are not); gRFC A57 (the timer).
}
