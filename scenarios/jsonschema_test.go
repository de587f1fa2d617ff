package scenarios

import (
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaOf compiles the scenario format's JSON Schema with an
// independent implementation of the standard (santhosh-tekuri/jsonschema,
// which passes the JSON Schema Test Suite and checks the schema against
// the draft 2020-12 metaschema first).
func schemaOf(t *testing.T) *jsonschema.Schema {
	t.Helper()
	raw, err := JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(JSONSchemaID, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(JSONSchemaID)
	if err != nil {
		t.Fatalf("the schema does not compile: %v", err)
	}
	return s
}

// asJSON converts a TOML document to the JSON value an editor checks
// against the schema.
func asJSON(t *testing.T, doc string) any {
	t.Helper()
	var tree map[string]any
	if _, err := toml.Decode(doc, &tree); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(tree)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestJSONSchemaTellsGoodScenariosFromBad: documents the loader rejects
// for their shape (an unknown key, a wrong type, a value out of range or
// not among a key's values, a bare-number duration) the schema rejects
// too, and their fixed versions pass.
func TestJSONSchemaTellsGoodScenariosFromBad(t *testing.T) {
	s := schemaOf(t)
	const base = "[[control_plane]]\nname = \"cp\"\n[[control_plane.service]]\nname = \"echo\"\n[[fleet.group]]\n"
	tests := []struct {
		name, doc string
		ok        bool
	}{
		{"minimal", base + "clients = 3\n", true},
		{"unknown key", base + "clients = 3\nclinets = 4\n", false},
		{"missing required clients", base + "profile = \"spec\"\n", false},
		{"clients out of range", base + "clients = 0\n", false},
		{"not a profile", base + "clients = 3\nprofile = \"grpc-rust\"\n", false},
		{"duration without a unit", base + "clients = 3\nstart_at = 10\n", false},
		{"duration as a string", base + "clients = 3\nstart_at = \"1m30s\"\n", true},
		{"dist with a key of another kind", base + "clients = 3\nlatency = { dist = \"constant\", mean = \"1ms\" }\n", false},
		{"dist", base + "clients = 3\nlatency = { dist = \"lognormal\", median = \"1ms\", p99 = \"9ms\" }\n", true},
		{"fraction above 1", base + "clients = 3\n[[fleet.restart]]\nfraction = 1.5\n", false},
		{"unknown profile field", base + "clients = 3\nprofile_fields = { no_such_field = true }\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Validate(asJSON(t, tt.doc))
			if (err == nil) != tt.ok {
				t.Errorf("valid = %v, want %v: %v", err == nil, tt.ok, err)
			}
			_, perr := Parse(&Source{File: "t.toml", Name: "t", Data: []byte(tt.doc)}, nil)
			if (perr == nil) != tt.ok {
				t.Errorf("Parse: %v; the schema and the loader must agree", perr)
			}
		})
	}
}

// TestJSONSchemaValidatesEveryLibraryScenario: every scenario of the
// library, converted to JSON, is valid against the schema.
func TestJSONSchemaValidatesEveryLibraryScenario(t *testing.T) {
	s := schemaOf(t)
	for _, e := range Library() {
		t.Run(e.Name, func(t *testing.T) {
			src, err := Open(e.Name)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Validate(asJSON(t, string(src.Data))); err != nil {
				t.Errorf("%s: %v", e.Name, err)
			}
		})
	}
}

// TestJSONSchemaDefaultsAreTheLoaders: where the scenario reference gives
// a key one default, it is the value Parse resolves the key to when it is
// left out, so the schema's defaults (which are Parse's) and the
// reference's cannot differ.
func TestJSONSchemaDefaultsAreTheLoaders(t *testing.T) {
	defaults, err := skeletonDefaults()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for path, row := range refRows() {
		lit, ok := row.staticDefault()
		if !ok || unresolvedDefaults[path] != "" {
			continue
		}
		got, ok := defaults[path]
		if !ok {
			t.Errorf("%s: the reference gives the default %s, but the skeleton scenarios do not have the key", path, lit)
			continue
		}
		var want map[string]any
		if _, err := toml.Decode("v = "+lit, &want); err != nil {
			t.Errorf("%s: the reference's default %s is not TOML: %v", path, lit, err)
			continue
		}
		if !sameDefault(got, want["v"]) {
			t.Errorf("%s: the reference says the default is %s, Parse resolves %v", path, lit, got)
		}
		checked++
	}
	if checked < 60 {
		t.Errorf("checked %d defaults; the reference gives more", checked)
	}
}

// sameDefault compares a default as the schema writes it with a TOML
// value: durations by their length, numbers by value, tables key by key.
func sameDefault(got, want any) bool {
	g, _ := json.Marshal(got)
	var gv any
	_ = json.Unmarshal(g, &gv)
	return sameJSON(gv, want)
}

func sameJSON(g, w any) bool {
	switch wv := w.(type) {
	case string:
		gs, ok := g.(string)
		if !ok {
			return false
		}
		if gd, err1 := parseDurationOK(gs); err1 {
			if wd, err2 := parseDurationOK(wv); err2 {
				return gd == wd
			}
		}
		return gs == wv
	case int64:
		gf, ok := g.(float64)
		return ok && gf == float64(wv)
	case float64:
		gf, ok := g.(float64)
		return ok && gf == wv
	case bool:
		return g == wv
	case []any:
		ga, ok := g.([]any)
		if !ok || len(ga) != len(wv) {
			return false
		}
		for i := range wv {
			if !sameJSON(ga[i], wv[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		gm, ok := g.(map[string]any)
		if !ok || len(gm) != len(wv) {
			return false
		}
		for k, v := range wv {
			if !sameJSON(gm[k], v) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(g, w)
}

func parseDurationOK(s string) (time.Duration, bool) {
	d, err := time.ParseDuration(s)
	return d, err == nil
}

// probeBase has one of every table a constrained key lives in; a probe
// sets one key with --set and reads the errors at its path.
const probeBase = `
what_if = true
[[control_plane]]
name = "cp"
[[control_plane.service]]
name = "echo"
endpoint_weights = [1, 1, 1]
retry = {}
[[control_plane.service.localities]]
endpoints = 3
[[control_plane.service]]
name = "plain"
[[control_plane]]
name = "cp2"
[[control_plane.service]]
name = "multi"
[[control_plane.service.cluster]]
name = "a"
endpoint_weights = [1, 1, 1]
[[control_plane.service.cluster.localities]]
endpoints = 3
[[control_plane.service.cluster]]
name = "b"
[[fleet.group]]
clients = 3
[[fleet.restart]]
[[fault]]
kind = "message-loss"
probability = 0.5
[[fault]]
kind = "stream-reset-after-response"
[[change]]
action = "set_health"
service = "echo"
health = "HEALTHY"
[[change]]
action = "publish_invalid"
service = "echo"
defect = "route-retry"
[[change]]
action = "delete_service"
service = "echo"
resources = ["listener"]
[[change]]
action = "scale_endpoints"
service = "echo"
count = 3
[[backend]]
action = "fail"
service = "echo"
error_rate = 0.5
`

// concrete turns a key path of the reference into one of probeBase.
func concrete(path string) string {
	p := strings.ReplaceAll(path, "[]", "[0]")
	switch {
	case strings.HasPrefix(path, "control_plane[].service[].cluster"):
		p = strings.Replace(p, "control_plane[0]", "control_plane[1]", 1)
	case path == "fault[].responses":
		p = "fault[1].responses"
	case path == "change[].defect":
		p = "change[1].defect"
	case path == "change[].resources":
		p = "change[2].resources"
	case path == "change[].count", path == "change[].first":
		// A count or first past the endpoints is refused on its own
		// (validateChangeRanges); a scale's is only bounded.
		p = strings.Replace(p, "change[0]", "change[3]", 1)
	}
	switch path {
	case "control_plane[].service[].endpoints":
		p = "control_plane[0].service[1].endpoints" // a service without localities
	case "control_plane[].service[].cluster[].endpoints":
		p = "control_plane[1].service[0].cluster[1].endpoints"
	}
	return p
}

// probe parses probeBase with key at path set to value and returns the
// errors at that path (an array key's items included).
func probe(t *testing.T, path, value string) []string {
	t.Helper()
	key := concrete(path)
	_, err := Parse(&Source{File: "probe.toml", Name: "probe", Data: []byte(probeBase)}, []string{key + "=" + value})
	var out []string
	if list, ok := err.(ErrorList); ok {
		for _, e := range list {
			if e.Key == key || strings.HasPrefix(e.Key, key+"[") || strings.HasPrefix(e.Key, key+".") {
				out = append(out, e.Msg)
			}
		}
	} else if err != nil {
		t.Fatalf("%s=%s: %v", key, value, err)
	}
	return out
}

// TestJSONSchemaBoundsAreTheValidators: every range and set of values
// the schema gives a key is the validation's. A value at each bound is
// accepted and one just past it rejected; every value of a set is
// accepted, one outside it rejected, and the set the validation's error
// message then lists is the schema's.
func TestJSONSchemaBoundsAreTheValidators(t *testing.T) {
	if _, err := Parse(&Source{File: "probe.toml", Name: "probe", Data: []byte(probeBase)}, nil); err != nil {
		t.Fatalf("the probe scenario does not validate: %v", err)
	}
	rows := refRows()
	for path, c := range keyConstraints {
		t.Run(path, func(t *testing.T) {
			if _, ok := rows[path]; !ok {
				t.Fatalf("no key %s in the scenario reference", path)
			}
			if path == "<dist>.dist" {
				path = "network.latency.dist"
			}
			array := strings.HasSuffix(path, "weights") || slices.Contains([]string{"fleet.group[].server_features",
				"control_plane[].service[].override_host_status", "control_plane[].service[].withhold",
				"control_plane[].service[].retry.on", "control_plane[].service[].cluster[].withhold", "change[].resources"}, path)
			wrap := func(v string) string {
				if array {
					return "[" + v + "]"
				}
				return v
			}
			if c.enum != nil {
				probeEnum(t, path, c.enum(), wrap)
				return
			}
			num := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
			integer := !strings.Contains(rows[strings.ReplaceAll(path, "network.latency.", "<dist>.")].typ, "float")
			step := 1.0
			if !integer {
				step = 1e-9
			}
			if c.min != nil {
				in, out := *c.min, *c.min-step
				if c.exclMin {
					in, out = *c.min+step, *c.min
				}
				if errs := probe(t, path, wrap(num(in))); len(errs) > 0 {
					t.Errorf("%s = %v rejected: %v", path, in, errs)
				}
				if errs := probe(t, path, wrap(num(out))); len(errs) == 0 {
					t.Errorf("%s = %v accepted; the schema's lower bound is %v", path, out, *c.min)
				}
			}
			if c.max != nil {
				in, out := *c.max, *c.max+step
				if c.exclMax {
					in, out = *c.max-step, *c.max
				}
				if errs := probe(t, path, wrap(num(in))); len(errs) > 0 {
					t.Errorf("%s = %v rejected: %v", path, in, errs)
				}
				if errs := probe(t, path, wrap(num(out))); len(errs) == 0 {
					t.Errorf("%s = %v accepted; the schema's upper bound is %v", path, out, *c.max)
				}
			}
		})
	}
}

// probeEnum checks a key's set of values against the validation.
func probeEnum(t *testing.T, path string, values []string, wrap func(string) string) {
	if path == "fleet.group[].profile_fields" {
		for _, v := range values {
			if errs := probe(t, path+"."+v, `"x"`); slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, "unknown profile field") }) {
				t.Errorf("profile field %s unknown to the validation: %v", v, errs)
			}
		}
		return
	}
	for _, v := range values {
		if errs := probe(t, path, wrap(strconv.Quote(v))); slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, "expected") }) {
			t.Errorf("%s = %q rejected: %v", path, v, errs)
		}
	}
	errs := probe(t, path, wrap(`"no-such-value"`))
	if len(errs) == 0 {
		t.Fatalf("%s = \"no-such-value\" accepted", path)
	}
	// Values the validation's message names but the schema does not have
	// must be rejected too.
	msg := errs[0]
	i := strings.Index(msg, "one of: ")
	if i >= 0 {
		i += len("one of: ")
	} else if i = strings.Index(msg, "expected "); i >= 0 {
		i += len("expected ")
	} else {
		t.Fatalf("%s: the validation's message lists no values: %s", path, msg)
	}
	rest := msg[i:]
	if j := strings.Index(rest, ", found"); j >= 0 {
		rest = rest[:j]
	}
	rest = regexp.MustCompile(`\s*\([^)]*\)|\)$`).ReplaceAllString(rest, "")
	var listed []string
	for _, v := range strings.Split(strings.ReplaceAll(rest, " or ", ", "), ", ") {
		if v = strings.TrimSpace(v); v != "" {
			listed = append(listed, v)
		}
	}
	if len(listed) < 2 {
		t.Fatalf("%s: the validation's message lists %v: %s", path, listed, msg)
	}
	for _, v := range listed {
		if slices.Contains(values, v) {
			continue
		}
		if errs := probe(t, path, wrap(strconv.Quote(v))); len(errs) == 0 {
			t.Errorf("%s = %q is accepted, but the schema does not list it", path, v)
		}
	}
}
