package scenarios

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/model/network"
	"github.com/xdssim/xdssim/model/xdsclient"
	"github.com/xdssim/xdssim/sim"
)

const withServers = `[[control_plane]]
name = "primary"
[[control_plane.service]]
name = "echo"
[[control_plane]]
name = "fallback"
[[fleet.group]]
clients = 3
`

func TestXDSSectionsRejectBadInputWithTheKeyAndExpectation(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{
			name: "unknown profile",
			doc:  withServers + "profile = \"grpc-rust\"\n",
			want: []string{`s.toml:9:11: fleet.group[0].profile: expected grpc-go, grpc-java, grpc-core or spec, found "grpc-rust"`},
		},
		{
			name: "misspelled profile field",
			doc:  withServers + "profile_fields = { pre_a57_timr = true }\n",
			want: []string{`s.toml:9:20: fleet.group[0].profile_fields.pre_a57_timr: unknown profile field "pre_a57_timr" (did you mean "pre_a57_timer"?)`},
		},
		{
			name: "bootstrap names a server that does not exist",
			doc:  withServers + "servers = [\"primary\", \"secondary\"]\n",
			want: []string{`s.toml:9:23: fleet.group[0].servers[1]: no control plane is named "secondary" (control planes: primary, fallback)`},
		},
		{
			name: "more servers than an authority is modelled with",
			doc:  manyServers(65) + "[[fleet.group]]\nclients = 1\nservers = [" + serverList(65) + "]\n",
			want: []string{`s.toml:133:11: fleet.group[0].servers: expected at most 64 servers, the most an XdsClient's authority is modelled with, found 65`},
		},
		{
			name: "more control planes than an authority is modelled with, and no servers",
			doc:  manyServers(65) + "[[fleet.group]]\nclients = 1\n",
			want: []string{`s.toml:131:1: fleet.group[0].servers: expected at most 64 servers, the most an XdsClient's authority is modelled with, found 65 (every control plane, the default without servers: list the ones the group's clients use)`},
		},
		{
			name: "more control planes than are modelled",
			doc:  manyServers(10001) + "[[fleet.group]]\nclients = 1\nservers = [\"cp0\"]\n",
			want: []string{`s.toml:20001:1: control_plane[10000]: expected at most 10000 control planes, found 10001`},
		},
		{
			name: "more targets than an instance can name",
			doc:  withServers + "targets = [" + strings.Repeat(`"t", `, 65535) + `"t"]` + "\n",
			want: []string{`s.toml:9:11: fleet.group[0].targets: expected at most 65535 targets, found 65536`},
		},
		{
			name: "unknown server feature",
			doc:  withServers + "server_features = [\"ignore_resource_deletions\"]\n",
			want: []string{`s.toml:9:20: fleet.group[0].server_features[0]: expected one of: ignore_resource_deletion, fail_on_data_errors, resource_timer_is_transient_error, found "ignore_resource_deletions"; did you mean "ignore_resource_deletion"?`},
		},
		{
			name: "distribution key the distribution does not use",
			doc:  "[network]\nlatency = { dist = \"constant\", value = \"1ms\", p99 = \"5ms\" }\n" + withServers,
			want: []string{`s.toml:2:47: network.latency.p99: is not used by dist = "constant" (it takes value)`},
		},
		{
			name: "lognormal with p99 below the median",
			doc:  "[network]\nlatency = { dist = \"lognormal\", median = \"5ms\", p99 = \"1ms\" }\n" + withServers,
			want: []string{`s.toml:2:55: network.latency.p99: expected 0 < median <= p99, found median 5ms, p99 1ms`},
		},
		{
			name: "partition that selects no clients",
			doc:  withServers + "[[fault]]\nkind = \"partition\"\nat = \"1s\"\n",
			want: []string{`s.toml:10:8: fault[0].kind: a partition cuts off some clients: name groups or a fraction`},
		},
		{
			name: "unknown fault kind",
			doc:  withServers + "[[fault]]\nkind = \"outage\"\n",
			want: []string{`s.toml:10:8: fault[0].kind: expected one of: added-latency, blackhole, blackhole-hold, goaway, message-loss, partition, server-down, server-restart, stream-reset-after-response, found "outage"`},
		},
		{
			name: "key of another fault kind",
			doc:  withServers + "[[fault]]\nkind = \"server-down\"\nprobability = 0.5\n",
			want: []string{`s.toml:11:15: fault[0].probability: is only used by kind = "message-loss"`},
		},
		{
			name: "stream reset after no response",
			doc:  withServers + "[[fault]]\nkind = \"stream-reset-after-response\"\nresponses = 0\n",
			want: []string{`s.toml:11:13: fault[0].responses: expected a number of responses >= 1 (the server ends each stream after that many), found 0`},
		},
		{
			name: "stream reset after responses of the wrong type",
			doc:  withServers + "[[fault]]\nkind = \"stream-reset-after-response\"\nresponses = \"one\"\n",
			want: []string{`s.toml:11:13: fault[0].responses: expected an integer, found the string "one"`},
		},
		{
			name: "responses of another fault kind",
			doc:  withServers + "[[fault]]\nkind = \"goaway\"\nresponses = 2\n",
			want: []string{`s.toml:11:13: fault[0].responses: is only used by kind = "stream-reset-after-response"`},
		},
		{
			name: "misspelled responses",
			doc:  withServers + "[[fault]]\nkind = \"stream-reset-after-response\"\nresponse = 2\n",
			want: []string{`s.toml:11:1: fault[0].response: unknown key "response" (did you mean "responses"?)`},
		},
		{
			name: "change of a service no server has",
			doc:  withServers + "[[change]]\nat = \"1s\"\naction = \"delete_service\"\nservice = \"echoo\"\n",
			want: []string{`s.toml:12:11: change[0].service: no control plane it applies to serves a service named "echoo"`},
		},
		{
			name: "publish_invalid without a defect",
			doc:  withServers + "[[change]]\naction = \"publish_invalid\"\nservice = \"echo\"\n",
			want: []string{`s.toml:9:1: change[0].defect: publish_invalid needs a defect: one of: cluster-lb-policy, endpoint-zero-weight, route-retry, listener-no-router, found ""`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantErrors(t, tt.doc, tt.want) })
	}
}

// manyServers is n control planes, cp0 to cp(n-1), two lines each.
func manyServers(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "[[control_plane]]\nname = \"cp%d\"\n", i)
	}
	return b.String()
}

// serverList names the control planes of manyServers(n).
func serverList(n int) string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%q", fmt.Sprintf("cp%d", i))
	}
	return strings.Join(names, ", ")
}

// wantErrors parses doc and checks that it fails with exactly the errors
// want, in order.
func wantErrors(t *testing.T, doc string, want []string) {
	t.Helper()
	_, err := parse(t, doc)
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("want an ErrorList, got %v", err)
	}
	if got := strings.Split(list.Error(), "\n"); !reflect.DeepEqual(got, want) {
		t.Errorf("errors:\n got %q\nwant %q", got, want)
	}
}

func TestFleetConfigCarriesTheXDSSections(t *testing.T) {
	s, err := parse(t, "what_if = true\n"+withServers+`profile = "spec"
profile_fields = { pre_a57_timer = true }
server_features = ["fail_on_data_errors"]
[[fault]]
kind = "blackhole"
servers = ["primary"]
at = "10s"
duration = "30s"
`)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.FleetConfig()
	g := cfg.Groups[0]
	want := xdsclient.Spec()
	if err := want.Set("pre_a57_timer", "true"); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g.Profile, want) {
		t.Errorf("profile = %+v, want spec with pre_a57_timer", g.Profile)
	}
	if !reflect.DeepEqual(g.Servers, []int{0, 1}) || !reflect.DeepEqual(g.Targets, []string{"echo"}) || !g.Features.FailOnDataErrors {
		t.Errorf("group = servers %v targets %v features %+v, want both servers in order, target echo, fail_on_data_errors",
			g.Servers, g.Targets, g.Features)
	}
	if want := []fleet.WhatIf{{Key: "fleet.group[0].profile_fields.pre_a57_timer", Value: "true", Ships: "false",
		Why: profileFieldWhy("spec", "pre_a57_timer")}}; !reflect.DeepEqual(cfg.WhatIf, want) {
		t.Errorf("what-ifs = %+v, want %+v", cfg.WhatIf, want)
	}
	f := cfg.Faults[0]
	if f.Kind != network.Blackhole || f.Start != sim.Time(10*time.Second) || f.Duration != 30*time.Second || !reflect.DeepEqual(f.Servers, []int{0}) {
		t.Errorf("fault = %+v", f)
	}
}

// TestStreamResetAfterResponseDefaultsToOneResponse checks the new fault's
// one key: left out it is 1 (the server ends each stream after its first
// response), given it is carried to the network fault, and another kind
// has none, so that the resolved scenario reads back the same.
func TestStreamResetAfterResponseDefaultsToOneResponse(t *testing.T) {
	tests := []struct {
		name  string
		fault string
		sets  []string
		want  network.Fault
	}{
		{
			name:  "left out",
			fault: "kind = \"stream-reset-after-response\"\nservers = [\"primary\"]\nat = \"1m\"\nduration = \"2m\"\n",
			want: network.Fault{Kind: network.StreamResetAfterResponse, Start: sim.Time(time.Minute), Duration: 2 * time.Minute,
				Servers: []int{0}, Responses: 1},
		},
		{
			name:  "given, with groups and a fraction",
			fault: "kind = \"stream-reset-after-response\"\nresponses = 3\ngroups = [\"group-0\"]\nfraction = 0.5\n",
			want: network.Fault{Kind: network.StreamResetAfterResponse, Duration: network.Forever, Groups: []int{0}, Fraction: 0.5,
				Responses: 3},
		},
		{
			name:  "set on the command line",
			fault: "kind = \"stream-reset-after-response\"\n",
			sets:  []string{"fault[0].responses=2"},
			want:  network.Fault{Kind: network.StreamResetAfterResponse, Duration: network.Forever, Responses: 2},
		},
		{
			name:  "another kind has none",
			fault: "kind = \"goaway\"\n",
			want:  network.Fault{Kind: network.GoAway, Duration: network.Forever},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := parse(t, withServers+"[[fault]]\n"+tt.fault, tt.sets...)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.FleetConfig().Faults[0]; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("fault = %+v, want %+v", got, tt.want)
			}
			again, err := parse(t, s.TOML())
			if err != nil {
				t.Fatalf("resolved TOML does not parse: %v\n%s", err, s.TOML())
			}
			if !reflect.DeepEqual(again.Faults, s.Faults) {
				t.Errorf("resolved TOML reads back as %+v, want %+v", again.Faults, s.Faults)
			}
		})
	}
	// Reference: docs/scenario-reference.md, [[fault]] (responses, default 1).
}

// TestChannelsDefaultToTheirImplementation checks that each group's
// channels get the connection backoff and keepalive its profile's
// implementation ships, key by key: a key the scenario gives keeps its
// value, the others come from the profile.
func TestChannelsDefaultToTheirImplementation(t *testing.T) {
	for _, tt := range []struct {
		name      string
		group     string
		sets      []string
		xds, data network.BackoffConfig
	}{
		{name: "grpc-go", group: `profile = "grpc-go"`, xds: network.GRPCGoBackoffConfig(), data: network.GRPCGoBackoffConfig()},
		{name: "grpc-java", group: `profile = "grpc-java"`, xds: network.GRPCJavaBackoffConfig(), data: network.GRPCJavaBackoffConfig()},
		{name: "grpc-core", group: `profile = "grpc-core"`, xds: network.GRPCCoreBackoffConfig(), data: network.GRPCCoreBackoffConfig()},
		{name: "spec", group: `profile = "spec"`, xds: network.SpecBackoffConfig(), data: network.SpecBackoffConfig()},
		{
			name:  "one key given, in the file",
			group: "profile = \"grpc-java\"\ndata_channel = { max_backoff = \"10s\" }",
			xds:   network.GRPCJavaBackoffConfig(),
			data: func() network.BackoffConfig {
				b := network.GRPCJavaBackoffConfig()
				b.MaxBackoff = 10 * time.Second
				return b
			}(),
		},
		{
			name:  "one key given, with --set",
			group: `profile = "grpc-core"`,
			sets:  []string{"fleet.group[0].xds_channel.jitter=0"},
			xds: func() network.BackoffConfig {
				b := network.GRPCCoreBackoffConfig()
				b.Jitter = 0
				return b
			}(),
			data: network.GRPCCoreBackoffConfig(),
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := parse(t, "what_if = true\n"+withServers+tt.group+"\n", tt.sets...)
			if err != nil {
				t.Fatal(err)
			}
			g := s.FleetConfig().Groups[0]
			if g.XDSChannel != tt.xds || g.DataChannel != tt.data {
				t.Errorf("xds_channel %+v, data_channel %+v; want %+v, %+v", g.XDSChannel, g.DataChannel, tt.xds, tt.data)
			}
			if g.XDSKeepalive != network.XDSKeepalive() {
				t.Errorf("xds_keepalive %+v, want %+v", g.XDSKeepalive, network.XDSKeepalive())
			}
			again, err := parse(t, s.TOML())
			if err != nil || !reflect.DeepEqual(again.Fleet.Groups, s.Fleet.Groups) {
				t.Errorf("resolved TOML reads back as %+v (%v), want %+v", again, err, s.Fleet.Groups)
			}
		})
	}
	// Reference: grpc doc/connection-backoff.md; network.BackoffConfigOf (each
	// implementation's source); docs/architecture.md, Fidelity rules ("Defaults are the real ones").
}

// TestBadChannelValuesAreRejected checks the channels' ranges.
func TestBadChannelValuesAreRejected(t *testing.T) {
	for _, tt := range []struct{ name, group, want string }{
		{"unknown schedule", `xds_channel = { backoff_schedule = "grpc-rust" }`,
			`fleet.group[0].xds_channel.backoff_schedule: expected one of: grpc-go, grpc-java, grpc-core, spec, found "grpc-rust"`},
		{"jitter of 1", `data_channel = { jitter = 1.0 }`, `fleet.group[0].data_channel.jitter: expected a number in [0, 1), found 1`},
		{"nothing ends an attempt", `profile = "grpc-java"` + "\n" + `xds_channel = { tcp_connect_timeout = "0s" }`,
			`fleet.group[0].xds_channel.min_connect_timeout: min_connect_timeout and tcp_connect_timeout are both 0s: something must end an attempt that never connects`},
		{"keepalive without a timeout", `xds_keepalive = { timeout = "0s" }`,
			`fleet.group[0].xds_keepalive.timeout: expected a duration > 0 with a keepalive time set, found 0s`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, "what_if = true\n"+withServers+tt.group+"\n")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestWhatIfsAreRefusedUnlessAskedFor checks which settings are what-ifs
// (no shipping client can be configured to have them), that a scenario
// must say what_if = true to run them, and that the fleet config lists
// them for the outputs. A deployable setting is never a what-if.
func TestWhatIfsAreRefusedUnlessAskedFor(t *testing.T) {
	for _, tt := range []struct {
		name  string
		group string
		want  []string // keys of the what-ifs; none: a faithful scenario
	}{
		{"defaults", `profile = "grpc-java"`, nil},
		{"a default written out", `xds_channel = { jitter = 0.2 }`, nil},
		{"ADS backoff", `profile_fields = { backoff_initial = "2s" }`, []string{"fleet.group[0].profile_fields.backoff_initial"}},
		{"pre-A57 timer", `profile_fields = { pre_a57_timer = true }`, []string{"fleet.group[0].profile_fields.pre_a57_timer"}},
		{"A88 on grpc-java: an environment variable", "profile = \"grpc-java\"\nprofile_fields = { a88_data_errors = true }", nil},
		{"A88 on grpc-go: not in grpc-go", `profile_fields = { a88_data_errors = true }`, []string{"fleet.group[0].profile_fields.a88_data_errors"}},
		{"watcher API naming", `profile_fields = { watcher_api = "legacy" }`, nil},
		{"xDS channel backoff", `xds_channel = { max_backoff = "30s" }`, []string{"fleet.group[0].xds_channel.max_backoff"}},
		{"xDS keepalive", `xds_keepalive = { time = "1m" }`, []string{"fleet.group[0].xds_keepalive.time"}},
		{"grpc-go data backoff: WithConnectParams", `data_channel = { max_backoff = "30s", multiplier = 2.0 }`, nil},
		{"grpc-core data backoff: channel args", "profile = \"grpc-core\"\ndata_channel = { max_backoff = \"30s\" }", nil},
		{"grpc-core multiplier: no channel arg", "profile = \"grpc-core\"\ndata_channel = { multiplier = 2.0 }", []string{"fleet.group[0].data_channel.multiplier"}},
		{"grpc-java data backoff: no option", "profile = \"grpc-java\"\ndata_channel = { max_backoff = \"30s\" }", []string{"fleet.group[0].data_channel.max_backoff"}},
		{"data schedule", `data_channel = { backoff_schedule = "grpc-core" }`, []string{"fleet.group[0].data_channel.backoff_schedule"}},
		{"retry throttling on an xDS channel", `rpc = { throttle_max_tokens = 10 }`, []string{"fleet.group[0].rpc.throttle_max_tokens"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc := withServers + tt.group + "\n"
			_, err := parse(t, doc)
			var list ErrorList
			errors.As(err, &list)
			var refused []string
			for _, e := range list {
				if !strings.Contains(e.Msg, "is a what-if") || !strings.Contains(e.Msg, "what_if = true") {
					t.Errorf("unexpected error: %v", e)
				}
				refused = append(refused, e.Key)
			}
			if !reflect.DeepEqual(refused, tt.want) {
				t.Errorf("refused %q, want %q", refused, tt.want)
			}
			s, err := parse(t, "what_if = true\n"+doc)
			if err != nil {
				t.Fatalf("with what_if = true: %v", err)
			}
			var listed []string
			for _, w := range s.FleetConfig().WhatIf {
				listed = append(listed, w.Key)
				if w.Value == "" || w.Ships == "" || w.Why == "" {
					t.Errorf("what-if %+v lacks its value, what ships or why", w)
				}
			}
			if !reflect.DeepEqual(listed, tt.want) {
				t.Errorf("listed %q, want %q", listed, tt.want)
			}
		})
	}
	// Reference: docs/architecture.md, "Faithful by default, what-if by name"; gRFC A44
	// (retry throttling); grpc-go grpc.WithConnectParams; C-core subchannel.cc
	// reconnect channel args.
}
