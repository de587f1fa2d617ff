package controlplane_test

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"testing"
	"time"

	cp "github.com/xdssim/xdssim/model/controlplane"
	"github.com/xdssim/xdssim/sim"
)

const fleetServices = 10

func fleetConfig(k cp.CacheKind) cp.Config {
	cfg := cp.Config{Name: "primary", Cache: k, ResourceErrors: true}
	for i := 0; i < fleetServices; i++ {
		sv := svc(fmt.Sprintf("svc-%d", i), 3+i%4)
		if i%3 == 0 {
			sv.Session = &cp.SessionAffinity{CookieName: "session", TTL: time.Minute}
		}
		if i%2 == 0 {
			sv.Retry = &cp.RetryPolicy{On: []string{"unavailable"}, NumRetries: 2}
		}
		cfg.Services = append(cfg.Services, sv)
	}
	return cfg
}

// runFleet drives the real cache with n simulated streams: each
// subscribes to one service's listener and route, to every cluster (CDS
// is full state, so the responses carry ten names) and to the endpoints
// of three services, ACKing everything. Then one cluster changes. It
// returns the hash of every response and the responses to the change.
func runFleet(t testing.TB, k cp.CacheKind, n int) ([32]byte, []cp.Response) {
	t.Helper()
	s := mustNew(t, fleetConfig(k))
	h := sha256.New()
	var clusters []string
	for i := fleetServices - 1; i >= 0; i-- { // unsorted on purpose
		clusters = append(clusters, fmt.Sprintf("svc-%d-cluster", i))
	}
	for i := 0; i < n; i++ {
		id := cp.StreamID(1000 + i)
		c := newClientAt(t, s, id, sim.Time(i)*sim.Time(time.Millisecond))
		mine := i % fleetServices
		steps := []struct {
			typ   cp.ResourceType
			names []string
		}{
			{cp.LDS, []string{fmt.Sprintf("svc-%d", mine)}},
			{cp.RDS, []string{fmt.Sprintf("svc-%d-route", mine)}},
			{cp.CDS, clusters},
			{cp.EDS, []string{clusters[(i+2)%fleetServices], clusters[i%fleetServices], clusters[(i+1)%fleetServices]}},
		}
		for _, st := range steps {
			rs := c.subscribe(st.typ, st.names...)
			if len(rs) != 1 {
				t.Fatalf("stream %d %v: %d responses", id, st.typ, len(rs))
			}
			checkSorted(t, rs)
			hashResponses(h, rs)
			if more := c.ackAll(rs); len(more) != 0 {
				t.Fatalf("stream %d: ACK answered: %v", id, summarize(more))
			}
		}
	}
	// The config change: one cluster's policy.
	change := svc("svc-4", 3) // as built above: 3+i%4 endpoints for i = 4
	change.Retry = &cp.RetryPolicy{On: []string{"unavailable"}, NumRetries: 2}
	change.LB = cp.LeastRequest
	rs, err := s.SetService(sim.Time(n)*sim.Time(time.Millisecond), change)
	if err != nil {
		t.Fatal(err)
	}
	hashResponses(h, rs)
	tot := s.Totals()
	fmt.Fprintf(h, "%+v", tot)
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum, rs
}

func checkSorted(t testing.TB, rs []cp.Response) {
	t.Helper()
	for _, r := range rs {
		if got := names(t, r); !slices.IsSorted(got) {
			t.Fatalf("stream %d %v: names not sorted: %v", r.Stream, r.Type, got)
		}
	}
}

// TestFleetOfStreamsOnRealCache drives go-control-plane's real caches
// with 1 000 subscribed streams and one config change: every stream gets
// exactly one CDS response, carrying all ten clusters sorted by name (and,
// with one version per snapshot, a response of every other type), and a
// second run gives byte-identical responses.
func TestFleetOfStreamsOnRealCache(t *testing.T) {
	const n = 1000
	for _, k := range cacheKinds {
		t.Run(k.String(), func(t *testing.T) {
			h1, all := runFleet(t, k, n)
			// With one version per snapshot every type is re-sent, in type
			// order: the CDS response is each stream's third, nonce 7.
			types, nonce := 1, "5"
			if k == cp.SnapshotCache {
				types, nonce = 4, "7"
			}
			if len(all) != types*n {
				t.Fatalf("%d responses to the change, want %d", len(all), types*n)
			}
			rs := onType(all, cp.CDS)
			want := make([]string, fleetServices)
			for i := range want {
				want[i] = fmt.Sprintf("svc-%d-cluster", i)
			}
			slices.Sort(want)
			for i, r := range rs {
				if r.Stream != cp.StreamID(1000+i) || r.Type != cp.CDS {
					t.Fatalf("response %d: stream %d %v", i, r.Stream, r.Type)
				}
				if got := names(t, r); !slices.Equal(got, want) {
					t.Fatalf("stream %d: names %v", r.Stream, got)
				}
				if r.Message.GetNonce() != nonce || len(r.Message.GetResourceErrors()) != 0 {
					t.Fatalf("stream %d: %v", r.Stream, summarize(rs[i:i+1]))
				}
			}
			// Every stream shares each resource.
			for _, r := range rs[1:] {
				for j, a := range r.Message.GetResources() {
					if a != rs[0].Message.GetResources()[j] {
						t.Fatalf("stream %d: resource %d not shared", r.Stream, j)
					}
				}
			}
			h2, _ := runFleet(t, k, n)
			if h1 != h2 {
				t.Errorf("second run differs: %x vs %x", h1, h2)
			}
		})
	}
}
