package controlplane_test

import (
	"fmt"
	"testing"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	cp "github.com/xdssim/xdssim/model/controlplane"
)

const benchStreams = 10_000

// benchFleet opens benchStreams streams, each subscribed to the four
// resources of service "a" (10 endpoints) and of its own listener set,
// with everything ACKed, so every stream holds one open watch per type.
func benchFleet(b *testing.B, k cp.CacheKind) *cp.Server {
	b.Helper()
	s := mustNew(b, cp.Config{Name: "p", Cache: k, Services: []cp.Service{svc("a", 10), svc("b", 10)}})
	subs := [cp.NumTypes][]string{{"a"}, {"a-route"}, {"a-cluster", "b-cluster"}, {"a-cluster"}}
	for id := cp.StreamID(1); id <= benchStreams; id++ {
		if err := s.OpenStream(0, id); err != nil {
			b.Fatal(err)
		}
		for typ := cp.LDS; typ < cp.NumTypes; typ++ {
			rs, err := s.Handle(0, id, cp.RequestOf(&discoverypb.DiscoveryRequest{TypeUrl: typ.TypeURL(), ResourceNames: subs[typ]}))
			if err != nil || len(rs) != 1 {
				b.Fatalf("subscribe: %d responses, %v", len(rs), err)
			}
			ack(b, s, rs, subs[typ])
		}
	}
	return s
}

// ack sends the ACK of every response, as its client would.
func ack(b *testing.B, s *cp.Server, rs []cp.Response, names []string) {
	for _, r := range rs {
		m := r.Message
		more, err := s.Handle(0, r.Stream, cp.RequestOf(&discoverypb.DiscoveryRequest{
			VersionInfo: m.GetVersionInfo(), ResourceNames: names, TypeUrl: m.GetTypeUrl(), ResponseNonce: m.GetNonce(),
		}))
		if err != nil || len(more) != 0 {
			b.Fatalf("ACK: %d responses, %v", len(more), err)
		}
	}
}

// BenchmarkEDSUpdateFanout measures one EDS update (an endpoint's health
// flips) fanned out to 10 000 streams subscribed to it, through the real
// go-control-plane cache: the cache's fan-out, draining and sorting, and
// building each stream's DiscoveryResponse from the shared resources.
// The ACKs that re-arm the watches run with the timer stopped.
func BenchmarkEDSUpdateFanout(b *testing.B) {
	for _, k := range cacheKinds {
		b.Run(k.String(), func(b *testing.B) {
			s := benchFleet(b, k)
			health := [2]corepb.HealthStatus{corepb.HealthStatus_DRAINING, corepb.HealthStatus_HEALTHY}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rs, err := s.SetEndpointHealth(0, "a", "", 0, 1, health[i%2])
				if err != nil || len(rs) != benchStreams {
					b.Fatalf("%d responses, %v", len(rs), err)
				}
				b.StopTimer()
				ack(b, s, rs, []string{"a-cluster"})
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchStreams, "ns/stream")
		})
	}
}

// BenchmarkEDSAckRewatch measures the other half of the cycle: the 10 000
// ACKs of an EDS update, each cancelling the fired watch and creating a
// new one that stays open.
func BenchmarkEDSAckRewatch(b *testing.B) {
	for _, k := range cacheKinds {
		b.Run(k.String(), func(b *testing.B) {
			s := benchFleet(b, k)
			health := [2]corepb.HealthStatus{corepb.HealthStatus_DRAINING, corepb.HealthStatus_HEALTHY}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				rs, _ := s.SetEndpointHealth(0, "a", "", 0, 1, health[i%2])
				b.StartTimer()
				ack(b, s, rs, []string{"a-cluster"})
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchStreams, "ns/stream")
		})
	}
}

// BenchmarkEDSUpdatePartialFanout is the common case the cache choice
// turns on: 10 000 streams spread over ten services, and one service's
// endpoints change. A LinearCache answers only that service's 1 000
// subscribers; a SnapshotCache answers every EDS watch, since the type's
// version changed, re-sending unchanged resources to 9 000 streams.
func BenchmarkEDSUpdatePartialFanout(b *testing.B) {
	const services = 10
	for _, k := range cacheKinds {
		b.Run(k.String(), func(b *testing.B) {
			var svcs []cp.Service
			for i := 0; i < services; i++ {
				svcs = append(svcs, svc(fmt.Sprintf("s%d", i), 10))
			}
			s := mustNew(b, cp.Config{Name: "p", Cache: k, Services: svcs})
			for id := cp.StreamID(0); id < benchStreams; id++ {
				if err := s.OpenStream(0, id); err != nil {
					b.Fatal(err)
				}
				name := fmt.Sprintf("s%d", int(id)%services)
				subs := [cp.NumTypes][]string{{name}, {name + "-route"}, {name + "-cluster"}, {name + "-cluster"}}
				for typ := cp.LDS; typ < cp.NumTypes; typ++ {
					rs, err := s.Handle(0, id, cp.RequestOf(&discoverypb.DiscoveryRequest{TypeUrl: typ.TypeURL(), ResourceNames: subs[typ]}))
					if err != nil || len(rs) != 1 {
						b.Fatalf("subscribe: %d responses, %v", len(rs), err)
					}
					ack(b, s, rs, subs[typ])
				}
			}
			health := [2]corepb.HealthStatus{corepb.HealthStatus_DRAINING, corepb.HealthStatus_HEALTHY}
			responses := 0
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rs, err := s.SetEndpointHealth(0, "s0", "", 0, 1, health[i%2])
				if err != nil {
					b.Fatal(err)
				}
				responses += len(rs)
				b.StopTimer()
				for _, r := range rs {
					name := fmt.Sprintf("s%d-cluster", int(r.Stream)%services)
					ack(b, s, []cp.Response{r}, []string{name})
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(responses)/float64(b.N), "responses/op")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(benchStreams/services), "ns/subscriber")
		})
	}
}
