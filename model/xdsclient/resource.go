package xdsclient

import (
	"bytes"
	"fmt"
	"math"
	"net"
	"regexp"
	"strconv"
	"strings"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	aggregatepb "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"
	hcmpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// Rule names one validation check. Each mirrors a check in grpc-go's
// internal/xds/xdsclient/xdsresource/unmarshal_{lds,rds,cds,eds}.go, the
// file named in the rule's comment; a NACK cites the rule. Where grpc-java
// or C-core decide differently, the implementation's own check is in
// parsers.go (and filters.go), and Rule.Source cites it.
type Rule string

// The rule set. Checks grpc-go makes that need parts of a resource the
// simulator never generates (TLS contexts, filter-specific configs, outlier
// detection) are not modelled; see docs/model-fidelity.md.
const (
	RuleUnmarshal Rule = "resource.unmarshal" // the Any does not decode as its type URL (all four files)
	RuleWrongType Rule = "resource.type_url"  // resource type URL differs from the response's (UnwrapResource / Is*Resource)

	RuleLDSNoAPIListenerOrAddress Rule = "lds.no_api_listener_or_address" // no api_listener, and no socket address for a server listener (processServerSideListener)
	RuleLDSAPIListenerNotHCM      Rule = "lds.api_listener_not_hcm"       // api_listener is not an HttpConnectionManager (processClientSideListener)
	RuleLDSXffTrustedHops         Rule = "lds.xff_num_trusted_hops"       // A41: xff_num_trusted_hops must be 0
	RuleLDSOriginalIPDetection    Rule = "lds.original_ip_detection"      // A41: original_ip_detection_extensions must be empty
	RuleLDSRDSConfigSource        Rule = "lds.rds_config_source"          // RDS config source is neither ADS nor self
	RuleLDSEmptyRouteConfigName   Rule = "lds.empty_route_config_name"    // rds.route_config_name is empty
	RuleLDSNoRouteSpecifier       Rule = "lds.no_route_specifier"         // neither rds nor route_config (scoped routes unsupported)
	RuleLDSInlineRoute            Rule = "lds.inline_route_config"        // inline route_config fails an rds.* rule
	RuleLDSFilterName             Rule = "lds.http_filter_name"           // a filter has no name, or a duplicate name
	RuleLDSUnknownFilter          Rule = "lds.http_filter_unsupported"    // a non-optional filter type with no implementation
	RuleLDSNoFilters              Rule = "lds.http_filters_empty"         // A39: the filter list is empty
	RuleLDSTerminalFilter         Rule = "lds.http_filter_terminal"       // A39: router is not last, or the last filter is not terminal
	RuleLDSServerFilterChains     Rule = "lds.server_filter_chains"       // server listener without any filter chain or default chain
	RuleLDSServerUnsupported      Rule = "lds.server_unsupported_field"   // listener_filters or use_original_dst on a server listener

	RuleRDSRouteNoMatch        Rule = "rds.route_no_match"         // a route without match or path specifier
	RuleRDSInvalidRegex        Rule = "rds.invalid_regex"          // a safe_regex that does not compile
	RuleRDSWeightedClusters    Rule = "rds.weighted_clusters"      // weighted_clusters with total weight 0 or above MaxUint32
	RuleRDSRetryPolicy         Rule = "rds.retry_policy"           // num_retries < 1, or a non-positive backoff interval
	RuleRDSClusterSpecifier    Rule = "rds.cluster_specifier"      // an unknown non-optional cluster_specifier_plugin, or a route naming an undeclared one
	RuleRDSHeaderMatcher       Rule = "rds.header_matcher"         // a header matcher of an unknown kind
	RuleCDSLBPolicy            Rule = "cds.lb_policy"              // lb_policy other than ROUND_ROBIN, RING_HASH (xx_hash), LEAST_REQUEST (choice_count >= 2)
	RuleCDSLoadBalancingPolicy Rule = "cds.load_balancing_policy"  // load_balancing_policy with no supported policy (A52)
	RuleCDSDiscoveryType       Rule = "cds.discovery_type"         // not EDS, LOGICAL_DNS or aggregate
	RuleCDSEDSConfigSource     Rule = "cds.eds_config_source"      // EDS config source is neither ADS nor self
	RuleCDSEDSServiceName      Rule = "cds.eds_service_name"       // xdstp cluster name without eds service_name
	RuleCDSLogicalDNS          Rule = "cds.logical_dns"            // LOGICAL_DNS without exactly one locality/endpoint with host and port
	RuleCDSAggregate           Rule = "cds.aggregate"              // aggregate cluster with no clusters
	RuleCDSLRSServer           Rule = "cds.lrs_server"             // lrs_server that is not self
	RuleCDSTransportSocket     Rule = "cds.transport_socket"       // transport_socket_matches, or a transport socket not named tls
	RuleEDSLocalityMissing     Rule = "eds.locality_missing"       // a LocalityLbEndpoints without locality
	RuleEDSLocalityWeightSum   Rule = "eds.locality_weight_sum"    // locality weights of one priority exceed MaxUint32
	RuleEDSDuplicateLocality   Rule = "eds.duplicate_locality"     // a locality twice at the same priority
	RuleEDSEndpointZeroWeight  Rule = "eds.endpoint_zero_weight"   // an endpoint with load_balancing_weight 0
	RuleEDSDuplicateAddress    Rule = "eds.duplicate_address"      // two endpoints with the same address
	RuleEDSPriorityGap         Rule = "eds.priority_gap"           // priorities are not 0..N-1
	RuleTopLevel               Rule = "response.resource_decoding" // a resource whose name could not be read (grpc-go "top-level" error)
)

// ValidationError is why a resource was rejected.
type ValidationError struct {
	Rule   Rule
	Detail string
}

// Error formats the error as "rule: detail".
func (e *ValidationError) Error() string { return string(e.Rule) + ": " + e.Detail }

func verr(r Rule, format string, args ...any) *ValidationError {
	return &ValidationError{Rule: r, Detail: fmt.Sprintf(format, args...)}
}

// Decoded is one resource from a DiscoveryResponse after decoding and
// validation. It depends only on the resource bytes, never on the client,
// so the wiring decodes each (server, type, name, version) once and hands
// the same *Decoded to every client: it is immutable once returned.
type Decoded struct {
	Type ResourceType
	// Name is the resource name; empty only when Err is RuleTopLevel.
	Name string
	// Raw is the resource as it came (CSDS xds_config); Raw.Value is the
	// serialized message used for equality (grpc-go compares Bytes()).
	Raw *anypb.Any
	// Message is the decoded proto (*listenerpb.Listener, ...); nil if it
	// did not unmarshal.
	Message proto.Message
	// Err is set when the resource is invalid in every implementation
	// (the first implementation's error): every client NACKs the
	// response. ErrIn says what one implementation does.
	Err *ValidationError
	// implErrs are the errors by implementation (FilterSet): its HTTP
	// filters (gRFC A39) and the rules where its parser differs from the
	// others' (parsers.go).
	implErrs [numFilterSets]*ValidationError

	// References the data plane follows, filled for valid resources:
	// RouteConfigName (LDS with RDS), Clusters (RDS, inline LDS routes,
	// aggregate CDS) and EDSServiceName (CDS EDS; defaults to the name).
	RouteConfigName string
	Clusters        []string
	EDSServiceName  string
}

// ErrIn is why the resource is invalid for a client whose implementation
// registers the filter set s, or nil when it is valid there.
func (d *Decoded) ErrIn(s FilterSet) *ValidationError {
	if s < numFilterSets && d.implErrs[s] != nil {
		return d.implErrs[s]
	}
	return d.Err // a resource that did not decode is invalid everywhere
}

// Equal reports whether d and o are the same resource bytes.
func (d *Decoded) Equal(o *Decoded) bool {
	if d == o {
		return true
	}
	if d == nil || o == nil {
		return false
	}
	return d.Type == o.Type && d.Name == o.Name && bytes.Equal(d.Raw.GetValue(), o.Raw.GetValue())
}

// ResourceError is an xRFC TP3 per-resource error from
// DiscoveryResponse.resource_errors.
type ResourceError struct {
	Name   string
	Status Status
}

// DecodedResponse is a DiscoveryResponse after decoding. The wiring may
// build one from cached *Decoded values instead of calling DecodeResponse.
type DecodedResponse struct {
	TypeURL string
	Version string
	Nonce   string
	// Resources are in response order; shared and immutable.
	Resources []*Decoded
	// ResourceErrors are the TP3 errors.
	ResourceErrors []ResourceError
}

// DecodeResponse decodes and validates every resource of resp.
func DecodeResponse(resp *discoverypb.DiscoveryResponse) *DecodedResponse {
	out := new(DecodedResponse)
	DecodeResponseInto(out, resp, Decode)
	return out
}

// DecodeResponseInto is DecodeResponse into out, whose slices it reuses,
// with the resource decoder given. A caller that sees the same
// *anypb.Any in many responses (the simulator's servers share one per
// resource version) decodes each once and hands the shared result to
// every client; one that hands each response to a client, which keeps
// nothing of it past the call (Client.DecodedResponseReceived), decodes
// them all into one DecodedResponse without allocating.
func DecodeResponseInto(out *DecodedResponse, resp *discoverypb.DiscoveryResponse, decode func(ResourceType, *anypb.Any) *Decoded) {
	clear(out.Resources)
	*out = DecodedResponse{TypeURL: resp.GetTypeUrl(), Version: resp.GetVersionInfo(), Nonce: resp.GetNonce(),
		Resources: out.Resources[:0], ResourceErrors: out.ResourceErrors[:0]}
	if typ, known := typeFromURL(resp.GetTypeUrl()); known {
		for _, r := range resp.GetResources() {
			out.Resources = append(out.Resources, decode(typ, r))
		}
	}
	for _, re := range resp.GetResourceErrors() {
		out.ResourceErrors = append(out.ResourceErrors, ResourceError{
			Name:   re.GetResourceName().GetName(),
			Status: Status{Code: codes.Code(re.GetErrorDetail().GetCode()), Message: re.GetErrorDetail().GetMessage()},
		})
	}
}

// Decode decodes and validates one resource of type typ.
func Decode(typ ResourceType, raw *anypb.Any) *Decoded {
	d := &Decoded{Type: typ, Raw: raw}
	// A discovery.v3.Resource wrapper is unwrapped first (grpc-go
	// xdsresource.UnwrapResource).
	if raw.GetTypeUrl() == "type.googleapis.com/envoy.service.discovery.v3.Resource" {
		w := &discoverypb.Resource{}
		if err := proto.Unmarshal(raw.GetValue(), w); err != nil {
			d.Err = verr(RuleTopLevel, "failed to unwrap resource: %v", err)
			return d
		}
		raw = w.GetResource()
		d.Raw = raw
	}
	if raw.GetTypeUrl() != typ.TypeURL() {
		d.Err = verr(RuleTopLevel, "unexpected resource type %q in a %v response", raw.GetTypeUrl(), typ)
		return d
	}
	var msg proto.Message
	switch typ {
	case LDS:
		msg = &listenerpb.Listener{}
	case RDS:
		msg = &routepb.RouteConfiguration{}
	case CDS:
		msg = &clusterpb.Cluster{}
	case EDS:
		msg = &endpointpb.ClusterLoadAssignment{}
	}
	if err := proto.Unmarshal(raw.GetValue(), msg); err != nil {
		d.Err = verr(RuleTopLevel, "failed to unmarshal resource: %v", err)
		return d
	}
	d.Message = msg
	d.Name = resourceName(msg)
	// Each implementation validates the resource with its own parser; the
	// references the data plane follows come from the first that accepts
	// it (they do not depend on the parser).
	refs := false
	for fs := range numFilterSets {
		var scratch Decoded
		err := Validate(msg, fs, &scratch)
		d.implErrs[fs] = err
		if err == nil && !refs {
			refs = true
			d.RouteConfigName, d.Clusters, d.EDSServiceName = scratch.RouteConfigName, scratch.Clusters, scratch.EDSServiceName
		}
	}
	if !refs {
		d.Err = d.implErrs[0]
	}
	return d
}

func resourceName(m proto.Message) string {
	switch r := m.(type) {
	case *listenerpb.Listener:
		return r.GetName()
	case *routepb.RouteConfiguration:
		return r.GetName()
	case *clusterpb.Cluster:
		return r.GetName()
	case *endpointpb.ClusterLoadAssignment:
		return r.GetClusterName()
	}
	return ""
}

// Validate validates one resource message (a *listenerpb.Listener,
// *routepb.RouteConfiguration, *clusterpb.Cluster or
// *endpointpb.ClusterLoadAssignment) as the implementation fs's parser
// does, and returns why that implementation rejects it, or nil. When refs
// is not nil and the resource is valid, the references the data plane
// follows are filled in. It is a pure function: the fleet's clients and
// `xdssim lint` both use it.
func Validate(msg proto.Message, fs FilterSet, refs *Decoded) *ValidationError {
	if refs == nil {
		refs = &Decoded{}
	}
	switch m := msg.(type) {
	case *listenerpb.Listener:
		return validateListener(m, refs, fs)
	case *routepb.RouteConfiguration:
		return validateRouteConfig(m, refs, fs)
	case *clusterpb.Cluster:
		return validateCluster(m, refs, fs)
	case *endpointpb.ClusterLoadAssignment:
		return validateEndpoints(m, fs)
	}
	return verr(RuleTopLevel, "%s is not an LDS, RDS, CDS or EDS resource", proto.MessageName(msg))
}

// MustDecoded wraps a message into an Any and decodes it; it panics if the
// message does not marshal. For tests and scenario fixtures.
func MustDecoded(typ ResourceType, m proto.Message) *Decoded {
	a, err := anypb.New(m)
	if err != nil {
		panic(err)
	}
	return Decode(typ, a)
}

const (
	hcmTypeURL    = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
	routerTypeURL = "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"
	rlsPluginURL  = "type.googleapis.com/grpc.lookup.v1.RouteLookupClusterSpecifier"
)

// validateListener mirrors grpc-go unmarshal_lds.go processListener.
func validateListener(lis *listenerpb.Listener, d *Decoded, fs FilterSet) *ValidationError {
	if lis.GetApiListener() == nil {
		// processServerSideListener.
		if len(lis.GetListenerFilters()) != 0 || lis.GetUseOriginalDst().GetValue() {
			return verr(RuleLDSServerUnsupported, "listener %q: unsupported listener_filters or use_original_dst", lis.GetName())
		}
		if lis.GetAddress().GetSocketAddress() == nil {
			return verr(RuleLDSNoAPIListenerOrAddress, "listener %q has no api_listener and no socket_address", lis.GetName())
		}
		if len(lis.GetFilterChains()) == 0 && lis.GetDefaultFilterChain() == nil {
			return verr(RuleLDSServerFilterChains, "listener %q: no supported filter chains and no default filter chain", lis.GetName())
		}
		return nil
	}
	apiAny := lis.GetApiListener().GetApiListener()
	if apiAny.GetTypeUrl() != hcmTypeURL {
		return verr(RuleLDSAPIListenerNotHCM, "listener %q: unexpected http connection manager resource type %q", lis.GetName(), apiAny.GetTypeUrl())
	}
	hcm := &hcmpb.HttpConnectionManager{}
	if err := proto.Unmarshal(apiAny.GetValue(), hcm); err != nil {
		return verr(RuleLDSAPIListenerNotHCM, "listener %q: failed to unmarshal api_listener: %v", lis.GetName(), err)
	}
	if hcm.GetXffNumTrustedHops() != 0 {
		return verr(RuleLDSXffTrustedHops, "listener %q: xff_num_trusted_hops must be unset or zero", lis.GetName())
	}
	if len(hcm.GetOriginalIpDetectionExtensions()) != 0 {
		return verr(RuleLDSOriginalIPDetection, "listener %q: original_ip_detection_extensions must be empty", lis.GetName())
	}
	switch rs := hcm.GetRouteSpecifier().(type) {
	case *hcmpb.HttpConnectionManager_Rds:
		cs := rs.Rds.GetConfigSource()
		if cs.GetAds() == nil && cs.GetSelf() == nil {
			return verr(RuleLDSRDSConfigSource, "listener %q: RDS config source is not ADS or Self", lis.GetName())
		}
		if rs.Rds.GetRouteConfigName() == "" {
			return verr(RuleLDSEmptyRouteConfigName, "listener %q: empty route_config_name", lis.GetName())
		}
		d.RouteConfigName = rs.Rds.GetRouteConfigName()
	case *hcmpb.HttpConnectionManager_RouteConfig:
		if err := validateRouteConfig(rs.RouteConfig, d, fs); err != nil {
			return verr(RuleLDSInlineRoute, "listener %q: failed to parse inline RDS resp: %v", lis.GetName(), err)
		}
	case nil:
		return verr(RuleLDSNoRouteSpecifier, "listener %q: no RouteSpecifier", lis.GetName())
	default:
		return verr(RuleLDSNoRouteSpecifier, "listener %q: unsupported type %T for RouteSpecifier", lis.GetName(), rs)
	}
	// processHTTPFilters (A39): which filters a client accepts depends on
	// its implementation.
	return validateHTTPFilters(lis.GetName(), hcm.GetHttpFilters(), fs)
}

// validateRouteConfig mirrors grpc-go unmarshal_rds.go
// generateRDSUpdateFromRouteConfiguration. A RouteConfiguration with no
// virtual hosts is valid there (RPCs then fail in the resolver, which finds
// no matching virtual host), so it is valid here.
func validateRouteConfig(rc *routepb.RouteConfiguration, d *Decoded, fs FilterSet) *ValidationError {
	plugins := map[string]bool{} // name -> supported
	for _, csp := range rc.GetClusterSpecifierPlugins() {
		supported := csp.GetExtension().GetTypedConfig().GetTypeUrl() == rlsPluginURL
		if !supported && !csp.GetIsOptional() {
			return verr(RuleRDSClusterSpecifier, "route %q: cluster specifier %q of type %q was not found", rc.GetName(), csp.GetExtension().GetName(), csp.GetExtension().GetTypedConfig().GetTypeUrl())
		}
		plugins[csp.GetExtension().GetName()] = supported
	}
	seenCluster := map[string]bool{}
	addCluster := func(n string) {
		if !seenCluster[n] {
			seenCluster[n] = true
			d.Clusters = append(d.Clusters, n)
		}
	}
	for vi, vh := range rc.GetVirtualHosts() {
		if err := retryPolicyError(rc.GetName(), fmt.Sprintf("virtual_hosts[%d].retry_policy", vi), vh.GetRetryPolicy(), fs); err != nil {
			return err
		}
		for i, r := range vh.GetRoutes() {
			m := r.GetMatch()
			if m == nil || m.GetPathSpecifier() == nil {
				return verr(RuleRDSRouteNoMatch, "route %q: virtual host %q route %d has no match or path specifier", rc.GetName(), vh.GetName(), i)
			}
			if len(m.GetQueryParameters()) != 0 {
				continue // ignored, not NACKed
			}
			if re, ok := m.GetPathSpecifier().(*routepb.RouteMatch_SafeRegex); ok {
				if _, err := regexp.Compile(re.SafeRegex.GetRegex()); err != nil {
					return verr(RuleRDSInvalidRegex, "route %q: invalid regex %q", rc.GetName(), re.SafeRegex.GetRegex())
				}
			}
			for _, h := range m.GetHeaders() {
				switch hm := h.GetHeaderMatchSpecifier().(type) {
				case *routepb.HeaderMatcher_SafeRegexMatch:
					if _, err := regexp.Compile(hm.SafeRegexMatch.GetRegex()); err != nil {
						return verr(RuleRDSInvalidRegex, "route %q: invalid regex %q", rc.GetName(), hm.SafeRegexMatch.GetRegex())
					}
				case *routepb.HeaderMatcher_ExactMatch, *routepb.HeaderMatcher_RangeMatch, *routepb.HeaderMatcher_PresentMatch,
					*routepb.HeaderMatcher_PrefixMatch, *routepb.HeaderMatcher_SuffixMatch, *routepb.HeaderMatcher_StringMatch:
				default:
					return verr(RuleRDSHeaderMatcher, "route %q: unrecognized header matcher %T", rc.GetName(), hm)
				}
			}
			action := r.GetRoute()
			if action == nil {
				continue // non-forwarding or unsupported action: kept, not NACKed
			}
			switch cs := action.GetClusterSpecifier().(type) {
			case *routepb.RouteAction_Cluster:
				addCluster(cs.Cluster)
			case *routepb.RouteAction_WeightedClusters:
				var total uint64
				for _, c := range cs.WeightedClusters.GetClusters() {
					w := c.GetWeight().GetValue()
					if w == 0 {
						continue
					}
					total += uint64(w)
					if total > math.MaxUint32 {
						return verr(RuleRDSWeightedClusters, "route %q: total weight of clusters exceeds MaxUint32", rc.GetName())
					}
					addCluster(c.GetName())
				}
				if total == 0 {
					return verr(RuleRDSWeightedClusters, "route %q: route has no valid cluster in WeightedCluster action", rc.GetName())
				}
			case *routepb.RouteAction_ClusterSpecifierPlugin:
				if _, ok := plugins[cs.ClusterSpecifierPlugin]; !ok {
					return verr(RuleRDSClusterSpecifier, "route %q: route specifies cluster specifier plugin %q that is not in the route configuration", rc.GetName(), cs.ClusterSpecifierPlugin)
				}
			}
			if err := retryPolicyError(rc.GetName(), fmt.Sprintf("virtual_hosts[%d].routes[%d].route.retry_policy", vi, i), action.GetRetryPolicy(), fs); err != nil {
				return err
			}
		}
	}
	return nil
}

// supportedLBPolicies are the typed_config URLs grpc-go's xdslbregistry
// converts (A52).
var supportedLBPolicies = map[string]bool{
	"type.googleapis.com/envoy.extensions.load_balancing_policies.round_robin.v3.RoundRobin":                                        true,
	"type.googleapis.com/envoy.extensions.load_balancing_policies.ring_hash.v3.RingHash":                                            true,
	"type.googleapis.com/envoy.extensions.load_balancing_policies.least_request.v3.LeastRequest":                                    true,
	"type.googleapis.com/envoy.extensions.load_balancing_policies.wrr_locality.v3.WrrLocality":                                      true,
	"type.googleapis.com/envoy.extensions.load_balancing_policies.pick_first.v3.PickFirst":                                          true,
	"type.googleapis.com/envoy.extensions.load_balancing_policies.client_side_weighted_round_robin.v3.ClientSideWeightedRoundRobin": true,
	"type.googleapis.com/xds.type.v3.TypedStruct":                                                                                   true,
	"type.googleapis.com/udpa.type.v1.TypedStruct":                                                                                  true,
}

// validateCluster mirrors grpc-go unmarshal_cds.go
// validateClusterAndConstructClusterUpdate.
// Where an implementation's parser differs (parsers.go), fs selects it:
// the LB policy is checked first in grpc-go and spec, and last in
// grpc-java and C-core, which also check it differently; C-core does not
// look at transport_socket_matches.
func validateCluster(c *clusterpb.Cluster, d *Decoded, fs FilterSet) *ValidationError {
	lbFirst := fs == FiltersGRPCGo || fs == FiltersSpec
	if lbFirst {
		if err := clusterLBPolicy(c, fs); err != nil {
			return err
		}
	}
	if len(c.GetTransportSocketMatches()) != 0 && fs != FiltersGRPCCore {
		return verr(RuleCDSTransportSocket, "cluster %q: unsupported transport_socket_matches field is non-empty", c.GetName())
	}
	if ts := c.GetTransportSocket(); ts != nil && ts.GetName() != "envoy.transport_sockets.tls" {
		return verr(RuleCDSTransportSocket, "cluster %q: transport_socket field has unexpected name %q", c.GetName(), ts.GetName())
	}
	if lbp := c.GetLoadBalancingPolicy(); lbp != nil && lbFirst {
		if err := loadBalancingPolicy(c, fs); err != nil {
			return err
		}
	}
	if lrs := c.GetLrsServer(); lrs != nil && lrs.GetSelf() == nil {
		return verr(RuleCDSLRSServer, "cluster %q: unsupported config_source_specifier in lrs_server field", c.GetName())
	}
	switch {
	case c.GetType() == clusterpb.Cluster_EDS:
		cs := c.GetEdsClusterConfig().GetEdsConfig()
		if cs.GetAds() == nil && cs.GetSelf() == nil {
			return verr(RuleCDSEDSConfigSource, "cluster %q: EDS config source is not ADS or Self", c.GetName())
		}
		d.EDSServiceName = c.GetEdsClusterConfig().GetServiceName()
		if strings.HasPrefix(c.GetName(), "xdstp:") && d.EDSServiceName == "" {
			return verr(RuleCDSEDSServiceName, "cluster %q: EDS service name is not set with a new-style cluster name", c.GetName())
		}
		if d.EDSServiceName == "" {
			d.EDSServiceName = c.GetName()
		}
	case c.GetType() == clusterpb.Cluster_LOGICAL_DNS:
		la := c.GetLoadAssignment()
		if len(la.GetEndpoints()) != 1 || len(la.GetEndpoints()[0].GetLbEndpoints()) != 1 {
			return verr(RuleCDSLogicalDNS, "cluster %q: LOGICAL_DNS needs exactly one locality with exactly one endpoint", c.GetName())
		}
		sa := la.GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
		if sa == nil || sa.GetAddress() == "" || sa.GetPortValue() == 0 || sa.GetResolverName() != "" {
			return verr(RuleCDSLogicalDNS, "cluster %q: LOGICAL_DNS endpoint needs a host and port and no custom resolver", c.GetName())
		}
	case c.GetClusterType().GetName() == "envoy.clusters.aggregate":
		cfg := &aggregatepb.ClusterConfig{}
		if err := proto.Unmarshal(c.GetClusterType().GetTypedConfig().GetValue(), cfg); err != nil {
			return verr(RuleCDSAggregate, "cluster %q: failed to unmarshal aggregate config: %v", c.GetName(), err)
		}
		if len(cfg.GetClusters()) == 0 {
			return verr(RuleCDSAggregate, "cluster %q: aggregate cluster has empty clusters field", c.GetName())
		}
		d.Clusters = append(d.Clusters, cfg.GetClusters()...)
	default:
		return verr(RuleCDSDiscoveryType, "cluster %q: unsupported cluster type (%v, %v)", c.GetName(), c.GetType(), c.GetClusterType().GetName())
	}
	if !lbFirst {
		return clusterLBPolicy(c, fs)
	}
	return nil
}

// validateEndpoints mirrors grpc-go unmarshal_eds.go parseEDSRespProto.
func validateEndpoints(cla *endpointpb.ClusterLoadAssignment, _ FilterSet) *ValidationError {
	type lkey struct {
		prio                  uint32
		region, zone, subzone string
	}
	seenLoc := map[lkey]bool{}
	sums := map[uint32]uint64{}
	addrs := map[string]bool{}
	for _, loc := range cla.GetEndpoints() {
		l := loc.GetLocality()
		if l == nil {
			return verr(RuleEDSLocalityMissing, "cluster load assignment %q: locality without ID", cla.GetClusterName())
		}
		w := loc.GetLoadBalancingWeight().GetValue()
		if w == 0 {
			continue // ignored with a warning, not NACKed
		}
		p := loc.GetPriority()
		sums[p] += uint64(w)
		if sums[p] > math.MaxUint32 {
			return verr(RuleEDSLocalityWeightSum, "cluster load assignment %q: sum of weights of localities at priority %d exceeded maximal value", cla.GetClusterName(), p)
		}
		k := lkey{p, l.GetRegion(), l.GetZone(), l.GetSubZone()}
		if seenLoc[k] {
			return verr(RuleEDSDuplicateLocality, "cluster load assignment %q: duplicate locality %s/%s/%s with the same priority %d", cla.GetClusterName(), k.region, k.zone, k.subzone, p)
		}
		seenLoc[k] = true
		for _, e := range loc.GetLbEndpoints() {
			if lw := e.GetLoadBalancingWeight(); lw != nil && lw.GetValue() == 0 {
				return verr(RuleEDSEndpointZeroWeight, "cluster load assignment %q: endpoint with zero weight", cla.GetClusterName())
			}
			a := endpointAddr(e.GetEndpoint().GetAddress())
			if addrs[a] {
				return verr(RuleEDSDuplicateAddress, "cluster load assignment %q: duplicate endpoint with the same address %s", cla.GetClusterName(), a)
			}
			addrs[a] = true
		}
	}
	for i := 0; i < len(sums); i++ {
		if _, ok := sums[uint32(i)]; !ok {
			return verr(RuleEDSPriorityGap, "cluster load assignment %q: priority %d missing", cla.GetClusterName(), i)
		}
	}
	return nil
}

func endpointAddr(a *corepb.Address) string {
	sa := a.GetSocketAddress()
	return net.JoinHostPort(sa.GetAddress(), strconv.Itoa(int(sa.GetPortValue())))
}
