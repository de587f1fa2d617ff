package controlplane_test

import (
	"testing"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"

	cp "github.com/xdssim/xdssim/model/controlplane"
)

// TestARecycledMessageCarriesOnlyItsNextResponse: a server that builds its
// responses in the messages handed back to it (Server.Recycle) sends what
// a server that allocates each sends, field for field: among them, a
// response without resource errors built in a message that had some.
func TestARecycledMessageCarriesOnlyItsNextResponse(t *testing.T) {
	run := func(recycle bool) (sent []*discoverypb.DiscoveryResponse, reused int) {
		s := mustNew(t, cp.Config{Name: "p", ResourceErrors: true, Services: twoServices()})
		c := newClient(t, s, 1)
		handed := map[*discoverypb.DiscoveryResponse]bool{}
		read := func(rs []cp.Response) {
			for _, r := range rs {
				if handed[r.Message] {
					reused++
				}
				sent = append(sent, proto.Clone(r.Message).(*discoverypb.DiscoveryResponse))
			}
			more := c.ackAll(rs)
			if recycle {
				for _, r := range rs {
					s.Recycle(r.Message)
					handed[r.Message] = true
				}
			}
			if len(more) > 0 {
				t.Fatalf("ACKs answered: %v", summarize(more))
			}
		}
		read(c.subscribe(cp.EDS, "a-cluster", "nope"))
		read(c.subscribe(cp.CDS, "a-cluster", "b-cluster"))
		rs, err := s.DeleteResource(0, cp.EDS, "a-cluster")
		if err != nil {
			t.Fatal(err)
		}
		read(rs)
		if rs, err = s.SetService(0, cp.Service{Name: "nope", ClusterName: "nope", EndpointCount: 1}); err != nil {
			t.Fatal(err)
		}
		read(rs)
		if rs, err = s.SetService(0, svc("a", 3)); err != nil {
			t.Fatal(err)
		}
		read(rs)
		return sent, reused
	}
	want, _ := run(false)
	got, reused := run(true)
	if len(got) != len(want) {
		t.Fatalf("%d responses with recycling, %d without", len(got), len(want))
	}
	for i := range want {
		if !proto.Equal(got[i], want[i]) {
			t.Errorf("response %d:\n  recycled  %v\n  allocated %v", i, got[i], want[i])
		}
	}
	if reused == 0 {
		t.Error("no response was built in a recycled message")
	}
	var errsThenNone bool
	for i := 1; i < len(want); i++ {
		errsThenNone = errsThenNone || len(want[i-1].ResourceErrors) > 0 && len(want[i].ResourceErrors) == 0
	}
	if !errsThenNone {
		t.Error("no response without errors follows one with: the test shows less than it says")
	}
}
