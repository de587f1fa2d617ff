package mesh

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/xdssim/xdssim/model/controlplane"
)

const library = "../library/mesh/"

// TestFormatsReadTheSameResources: the library dump as plain Anys, as a
// CSDS ClientStatusResponse, as an Envoy ConfigDump and as YAML reads as
// the same resources, in the same order.
func TestFormatsReadTheSameResources(t *testing.T) {
	want, err := Read(library + "shop.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Resources) != 14 || want.Format != Plain {
		t.Fatalf("shop.json: %d resources, format %v; want 14 plain", len(want.Resources), want.Format)
	}
	for _, tc := range []struct {
		file   string
		format Format
	}{
		{library + "shop.csds.json", CSDS},
		{"testdata/shop.configdump.json", ConfigDump},
		{library + "shop.yaml", Plain},
	} {
		got, err := Read(tc.file)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if got.Format != tc.format {
			t.Errorf("%s: format %v, want %v", tc.file, got.Format, tc.format)
		}
		if len(got.Resources) != len(want.Resources) {
			t.Fatalf("%s: %d resources, want %d", tc.file, len(got.Resources), len(want.Resources))
		}
		for i, r := range got.Resources {
			w := want.Resources[i]
			if r.Type != w.Type || r.Name != w.Name || !proto.Equal(r.Message, w.Message) {
				t.Errorf("%s: resource %d is %v %q, want %v %q (or contents differ)", tc.file, i, r.Type, r.Name, w.Type, w.Name)
			}
		}
	}
}

// TestMalformedDumpsArePositioned: a broken dump names the file and,
// for JSON, the line and column of the problem.
func TestMalformedDumpsArePositioned(t *testing.T) {
	cases := []struct {
		name, file, data, want string
	}{
		{"json syntax", "d.json", "[\n  {\"@type\": \"x\",,}\n]", "d.json:2:"},
		{"unknown field", "d.json", "[\n {\"@type\": \"type.googleapis.com/envoy.config.cluster.v3.Cluster\",\n  \"nmae\": \"c\"}\n]", `d.json:3:3: unknown field "nmae"`},
		{"yaml syntax", "d.yaml", "- a: [\n- b", "d.yaml:"},
		{"not a dump", "d.json", `{"foo": 1}`, "expected a CSDS ClientStatusResponse"},
		{"no resources", "d.json", `{"configs": []}`, "holds no Listener"},
		{"empty", "d.yaml", "", "empty"},
		{"conflict", "d.json", `[{"@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster", "name": "c"},
		  {"@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster", "name": "c", "type": "EDS"}]`, "appears twice with different contents"},
		{"nameless", "d.json", `[{"@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster"}]`, "without a name"},
	}
	for _, tc := range cases {
		_, err := Parse(tc.file, []byte(tc.data))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := Read(filepath.Join(t.TempDir(), "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json: ") {
		t.Errorf("a missing file: got %v, want its path", err)
	}
}

// TestUnknownTypesStayOpaque: an embedded config whose type xdssim has no
// message for keeps its type URL, so clients judge the filter by it.
func TestUnknownTypesStayOpaque(t *testing.T) {
	data := `[{"@type": "type.googleapis.com/envoy.config.listener.v3.Listener", "name": "l",
	  "apiListener": {"apiListener": {"@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
	    "rds": {"configSource": {"ads": {}}, "routeConfigName": "r"},
	    "httpFilters": [{"name": "istio.alpn", "typedConfig": {"@type": "type.googleapis.com/istio.envoy.config.filter.http.alpn.v2alpha1.FilterConfig", "alpnOverride": []}}]}}}]`
	d, err := Parse("d.json", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"type.googleapis.com/istio.envoy.config.filter.http.alpn.v2alpha1.FilterConfig"}; !slices.Equal(d.Opaque, want) {
		t.Errorf("Opaque = %v, want %v", d.Opaque, want)
	}
	if len(d.Resources) != 1 || d.Resources[0].Type != controlplane.LDS {
		t.Errorf("resources = %v", d.Resources)
	}
}

// TestBootstrap reads the gRFC A27 fields the fleet uses and lists what it
// does not.
func TestBootstrap(t *testing.T) {
	b, err := ReadBootstrap(library + "bootstrap.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Servers) != 1 || b.Servers[0].URI != "unix:///etc/istio/proxy/XDS" || !slices.Equal(b.Servers[0].Features, []string{"xds_v3"}) {
		t.Errorf("servers = %+v", b.Servers)
	}
	if got := b.ListenerName("cart.shop.svc.cluster.local:7070"); got != "cart.shop.svc.cluster.local:7070" {
		t.Errorf("ListenerName = %q", got)
	}
	for _, want := range []string{"certificate_providers", "channel_creds (insecure)", "server_listener_resource_name_template"} {
		if !slices.ContainsFunc(b.Unused, func(u string) bool { return strings.Contains(u, want) }) {
			t.Errorf("Unused = %q, want a line about %s", b.Unused, want)
		}
	}
	bad := []struct{ data, want string }{
		{`{}`, "xds_servers: expected at least one server"},
		{`{"xds_servers": [{"channel_creds": []}]}`, "xds_servers[0].server_uri: is required"},
		{"{\n \"xds_servers\": [,]}", "b.json:2:"},
	}
	for _, tc := range bad {
		if _, err := ParseBootstrap("b.json", []byte(tc.data)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.data, err, tc.want)
		}
	}
	x, err := ParseBootstrap("b.json", []byte(`{"xds_servers": [{"server_uri": "a"}],
	  "client_default_listener_resource_name_template": "xdstp://td/envoy.config.listener.v3.Listener/%s"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := x.ListenerName("a b/c"), "xdstp://td/envoy.config.listener.v3.Listener/a%20b/c"; got != want {
		t.Errorf("xdstp ListenerName = %q, want %q", got, want)
	}
}
