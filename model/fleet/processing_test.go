package fleet

import (
	"testing"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/xdssim/xdssim/model/controlplane"
	"github.com/xdssim/xdssim/model/network"
	"github.com/xdssim/xdssim/model/xdsclient"
	"github.com/xdssim/xdssim/sim"
)

// processingConfig is one grpc-go client of server "primary" on a 5 ms
// link, taking client per response and the server server per request.
func processingConfig(client, server time.Duration) Config {
	return processingConfigOf(sim.Constant(client), sim.Constant(server))
}

func processingConfigOf(client, server sim.Dist) Config {
	cfg := xdsConfig(1, xdsclient.GRPCGo())
	cfg.Duration = 10 * time.Second
	cfg.Groups[0].StartSpread = 0
	cfg.Groups[0].Servers = []int{0}
	cfg.Groups[0].ProcessingTime = client
	cfg.ControlPlanes = cfg.ControlPlanes[:1]
	cfg.ControlPlanes[0].Server.Capacity.ProcessingTime = server
	return cfg
}

// stormConfig is processingConfigOf's client and server in a NACK storm
// from the start, for 2 s, on a link of latency each way: the server
// resends every NACK of a Cluster the client rejects.
func stormConfig(client, server sim.Dist, latency time.Duration) Config {
	cfg := processingConfigOf(client, server)
	cfg.Link = network.LinkConfig{Latency: sim.Constant(latency)}
	cfg.Duration = 2 * time.Second
	cfg.ControlPlanes[0].Server.OnNACK = controlplane.ResendNACKs
	cfg.ControlPlanes[0].Server.Services[0].Defect = controlplane.DefectClusterLBPolicy
	return cfg
}

// exchange is one request or response of a trace, at the server.
type exchange struct {
	at       time.Duration
	response bool
	typ      xdsclient.ResourceType
	nack     bool
	ack      bool // a request answering a response (a nonce)
}

// exchanges runs cfg and returns what its servers received and sent, in
// order.
func exchanges(t *testing.T, cfg Config) []exchange {
	t.Helper()
	var out []exchange
	_, err := Run(cfg, Options{Trace: func(e *TraceEvent) {
		switch e.Kind {
		case TraceRequest:
			out = append(out, exchange{at: e.At, typ: e.Type, nack: e.NACK, ack: e.Nonce != "" && !e.NACK})
		case TraceResponse:
			out = append(out, exchange{at: e.At, response: true, typ: e.Type})
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestProcessingDelaysTheACKAndTheNextWatch: a client's ACK leaves its
// processing time after the response arrives, and so does what its
// watchers do (the resolver's next watch goes out with the ACK); the
// server answers a request its processing time after it arrives. So each
// type's ACK reaches the server 2 × 5 ms + the client's time after the
// response left, and each response leaves the server's time after its
// request. Reference: grpc-go ads_stream.go recv and onRecv (the ACK is
// written once the response is decoded and validated), go-control-plane
// sotw/v3 server.go process.
func TestProcessingDelaysTheACKAndTheNextWatch(t *testing.T) {
	for _, tt := range []struct {
		name           string
		client, server time.Duration
	}{
		{"no processing", 0, 0},
		{"client 3 ms, server 1 ms", 3 * time.Millisecond, time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ex := exchanges(t, processingConfig(tt.client, tt.server))
			var lastRequest, lastResponse = map[xdsclient.ResourceType]time.Duration{}, map[xdsclient.ResourceType]time.Duration{}
			acks := 0
			for _, e := range ex {
				switch {
				case e.response:
					if got, want := e.at-lastRequest[e.typ], tt.server; got != want {
						t.Errorf("%v response %v after its request, want %v", e.typ, got, want)
					}
					lastResponse[e.typ] = e.at
				case e.ack:
					acks++
					if got, want := e.at-lastResponse[e.typ], 10*time.Millisecond+tt.client; got != want {
						t.Errorf("%v ACK reached the server %v after the response left, want %v", e.typ, got, want)
					}
				default:
					lastRequest[e.typ] = e.at
				}
			}
			if acks != 4 {
				t.Fatalf("%d ACKs, want 4 (LDS, RDS, CDS, EDS)", acks)
			}
			// The watch of the next type goes out with the ACK of the one
			// that names it: the RDS request reaches the server with the
			// LDS ACK.
			var ldsACK, rdsRequest time.Duration
			for _, e := range ex {
				if e.ack && e.typ == xdsclient.LDS {
					ldsACK = e.at
				}
				if !e.response && !e.ack && e.typ == xdsclient.RDS && rdsRequest == 0 {
					rdsRequest = e.at
				}
			}
			if rdsRequest != ldsACK {
				t.Errorf("RDS request at %v, LDS ACK at %v: the watchers are notified when the ACK is written", rdsRequest, ldsACK)
			}
		})
	}
}

// TestResponsesArrivingTogetherAreProcessedOneAtATime: a snapshot cache
// re-sends all four types at once when one endpoint changes; the client
// reads and processes one response at a time, so its four ACKs leave
// 3 ms apart. Reference: grpc-go ads_stream.go recv (one Recv, then
// onRecv, then the next Recv); go-control-plane simple.go
// respondSOTWWatches.
func TestResponsesArrivingTogetherAreProcessedOneAtATime(t *testing.T) {
	cfg := processingConfig(3*time.Millisecond, 0)
	cfg.ControlPlanes[0].Server.Cache = controlplane.SnapshotCache
	change := 5 * time.Second
	cfg.Changes = []Change{{At: change, Servers: []int{0}, Action: ScaleEndpoints, Service: "echo", Count: 4}}
	var acks []time.Duration
	for _, e := range exchanges(t, cfg) {
		if e.ack && e.at > change {
			acks = append(acks, e.at-change)
		}
	}
	want := []time.Duration{13 * time.Millisecond, 16 * time.Millisecond, 19 * time.Millisecond, 22 * time.Millisecond}
	if len(acks) != len(want) {
		t.Fatalf("ACKs after the change at %v, want %v", acks, want)
	}
	for i := range want {
		if acks[i] != want[i] {
			t.Errorf("ACK %d at change + %v, want + %v (5 ms there, 3 ms each, 5 ms back)", i+1, acks[i], want[i])
		}
	}
}

// TestNACKStormRateIsOneRoundTripPlusBothProcessingTimes: a server that
// resends every NACK at once and a client that NACKs every copy spin at
// one NACK per 2 × link + the client's time + the server's time.
// Reference: go-control-plane simple.go CreateWatch (a NACK's version
// differs from the snapshot's), grpc-go NACKs with the last accepted
// version (ads_stream.go); validate/ nack-policy.
func TestNACKStormRateIsOneRoundTripPlusBothProcessingTimes(t *testing.T) {
	cfg := stormConfig(sim.Constant(3*time.Millisecond), sim.Constant(time.Millisecond), time.Millisecond)
	var nacks []time.Duration
	for _, e := range exchanges(t, cfg) {
		if e.nack {
			nacks = append(nacks, e.at)
		}
	}
	if len(nacks) < 100 {
		t.Fatalf("%d NACKs, want a storm", len(nacks))
	}
	for i := 1; i < len(nacks); i++ {
		if d := nacks[i] - nacks[i-1]; d != 6*time.Millisecond {
			t.Fatalf("NACK %d came %v after the one before, want 6ms (1 ms there, 1 ms server, 1 ms back, 3 ms client)", i+1, d)
		}
	}
}

// TestAStreamThatFailsWhileAResponseIsProcessedTakesItAlong: the server
// resets the stream 2 ms into the client's 3 ms of processing of the
// first LDS response; the response is never applied (no ACK of it on the
// new stream: the client re-requests LDS from scratch, version "").
func TestAStreamThatFailsWhileAResponseIsProcessedTakesItAlong(t *testing.T) {
	cfg := processingConfig(3*time.Millisecond, 0)
	var sent time.Duration // the first LDS response leaves the server
	for _, e := range exchanges(t, cfg) {
		if e.response {
			sent = e.at
			break
		}
	}
	// It reaches the client 5 ms later; processing would end 3 ms after.
	cfg.Faults = []network.Fault{{Kind: network.ServerRestart, Start: sim.Time(sent + 7*time.Millisecond), Duration: time.Second, Servers: []int{0}}}
	got, _ := requests(t, cfg)
	lines := got["web/0"]
	if len(lines) < 2 {
		t.Fatalf("requests: %v", lines)
	}
	if want := `primary request LDS v="" n="" [echo] nack=false`; lines[0] != want || lines[1] != want {
		t.Errorf("first two requests %q, %q; want the first request twice (the response read during the reset was never applied)", lines[0], lines[1])
	}
}

// TestAStalledStreamHoldsTheResponsesAfterIt: grpc-go stops reading an
// ADS stream for good after a response of a type it does not know
// (xdsclient Profile.UnknownTypeStallsReads). The conn keeps that pause
// itself (connReadPaused), so a response behind the one that stalled the
// stream waits in the conn's queue, and the XdsClient, which panics when
// handed a response while its reads are paused, never sees it.
func TestAStalledStreamHoldsTheResponsesAfterIt(t *testing.T) {
	cfg := processingConfig(0, 0)
	w, err := build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.kernel.Run(sim.Time(0).Add(time.Second))
	const ci = 0
	c := &w.conns[ci]
	if !c.st.Received() {
		t.Fatal("the stream had no response in its first second")
	}
	unknown := &discoverypb.DiscoveryResponse{VersionInfo: "1", Nonce: "100", TypeUrl: "type.googleapis.com/unknown.Type"}
	after := &discoverypb.DiscoveryResponse{VersionInfo: "1", Nonce: "101", TypeUrl: xdsclient.ListenerTypeURL}
	c.toClient.push(inbound{resp: unknown, arrived: true}, &w.inSpares)
	c.toClient.push(inbound{resp: after, arrived: true}, &w.inSpares)
	w.readResponses(ci)
	if c.flags&connReadPaused == 0 || !w.insts[c.inst].xds.ReadPaused(int(c.local)) {
		t.Fatalf("after an unknown type: conn paused %v, XdsClient paused %v, want both",
			c.flags&connReadPaused != 0, w.insts[c.inst].xds.ReadPaused(int(c.local)))
	}
	if n := c.toClient.len(); n != 1 || c.toClient.front().resp != after {
		t.Errorf("%d responses held, want the one after the unknown type", n)
	}
}
