package scenarios

import (
	"fmt"
	"strconv"
	"strings"
)

// NormalizeKey writes a key's path one way, so that two spellings of one
// key compare equal: quoted parts unquoted where they are bare keys
// (`fleet."group"[0]` is fleet.group[0]). It refuses what a sweep cannot
// vary: a malformed path, the run's seed (a sweep's seeds are its own),
// and the [sweep] table itself.
func NormalizeKey(key string) (string, error) {
	norm, err := CanonicalKey(key)
	if err != nil {
		return "", err
	}
	switch {
	case norm == "seed":
		return "", fmt.Errorf("the seed is not a param: a sweep runs every point on its own seeds (--seeds, sweep.seeds)")
	case norm == "sweep" || strings.HasPrefix(norm, "sweep.") || strings.HasPrefix(norm, "sweep["):
		return "", fmt.Errorf("%s is part of the sweep itself, not of the scenario it varies", key)
	}
	return norm, nil
}

// CanonicalKey writes a key's path one way, quoted parts unquoted where
// they are bare keys: `"seed"` is seed.
func CanonicalKey(key string) (string, error) {
	parts, err := splitPath(key)
	if err != nil {
		return "", fmt.Errorf("malformed key %q: %v", key, err)
	}
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('.')
		}
		if isBareKey(p.key) {
			b.WriteString(p.key)
		} else {
			b.WriteString(strconv.Quote(p.key))
		}
		if p.index >= 0 {
			b.WriteString("[" + strconv.Itoa(p.index) + "]")
		}
	}
	return b.String(), nil
}

// policyKeys are the keys, with every index written [], whose values an
// operator chooses: the timers, backoffs, retry policy, fallback setup
// and control-plane capacity of docs/scenario-reference.md's "Policy
// keys" (a test checks the table against this list). A key below one of
// them (xds_channel.jitter below xds_channel) is one too.
var policyKeys = []string{
	"fleet.group[].profile_fields.resource_timeout",
	"fleet.group[].profile_fields.resource_timeout_transient",
	"fleet.group[].profile_fields.backoff_initial",
	"fleet.group[].profile_fields.backoff_multiplier",
	"fleet.group[].profile_fields.backoff_jitter",
	"fleet.group[].profile_fields.backoff_max",
	"fleet.group[].profile_fields.restart_delay_after_response",
	"fleet.group[].profile_fields.a88_data_errors",
	"fleet.group[].xds_channel",
	"fleet.group[].xds_keepalive",
	"fleet.group[].data_channel",
	"fleet.group[].servers",
	"fleet.group[].server_features",
	"fleet.group[].rpc.deadline",
	"fleet.group[].rpc.throttle_max_tokens",
	"fleet.group[].rpc.throttle_token_ratio",
	"control_plane[].service[].retry",
	"control_plane[].workers",
	"control_plane[].max_streams",
	"control_plane[].service_time",
}

// KeyRole says what a swept key is when its param does not say: Knob for
// a policy key (or a key below one), Condition for everything else: the
// world the choice must hold under (fleet size, outage length, restart
// fraction, profile, load).
func KeyRole(key string) string {
	parts, err := splitPath(key)
	if err != nil {
		return Condition
	}
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p.key)
		if p.index >= 0 {
			b.WriteString("[]")
		}
	}
	k := b.String()
	for _, p := range policyKeys {
		if k == p || strings.HasPrefix(k, p+".") {
			return Knob
		}
	}
	return Condition
}
