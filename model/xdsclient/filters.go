package xdsclient

import (
	"fmt"

	hcmpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
)

// FilterSet names the HTTP filters an implementation registers, which
// decide whether it accepts a Listener's HttpConnectionManager (gRFC A39,
// "HTTP filters": a non-optional filter the client does not support makes
// the Listener invalid; an optional one is skipped). The implementations
// differ, most visibly in gRFC A55's stateful-session filter, which only
// C-core has.
type FilterSet uint8

// The filter sets. Each lists the filters registered by default (no
// environment variable set) for client-side use.
const (
	// FiltersGRPCGo: router, fault (grpc-go xds/xds.go links
	// internal/xds/httpfilter/{fault,rbac,router,extproc}; rbac is
	// server-only, ext_proc registers only behind
	// GRPC_EXPERIMENTAL_XDS_EXT_PROC_ON_CLIENT). The gcp_authn filter
	// registers itself in its package's init, but no non-test file of
	// grpc-go (v1.84.0, master 4793ad04) imports
	// internal/xds/httpfilter/gcp_authn, so a real binary has no
	// implementation of it; GRPC_EXPERIMENTAL_XDS_GCP_AUTHENTICATION_FILTER
	// gates only the CDS audience metadata (xdsresource unmarshal_cds.go).
	FiltersGRPCGo FilterSet = iota
	// FiltersGRPCJava: router, fault, gcp_authn (grpc-java
	// FilterRegistry.getDefaultRegistry registers FaultFilter,
	// RouterFilter, RbacFilter, GcpAuthenticationFilter and
	// ExternalProcessorFilter with no environment gate since #12499;
	// GcpAuthenticationFilter.Provider.isClientFilter is true; rbac is
	// server-only and ext_proc is a client filter only behind
	// GRPC_EXPERIMENTAL_XDS_EXT_PROC_ON_CLIENT).
	FiltersGRPCJava
	// FiltersGRPCCore: router, fault, stateful_session (with its
	// per-route override), gcp_authn (C-core XdsHttpFilterRegistry; rbac
	// is server-only).
	FiltersGRPCCore
	// FiltersSpec: the filters the gRFCs define for clients: router (A39),
	// fault (A33), stateful_session (A55), gcp_authn (A83); rbac (A41) is
	// server-only. The same set as C-core's.
	FiltersSpec
	numFilterSets
)

var filterSetNames = [numFilterSets]string{ProfileGRPCGo, ProfileGRPCJava, ProfileGRPCCore, ProfileSpec}

func (s FilterSet) String() string {
	if s < numFilterSets {
		return filterSetNames[s]
	}
	return fmt.Sprintf("FilterSet(%d)", uint8(s))
}

// StatefulSession reports whether the set has gRFC A55's
// stateful-session filter (and with it, in C-core, the xds_override_host
// policy).
func (s FilterSet) StatefulSession() bool {
	return s < numFilterSets && registries[s][sessionTypeURL]&filterClient != 0
}

// filterSetByName returns the set named by a profile's http_filters.
func filterSetByName(name string) (FilterSet, bool) {
	for i, n := range filterSetNames {
		if n == name {
			return FilterSet(i), true
		}
	}
	return 0, false
}

// Filter type URLs.
const (
	faultTypeURL        = "type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault"
	sessionTypeURL      = "type.googleapis.com/envoy.extensions.filters.http.stateful_session.v3.StatefulSession"
	sessionPerRouteURL  = "type.googleapis.com/envoy.extensions.filters.http.stateful_session.v3.StatefulSessionPerRoute"
	gcpAuthnTypeURL     = "type.googleapis.com/envoy.extensions.filters.http.gcp_authn.v3.GcpAuthnFilterConfig"
	rbacTypeURL         = "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC"
	rbacPerRouteTypeURL = "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBACPerRoute"
)

// What a registered filter may do.
const (
	filterServerOnly     filterKind = 0
	filterTerminal       filterKind = 1
	filterClient         filterKind = 2
	filterClientTerminal            = filterClient | filterTerminal
)

// filterKind is what a registered filter may do: run on clients, and be
// the terminal filter.
type filterKind uint8

// registries are the filter sets' registries by type URL. A type URL
// absent from a registry has no implementation there.
var registries = func() [numFilterSets]map[string]filterKind {
	common := func() map[string]filterKind {
		return map[string]filterKind{
			routerTypeURL: filterClientTerminal,
			faultTypeURL:  filterClient,
			rbacTypeURL:   filterServerOnly, rbacPerRouteTypeURL: filterServerOnly,
		}
	}
	var r [numFilterSets]map[string]filterKind
	for s := range r {
		r[s] = common()
	}
	for _, s := range []FilterSet{FiltersGRPCJava, FiltersGRPCCore, FiltersSpec} {
		r[s][gcpAuthnTypeURL] = filterClient
	}
	for _, s := range []FilterSet{FiltersGRPCCore, FiltersSpec} {
		r[s][sessionTypeURL] = filterClient
		r[s][sessionPerRouteURL] = filterClient
	}
	return r
}()

// filterErrorText formats a rejected filter as one implementation does:
// a type it has no implementation of, and one it has only for servers.
type filterErrorText struct {
	unknown, notClient func(listener, name, typeURL string) *ValidationError
}

// coreFilterErrors are C-core's (xds_listener_parser.cc
// HttpConnectionManagerParse), which the spec set shares.
var coreFilterErrors = filterErrorText{
	unknown: func(l, _, u string) *ValidationError {
		return verr(RuleLDSUnknownFilter, "listener %q: no filter registered for config type %s", l, u)
	},
	notClient: func(l, _, u string) *ValidationError {
		return verr(RuleLDSUnknownFilter, "listener %q: Filter %s is not supported on clients", l, u)
	},
}

// javaFilterError is grpc-java's one message for both
// (XdsListenerResource.parseHttpFilter).
func javaFilterError(l, n, u string) *ValidationError {
	return verr(RuleLDSUnknownFilter, "listener %q: HttpFilter [%s](%s) is required but unsupported for client", l, n, u)
}

// filterErrors are the filter sets' error texts.
var filterErrors = [numFilterSets]filterErrorText{
	FiltersGRPCGo: {
		// grpc-go unmarshal_lds.go validateHTTPFilterConfig and
		// processHTTPFilters.
		unknown: func(l, _, u string) *ValidationError {
			return verr(RuleLDSUnknownFilter, "listener %q: no filter implementation found for %q", l, u)
		},
		notClient: func(l, n, _ string) *ValidationError {
			return verr(RuleLDSUnknownFilter, "listener %q: HTTP filter %q not supported client-side", l, n)
		},
	},
	FiltersGRPCJava: {unknown: javaFilterError, notClient: javaFilterError},
	FiltersGRPCCore: coreFilterErrors,
	FiltersSpec:     coreFilterErrors,
}

// validateHTTPFilters is the filter part of a client Listener's validation
// (gRFC A39; grpc-go processHTTPFilters, grpc-java parseHttpFilter, C-core
// HttpConnectionManagerParse) in the filter set s: names present and
// unique, non-optional filters implemented for clients, optional
// unimplemented ones skipped, exactly one terminal filter and it is last.
func validateHTTPFilters(listener string, filters []*hcmpb.HttpFilter, s FilterSet) *ValidationError {
	reg, errs := registries[s], filterErrors[s]
	seen := make(map[string]bool, len(filters))
	var kept []*hcmpb.HttpFilter
	for _, f := range filters {
		if f.GetName() == "" {
			return verr(RuleLDSFilterName, "listener %q: filter missing name field", listener)
		}
		if seen[f.GetName()] {
			return verr(RuleLDSFilterName, "listener %q: duplicate filter name %q", listener, f.GetName())
		}
		seen[f.GetName()] = true
		url := f.GetTypedConfig().GetTypeUrl()
		kind, ok := reg[url]
		switch {
		case (!ok || kind&filterClient == 0) && f.GetIsOptional():
			continue
		case !ok:
			return errs.unknown(listener, f.GetName(), url)
		case kind&filterClient == 0:
			return errs.notClient(listener, f.GetName(), url)
		}
		kept = append(kept, f)
	}
	if len(kept) == 0 {
		return verr(RuleLDSNoFilters, "listener %q: http filters list is empty", listener)
	}
	terminal := func(f *hcmpb.HttpFilter) bool { return reg[f.GetTypedConfig().GetTypeUrl()]&filterTerminal != 0 }
	for _, f := range kept[:len(kept)-1] {
		if terminal(f) {
			return verr(RuleLDSTerminalFilter, "listener %q: http filter %q is a terminal filter but it is not last in the filter chain", listener, f.GetName())
		}
	}
	if f := kept[len(kept)-1]; !terminal(f) {
		return verr(RuleLDSTerminalFilter, "listener %q: http filter %q is not a terminal filter", listener, f.GetName())
	}
	return nil
}
