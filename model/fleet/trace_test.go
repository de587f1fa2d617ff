package fleet

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xdssim/xdssim/model/network"
	"github.com/xdssim/xdssim/model/xdsclient"
	"github.com/xdssim/xdssim/sim"
)

// requests runs cfg and returns, per client, the requests its servers
// received, one line each.
func requests(t *testing.T, cfg Config) (map[string][]string, *Results) {
	t.Helper()
	out := map[string][]string{}
	r, err := Run(cfg, Options{Trace: func(e *TraceEvent) {
		if e.Kind == TraceRequest {
			out[e.Client] = append(out[e.Client], fmt.Sprintf("%s %s %s v=%q n=%q [%s] nack=%v",
				e.Server, e.Kind, e.Type, e.Version, e.Nonce, strings.Join(e.Names, " "), e.NACK))
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	return out, r
}

func TestTracingDoesNotChangeTheRun(t *testing.T) {
	cfg := xdsConfig(20, xdsclient.GRPCGo())
	cfg.Faults = []network.Fault{{Kind: network.ServerDown, Start: sim.Time(20 * time.Second), Duration: 30 * time.Second, Servers: []int{0}}}
	cfg.Groups[0].RPC = RPCLoad{Rate: 5, Deadline: time.Second}
	_, traced := requests(t, cfg)
	// Printed, because series hold NaN where a sample has no RPCs.
	if plain := run(t, cfg); fmt.Sprintf("%+v", plain) != fmt.Sprintf("%+v", traced) {
		t.Error("a traced run differs from the same run without a tracer")
	}
}

// outageFleet is xdsConfig's fleet of clients running profile p, sending
// 5 RPCs/s each, under a 30 s outage of the primary from 20 s, during
// which a fraction of them restart (at 25 s, down 2 s).
func outageFleet(clients int, p xdsclient.Profile, fraction float64) Config {
	cfg := xdsConfig(clients, p)
	cfg.Faults = []network.Fault{{Kind: network.ServerDown, Start: sim.Time(20 * time.Second), Duration: 30 * time.Second, Servers: []int{0}}}
	cfg.Restarts = []Restart{{At: 25 * time.Second, Fraction: fraction, Downtime: 2 * time.Second}}
	cfg.Groups[0].RPC = RPCLoad{Rate: 5, Deadline: time.Second, Method: "/xdssim.Echo/Call"}
	cfg.DataPlane.WindowGap = 5 * time.Second
	return cfg
}

// TestTracingChosenClientsDoesNotChangeTheRun: tracing every client,
// one client or one of its targets leaves the run exactly as it is
// without a tracer, and the tracer hears only of the clients named.
func TestTracingChosenClientsDoesNotChangeTheRun(t *testing.T) {
	cfg := outageFleet(20, xdsclient.GRPCGo(), 0.3)
	plain := fmt.Sprintf("%+v", run(t, cfg))
	for _, tt := range []struct {
		name    string
		clients []string
		want    string // the only client/target traced; "" for any
	}{
		{"every client", nil, ""},
		{"one client", []string{"web/7"}, "web/7/echo"},
		{"one target of one client", []string{"web/3/echo"}, "web/3/echo"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			kinds := map[TraceKind]int{}
			r, err := Run(cfg, Options{TraceClients: tt.clients, Trace: func(e *TraceEvent) {
				kinds[e.Kind]++
				if got := e.Client + "/" + e.Target; tt.want != "" && got != tt.want {
					t.Fatalf("traced %s, want only %s", got, tt.want)
				}
			}})
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprintf("%+v", r) != plain {
				t.Error("a traced run differs from the same run without a tracer")
			}
			for _, k := range []TraceKind{TraceClientStart, TraceConnectivity, TraceStreamOpen, TraceSend, TraceReceive,
				TraceTimerArmed, TraceTimerCancelled, TraceNotify, TracePick, TraceAttempt, TraceRPC} {
				if kinds[k] == 0 {
					t.Errorf("no %v event traced", k)
				}
			}
		})
	}
}

func TestClientRefsNameAClientAndMaybeOneTarget(t *testing.T) {
	cfg := xdsConfig(3, xdsclient.GRPCGo())
	cfg.Groups = append(cfg.Groups, Group{Name: "plain", Clients: 2})
	tests := []struct {
		name, err string
	}{
		{"web/0", ""},
		{"web/2/echo", ""},
		{"web", `expected GROUP/INDEX or GROUP/INDEX/TARGET`},
		{"web/x", `expected a client index (0, 1, …) after "web/", found "x"`},
		{"web/-1", `expected a client index`},
		{"web/00", `expected a client index (0, 1, …) after "web/", found "00"`},
		{"web/+1", `expected a client index`},
		{"web/1/", `expected a target after the index`},
		{"web/3", `group web has 3 clients, web/0 to web/2`},
		{"api/0", `no group is named "api" (groups: web, plain)`},
		{"web/0/other", `group web has no target "other" (targets: echo)`},
		{"plain/0", `group plain has no xDS servers`},
	}
	for _, tt := range tests {
		err := cfg.CheckClient(tt.name)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("CheckClient(%q) = %v, want ok", tt.name, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("CheckClient(%q) = %v, want an error with %q", tt.name, err, tt.err)
		}
		if ref, err := ParseClientRef(tt.name); err == nil && ref.String() != tt.name {
			t.Errorf("ParseClientRef(%q).String() = %q", tt.name, ref.String())
		}
	}
	if _, err := Run(cfg, Options{Trace: func(*TraceEvent) {}, TraceClients: []string{"web/9"}}); err == nil {
		t.Error("a run tracing a client the fleet lacks did not fail")
	}
}

// TestTraceNamesTheRuleOfEveryEvent: every event a traced run reports
// names the rule it follows (docs/architecture.md, Fidelity rules ("every behaviour cites its
// source").
func TestTraceNamesTheRuleOfEveryEvent(t *testing.T) {
	cfg := outageFleet(5, xdsclient.GRPCJava(), 1)
	_, err := Run(cfg, Options{Trace: func(e *TraceEvent) {
		if e.Rule == "" {
			t.Errorf("%v event at %v names no rule", e.Kind, e.At)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
}

// Mirrors grpc-go TestADS_ACK_NACK_Simple's first exchange and the xDS
// resolver's LDS -> RDS -> CDS -> EDS chain: each type is requested with
// an empty version and nonce, then ACKed with the response's.
func TestTraceShowsEachRequestAndItsACK(t *testing.T) {
	cfg := xdsConfig(1, xdsclient.GRPCGo())
	cfg.Duration = 10 * time.Second
	got, _ := requests(t, cfg)
	want := []string{
		`primary request LDS v="" n="" [echo] nack=false`,
		`primary request LDS v="primary/1" n="1" [echo] nack=false`,
		`primary request RDS v="" n="" [echo-route] nack=false`,
		`primary request RDS v="primary/1" n="2" [echo-route] nack=false`,
		`primary request CDS v="" n="" [echo-cluster] nack=false`,
		`primary request CDS v="primary/1" n="3" [echo-cluster] nack=false`,
		`primary request EDS v="" n="" [echo-cluster] nack=false`,
		`primary request EDS v="primary/1" n="4" [echo-cluster] nack=false`,
	}
	if !slices.Equal(got["web/0"], want) {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(got["web/0"], "\n"), strings.Join(want, "\n"))
	}
}

// When the Listener is deleted, grpc-go's dependency manager stops only
// the route watch and keeps its cluster and endpoint watches until it has
// a listener and route again (gRFC A74; grpc-go xdsdepmgr
// onListenerResourceError; found by validate/cases/deletion.toml against
// grpc-go 1.84).
func TestListenerDeletionUnsubscribesOnlyTheRoute(t *testing.T) {
	cfg := xdsConfig(1, xdsclient.GRPCGo())
	cfg.Duration = 20 * time.Second
	cfg.Changes = []Change{
		{At: 5 * time.Second, Servers: []int{0}, Action: DeleteService, Service: "echo"},
		{At: 12 * time.Second, Servers: []int{0}, Action: RestoreService, Service: "echo"},
	}
	got, _ := requests(t, cfg)
	var unsubscribed []string
	for _, r := range got["web/0"] {
		if strings.Contains(r, "[]") {
			unsubscribed = append(unsubscribed, strings.Fields(r)[2])
		}
	}
	if want := []string{"RDS"}; !slices.Equal(unsubscribed, want) {
		t.Errorf("types unsubscribed after the deletion: %v, want %v\n%s", unsubscribed, want, strings.Join(got["web/0"], "\n"))
	}
}
