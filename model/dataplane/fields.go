package dataplane

import (
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
)

// FieldKind says what a field of a user's resource means to the
// simulation.
type FieldKind uint8

const (
	// Unmodelled is a field that changes what a real gRPC client does
	// and that the simulator does not model: its runs differ from the
	// real clients' where the field matters.
	Unmodelled FieldKind = iota + 1
	// Ignored is a field gRPC clients do not read (an Envoy-only
	// setting): it changes nothing, in the simulation or for real.
	Ignored
)

// String names the kind: "unmodelled" or "ignored".
func (k FieldKind) String() string {
	switch k {
	case Unmodelled:
		return "unmodelled"
	case Ignored:
		return "ignored"
	}
	return fmt.Sprintf("FieldKind(%d)", k)
}

// FieldNote is one field of a resource that the simulator does not model,
// or that gRPC clients ignore, with what the real clients do with it.
type FieldNote struct {
	// Path is the field's path in the resource, in proto field names
	// ("virtual_hosts[0].routes[1].route.retry_policy.per_try_timeout").
	Path string
	Kind FieldKind
	// What says what the real clients do with it.
	What string
}

// fieldRule is what one field of a message means: a kind with what
// clients do, or that its value is modelled (recurse looks inside it).
type fieldRule struct {
	kind    FieldKind
	what    string
	recurse bool
	// check, when set, decides instead from the field's value: it returns
	// the note's kind and text, kind 0 for nothing to say.
	check func(v protoreflect.Value) (FieldKind, string)
}

var (
	modelled = fieldRule{}
	inside   = fieldRule{recurse: true}
)

func unmodelled(what string) fieldRule { return fieldRule{kind: Unmodelled, what: what} }
func ignored(what string) fieldRule    { return fieldRule{kind: Ignored, what: what} }

// messageRules are, by message, what its fields mean; a field the table of
// its message lacks is one gRPC's parsers do not read (ignoredDefault).
// Messages without a table are not looked into.
var messageRules = map[protoreflect.FullName]map[protoreflect.Name]fieldRule{
	"envoy.config.listener.v3.Listener": {
		"name": modelled, "api_listener": inside,
		"address":              unmodelled("read by xDS-enabled gRPC servers (gRFC A36); the simulator has no servers"),
		"filter_chains":        unmodelled("read by xDS-enabled gRPC servers (gRFC A36); the simulator has no servers"),
		"default_filter_chain": unmodelled("read by xDS-enabled gRPC servers (gRFC A36); the simulator has no servers"),
		"listener_filters":     modelled, "use_original_dst": modelled, // validated (NACK rules)
	},
	"envoy.config.listener.v3.ApiListener": {"api_listener": inside},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager": {
		"rds": modelled, "route_config": inside, "http_filters": inside, "stat_prefix": modelled,
		"xff_num_trusted_hops": modelled, "original_ip_detection_extensions": modelled,
		"common_http_protocol_options": inside,
	},
	"envoy.config.core.v3.HttpProtocolOptions": {
		"max_stream_duration": unmodelled("caps every RPC's deadline (gRFC A31)"),
	},
	"envoy.extensions.filters.network.http_connection_manager.v3.HttpFilter": {
		"name": modelled, "is_optional": modelled,
		"typed_config": {check: func(v protoreflect.Value) (FieldKind, string) { return filterNote(v.Message().Interface()) }},
	},
	"envoy.config.route.v3.RouteConfiguration": {
		"name": modelled, "virtual_hosts": inside,
		"cluster_specifier_plugins": unmodelled("route lookup (RLS, gRFC A28/RLS): clients ask a lookup service for the cluster"),
	},
	"envoy.config.route.v3.VirtualHost": {
		"name": modelled, "domains": modelled, "routes": inside, "retry_policy": inside,
		"typed_per_filter_config": {check: perFilterNote},
	},
	"envoy.config.route.v3.Route": {
		"name": modelled, "match": inside, "route": inside,
		"typed_per_filter_config": {check: perFilterNote},
		"non_forwarding_action":   unmodelled("RPCs that match it fail with UNAVAILABLE (gRFC A28); the simulator skips the route"),
		"direct_response":         unmodelled("RPCs that match it fail (gRFC A28); the simulator skips the route"),
		"redirect":                unmodelled("RPCs that match it fail (gRFC A28); the simulator skips the route"),
	},
	"envoy.config.route.v3.RouteMatch": {
		"prefix": modelled, "path": modelled, "safe_regex": modelled, "headers": modelled, "case_sensitive": modelled,
		"query_parameters":      modelled, // gRPC never takes such a route, nor does the simulator
		"runtime_fraction":      unmodelled("clients take the route for that fraction of RPCs only (gRFC A28)"),
		"path_separated_prefix": unmodelled("a path matcher gRPC clients handle differently; the simulator skips the route"),
		"path_match_policy":     unmodelled("a path matcher gRPC clients handle differently; the simulator skips the route"),
	},
	"envoy.config.route.v3.RouteAction": {
		"cluster": modelled, "weighted_clusters": inside, "retry_policy": inside, "hash_policy": inside,
		"max_stream_duration":      inside,
		"timeout":                  ignored("gRPC clients use max_stream_duration, not timeout (gRFC A31)"),
		"cluster_specifier_plugin": unmodelled("route lookup (RLS): clients ask a lookup service for the cluster"),
		"cluster_header":           unmodelled("clients take the cluster from a request header (gRFC A28 does not); the simulator skips the route"),
	},
	"envoy.config.route.v3.RouteAction.MaxStreamDuration": {
		"max_stream_duration":     {check: nonZeroDuration("caps the RPC's deadline (gRFC A31)")},
		"grpc_timeout_header_max": {check: nonZeroDuration("caps the RPC's deadline (gRFC A31)")},
	},
	"envoy.config.route.v3.WeightedCluster": {"clusters": inside},
	"envoy.config.route.v3.WeightedCluster.ClusterWeight": {
		"name": modelled, "weight": modelled, "typed_per_filter_config": {check: perFilterNote},
	},
	"envoy.config.route.v3.RetryPolicy": {
		"retry_on": {check: retryOnNote}, "num_retries": modelled, "retry_back_off": modelled,
	},
	"envoy.config.route.v3.RouteAction.HashPolicy": {
		"header": modelled, "terminal": modelled,
		"filter_state": {check: func(v protoreflect.Value) (FieldKind, string) {
			if v.Message().Get(v.Message().Descriptor().Fields().ByName("key")).String() == "io.grpc.channel_id" {
				return 0, ""
			}
			return Ignored, "gRPC hashes only filter_state io.grpc.channel_id (gRFC A42)"
		}},
	},
	"envoy.config.cluster.v3.Cluster": {
		"name": modelled, "type": modelled, "eds_cluster_config": modelled, "lb_policy": modelled,
		"ring_hash_lb_config": modelled, "least_request_lb_config": modelled, "load_balancing_policy": inside,
		"common_lb_config": inside, "transport_socket_matches": modelled,
		"outlier_detection": unmodelled("clients eject endpoints that fail often (gRFC A50)"),
		"circuit_breakers":  unmodelled("max_requests caps the RPCs in flight to the cluster; RPCs beyond it fail (gRFC A32)"),
		"transport_socket":  unmodelled("TLS to the endpoints with the bootstrap's certificates (gRFC A29): handshakes and certificate errors are not simulated"),
		"lrs_server":        unmodelled("clients report load to the server (gRFC A27); it does not change their RPCs"),
		"upstream_config":   unmodelled("C-core reads the connection idle timeout from it"),
		"cluster_type":      unmodelled("aggregate clusters (gRFC A37): the simulated clients do not follow their child clusters"),
		"load_assignment":   unmodelled("LOGICAL_DNS clusters (gRFC A37): DNS resolution is not simulated"),
		"metadata":          ignored("grpc-go reads telemetry labels from it (CSM observability); no effect on RPCs"),
		"connect_timeout":   ignored("gRPC clients use their own connection timeout (20 s minimum, connection-backoff)"),
	},
	"envoy.config.cluster.v3.Cluster.CommonLbConfig": {
		"override_host_status":        modelled,
		"locality_weighted_lb_config": ignored("gRPC always weights localities by their load_balancing_weight (gRFC A27)"),
	},
	"envoy.config.cluster.v3.LoadBalancingPolicy":        {"policies": inside},
	"envoy.config.cluster.v3.LoadBalancingPolicy.Policy": {"typed_extension_config": inside},
	"envoy.config.core.v3.TypedExtensionConfig": {
		"name": modelled,
		"typed_config": {check: func(v protoreflect.Value) (FieldKind, string) {
			switch shortURL(v.Message().Interface()) {
			case "envoy.extensions.load_balancing_policies.client_side_weighted_round_robin.v3.ClientSideWeightedRoundRobin":
				return Unmodelled, "weighted round robin by the backends' reported load (gRFC A58); the simulator picks round robin"
			case "xds.type.v3.TypedStruct", "udpa.type.v1.TypedStruct":
				return Unmodelled, "a custom LB policy (gRFC A52): the simulator cannot run it"
			}
			return 0, ""
		}},
	},
	"envoy.config.endpoint.v3.ClusterLoadAssignment": {
		"cluster_name": modelled, "endpoints": inside, "policy": inside,
	},
	"envoy.config.endpoint.v3.ClusterLoadAssignment.Policy": {
		"drop_overloads": unmodelled("clients drop that share of RPCs (gRFC A27 drop categories)"),
	},
	"envoy.config.endpoint.v3.LocalityLbEndpoints": {
		"locality": modelled, "lb_endpoints": inside, "load_balancing_weight": modelled, "priority": modelled,
	},
	"envoy.config.endpoint.v3.LbEndpoint": {
		"endpoint": inside, "health_status": modelled, "load_balancing_weight": modelled,
		"metadata": unmodelled("C-core and grpc-go read the ring_hash hash key from it (gRFC A76)"),
	},
	"envoy.config.endpoint.v3.Endpoint": {
		"address":              modelled,
		"additional_addresses": unmodelled("more addresses per endpoint, tried in turn (gRFC A61)"),
		"hostname":             ignored("gRPC uses it only for logs and authority rewriting (gRFC A81), which the simulator does not need"),
	},
}

// ignoredDefault is the note of a field its message's table lacks.
const ignoredDefault = "gRPC's xDS parsers do not read it"

// filterNote says what an HTTP filter's config means.
func filterNote(m proto.Message) (FieldKind, string) {
	a, ok := m.(*anypb.Any)
	if !ok {
		return 0, ""
	}
	switch shortURL(a) {
	case "envoy.extensions.filters.http.router.v3.Router",
		"envoy.extensions.filters.http.stateful_session.v3.StatefulSession":
		return 0, ""
	case "envoy.extensions.filters.http.fault.v3.HTTPFault":
		if len(a.GetValue()) == 0 {
			return 0, "" // an empty fault filter injects nothing unless a route overrides it
		}
		return Unmodelled, "fault injection (gRFC A33): clients delay or abort RPCs as configured"
	case "envoy.extensions.filters.http.rbac.v3.RBAC":
		return Unmodelled, "authorization on xDS-enabled servers (gRFC A41); not simulated"
	case "envoy.extensions.filters.http.gcp_authn.v3.GcpAuthnFilterConfig":
		return Unmodelled, "clients fetch and attach identity tokens (gRFC A83)"
	}
	return Unmodelled, fmt.Sprintf("filter %s: clients that implement it run it (the others NACK the listener unless it is optional); the simulator does not", shortURL(a))
}

// perFilterNote says what a typed_per_filter_config means: the
// stateful-session override is modelled, others are not.
func perFilterNote(v protoreflect.Value) (FieldKind, string) {
	var names []string
	v.Map().Range(func(k protoreflect.MapKey, e protoreflect.Value) bool {
		a, _ := e.Message().Interface().(*anypb.Any)
		switch shortURL(a) {
		case "envoy.extensions.filters.http.stateful_session.v3.StatefulSessionPerRoute":
		default:
			names = append(names, k.String())
		}
		return true
	})
	if len(names) == 0 {
		return 0, ""
	}
	slices.Sort(names)
	return Unmodelled, "per-route overrides of filters " + strings.Join(names, ", ") + " (gRFC A39): clients run them, the simulator does not"
}

// retryOnNote names the retry_on conditions gRPC does not retry on.
func retryOnNote(v protoreflect.Value) (FieldKind, string) {
	var unsupported []string
	for _, c := range strings.Split(v.String(), ",") {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		if _, ok := retryCodes[c]; !ok {
			unsupported = append(unsupported, c)
		}
	}
	if len(unsupported) == 0 {
		return 0, ""
	}
	return Ignored, "gRPC retries only on status codes (gRFC A44) and ignores " + strings.Join(unsupported, ", ")
}

// retryCodes are the retry_on conditions gRPC supports (gRFC A44).
var retryCodes = map[string]bool{"cancelled": true, "deadline-exceeded": true, "internal": true, "resource-exhausted": true, "unavailable": true}

func nonZeroDuration(what string) func(protoreflect.Value) (FieldKind, string) {
	return func(v protoreflect.Value) (FieldKind, string) {
		m := v.Message()
		fs := m.Descriptor().Fields()
		if m.Get(fs.ByName("seconds")).Int() == 0 && m.Get(fs.ByName("nanos")).Int() == 0 {
			return 0, "" // zero means no cap
		}
		return Unmodelled, what
	}
}

func shortURL(m proto.Message) string {
	a, ok := m.(*anypb.Any)
	if !ok || a == nil {
		return ""
	}
	u := a.GetTypeUrl()
	return u[strings.LastIndexByte(u, '/')+1:]
}

// Audit lists the fields of a resource (a Listener, RouteConfiguration,
// Cluster or ClusterLoadAssignment) that change what a real gRPC client
// does and that the simulator does not model (Unmodelled), and those gRPC
// clients do not read (Ignored), sorted by path. It never drops a field
// silently: a field nobody reviewed is listed as Ignored only where gRPC's
// parsers are known not to read its message's other fields.
func Audit(m proto.Message) []FieldNote {
	var out []FieldNote
	audit(m.ProtoReflect(), "", &out)
	slices.SortStableFunc(out, func(a, b FieldNote) int { return strings.Compare(a.Path, b.Path) })
	return out
}

func audit(m protoreflect.Message, path string, out *[]FieldNote) {
	if a, ok := m.Interface().(*anypb.Any); ok {
		inner, err := a.UnmarshalNew()
		if err != nil {
			return
		}
		m = inner.ProtoReflect()
	}
	rules, ok := messageRules[m.Descriptor().FullName()]
	if !ok {
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		p := string(fd.Name())
		if path != "" {
			p = path + "." + p
		}
		rule, known := rules[fd.Name()]
		if !known {
			*out = append(*out, FieldNote{Path: p, Kind: Ignored, What: ignoredDefault})
			return true
		}
		switch {
		case rule.check != nil:
			if k, what := rule.check(v); k != 0 {
				*out = append(*out, FieldNote{Path: p, Kind: k, What: what})
			}
		case rule.kind != 0:
			*out = append(*out, FieldNote{Path: p, Kind: rule.kind, What: rule.what})
		case rule.recurse && fd.IsList():
			for i := range v.List().Len() {
				e := v.List().Get(i)
				if fd.Message() != nil {
					audit(e.Message(), fmt.Sprintf("%s[%d]", p, i), out)
				}
			}
		case rule.recurse && fd.Message() != nil && !fd.IsMap():
			audit(v.Message(), p, out)
		}
		return true
	})
}
