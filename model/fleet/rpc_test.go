package fleet

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/xdssim/xdssim/model/controlplane"
	"github.com/xdssim/xdssim/model/dataplane"
	"github.com/xdssim/xdssim/model/network"
	"github.com/xdssim/xdssim/model/xdsclient"
	"github.com/xdssim/xdssim/sim"
)

// rpcConfig is a fleet on one server serving "echo" with three
// endpoints, each client sending 10 RPCs/s with a 1 s deadline.
func rpcConfig(clients int) Config {
	cfg := xdsConfig(clients, xdsclient.GRPCGo())
	cfg.ControlPlanes = cfg.ControlPlanes[:1]
	cfg.Groups[0].Servers = []int{0}
	cfg.Groups[0].RPC = RPCLoad{Rate: 10, Deadline: time.Second, Method: "/e.E/C"}
	cfg.Groups[0].DataPlane = dataplane.ProfileByName("grpc-go")
	cfg.DataPlane = DataPlane{WindowGap: time.Second, Backend: dataplane.Backend{ServiceTime: sim.Constant(2 * time.Millisecond)}}
	return cfg
}

// echoBackends are the keys of the "echo" backends first .. first+n-1.
func echoBackends(first, n int) []string {
	var keys []string
	for i := first; i < first+n; i++ {
		keys = append(keys, BackendKey("echo-cluster", controlplane.GeneratedAddress(i), controlplane.DefaultPort))
	}
	return keys
}

// TestStaleEDSWindowIsLabelledBackendDownStaleEDS replaces every backend
// of "echo" (a rolling deploy: new addresses, old processes stopped) while
// half the clients are cut off from the control plane. Those keep their
// old endpoints and fail until the partition heals; the others move to the
// new endpoints and do not fail.
func TestStaleEDSWindowIsLabelledBackendDownStaleEDS(t *testing.T) {
	for _, tc := range []struct {
		name      string
		partition bool
	}{{"partitioned clients keep stale EDS", true}, {"connected clients follow the deploy", false}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := rpcConfig(40)
			if tc.partition {
				cfg.Faults = []network.Fault{{Kind: network.Partition, Start: sim.Time(0).Add(60 * time.Second),
					Duration: 60 * time.Second, Fraction: 0.5}}
			}
			cfg.Changes = []Change{{At: 70 * time.Second, Action: ReplaceEndpoints, Service: "echo", First: 0, Count: 3}}
			cfg.BackendEvents = []BackendEvent{{At: 75 * time.Second, Action: BackendDown, Backends: echoBackends(0, 3), Label: "old echo down"}}
			r := run(t, cfg)
			stale := metric(t, r, "failure_windows.by_cause.backend_down_stale_eds.count")
			failed := metric(t, r, "rpc.failed")
			if !tc.partition {
				if failed != 0 {
					t.Errorf("rpc.failed = %v, want 0: every client had the new endpoints before the old ones stopped", failed)
				}
				return
			}
			if stale < 15 || stale != metric(t, r, "failure_windows.count") {
				t.Errorf("stale-EDS windows = %v of %v, want one per partitioned client (about 20)", stale, metric(t, r, "failure_windows.count"))
			}
			// The windows run from the old backends' stop to when the
			// partition heals and the clients reconnect.
			if p50 := metric(t, r, "failure_windows.duration_seconds.p50"); p50 < 40 || p50 > 60 {
				t.Errorf("window p50 = %vs, want about 45 s (75 s to 120 s and a reconnect)", p50)
			}
		})
	}
}

// TestSpuriousTimerWindowGoesWithTheLongerTimer runs clients (spec
// profile: A88) against a server that takes 16 s to answer a request. With
// the 15 s resource timer every resource is reported missing while the
// server holds it, and the RPCs waiting for a config (no deadline) fail
// with cause resource_timer_spurious; with
// resource_timer_is_transient_error (30 s, gRFC A88) they wait and succeed.
func TestSpuriousTimerWindowGoesWithTheLongerTimer(t *testing.T) {
	for _, tc := range []struct {
		name      string
		transient bool
	}{{"15 s timer", false}, {"30 s timer", true}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := rpcConfig(20)
			cfg.Groups[0].Profile = xdsclient.Spec()
			cfg.Groups[0].RPC.Deadline = 0
			cfg.ControlPlanes[0].Server.Capacity = controlplane.Capacity{ServiceTime: sim.Constant(16 * time.Second)}
			cfg.Groups[0].Features.ResourceTimerIsTransientError = tc.transient
			r := run(t, cfg)
			spurious := metric(t, r, "failure_windows.by_cause.resource_timer_spurious.count")
			fired := metric(t, r, "xds.resource_timer_spurious")
			if tc.transient {
				if spurious != 0 || fired != 0 || metric(t, r, "rpc.failed") != 0 {
					t.Errorf("with the 30 s timer: %v spurious windows, %v spurious firings, %v failed RPCs; want none",
						spurious, fired, metric(t, r, "rpc.failed"))
				}
				return
			}
			if spurious < 20 || fired < 20 {
				t.Errorf("with the 15 s timer: %v spurious windows, %v spurious firings; want at least one per client", spurious, fired)
			}
		})
	}
	// Reference: gRFC A57, "Handling Resources That Do Not Exist"; gRFC
	// A88, resource_timer_is_transient_error.
}

// TestRetryAfterTheConfigIsGoneFailsWithItsCause deletes the service while
// RPCs wait to retry against failing backends: the retries find no config
// (the resolver reported the deletion) and fail with cause
// resource_deleted instead of reaching a backend.
func TestRetryAfterTheConfigIsGoneFailsWithItsCause(t *testing.T) {
	cfg := rpcConfig(20)
	cfg.ControlPlanes[0].Server.Services[0].Retry = &controlplane.RetryPolicy{NumRetries: 4, BaseInterval: 300 * time.Millisecond}
	cfg.Groups[0].RPC.Deadline = 5 * time.Second
	cfg.BackendEvents = []BackendEvent{{At: 30 * time.Second, Action: BackendFail, Backends: echoBackends(0, 3),
		ErrorRate: 1, ErrorCode: codes.Unavailable, Label: "echo fails"}}
	cfg.Changes = []Change{{At: 60 * time.Second, Action: DeleteService, Service: "echo"}}
	r := run(t, cfg)
	if got := metric(t, r, "failure_windows.by_cause.resource_deleted.count"); got == 0 {
		t.Errorf("no resource_deleted window after the service was deleted")
	}
	if got := metric(t, r, "retries.attempts"); got == 0 {
		t.Errorf("no retries against the failing backends")
	}
	// Reference: gRFC A88 (a deleted Listener is a ResourceChanged error;
	// the resolver reports it and picks fail); gRFC A6 (each retry picks
	// again).
}

// TestFirstRPCGoesAsTheClientStarts: a client's first RPC to a target goes
// as the client starts (RandomStart false, rpc.start = "immediate") and
// waits in the channel for its first config, as a real application's first
// RPC on a new channel starts its resolution and waits for it (grpc-go
// stream.go newClientStream, waitForResolvedAddrs; grpc-java
// ManagedChannelImpl RealChannel.newCall; C-core client_channel_filter.cc
// CheckResolution). With every control plane behind a blackhole no config
// comes and nothing fails the connect within the run, so every client's
// first RPC ends DEADLINE_EXCEEDED one deadline (1 s) after its start at
// 0. At a random start, at 0.01 RPCs/s, the first RPC comes a
// random phase of 100 s later, and when it comes after the 20 s connect
// timeout, the channel's failure fails it at once (UNAVAILABLE).
func TestFirstRPCGoesAsTheClientStarts(t *testing.T) {
	const clients = 20
	for _, tc := range []struct {
		name             string
		random, constant bool
	}{
		{"immediate, Poisson arrivals", false, false},
		{"immediate, constant arrivals", false, true},
		{"random, Poisson arrivals", true, false},
		{"random, constant arrivals", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := rpcConfig(clients)
			cfg.Duration = 30 * time.Second
			cfg.Groups[0].StartSpread = 0
			cfg.Groups[0].RPC.Rate = 0.01
			cfg.Groups[0].RPC.Constant = tc.constant
			cfg.Groups[0].RPC.RandomStart = tc.random
			cfg.Faults = []network.Fault{{Kind: network.Blackhole, Start: 0, Duration: network.Forever}}
			type end struct {
				at   time.Duration
				code codes.Code
			}
			first := map[string]end{} // client: how its first RPC ended
			_, err := Run(cfg, Options{Trace: func(e *TraceEvent) {
				if _, seen := first[e.Client]; e.Kind == TraceRPC && !seen {
					first[e.Client] = end{e.At, e.Code}
				}
			}})
			if err != nil {
				t.Fatal(err)
			}
			atDeadline := 0
			for _, e := range first {
				if e == (end{time.Second, codes.DeadlineExceeded}) {
					atDeadline++
				}
			}
			want := 0
			if !tc.random {
				want = clients
			}
			if atDeadline != want {
				t.Errorf("%d clients' first RPC ended DEADLINE_EXCEEDED at 1s (their start plus the deadline), want %d; first RPCs: %v", atDeadline, want, first)
			}
		})
	}
}
