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
