package scenarios

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"testing"
)

// schemaPaths lists every key of the schema as docs/scenario-reference.md
// writes it: fleet.group[].clients for a key of an array of tables.
func schemaPaths(t reflect.Type, prefix string) []string {
	var out []string
	fs := schemaFields(t)
	for _, name := range fs.names {
		ft := t.Field(fs.byName[name]).Type
		p := name
		if prefix != "" {
			p = prefix + "." + name
		}
		if ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct {
			ft = ft.Elem() // an optional table
		}
		switch {
		case ft == reflect.TypeFor[Dist]():
			// A distribution is one documented type: its keys are listed
			// once, as <dist>.KEY.
			out = append(out, p)
			for _, k := range schemaFields(ft).names {
				if !slices.Contains(out, "<dist>."+k) {
					out = append(out, "<dist>."+k)
				}
			}
		case ft.Kind() == reflect.Struct && ft != durationType:
			out = append(out, schemaPaths(ft, p)...)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			out = append(out, schemaPaths(ft.Elem(), p+"[]")...)
		default:
			out = append(out, p)
		}
	}
	return out
}

var referenceRow = regexp.MustCompile("(?m)^\\| `([^`]+)` \\|")

// TestScenarioReferenceDocumentsEveryKey keeps docs/scenario-reference.md
// and the schema in step: every key has a row, and every row is a key.
func TestScenarioReferenceDocumentsEveryKey(t *testing.T) {
	doc, err := os.ReadFile("../docs/scenario-reference.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range referenceRow.FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = true
	}
	schema := map[string]bool{}
	for _, p := range schemaPaths(reflect.TypeFor[Scenario](), "") {
		if schema[p] {
			continue
		}
		schema[p] = true
		if !documented[p] {
			t.Errorf("key %s has no row in docs/scenario-reference.md", p)
		}
	}
	var extra []string
	for p := range documented {
		if !schema[p] {
			extra = append(extra, p)
		}
	}
	sort.Strings(extra)
	for _, p := range extra {
		t.Errorf("docs/scenario-reference.md documents %s, which the schema does not have", p)
	}
}
