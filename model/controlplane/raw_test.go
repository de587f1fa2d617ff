package controlplane_test

import (
	"slices"
	"strings"
	"testing"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/proto"

	cp "github.com/xdssim/xdssim/model/controlplane"
	"github.com/xdssim/xdssim/sim"
)

func rawCluster(name string, lb clusterpb.Cluster_LbPolicy) *clusterpb.Cluster {
	return &clusterpb.Cluster{Name: name, LbPolicy: lb, ClusterDiscoveryType: &clusterpb.Cluster_Type{Type: clusterpb.Cluster_EDS},
		EdsClusterConfig: &clusterpb.Cluster_EdsClusterConfig{EdsConfig: &corepb.ConfigSource{
			ConfigSourceSpecifier: &corepb.ConfigSource_Ads{Ads: &corepb.AggregatedConfigSource{}}}}}
}

// TestVerbatimResourcesPublish: a server serves a dump's resources as
// given, beside a generated service; publishing the next dump changes
// only what differs (the cache sends the changed type, at a new version),
// deletes what the next dump lacks, and a deleted resource can be
// restored.
func TestVerbatimResourcesPublish(t *testing.T) {
	for _, kind := range []cp.CacheKind{cp.LinearCaches, cp.SnapshotPerType} {
		s := mustNew(t, cp.Config{Name: "cp", Cache: kind, Services: []cp.Service{svc("gen", 1)},
			Resources: []proto.Message{rawCluster("a", clusterpb.Cluster_ROUND_ROBIN), rawCluster("b", clusterpb.Cluster_ROUND_ROBIN)}})
		if got := s.ResourceNames(cp.CDS); !slices.Equal(got, []string{"a", "b", "gen-cluster"}) {
			t.Fatalf("%v: CDS names = %v", kind, got)
		}
		c := newClient(t, s, 1)
		if more := c.ackAll(c.subscribe(cp.CDS, "a", "b")); len(more) != 0 {
			t.Fatalf("%v: the ACK caused %d responses", kind, len(more))
		}
		v0 := s.Version(cp.CDS)

		// The same dump again: nothing changes.
		out, err := s.Publish(sim.Time(1), []proto.Message{rawCluster("a", clusterpb.Cluster_ROUND_ROBIN), rawCluster("b", clusterpb.Cluster_ROUND_ROBIN)})
		if err != nil || len(out) != 0 || s.Version(cp.CDS) != v0 {
			t.Fatalf("%v: republishing the same dump: %d responses, version %q -> %q, %v", kind, len(out), v0, s.Version(cp.CDS), err)
		}
		// b changes, a is gone.
		out, err = s.Publish(sim.Time(2), []proto.Message{rawCluster("b", clusterpb.Cluster_LEAST_REQUEST)})
		if err != nil {
			t.Fatal(err)
		}
		if got := names(t, only(t, out)); !slices.Equal(got, []string{"b"}) {
			t.Errorf("%v: after publishing, the response holds %v, want [b]", kind, got)
		}
		if _, ok := s.Lookup(cp.CDS, "a"); ok {
			t.Errorf("%v: a is still served", kind)
		}
		if _, ok := s.Lookup(cp.CDS, "gen-cluster"); !ok {
			t.Errorf("%v: the generated service's cluster is gone", kind)
		}
		if _, err := s.DeleteResource(sim.Time(3), cp.CDS, "b"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RestoreResource(sim.Time(4), cp.CDS, "b"); err != nil {
			t.Fatal(err)
		}
		a, ok := s.Lookup(cp.CDS, "b")
		got := &clusterpb.Cluster{}
		if !ok || a.UnmarshalTo(got) != nil || got.GetLbPolicy() != clusterpb.Cluster_LEAST_REQUEST {
			t.Errorf("%v: restored b = %v", kind, got)
		}
		if _, err := s.RestoreResource(sim.Time(5), cp.CDS, "a"); err == nil {
			t.Errorf("%v: restoring a resource the last dump lacks succeeded", kind)
		}
	}
}

// TestVerbatimResourceClashes: a dump resource named like a generated
// one, or given twice, is refused.
func TestVerbatimResourceClashes(t *testing.T) {
	_, err := cp.New(cp.Config{Name: "cp", Services: []cp.Service{svc("gen", 1)},
		Resources: []proto.Message{rawCluster("gen-cluster", clusterpb.Cluster_ROUND_ROBIN)}})
	if err == nil || !strings.Contains(err.Error(), `both a resource of its own and one of service "gen"`) {
		t.Errorf("clash with a service: %v", err)
	}
	_, err = cp.New(cp.Config{Name: "cp", Resources: []proto.Message{rawCluster("a", 0), rawCluster("a", 1)}})
	if err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("a resource twice: %v", err)
	}
}
