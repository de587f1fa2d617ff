package controlplane

import (
	"testing"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// override_host_status = [] is a set with no status: no host is ever
// overridden (Envoy's HealthStatusSet with no statuses). It used to be
// cloned to nil, which means the default set.
func TestCloneKeepsAnEmptyOverrideHostStatusApartFromTheDefault(t *testing.T) {
	empty := Service{Name: "s", OverrideHostStatus: []corepb.HealthStatus{}}.clone()
	if empty.OverrideHostStatus == nil {
		t.Error("an empty override_host_status became nil (the default) in the clone")
	}
	cl := expandCluster(&empty, clusterSpec{name: "c", eds: "c"}, false)
	if got := cl.GetCommonLbConfig().GetOverrideHostStatus().GetStatuses(); len(got) != 0 {
		t.Errorf("the cluster's override_host_status = %v, want an empty set", got)
	}
	def := Service{Name: "s"}.clone()
	cl = expandCluster(&def, clusterSpec{name: "c", eds: "c"}, false)
	if got := cl.GetCommonLbConfig().GetOverrideHostStatus().GetStatuses(); len(got) != 2 {
		t.Errorf("the default override_host_status = %v, want UNKNOWN and HEALTHY", got)
	}
}
