package fleet

import (
	"strings"
	"testing"
	"time"

	"github.com/xdssim/xdssim/model/network"
	"github.com/xdssim/xdssim/model/xdsclient"
	"github.com/xdssim/xdssim/sim"
)

// TestKeepaliveNoticesABlackholedStream checks that an established ADS
// stream whose server is blackholed is noticed by keepalive, not before:
// the channels stay READY until the ping after 5 min of silence goes
// unanswered for 20 s; then the transport closes, the stream (which had
// responses) restarts, the reconnect hangs in the blackhole until its
// deadline, and the channel reports TRANSIENT_FAILURE. Everything is
// cached, so nobody falls back (gRFC A71) and no RPC fails. Without
// keepalive the clients never notice.
func TestKeepaliveNoticesABlackholedStream(t *testing.T) {
	for _, tt := range []struct {
		name       string
		profile    xdsclient.Profile
		keepalive  network.Keepalive
		wantCloses float64
	}{
		{"grpc-go", xdsclient.GRPCGo(), network.XDSKeepalive(), 20},
		{"grpc-java", xdsclient.GRPCJava(), network.XDSKeepalive(), 20},
		{"grpc-core", xdsclient.GRPCCore(), network.XDSKeepalive(), 20},
		{"no keepalive", xdsclient.GRPCGo(), network.Keepalive{}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := xdsConfig(20, tt.profile)
			// The blackhole ends at 11m; a connection backoff is at most
			// 120 s + 20 % jitter, so by 14m every channel has tried again.
			cfg.Duration = 14 * time.Minute
			cfg.Groups[0].XDSKeepalive = tt.keepalive
			cfg.Faults = []network.Fault{{Kind: network.Blackhole, Start: sim.Time(time.Minute), Duration: 10 * time.Minute, Servers: []int{0}}}
			r := run(t, cfg)
			if got := metric(t, r, "xds.keepalive_closes"); got != tt.wantCloses {
				t.Errorf("keepalive closes = %v, want %v", got, tt.wantCloses)
			}
			ready := series(t, r, "xds.primary_ready")
			// The last reads were the configs, within the first 6 s:
			// the pings leave by 5m6s, the transports close by 5m26s.
			if got := ready[int(5*time.Minute/r.SampleInterval)]; got != 20 {
				t.Errorf("primary READY at 5m = %v, want 20: nothing tells the clients before keepalive", got)
			}
			wantLater := 0.0
			if tt.wantCloses == 0 {
				wantLater = 20
			}
			if got := ready[int(6*time.Minute/r.SampleInterval)]; got != wantLater {
				t.Errorf("primary READY at 6m = %v, want %v", got, wantLater)
			}
			if got := metric(t, r, "xds.fallback_switches"); got != 0 {
				t.Errorf("fallback switches = %v, want 0: everything is cached", got)
			}
			if got := metric(t, r, "rpc.failed"); got != 0 {
				t.Errorf("failed RPCs = %v, want 0", got)
			}
			if got := ready[len(ready)-1]; got != 20 {
				t.Errorf("primary READY at the end = %v, want 20 (reconnected after the blackhole)", got)
			}
		})
	}
	// Reference: gRFC A8 (client-side keepalive); grpc-go
	// internal/xds/clients/grpctransport (5 min, 20 s); grpc-java
	// GrpcXdsTransportFactory; C-core xds_transport_grpc.cc; gRFC A57 "Handling
	// ADS Stream Termination"; gRFC A71.
}

// TestConnectedByGroup checks the per-group share of instances connected
// to their primary server that a fleet of several xDS groups reports: all
// of each group once configured, none during an outage, all again
// after (go and java take minutes: their stream retries fail fast while
// the channel backs off).
// A group alone reports none.
func TestConnectedByGroup(t *testing.T) {
	cfg := xdsConfig(30, xdsclient.GRPCGo())
	java := cfg.Groups[0]
	java.Name, java.Clients, java.Profile = "java", 10, xdsclient.GRPCJava()
	cfg.Groups = append(cfg.Groups, java)
	cfg.Duration = 6 * time.Minute
	cfg.Faults = []network.Fault{{Kind: network.ServerDown, Start: sim.Time(time.Minute), Duration: time.Minute, Servers: []int{0}}}
	r := run(t, cfg)
	web, jv := series(t, r, "xds.primary_connected_percent.web"), series(t, r, "xds.primary_connected_percent.java")
	for _, tt := range []struct {
		at        time.Duration
		web, java float64
	}{{30 * time.Second, 100, 100}, {90 * time.Second, 0, 0}, {350 * time.Second, 100, 100}} {
		i := int(tt.at / r.SampleInterval)
		if web[i] != tt.web || jv[i] != tt.java {
			t.Errorf("connected at %v: web %v%%, java %v%%; want %v, %v", tt.at, web[i], jv[i], tt.web, tt.java)
		}
	}
	for _, s := range run(t, xdsConfig(5, xdsclient.GRPCGo())).Series {
		if strings.HasPrefix(s.Name, "xds.primary_connected_percent.") {
			t.Errorf("a fleet of one group has %s", s.Name)
		}
	}
	// Reference: gRFC A78 ("grpc.xds_client.connected").
}
