package controlplane

import (
	"fmt"
	"reflect"
	"testing"
	"unsafe"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/xdssim/xdssim/sim"
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
		// A version from this server, a different one on each stream so
		// that no two share a watch, and an unknown name: the watch stays
		// open.
		_, err := s.Handle(0, id, RequestOf(&discoverypb.DiscoveryRequest{TypeUrl: EDS.TypeURL(), ResourceNames: []string{"x"}, VersionInfo: fmt.Sprintf("p/1.%d", id)}))
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

// TestStreamsAskingAlikeShareAWatch: streams whose requests the cache
// would answer alike (type, version, subscription) share one
// go-control-plane watch; a stream that leaves does not cancel it for
// the others, and when it fires every stream still waiting gets a
// response of its own.
func TestStreamsAskingAlikeShareAWatch(t *testing.T) {
	s, err := New(Config{Name: "p", Services: []Service{{Name: "a", EndpointCount: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	for id := StreamID(1); id <= n; id++ {
		if err := s.OpenStream(0, id); err != nil {
			t.Fatal(err)
		}
		names := []string{"x"}
		if id == n {
			names = []string{"x", "y"} // another subscription: a watch of its own
		}
		if _, err := s.Handle(0, id, RequestOf(&discoverypb.DiscoveryRequest{TypeUrl: EDS.TypeURL(), ResourceNames: names, VersionInfo: "p/1"})); err != nil {
			t.Fatal(err)
		}
	}
	if len(s.watches) != 2 || len(s.groups) != 2 {
		t.Fatalf("%d streams, two subscriptions: %d watches, %d groups; want 2", n, len(s.watches), len(s.groups))
	}
	s.CloseStream(0, 1)
	s.CloseStream(0, n)
	if len(s.watches) != 1 {
		t.Fatalf("after two streams closed: %d watches, want 1 (the other streams still wait)", len(s.watches))
	}
	rs, err := s.SetService(0, Service{Name: "x", ClusterName: "x", EndpointCount: 1})
	if err != nil || len(rs) != n-2 {
		t.Fatalf("%d responses, %v; want %d", len(rs), err, n-2)
	}
	for i, r := range rs {
		if want := StreamID(i + 2); r.Stream != want || r.Type != EDS || r.Message.GetNonce() != "1" || len(r.Message.GetResources()) != 1 {
			t.Errorf("response %d: stream %d, %v, nonce %q, %d resources; want stream %d, EDS, nonce 1, x",
				i, r.Stream, r.Type, r.Message.GetNonce(), len(r.Message.GetResources()), want)
		}
	}
	if len(s.watches) != 0 || len(s.groups) != 0 {
		t.Errorf("after firing: %d watches, %d groups; want none", len(s.watches), len(s.groups))
	}
}

// TestAnImmediateAnswerIsKeptOnlyWhileTheCacheStays: streams whose first
// requests the cache would see alike are answered as the first one was,
// without a watch of their own, until the cache changes; then the next
// stream gets the cache's new answer, not the kept one.
func TestAnImmediateAnswerIsKeptOnlyWhileTheCacheStays(t *testing.T) {
	s, err := New(Config{Name: "p", Services: []Service{{Name: "a", ClusterName: "a", EndpointCount: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	ask := func(id StreamID) Response {
		t.Helper()
		if err := s.OpenStream(0, id); err != nil {
			t.Fatal(err)
		}
		rs, err := s.Handle(0, id, RequestOf(&discoverypb.DiscoveryRequest{TypeUrl: EDS.TypeURL(), ResourceNames: []string{"a"}}))
		if err != nil || len(rs) != 1 {
			t.Fatalf("stream %d: %d responses, %v", id, len(rs), err)
		}
		return rs[0]
	}
	first := ask(1)
	if len(s.answers) != 1 {
		t.Fatalf("%d answers kept after the first stream, want 1", len(s.answers))
	}
	second := ask(2)
	if len(s.watches) != 0 || len(s.groups) != 0 {
		t.Errorf("the second stream opened a watch: %d watches, %d groups", len(s.watches), len(s.groups))
	}
	if second.Message.GetVersionInfo() != first.Message.GetVersionInfo() || len(second.Message.GetResources()) != 1 ||
		second.Message.GetResources()[0] != first.Message.GetResources()[0] {
		t.Errorf("the second stream got %v, the first %v", second.Message, first.Message)
	}
	if _, err := s.SetService(0, Service{Name: "a", ClusterName: "a", EndpointCount: 3}); err != nil {
		t.Fatal(err)
	}
	if len(s.answers) != 0 {
		t.Errorf("%d answers kept across a change of the cache", len(s.answers))
	}
	third := ask(3)
	if v := third.Message.GetVersionInfo(); v == first.Message.GetVersionInfo() || v != s.Version(EDS) {
		t.Errorf("after the change a new stream got version %q; the cache serves %q", v, s.Version(EDS))
	}
	if third.Message.GetResources()[0] == first.Message.GetResources()[0] {
		t.Error("after the change a new stream got the old assignment")
	}
}

// TestTheWorkQueueHoldsAboutItsJobs: jobs taken out of order are each
// returned once, with the request they came with, and the queue keeps
// blocks only for the span of jobs not yet taken, not for the most it
// ever held.
func TestTheWorkQueueHoldsAboutItsJobs(t *testing.T) {
	q := newWorkQueue(Capacity{Workers: 1}, sim.NewStream(1, "q"))
	st := &stream{id: 1}
	const n = 10 * jobBlock
	if size := unsafe.Sizeof(job{}); size != 96 {
		t.Errorf("a queued request takes %d bytes, want 96", size)
	}
	var jobs []Job
	var reqs []Request
	// Nonces the server writes, and strings it never writes as one.
	nonces := []string{"", "1", "7", "4294967295", "0", "01", "4294967296", "x", "-1", "1e3", "12"}
	for i := range n {
		// Most requests are kept compact; NACKs, unknown types and
		// nonces the server never writes whole.
		r := Request{TypeURL: EDS.TypeURL(), Version: fmt.Sprint(i), Nonce: nonces[i%len(nonces)], Names: []string{"a", fmt.Sprint(i)}}
		switch i % 7 {
		case 3:
			r.ErrorDetail = &Status{Code: 3, Message: "bad"}
		case 5:
			r.TypeURL = "type.googleapis.com/unknown"
		}
		reqs = append(reqs, r)
		jobs = append(jobs, q.enqueue(0, st, r, 0))
	}
	if len(q.blocks) != 10 {
		t.Fatalf("%d jobs in %d blocks, want 10", n, len(q.blocks))
	}
	// Take them in pairs swapped: never in order, never two at once.
	for i := 0; i+1 < n; i += 2 {
		for _, k := range []int{i + 1, i} {
			j, ok := q.take(jobs[k].ID)
			got := j.req.request()
			if got.responseNonce() != reqs[k].Nonce {
				t.Fatalf("job %d: response_nonce %q, want %q", k, got.responseNonce(), reqs[k].Nonce)
			}
			for _, n := range []uint32{1, 7, 12, 4294967295} {
				if got.quotes(n) != reqs[k].quotes(n) {
					t.Fatalf("job %d (nonce %q) quotes %d: %v, as sent %v", k, reqs[k].Nonce, n, got.quotes(n), reqs[k].quotes(n))
				}
			}
			got.Nonce, got.nonce = got.responseNonce(), 0
			if !ok || !reflect.DeepEqual(got, reqs[k]) {
				t.Fatalf("job %d: %v, request %+v, want %+v", k, ok, got, reqs[k])
			}
			if _, again := q.take(jobs[k].ID); again {
				t.Fatalf("job %d taken twice", k)
			}
		}
		if left := (n - i - 2 + jobBlock - 1) / jobBlock; len(q.blocks) > left+1 {
			t.Fatalf("after %d jobs: %d blocks for %d jobs", i+2, len(q.blocks), n-i-2)
		}
	}
	if len(q.blocks) > 1 || len(q.spare) > maxSpareBlocks {
		t.Errorf("empty queue: %d blocks, %d spare", len(q.blocks), len(q.spare))
	}
	// It goes on from where it was.
	j := q.enqueue(0, st, Request{TypeURL: LDS.TypeURL(), Version: "next"}, 0)
	if got, ok := q.take(j.ID); !ok || got.req.request().Version != "next" {
		t.Errorf("a job after the queue emptied: %v, %+v", ok, got.req.request())
	}
}

// TestQueueingAnACKAllocatesNothing checks that a request the server keeps
// compact (a known type, a nonce it wrote, no error detail: every ACK) is
// queued without an allocation; only the rare ones kept whole allocate.
// Taking the address of the request for those once moved every request
// to the heap (68 MB of fleet-10k's allocations).
func TestQueueingAnACKAllocatesNothing(t *testing.T) {
	names := []string{"a", "b"}
	for _, tc := range []struct {
		name string
		req  Request
		want float64
	}{
		{"an ACK", Request{TypeURL: EDS.TypeURL(), Version: "3", Nonce: "12", Names: names}, 0},
		{"a first request", Request{TypeURL: LDS.TypeURL(), Names: names}, 0},
		{"a NACK", Request{TypeURL: EDS.TypeURL(), Version: "3", Nonce: "12", Names: names, ErrorDetail: &Status{Code: 3}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var q queued
			if got := testing.AllocsPerRun(100, func() { q = queue(tc.req) }); got != tc.want {
				t.Errorf("%v allocations, want %v", got, tc.want)
			}
			if r := q.request(); r.TypeURL != tc.req.TypeURL || r.Version != tc.req.Version || r.Nonce != tc.req.Nonce && r.nonce == 0 {
				t.Errorf("queued %+v, taken back as %+v", tc.req, r)
			}
		})
	}
}
