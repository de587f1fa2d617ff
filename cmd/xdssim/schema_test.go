package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/xdssim/xdssim/scenarios"
)

// TestSchemaOutputValidatesEveryLibraryScenario: what `xdssim schema`
// prints is a JSON Schema (compiled by santhosh-tekuri/jsonschema against
// the draft 2020-12 metaschema) that every library scenario, converted
// from TOML to JSON as an editor does, satisfies.
func TestSchemaOutputValidatesEveryLibraryScenario(t *testing.T) {
	code, out, stderr := runMain(t, "schema")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("scenario.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("scenario.schema.json")
	if err != nil {
		t.Fatalf("xdssim schema printed no valid JSON Schema: %v", err)
	}
	for _, e := range scenarios.Library() {
		src, err := scenarios.Open(e.Name)
		if err != nil {
			t.Fatal(err)
		}
		var tree map[string]any
		if _, err := toml.Decode(string(src.Data), &tree); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(tree)
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		if err := schema.Validate(v); err != nil {
			t.Errorf("%s: %v", e.Name, err)
		}
	}
}
