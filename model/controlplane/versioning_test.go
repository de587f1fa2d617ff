package controlplane_test

import (
	"slices"
	"testing"

	cp "github.com/xdssim/xdssim/model/controlplane"
)

// TestOneResourceChangeCostPerCache: a client subscribed to the four
// types of a service, everything ACKed, sees one endpoint added. A
// LinearCache sends the one changed ClusterLoadAssignment; a snapshot with
// a version per type re-sends the EDS type; a snapshot made with
// cache.NewSnapshot(version, ...) has one version for every type, so every
// type is re-sent and the client ACKs all four, the unchanged ones too.
// Mirrors go-control-plane simple.go respondSOTWWatches (a watch is
// answered when its type's version differs) and snapshot.go NewSnapshot
// (one version for every type given).
func TestOneResourceChangeCostPerCache(t *testing.T) {
	for _, tc := range []struct {
		k        cp.CacheKind
		types    []cp.ResourceType
		sameVers bool
	}{
		{cp.LinearCaches, []cp.ResourceType{cp.EDS}, false},
		{cp.SnapshotPerType, []cp.ResourceType{cp.EDS}, false},
		{cp.SnapshotCache, []cp.ResourceType{cp.LDS, cp.RDS, cp.CDS, cp.EDS}, true},
	} {
		t.Run(tc.k.String(), func(t *testing.T) {
			s := mustNew(t, cp.Config{Name: "p", Cache: tc.k, Services: twoServices()})
			c := newClient(t, s, 1)
			c.ackAll(c.subscribe(cp.LDS, "a"))
			c.ackAll(c.subscribe(cp.RDS, "a-route"))
			c.ackAll(c.subscribe(cp.CDS, "a-cluster"))
			c.ackAll(c.subscribe(cp.EDS, "a-cluster"))
			before := s.Totals()
			rs, err := s.ScaleEndpoints(0, "a", "", 3)
			if err != nil {
				t.Fatal(err)
			}
			var got []cp.ResourceType
			for _, r := range rs {
				got = append(got, r.Type)
			}
			if !slices.Equal(got, tc.types) {
				t.Fatalf("pushed %v, want %v", summarize(rs), tc.types)
			}
			if more := c.ackAll(rs); len(more) != 0 {
				t.Fatalf("ACKs answered: %v", summarize(more))
			}
			after := s.Totals()
			n := int64(len(tc.types))
			if d := after.Responses - before.Responses; d != n {
				t.Errorf("responses: %d, want %d", d, n)
			}
			if d := after.ACKs - before.ACKs; d != n {
				t.Errorf("ACKs: %d, want %d", d, n)
			}
			if d := after.Requests - before.Requests; d != n {
				t.Errorf("requests: %d, want %d", d, n)
			}
			same := s.Version(cp.LDS) == s.Version(cp.EDS)
			if same != tc.sameVers {
				t.Errorf("LDS version %s, EDS version %s", s.Version(cp.LDS), s.Version(cp.EDS))
			}
		})
	}
}

// TestEmptyTypeUnanswered: a snapshot server that holds no route at all
// leaves the RDS type out of its snapshot when told so, and then answers
// no RDS request, not even the first (go-control-plane simple.go
// CreateWatch: the request's version "" equals the missing type's); by
// default the type is in the snapshot empty, and a first request gets an
// empty response at the snapshot's version. Once a route exists the open
// watch is answered. A LinearCache answers every first request (linear.go
// replyEvenIfEmpty), so it cannot leave a type unanswered.
func TestEmptyTypeUnanswered(t *testing.T) {
	withheld := svc("a", 1)
	withheld.Withhold = cp.TypesOf(cp.RDS)
	for _, k := range []cp.CacheKind{cp.SnapshotCache, cp.SnapshotPerType} {
		for _, unanswered := range []bool{false, true} {
			name := k.String() + "/answered"
			if unanswered {
				name = k.String() + "/unanswered"
			}
			t.Run(name, func(t *testing.T) {
				s := mustNew(t, cp.Config{Name: "p", Cache: k, EmptyTypesUnanswered: unanswered, Services: []cp.Service{withheld}})
				c := newClient(t, s, 1)
				rs := c.subscribe(cp.RDS, "a-route")
				if unanswered {
					if len(rs) != 0 {
						t.Fatalf("unanswered type answered: %v", summarize(rs))
					}
				} else {
					r := only(t, rs)
					if len(r.Message.GetResources()) != 0 || r.Message.GetVersionInfo() == "" {
						t.Fatalf("want an empty versioned response: %v", summarize(rs))
					}
					c.ackAll(rs)
				}
				rs, err := s.PublishResources(0, "a", cp.TypesOf(cp.RDS), "")
				if err != nil {
					t.Fatal(err)
				}
				if r := only(t, onType(rs, cp.RDS)); !slices.Equal(names(t, r), []string{"a-route"}) {
					t.Errorf("published route: %v", summarize(rs))
				}
			})
		}
	}
	if _, err := cp.New(cp.Config{Name: "p", EmptyTypesUnanswered: true}); err == nil {
		t.Error("a LinearCache server accepted EmptyTypesUnanswered")
	}
}

// TestWithholdOneClusterOfAService: deleting only the Cluster and
// ClusterLoadAssignment of one of a service's two clusters leaves the
// listener, the route and the other cluster served; CDS clients see the
// full-state response without it (a SotW deletion), EDS clients hear
// nothing. Publishing them again brings them back as the service describes
// them.
func TestWithholdOneClusterOfAService(t *testing.T) {
	split := cp.Service{Name: "shop", Clusters: []cp.Cluster{
		{Name: "stable", Weight: 90, EndpointCount: 2},
		{Name: "canary", Weight: 10, EndpointCount: 1},
	}}
	for _, k := range cacheKinds {
		t.Run(k.String(), func(t *testing.T) {
			s := mustNew(t, cp.Config{Name: "p", Cache: k, Services: []cp.Service{split}})
			c := newClient(t, s, 1)
			c.ackAll(c.subscribe(cp.CDS, "canary", "stable"))
			c.ackAll(c.subscribe(cp.EDS, "canary", "stable"))
			rs, err := s.WithholdResources(0, "shop", cp.TypesOf(cp.CDS, cp.EDS), "canary")
			if err != nil {
				t.Fatal(err)
			}
			if r := only(t, onType(rs, cp.CDS)); !slices.Equal(names(t, r), []string{"stable"}) {
				t.Errorf("CDS after the deletion: %v", names(t, r))
			}
			if k == cp.LinearCaches && len(onType(rs, cp.EDS)) != 0 {
				t.Errorf("EDS told of a deletion: %v", summarize(rs))
			}
			c.ackAll(rs)
			for _, key := range []cp.ResourceKey{{Type: cp.LDS, Name: "shop"}, {Type: cp.RDS, Name: "shop-route"},
				{Type: cp.CDS, Name: "stable"}, {Type: cp.EDS, Name: "stable"}} {
				if _, ok := s.Lookup(key.Type, key.Name); !ok {
					t.Errorf("%v %s not served", key.Type, key.Name)
				}
			}
			if _, ok := s.Lookup(cp.CDS, "canary"); ok {
				t.Error("withheld cluster served")
			}
			rs, err = s.PublishResources(0, "shop", cp.TypesOf(cp.CDS, cp.EDS), "canary")
			if err != nil {
				t.Fatal(err)
			}
			if r := only(t, onType(rs, cp.CDS)); !slices.Equal(names(t, r), []string{"canary", "stable"}) {
				t.Errorf("CDS after the restore: %v", names(t, r))
			}
			if _, err := s.WithholdResources(0, "shop", cp.TypesOf(cp.CDS), "nope"); err == nil {
				t.Error("withheld an unknown cluster")
			}
		})
	}
}
