package xdsclient

import (
	"strings"
	"testing"
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	leastrequestpb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/least_request/v3"
	roundrobinpb "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/round_robin/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TestClusterLBPolicyByImplementation: the implementations' CDS parsers
// take different LB policies. MAGLEV is NACKed by all, each with its own
// text; LEAST_REQUEST only by C-core, whose legacy lb_policy knows
// ROUND_ROBIN and RING_HASH; a load_balancing_policy beside an
// unsupported lb_policy is fine where it replaces lb_policy (Java, C-core,
// A52) and NACKed by grpc-go, which checks lb_policy first.
// References: grpc-go unmarshal_cds.go
// validateClusterAndConstructClusterUpdate; grpc-java
// LoadBalancerConfigFactory.newConfig; C-core xds_cluster_parser.cc
// ParseLbPolicyConfig, xds_lb_policy_registry.cc.
func TestClusterLBPolicyByImplementation(t *testing.T) {
	sets := []FilterSet{FiltersGRPCGo, FiltersGRPCJava, FiltersGRPCCore, FiltersSpec}
	lbp := func(a *anypb.Any) *clusterpb.LoadBalancingPolicy {
		return &clusterpb.LoadBalancingPolicy{Policies: []*clusterpb.LoadBalancingPolicy_Policy{{
			TypedExtensionConfig: &corepb.TypedExtensionConfig{Name: "p", TypedConfig: a},
		}}}
	}
	rr, _ := anypb.New(&roundrobinpb.RoundRobin{})
	lr, _ := anypb.New(&leastrequestpb.LeastRequest{})
	cases := []struct {
		name string
		edit func(*clusterpb.Cluster)
		want [4]string // substring of each set's error; "" accepts
	}{
		{"round robin", func(c *clusterpb.Cluster) {}, [4]string{}},
		{"maglev", func(c *clusterpb.Cluster) { c.LbPolicy = clusterpb.Cluster_MAGLEV }, [4]string{
			"unexpected lbPolicy MAGLEV", "Cluster C: unsupported lb policy: MAGLEV",
			"[field:lb_policy error:LB policy is not supported]", "unexpected lbPolicy MAGLEV"}},
		{"least request", func(c *clusterpb.Cluster) { c.LbPolicy = clusterpb.Cluster_LEAST_REQUEST }, [4]string{
			"", "", "[field:lb_policy error:LB policy is not supported]", ""}},
		{"maglev beside load_balancing_policy", func(c *clusterpb.Cluster) {
			c.LbPolicy = clusterpb.Cluster_MAGLEV
			c.LoadBalancingPolicy = lbp(rr)
		}, [4]string{"unexpected lbPolicy MAGLEV", "", "", ""}},
		{"least_request load_balancing_policy", func(c *clusterpb.Cluster) { c.LoadBalancingPolicy = lbp(lr) }, [4]string{
			"", "", "no supported load balancing policy config found", ""}},
	}
	for _, tc := range cases {
		c := &clusterpb.Cluster{
			Name:                 "C",
			ClusterDiscoveryType: &clusterpb.Cluster_Type{Type: clusterpb.Cluster_EDS},
			EdsClusterConfig: &clusterpb.Cluster_EdsClusterConfig{EdsConfig: &corepb.ConfigSource{
				ConfigSourceSpecifier: &corepb.ConfigSource_Ads{Ads: &corepb.AggregatedConfigSource{}},
			}},
		}
		tc.edit(c)
		d := Decode(CDS, anyOf(t, c))
		for i, fs := range sets {
			err := d.ErrIn(fs)
			switch {
			case tc.want[i] == "" && err != nil:
				t.Errorf("%s in %v: NACKed with %v, want accepted", tc.name, fs, err)
			case tc.want[i] != "" && (err == nil || !strings.Contains(err.Detail, tc.want[i])):
				t.Errorf("%s in %v: got %v, want an error with %q", tc.name, fs, err, tc.want[i])
			}
		}
	}
}

// TestUndecodableResourceIsInvalidEverywhere: a resource that does not
// decode as its type is NACKed by every implementation, whatever its
// parser (grpc-go "top-level" errors; every client fails to unmarshal it).
func TestUndecodableResourceIsInvalidEverywhere(t *testing.T) {
	d := Decode(CDS, &anypb.Any{TypeUrl: CDS.TypeURL(), Value: []byte{0xff}})
	for fs := range numFilterSets {
		if err := d.ErrIn(fs); err == nil || err.Rule != RuleTopLevel {
			t.Errorf("%v: ErrIn = %v, want %s", fs, err, RuleTopLevel)
		}
	}
}

// TestRetryPolicyByImplementation: a route whose retry_policy has
// num_retries 0 is NACKed by grpc-go and C-core and accepted by
// grpc-java (one attempt, no retry); a retry_back_off whose max_interval
// is below its base_interval only grpc-java NACKs; one without
// base_interval every implementation NACKs.
// References: grpc-go unmarshal_rds.go generateRetryConfig; grpc-java
// XdsRouteConfigureResource.parseRetryPolicy; C-core
// xds_route_config_parser.cc RetryPolicyParse.
func TestRetryPolicyByImplementation(t *testing.T) {
	sets := []FilterSet{FiltersGRPCGo, FiltersGRPCJava, FiltersGRPCCore, FiltersSpec}
	cases := []struct {
		name string
		rp   *routepb.RetryPolicy
		want [4]string // substring of each set's error; "" accepts
	}{
		{"valid", &routepb.RetryPolicy{RetryOn: "unavailable", NumRetries: wrapperspb.UInt32(2)}, [4]string{}},
		{"num_retries 0", &routepb.RetryPolicy{NumRetries: wrapperspb.UInt32(0)}, [4]string{
			"num_retries = 0; must be >= 1", "", "[field:virtual_hosts[0].routes[0].route.retry_policy.num_retries error:must be greater than 0]", "must be >= 1"}},
		{"max below base", &routepb.RetryPolicy{RetryBackOff: &routepb.RetryPolicy_RetryBackOff{
			BaseInterval: durationpb.New(time.Second), MaxInterval: durationpb.New(time.Millisecond)}}, [4]string{
			"", "max_interval in retry_backoff cannot be less than base_interval", "", ""}},
		{"no base_interval", &routepb.RetryPolicy{RetryBackOff: &routepb.RetryPolicy_RetryBackOff{}}, [4]string{
			"base_interval = 0s; must be > 0", "No base_interval specified", "retry_back_off.base_interval error:field not present", "must be > 0"}},
	}
	for _, tc := range cases {
		rc := &routepb.RouteConfiguration{Name: "R", VirtualHosts: []*routepb.VirtualHost{{Name: "v", Domains: []string{"*"},
			Routes: []*routepb.Route{{Match: &routepb.RouteMatch{PathSpecifier: &routepb.RouteMatch_Prefix{Prefix: "/"}},
				Action: &routepb.Route_Route{Route: &routepb.RouteAction{
					ClusterSpecifier: &routepb.RouteAction_Cluster{Cluster: "C"}, RetryPolicy: tc.rp}}}}}}}
		d := Decode(RDS, anyOf(t, rc))
		for i, fs := range sets {
			err := d.ErrIn(fs)
			switch {
			case tc.want[i] == "" && err != nil:
				t.Errorf("%s in %v: NACKed with %v, want accepted", tc.name, fs, err)
			case tc.want[i] != "" && (err == nil || !strings.Contains(err.Detail, tc.want[i])):
				t.Errorf("%s in %v: got %v, want an error with %q", tc.name, fs, err, tc.want[i])
			}
		}
	}
}
