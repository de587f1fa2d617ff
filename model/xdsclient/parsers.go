package xdsclient

import (
	"strings"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// Where the implementations' parsers differ. The rules of resource.go
// mirror grpc-go's xdsresource/unmarshal_{lds,rds,cds,eds}.go; grpc-java
// (XdsListenerResource, XdsRouteConfigureResource, XdsClusterResource,
// XdsEndpointResource) and C-core (xds_listener_parser.cc,
// xds_route_config_parser.cc, xds_cluster_parser.cc,
// xds_endpoint_parser.cc) accept or reject some resources differently.
// Each difference is one function here, keyed by the implementation
// (FilterSet), citing the function that decides it, with the error text
// that implementation puts in its NACK. The HTTP filter differences are in
// filters.go.

// clusterLBPolicy checks a Cluster's LB policy as implementation fs does.
//
//   - grpc-go (unmarshal_cds.go validateClusterAndConstructClusterUpdate)
//     checks lb_policy first and always, even when load_balancing_policy
//     is set: ROUND_ROBIN, RING_HASH with XX_HASH, LEAST_REQUEST with
//     choice_count >= 2; anything else (MAGLEV, RANDOM, ...) is NACKed.
//   - grpc-java (LoadBalancerConfigFactory.newConfig) uses
//     load_balancing_policy when it is set and ignores lb_policy; the
//     legacy converter (LegacyLoadBalancingPolicyConverter) takes
//     RING_HASH with XX_HASH, ROUND_ROBIN and LEAST_REQUEST (on unless
//     GRPC_EXPERIMENTAL_ENABLE_LEAST_REQUEST=false,
//     XdsClusterResource.enableLeastRequest); LEAST_REQUEST's
//     choice_count must be >= 2 (LeastRequestLoadBalancerProvider).
//   - C-core (xds_cluster_parser.cc ParseLbPolicyConfig) uses
//     load_balancing_policy when it is set; its legacy lb_policy takes
//     only ROUND_ROBIN and RING_HASH: LEAST_REQUEST is "LB policy is not
//     supported".
//   - spec: gRFC A52 (load_balancing_policy, when set, replaces
//     lb_policy), A42 (RING_HASH with XX_HASH) and A48 (LEAST_REQUEST,
//     choice_count >= 2).
func clusterLBPolicy(c *clusterpb.Cluster, fs FilterSet) *ValidationError {
	name := c.GetName()
	if fs != FiltersGRPCGo && c.GetLoadBalancingPolicy() != nil {
		return loadBalancingPolicy(c, fs)
	}
	hf := c.GetRingHashLbConfig().GetHashFunction()
	cc := c.GetLeastRequestLbConfig().GetChoiceCount()
	switch fs {
	case FiltersGRPCJava:
		switch c.GetLbPolicy() {
		case clusterpb.Cluster_ROUND_ROBIN:
		case clusterpb.Cluster_RING_HASH:
			if hf != clusterpb.Cluster_RingHashLbConfig_XX_HASH {
				return verr(RuleCDSLBPolicy, "Cluster %s: invalid ring hash function: %v", name, hf)
			}
		case clusterpb.Cluster_LEAST_REQUEST:
			if cc != nil && cc.GetValue() < 2 {
				return verr(RuleCDSLBPolicy, "Failed to parse lb config for cluster '%s': Invalid 'choiceCount' in least_request_experimental config", name)
			}
		default:
			return verr(RuleCDSLBPolicy, "Cluster %s: unsupported lb policy: %v", name, c.GetLbPolicy())
		}
	case FiltersGRPCCore:
		switch c.GetLbPolicy() {
		case clusterpb.Cluster_ROUND_ROBIN:
		case clusterpb.Cluster_RING_HASH:
			if c.GetRingHashLbConfig() != nil && hf != clusterpb.Cluster_RingHashLbConfig_XX_HASH {
				return coreClusterError(RuleCDSLBPolicy, name, "ring_hash_lb_config.hash_function", "invalid hash function")
			}
		default:
			return coreClusterError(RuleCDSLBPolicy, name, "lb_policy", "LB policy is not supported")
		}
	default: // grpc-go and spec
		switch c.GetLbPolicy() {
		case clusterpb.Cluster_ROUND_ROBIN:
		case clusterpb.Cluster_RING_HASH:
			if hf != clusterpb.Cluster_RingHashLbConfig_XX_HASH {
				return verr(RuleCDSLBPolicy, "cluster %q: unsupported ring_hash hash function %v", name, hf)
			}
		case clusterpb.Cluster_LEAST_REQUEST:
			if cc != nil && cc.GetValue() < 2 {
				return verr(RuleCDSLBPolicy, "cluster %q: least_request choice_count must be >= 2, got %d", name, cc.GetValue())
			}
		default:
			return verr(RuleCDSLBPolicy, "cluster %q: unexpected lbPolicy %v", name, c.GetLbPolicy())
		}
	}
	return nil
}

// coreClusterError formats a C-core Cluster error as CdsResourceParse
// returns it: "errors validating Cluster resource: [field:F error:E]".
func coreClusterError(r Rule, name, field, msg string) *ValidationError {
	return verr(r, "cluster %q: errors validating Cluster resource: [field:%s error:%s]", name, field, msg)
}

// leastRequestPolicyURL is the least_request extension of
// load_balancing_policy, which C-core's XdsLbPolicyRegistry does not
// convert.
const leastRequestPolicyURL = "type.googleapis.com/envoy.extensions.load_balancing_policies.least_request.v3.LeastRequest"

// loadBalancingPolicy checks a Cluster's load_balancing_policy (gRFC A52):
// the first policy the implementation supports is used; none is a NACK.
// grpc-go: xdslbregistry.ConvertToServiceConfig ("error converting
// LoadBalancingPolicy"); grpc-java: LoadBalancingPolicyConverter
// ("Invalid LoadBalancingPolicy"); C-core: XdsLbPolicyRegistry::
// ConvertXdsLbPolicyConfig, which has no least_request converter.
func loadBalancingPolicy(c *clusterpb.Cluster, fs FilterSet) *ValidationError {
	var urls []string
	for _, p := range c.GetLoadBalancingPolicy().GetPolicies() {
		u := p.GetTypedExtensionConfig().GetTypedConfig().GetTypeUrl()
		if supportedLBPolicies[u] && !(fs == FiltersGRPCCore && u == leastRequestPolicyURL) {
			return nil
		}
		urls = append(urls, u)
	}
	switch fs {
	case FiltersGRPCJava:
		return verr(RuleCDSLoadBalancingPolicy, "Invalid LoadBalancingPolicy: %s", strings.Join(urls, ", "))
	case FiltersGRPCCore:
		return coreClusterError(RuleCDSLoadBalancingPolicy, c.GetName(), "load_balancing_policy", "no supported load balancing policy config found")
	}
	return verr(RuleCDSLoadBalancingPolicy, "cluster %q: no supported policy in load_balancing_policy", c.GetName())
}

// retryPolicyError checks a route's or virtual host's retry_policy (gRFC
// A44) as implementation fs does; field is its path in the
// RouteConfiguration, for C-core's error text.
//
//   - grpc-go (unmarshal_rds.go generateRetryConfig) and spec (A44): a
//     num_retries of 0 is NACKed ("must be >= 1"), as is a retry_back_off
//     whose base_interval (absent counts as 0) or max_interval is not
//     positive.
//   - grpc-java (XdsRouteConfigureResource.parseRetryPolicy) accepts
//     num_retries 0 (max attempts 1: no retry); it NACKs a retry_back_off
//     without base_interval, a base_interval that is not positive, and a
//     max_interval below base_interval.
//   - C-core (xds_route_config_parser.cc RetryPolicyParse) NACKs
//     num_retries 0 ("must be greater than 0") and a retry_back_off
//     without base_interval ("field not present").
func retryPolicyError(route, field string, rp *routepb.RetryPolicy, fs FilterSet) *ValidationError {
	if rp == nil {
		return nil
	}
	n := rp.GetNumRetries()
	b := rp.GetRetryBackOff()
	switch fs {
	case FiltersGRPCJava:
		if b != nil {
			switch {
			case b.GetBaseInterval() == nil:
				return verr(RuleRDSRetryPolicy, "route %q: No base_interval specified in retry_backoff", route)
			case b.GetBaseInterval().AsDuration() <= 0:
				return verr(RuleRDSRetryPolicy, "route %q: base_interval in retry_backoff must be positive", route)
			case b.GetMaxInterval() != nil && b.GetMaxInterval().AsDuration() < b.GetBaseInterval().AsDuration():
				return verr(RuleRDSRetryPolicy, "route %q: max_interval in retry_backoff cannot be less than base_interval", route)
			}
		}
	case FiltersGRPCCore:
		switch {
		case n != nil && n.GetValue() == 0:
			return verr(RuleRDSRetryPolicy, "route %q: errors validating RouteConfiguration resource: [field:%s.num_retries error:must be greater than 0]", route, field)
		case b != nil && b.GetBaseInterval() == nil:
			return verr(RuleRDSRetryPolicy, "route %q: errors validating RouteConfiguration resource: [field:%s.retry_back_off.base_interval error:field not present]", route, field)
		}
	default: // grpc-go and spec
		switch {
		case n != nil && n.GetValue() < 1:
			return verr(RuleRDSRetryPolicy, "route %q: retry_policy.num_retries = %d; must be >= 1", route, n.GetValue())
		case b != nil && b.GetBaseInterval().AsDuration() <= 0:
			return verr(RuleRDSRetryPolicy, "route %q: retry_policy.base_interval = %v; must be > 0", route, b.GetBaseInterval().AsDuration())
		case b != nil && b.GetMaxInterval() != nil && b.GetMaxInterval().AsDuration() <= 0:
			return verr(RuleRDSRetryPolicy, "route %q: retry_policy.max_interval = %v; must be > 0", route, b.GetMaxInterval().AsDuration())
		}
	}
	return nil
}

// ruleSources cite, for the rules where implementations differ, the
// function of each implementation's parser that decides.
var ruleSources = map[Rule][numFilterSets]string{
	RuleCDSLBPolicy: {
		"grpc-go internal/xds/xdsclient/xdsresource/unmarshal_cds.go validateClusterAndConstructClusterUpdate",
		"grpc-java xds/.../LoadBalancerConfigFactory.java LegacyLoadBalancingPolicyConverter.convertToServiceConfig",
		"grpc src/core/xds/grpc/xds_cluster_parser.cc ParseLbPolicyConfig",
		"gRFC A42, A48, A52",
	},
	RuleCDSLoadBalancingPolicy: {
		"grpc-go internal/xds/xdsclient/xdsresource/unmarshal_cds.go validateClusterAndConstructClusterUpdate (xdslbregistry.ConvertToServiceConfig)",
		"grpc-java xds/.../LoadBalancerConfigFactory.java LoadBalancingPolicyConverter.convertToServiceConfig",
		"grpc src/core/xds/grpc/xds_lb_policy_registry.cc XdsLbPolicyRegistry::ConvertXdsLbPolicyConfig",
		"gRFC A52",
	},
	RuleCDSTransportSocket: {
		"grpc-go internal/xds/xdsclient/xdsresource/unmarshal_cds.go securityConfigFromCluster",
		"grpc-java xds/.../XdsClusterResource.java parseNonAggregateCluster",
		"grpc src/core/xds/grpc/xds_cluster_parser.cc CdsResourceParse (transport_socket only; transport_socket_matches is not read)",
		"gRFC A29",
	},
	RuleRDSRetryPolicy: {
		"grpc-go internal/xds/xdsclient/xdsresource/unmarshal_rds.go generateRetryConfig",
		"grpc-java xds/.../XdsRouteConfigureResource.java parseRetryPolicy",
		"grpc src/core/xds/grpc/xds_route_config_parser.cc RetryPolicyParse",
		"gRFC A44",
	},
	RuleLDSUnknownFilter: {
		"grpc-go internal/xds/xdsclient/xdsresource/unmarshal_lds.go processHTTPFilters",
		"grpc-java xds/.../XdsListenerResource.java parseHttpFilter",
		"grpc src/core/xds/grpc/xds_listener_parser.cc HttpConnectionManagerParse",
		"gRFC A39",
	},
}

// typeFiles are grpc-go's parser files by rule prefix.
var typeFiles = map[string]string{
	"lds": "unmarshal_lds.go", "rds": "unmarshal_rds.go", "cds": "unmarshal_cds.go", "eds": "unmarshal_eds.go",
}

// Source cites the real parser that decides rule r in implementation fs:
// its repository, file and function where the implementations differ,
// else grpc-go's file, whose rule the other implementations are modelled
// by.
func (r Rule) Source(fs FilterSet) string {
	if s, ok := ruleSources[r]; ok && fs < numFilterSets {
		return s[fs]
	}
	prefix, _, _ := strings.Cut(string(r), ".")
	file := typeFiles[prefix]
	if file == "" {
		return "grpc-go internal/xds/xdsclient/xdsresource"
	}
	src := "grpc-go internal/xds/xdsclient/xdsresource/" + file
	if fs != FiltersGRPCGo {
		src += " (grpc-go's rule; " + fs.String() + " is modelled by it)"
	}
	return src
}
