package scenarios

import (
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/model/xdsclient"
)

// A scenario is faithful by default: every setting it can hold is either
// one a deployment can make today (a bootstrap server_features entry, an
// xDS resource field, a service config or channel option) or the ground
// truth of the world (servers, faults, backends). A setting that only a
// change to a gRPC implementation could give is a what-if: the scenario
// must ask for it with what_if = true, and the summary and the report list
// it (docs/architecture.md, "Faithful by default, what-if by name").

// WhatIfs lists the scenario's hypothetical settings, as FleetConfig's
// WhatIf does, without building the rest of the config.
func (s *Scenario) WhatIfs() []fleet.WhatIf { return s.whatIfs() }

// whatIfs returns the settings of s that no shipping client can be
// configured to have, in the order they stand in the scenario.
func (s *Scenario) whatIfs() []fleet.WhatIf {
	var out []fleet.WhatIf
	for i := range s.Fleet.Groups {
		g := &s.Fleet.Groups[i]
		p := fmt.Sprintf("fleet.group[%d]", i)
		out = append(out, profileWhatIfs(p, g)...)
		out = append(out, channelWhatIfs(p+".xds_channel", g.Profile, g.XDSChannel, channelDefaults(g.Profile), xdsChannelDeployable)...)
		out = append(out, keepaliveWhatIfs(p+".xds_keepalive", g.Profile, g.XDSKeepalive)...)
		out = append(out, channelWhatIfs(p+".data_channel", g.Profile, g.DataChannel, channelDefaults(g.Profile), dataChannelDeployable)...)
		if g.RPC.ThrottleMaxTokens > 0 {
			out = append(out, fleet.WhatIf{
				Key: p + ".rpc.throttle_max_tokens", Value: fmt.Sprint(g.RPC.ThrottleMaxTokens), Ships: "0 (no retryThrottling)",
				Why: "an xds:/// channel's service config comes from the xDS resolver, which emits only loadBalancingConfig " +
					"(grpc-go internal/xds/resolver/serviceconfig.go serviceConfigJSON; grpc-java XdsNameResolver) and " +
					"replaces any default service config, so retryThrottling cannot be set; gRFC A44 lists retry circuit breakers as unsupported",
			})
		}
	}
	return out
}

// profileWhatIfs lists the group's profile_fields that make its profile
// differ from what its implementation ships.
func profileWhatIfs(p string, g *Group) []fleet.WhatIf {
	ships, err := xdsclient.ProfileByName(g.Profile)
	if err != nil {
		return nil // validation reports the profile
	}
	var out []fleet.WhatIf
	for _, k := range sortedKeys(g.ProfileFields) {
		set := ships
		if set.Set(k, g.ProfileFields[k]) != nil {
			continue // validation reports the value
		}
		was, _ := ships.Field(k)
		now, _ := set.Field(k)
		if was == now || profileFieldDeployable(g.Profile, k, now) {
			continue
		}
		out = append(out, fleet.WhatIf{Key: joinPath(p+".profile_fields", k), Value: now, Ships: was, Why: profileFieldWhy(g.Profile, k)})
	}
	return out
}

// profileFieldDeployable reports whether a deployment of impl can give the
// profile field name the value v.
func profileFieldDeployable(impl, name, v string) bool {
	switch name {
	case "watcher_api":
		// Only how notifications are named in transcripts.
		return true
	case "a88_data_errors":
		// grpc-java and C-core: GRPC_EXPERIMENTAL_XDS_DATA_ERROR_HANDLING=true
		// (grpc-java BootstrapperImpl, C-core xds_bootstrap.cc
		// XdsDataErrorHandlingEnabled); grpc-go has none of it.
		return v == "true" && (impl == xdsclient.ProfileGRPCJava || impl == xdsclient.ProfileGRPCCore)
	}
	return false
}

func profileFieldWhy(impl, name string) string {
	switch {
	case name == "pre_a57_timer":
		return "the resource timer as it ran before gRFC A57 (grpc/grpc#31446): no current release starts it before the channel is READY"
	case impl == xdsclient.ProfileSpec:
		return "the spec profile is gRFC A57, A71 and A88 as written; this changes what they say"
	case name == "a88_data_errors" && impl == xdsclient.ProfileGRPCGo:
		return "grpc-go has no gRFC A88 data error handling"
	}
	return impl + " ships it as its code is; only a change to that code gives another value"
}

// Where the channels' connection backoff can be set by a deployment.
var (
	// xdsChannelDeployable: nowhere. Every implementation creates its xDS
	// channels itself (grpc-go internal/xds/clients/grpctransport,
	// grpc-java GrpcXdsTransportFactory, C-core xds_transport_grpc.cc).
	xdsChannelDeployable = map[string][]string{}
	// dataChannelDeployable: the keys of the data plane's backoff that a
	// channel option sets: grpc-go grpc.WithConnectParams (backoff.Config
	// and MinConnectTimeout); C-core GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
	// GRPC_ARG_MAX_RECONNECT_BACKOFF_MS and GRPC_ARG_MIN_RECONNECT_BACKOFF_MS
	// (subchannel.cc). grpc-java has no public setting.
	dataChannelDeployable = map[string][]string{
		xdsclient.ProfileGRPCGo:   {"initial_backoff", "multiplier", "jitter", "max_backoff", "min_connect_timeout"},
		xdsclient.ProfileGRPCCore: {"initial_backoff", "max_backoff", "min_connect_timeout"},
		xdsclient.ProfileSpec:     {"initial_backoff", "multiplier", "jitter", "max_backoff", "min_connect_timeout"},
	}
)

// channelWhatIfs lists the keys of the channel at path that differ from
// what impl ships and that no deployment can set.
func channelWhatIfs(path, impl string, ch, ships Channel, deployable map[string][]string) []fleet.WhatIf {
	var out []fleet.WhatIf
	for _, d := range tableDiff(ch, ships) {
		if slices.Contains(deployable[impl], d.key) {
			continue
		}
		why := impl + " creates its xDS channels itself and hard-codes their connection backoff"
		if path[len(path)-len("data_channel"):] == "data_channel" {
			why = impl + " offers no channel option that sets it"
		}
		out = append(out, fleet.WhatIf{Key: joinPath(path, d.key), Value: d.value, Ships: d.ships, Why: why})
	}
	return out
}

// keepaliveWhatIfs lists the keys of an xds_keepalive that differ from the
// 5 min and 20 s every implementation hard-codes on its xDS channels.
func keepaliveWhatIfs(path, impl string, ka Keepalive) []fleet.WhatIf {
	var out []fleet.WhatIf
	for _, d := range tableDiff(ka, xdsKeepaliveDefaults()) {
		out = append(out, fleet.WhatIf{Key: joinPath(path, d.key), Value: d.value, Ships: d.ships,
			Why: impl + " hard-codes its xDS channels' keepalive (grpc-go grpctransport, grpc-java GrpcXdsTransportFactory keepAliveTime(5, MINUTES), C-core xds_transport_grpc.cc)"})
	}
	return out
}

type keyDiff struct{ key, value, ships string }

// tableDiff lists the keys of two values of one schema table type whose
// values differ, in schema order.
func tableDiff[T any](got, ships T) []keyDiff {
	gv, sv := reflect.ValueOf(got), reflect.ValueOf(ships)
	fs := schemaFields(gv.Type())
	var out []keyDiff
	for _, k := range fs.names {
		a, b := gv.Field(fs.byName[k]).Interface(), sv.Field(fs.byName[k]).Interface()
		if a != b {
			out = append(out, keyDiff{k, scalarText(a), scalarText(b)})
		}
	}
	return out
}

// scalarText formats a scalar schema value as a scenario writes it.
func scalarText(v any) string {
	if d, ok := v.(time.Duration); ok {
		return d.String()
	}
	return fmt.Sprint(v)
}

// validateWhatIf refuses a hypothetical setting unless the scenario asks
// for what-ifs.
func (s *Scenario) validateWhatIf(c *checker) {
	if s.WhatIf {
		return
	}
	for _, w := range s.whatIfs() {
		c.check(false, w.Key, "%s is a what-if (shipping clients have %s): %s. Add what_if = true to the scenario (or --set what_if=true) to run it as a hypothetical; summary.json and the report will list it",
			w.Value, w.Ships, w.Why)
	}
}
