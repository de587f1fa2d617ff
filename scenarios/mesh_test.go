package scenarios

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xdssim/xdssim/model/fleet"
)

// ownMesh is a scenario on the library's dump, as a file in testdata
// would name it.
const ownMesh = `name = "own"
duration = "4m"
[[control_plane]]
name = "istiod"
server_uri = "unix:///etc/istio/proxy/XDS"
resources = ["../library/mesh/shop.json"]
[[fleet.group]]
clients = 2
bootstrap = "../library/mesh/bootstrap.json"
rpc = { methods = [{ method = "/shop.Catalog/List", weight = 3 }, { method = "/shop.Catalog/List", headers = { x-canary = "true" } }] }
[[change]]
at = "2m"
action = "publish"
resources = ["../library/mesh/shop-next.json"]
[[change]]
at = "3m"
action = "delete_resource"
type = "cluster"
name = "outbound|7070||cart.shop.svc.cluster.local"
[[backend]]
at = "1m"
action = "down"
locality = "us-east1-c"
`

func parseAt(t *testing.T, file, doc string, sets ...string) (*Scenario, error) {
	t.Helper()
	return Parse(&Source{File: file, Name: "own", Data: []byte(doc)}, sets)
}

// TestOwnMeshScenario: a scenario on a user's own dump and bootstrap:
// the server serves the dump, the group takes its servers and features
// from the bootstrap and its targets from the API listeners, and the
// changes and backends resolve to the dump's resources.
func TestOwnMeshScenario(t *testing.T) {
	s, err := parseAt(t, "testdata/own.toml", ownMesh)
	if err != nil {
		t.Fatal(err)
	}
	g := s.Fleet.Groups[0]
	if !slices.Equal(g.Servers, []string{"istiod"}) || len(g.ServerFeatures) != 0 {
		t.Errorf("servers %v, features %v; want [istiod] and none (xds_v3 is not a feature xdssim models)", g.Servers, g.ServerFeatures)
	}
	wantTargets := []string{"cart.shop.svc.cluster.local:7070", "catalog.shop.svc.cluster.local:3550", "checkout.shop.svc.cluster.local:5050"}
	if !slices.Equal(g.Targets, wantTargets) {
		t.Errorf("targets %v, want %v", g.Targets, wantTargets)
	}
	cfg := s.FleetConfig()
	if n := len(cfg.ControlPlanes[0].Server.Resources); n != 14 {
		t.Errorf("the server has %d resources, want 14", n)
	}
	if ch := cfg.Changes[0]; ch.Action != fleet.Publish || len(ch.Publish) != 14 || !slices.Equal(ch.Servers, []int{0}) {
		t.Errorf("publish change: %v, %d resources, servers %v", ch.Action, len(ch.Publish), ch.Servers)
	}
	if ch := cfg.Changes[1]; ch.Action != fleet.DeleteResource || ch.Name != "outbound|7070||cart.shop.svc.cluster.local" {
		t.Errorf("delete change: %+v", ch)
	}
	// us-east1-c holds 2 cart, 2 catalog v1 and 1 catalog v2 endpoints.
	if b := cfg.BackendEvents[0].Backends; len(b) != 5 {
		t.Errorf("backends in us-east1-c: %v, want 5", b)
	}
	if m := cfg.Groups[0].RPC.Methods; len(m) != 2 || m[1].Headers[0].Name != "x-canary" || m[0].Weight != 3 {
		t.Errorf("methods: %+v", m)
	}
	notes := strings.Join(s.MeshNotes(), "\n")
	for _, want := range []string{"certificate_providers", "outlier_detection", "circuit_breakers"} {
		if !strings.Contains(notes, want) {
			t.Errorf("MeshNotes lack %s:\n%s", want, notes)
		}
	}
}

// TestOwnMeshErrors: what a user gets wrong about the files is an error at
// the key, naming the file and, inside a JSON file, the line and column.
func TestOwnMeshErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.json"), []byte("[\n  {\"@type\": \"type.googleapis.com/envoy.config.cluster.v3.Cluster\",\n   \"nmae\": \"c\"}\n]"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, set, want string
	}{
		{"missing dump", `control_plane[0].resources=["nope.json"]`, "nope.json: no such file or directory"},
		{"malformed dump", `control_plane[0].resources=["` + filepath.Join(dir, "bad.json") + `"]`, `bad.json:3:4: unknown field "nmae"`},
		{"unmatched bootstrap server", `control_plane[0].server_uri="other:1"`, `has server_uri "unix:///etc/istio/proxy/XDS", which no control plane has`},
		{"servers beside a bootstrap", `fleet.group[0].servers=[]`, "the bootstrap file gives the servers [istiod]"},
		{"publish without files", `change[0].resources=[]`, "publish needs the dump files"},
		{"unknown resource", `change[1].name="nope"`, `no control plane has a cluster named "nope"`},
		{"unknown kind", `change[1].type="secret"`, "expected one of"},
		{"unknown address", `backend[0].locality="mars"`, `no ClusterLoadAssignment of the control planes' own resources has an endpoint in locality "mars"`},
		{"method path", `fleet.group[0].rpc={methods=[{method="List"}]}`, "expected a method path"},
		{"header case", `fleet.group[0].rpc={methods=[{method="/a/b",headers={X-Canary="true"}}]}`, "expected a lowercase header name"},
		{"clash with a service", `control_plane[0].service=[{name="cart.shop.svc.cluster.local:7070"}]`, `LDS resource "cart.shop.svc.cluster.local:7070" is also a resource of service`},
	}
	for _, tt := range tests {
		_, err := parseAt(t, "testdata/own.toml", ownMesh, tt.set)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want an error with %q", tt.name, err, tt.want)
		}
	}
}
