package controlplane

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPendingResponsesAreSortedByStreamThenType: sortPending orders any
// set of pending responses as the comparison does, whether it sorts them
// by comparison (a few) or by radix (many), whatever digits the stream ids
// differ in (the fleet's, its connection in the high half; small ids;
// ids over all 64 bits), and leaves its scratch holding nothing.
func TestPendingResponsesAreSortedByStreamThenType(t *testing.T) {
	ids := map[string]func(r *rand.Rand) StreamID{
		"fleet":  func(r *rand.Rand) StreamID { return StreamID(uint64(r.IntN(40000))<<32 | uint64(r.IntN(3)+1)) },
		"small":  func(r *rand.Rand) StreamID { return StreamID(r.IntN(100000)) },
		"64-bit": func(r *rand.Rand) StreamID { return StreamID(r.Uint64()) },
	}
	for name, id := range ids {
		for _, n := range []int{0, 1, 63, 64, 1000, 20000} {
			t.Run(fmt.Sprint(name, "/", n), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(n), 7))
				seen := map[[2]uint64]bool{}
				var p []pending
				for len(p) < n {
					q := pending{id: id(r), t: ResourceType(r.IntN(int(NumTypes))), ts: new(typeState)}
					if k := [2]uint64{uint64(q.id), uint64(q.t)}; !seen[k] {
						seen[k] = true
						p = append(p, q)
					}
				}
				want := slices.Clone(p)
				slices.SortFunc(want, comparePending)
				buf := sortPending(p, nil)
				for i := range p {
					if p[i] != want[i] {
						t.Fatalf("position %d: %+v, want %+v", i, p[i], want[i])
					}
				}
				for i, q := range buf[:cap(buf)] {
					if q != (pending{}) {
						t.Fatalf("the scratch keeps response %d: %+v", i, q)
					}
				}
			})
		}
	}
}
