package controlplane

import (
	"testing"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// TestResponseChannelsNeverFill: the cache sends into buffered channels
// without select, so a full channel would deadlock the single-threaded
// simulation. Every open watch holds a slot; generations grow as watches
// open, and old ones go once their watches are gone.
func TestResponseChannelsNeverFill(t *testing.T) {
	s, err := New(Config{Name: "p", Services: []Service{{Name: "a", EndpointCount: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	for id := StreamID(1); id <= n; id++ {
		if err := s.OpenStream(0, id); err != nil {
			t.Fatal(err)
		}
		// A version from this server and an unknown name: the watch stays
		// open.
		_, err := s.Handle(0, id, &discoverypb.DiscoveryRequest{TypeUrl: EDS.TypeURL(), ResourceNames: []string{"x"}, VersionInfo: "p/1"})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(s.watches) != n {
		t.Fatalf("%d open watches, want %d", len(s.watches), n)
	}
	open := 0
	for _, g := range s.rq.gens {
		if g.watches > cap(g.ch) {
			t.Errorf("generation of capacity %d holds %d watches", cap(g.ch), g.watches)
		}
		open += g.watches
	}
	if open != n || s.rq.capacity() < n || len(s.rq.gens) != 2 {
		t.Errorf("%d watches in %d generations of total capacity %d", open, len(s.rq.gens), s.rq.capacity())
	}
	// Every watch fires at once: the channels hold them all.
	rs, err := s.SetService(0, Service{Name: "x", ClusterName: "x", EndpointCount: 1})
	if err != nil || len(rs) != n {
		t.Fatalf("%d responses, %v", len(rs), err)
	}
	if len(s.watches) != 0 || len(s.rq.gens) != 1 {
		t.Errorf("after firing: %d watches, %d generations", len(s.watches), len(s.rq.gens))
	}
}
