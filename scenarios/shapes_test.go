package scenarios

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/xdssim/xdssim/model/controlplane"
	"github.com/xdssim/xdssim/model/fleet"
)

const splitService = `[[control_plane]]
name = "primary"
[[control_plane.service]]
name = "shop"
[[control_plane.service.cluster]]
name = "stable"
weight = 90
[[control_plane.service.cluster]]
name = "canary"
weight = 10
endpoints = 1
`

func TestShapeKeysRejectBadInputWithTheKeyAndExpectation(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{"unanswered empty types on a linear cache",
			"[[control_plane]]\nname = \"p\"\nempty_types = \"unanswered\"\n[[fleet.group]]\nclients = 1\n",
			[]string{`s.toml:3:15: control_plane[0].empty_types: a linear cache answers every first request (go-control-plane linear.go); unanswered needs cache = "snapshot" or "snapshot-per-type"`}},
		{"unknown NACK policy",
			"[[control_plane]]\nname = \"p\"\non_nack = \"retry\"\n[[fleet.group]]\nclients = 1\n",
			[]string{`s.toml:3:11: control_plane[0].on_nack: expected hold or resend, found "retry"`}},
		{"a route to a cluster the service lacks",
			splitService + "[[control_plane.service.route]]\nclusters = [\"beta\"]\n[[fleet.group]]\nclients = 1\n",
			[]string{`s.toml:13:13: control_plane[0].service[0].route[0].clusters[0]: service "shop" has no cluster "beta" (clusters: stable, canary)`}},
		{"single-cluster keys beside cluster tables",
			"[[control_plane]]\nname = \"p\"\n[[control_plane.service]]\nname = \"s\"\nendpoints = 2\n[[control_plane.service.cluster]]\nname = \"a\"\n[[fleet.group]]\nclients = 1\n",
			[]string{`s.toml:5:13: control_plane[0].service[0].endpoints: describes the service's single cluster; with [[...service.cluster]] tables give it per cluster`}},
		{"a priority gap",
			"[[control_plane]]\nname = \"p\"\n[[control_plane.service]]\nname = \"s\"\nlocalities = [{ priority = 0 }, { priority = 2 }]\n[[fleet.group]]\nclients = 1\n",
			[]string{`s.toml:5:14: control_plane[0].service[0].localities: priority 1 has no locality: priorities must be 0 to 2 without a gap (gRFC A27; a client NACKs a gap)`}},
		{"a zero endpoint weight",
			"[[control_plane]]\nname = \"p\"\n[[control_plane.service]]\nname = \"s\"\nendpoint_weights = [1, 0]\n[[fleet.group]]\nclients = 1\n",
			[]string{`s.toml:5:24: control_plane[0].service[0].endpoint_weights[1]: expected a weight from 1 to 4294967295 (a client NACKs 0), found 0`}},
		{"an unknown resource kind",
			"[[control_plane]]\nname = \"p\"\n[[control_plane.service]]\nname = \"s\"\nwithhold = [\"routes\"]\n[[fleet.group]]\nclients = 1\n",
			[]string{`s.toml:5:13: control_plane[0].service[0].withhold[0]: expected one of: listener, route, cluster, endpoints, found "routes"; did you mean "route"?`}},
		{"a change to a cluster the service lacks",
			splitService + "[[fleet.group]]\nclients = 1\n[[change]]\naction = \"delete_service\"\nservice = \"shop\"\ncluster = \"beta\"\nresources = [\"cluster\"]\n",
			[]string{`s.toml:17:11: change[0].cluster: service "shop" has no cluster "beta" (clusters: stable, canary)`}},
		{"resources on an endpoint change",
			splitService + "[[fleet.group]]\nclients = 1\n[[change]]\naction = \"scale_endpoints\"\nservice = \"shop\"\nresources = [\"cluster\"]\n",
			[]string{`s.toml:17:13: change[0].resources: is only used by action = "delete_service" and "restore_service"`}},
		{"a method no route matches",
			splitService + "[[control_plane.service.route]]\nprefix = \"/shop.Cart/\"\n[[fleet.group]]\nclients = 1\n",
			[]string{`s.toml:14:1: fleet.group[0].rpc.method: no route of service "shop" on primary matches "/xdssim.Echo/Call" (prefixes: /shop.Cart/)`}},
		{"two start schedules",
			"[[fleet.group]]\nclients = 2\nstart_spread = \"1s\"\nstart_times = [\"0s\", \"1s\"]\n",
			[]string{`s.toml:4:15: fleet.group[0].start_times: start_spread, start_stagger and start_times are three ways to schedule the starts: give one`}},
		{"a start time per client",
			"[[fleet.group]]\nclients = 3\nstart_times = [\"0s\", \"1s\"]\n",
			[]string{`s.toml:3:15: fleet.group[0].start_times: expected one start time per client (3), found 2`}},
		{"a stagger past the end",
			"duration = \"1m\"\n[[fleet.group]]\nclients = 100\nstart_stagger = \"1s\"\n",
			[]string{`s.toml:4:17: fleet.group[0].start_stagger: the last client would start at 1m39s (start_at + 99 × start_stagger), after the run ends (1m0s)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantErrors(t, tt.doc, tt.want) })
	}
}

func TestFleetConfigCarriesTheShapes(t *testing.T) {
	s, err := parse(t, strings.Replace(splitService, "name = \"primary\"\n", "name = \"primary\"\ncache = \"snapshot\"\n", 1)+`[[control_plane.service.route]]
prefix = "/shop.Cart/"
clusters = ["canary"]
[[control_plane.service.route]]
[[control_plane.service]]
name = "echo"
endpoint_weights = [5]
withhold = ["route"]
localities = [{ weight = 3, endpoints = 2 }, { zone = "far", priority = 1 }]
[[fleet.group]]
clients = 3
start_stagger = "2s"
[[change]]
action = "delete_service"
service = "shop"
cluster = "canary"
resources = ["cluster", "endpoints"]
at = "1m"
[[backend]]
service = "shop"
cluster = "canary"
action = "down"
`)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.FleetConfig()
	shop, echo := cfg.ControlPlanes[0].Server.Services[0], cfg.ControlPlanes[0].Server.Services[1]
	if got := shop.ClusterNames(); !reflect.DeepEqual(got, []string{"stable", "canary"}) || shop.Clusters[0].Weight != 90 ||
		shop.Clusters[1].EndpointCount != 1 || len(shop.Routes) != 2 || shop.Routes[0].Prefix != "/shop.Cart/" ||
		!reflect.DeepEqual(shop.Routes[0].Clusters, []string{"canary"}) {
		t.Errorf("shop = %+v", shop)
	}
	wantEcho := []controlplane.Endpoint{
		{Address: "10.0.0.1", Health: corepb.HealthStatus_HEALTHY, Zone: "zone-a", Weight: 5},
		{Address: "10.0.0.2", Health: corepb.HealthStatus_HEALTHY, Zone: "zone-a"},
		{Address: "10.0.0.3", Health: corepb.HealthStatus_HEALTHY, Zone: "far", Priority: 1},
	}
	if !reflect.DeepEqual(echo.Endpoints, wantEcho) || echo.Withhold != controlplane.TypesOf(controlplane.RDS) ||
		!reflect.DeepEqual(echo.Localities, []controlplane.Locality{{Zone: "zone-a", Weight: 3}, {Zone: "far", Priority: 1}}) {
		t.Errorf("echo = %+v", echo)
	}
	if g := cfg.Groups[0]; g.StartStagger != 2*time.Second {
		t.Errorf("group = %+v", g)
	}
	if ch := cfg.Changes[0]; ch.Cluster != "canary" || ch.Resources != controlplane.TypesOf(controlplane.CDS, controlplane.EDS) {
		t.Errorf("change = %+v", ch)
	}
	if b := cfg.BackendEvents[0]; b.Range != (fleet.BackendRange{Cluster: "canary", First: 0, Count: 1}) || b.Label != "shop/canary endpoint 0 down" {
		t.Errorf("backend event = %+v", b)
	}
	if cfg.ControlPlanes[0].Server.Cache != controlplane.SnapshotCache || cfg.ControlPlanes[0].Server.OnNACK != controlplane.HoldNACKs {
		t.Errorf("server = %+v", cfg.ControlPlanes[0].Server)
	}
	if _, err := controlplane.New(cfg.ControlPlanes[0].Server); err != nil {
		t.Errorf("the server does not build: %v", err)
	}
}

// TestEndpointChangesNameEndpointsTheClusterHas: a set_health, drain or
// replace of endpoints the cluster does not have when the change comes
// used to pass validate, and the run skipped it in silence
// (controlplane.Server.SetEndpointHealth refuses it); the counts follow
// scale_endpoints and restore_service in time order.
func TestEndpointChangesNameEndpointsTheClusterHas(t *testing.T) {
	change := func(at, action, rest string) string {
		return "[[change]]\nat = \"" + at + "\"\naction = \"" + action + "\"\nservice = \"shop\"\n" + rest
	}
	doc := func(changes ...string) string {
		return splitService + "[[fleet.group]]\nclients = 1\n" + strings.Join(changes, "")
	}
	for _, tt := range []struct {
		name string
		doc  string
		want []string
	}{
		{"set_health past the endpoints", doc(change("1m", "set_health", "first = 2\ncount = 2\nhealth = \"UNHEALTHY\"\n")),
			[]string{`s.toml:19:9: change[0].count: endpoints 2 to 3 (first = 2, count = 2) of cluster stable on primary: it has 3 (0 to 2) at 1m0s`}},
		{"draining more than there are", doc(change("1m", "drain_endpoints", "cluster = \"canary\"\ncount = 2\n")),
			[]string{`s.toml:19:9: change[0].count: drains 2 endpoints of cluster canary on primary, which has 1 at 1m0s`}},
		{"replacing past the endpoints", doc(change("1m", "replace_endpoints", "count = 4\n")),
			[]string{`s.toml:18:9: change[0].count: endpoints 0 to 3 (first = 0, count = 4) of cluster stable on primary: it has 3 (0 to 2) at 1m0s`}},
		{"set_health before the scale that adds them", doc(change("2m", "scale_endpoints", "count = 10\n"), change("1m", "set_health", "first = 5\ncount = 3\nhealth = \"DRAINING\"\n")),
			[]string{`s.toml:24:9: change[1].count: endpoints 5 to 7 (first = 5, count = 3) of cluster stable on primary: it has 3 (0 to 2) at 1m0s`}},
		{"draining after restore_service gave back 3", doc(change("1m", "scale_endpoints", "count = 10\n"), change("2m", "restore_service", ""), change("3m", "drain_endpoints", "count = 5\n")),
			[]string{`s.toml:27:9: change[2].count: drains 5 endpoints of cluster stable on primary, which has 3 at 3m0s`}},
	} {
		t.Run(tt.name, func(t *testing.T) { wantErrors(t, tt.doc, tt.want) })
	}
	if _, err := parse(t, doc(change("1m", "scale_endpoints", "count = 10\n"), change("2m", "set_health", "first = 5\ncount = 5\nhealth = \"DRAINING\"\n"),
		change("3m", "drain_endpoints", "count = 10\n"))); err != nil {
		t.Errorf("endpoints a scale added: %v", err)
	}
}
