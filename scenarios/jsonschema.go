package scenarios

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/xdssim/xdssim/docs"
	"github.com/xdssim/xdssim/model/xdsclient"
)

// JSONSchemaID is the $id of the scenario format's JSON Schema.
const JSONSchemaID = "https://github.com/xdssim/xdssim/scenario.schema.json"

// JSONSchema returns the JSON Schema (draft 2020-12) of the scenario
// format, for editors that check and complete TOML against a JSON Schema
// (Taplo and the Even Better TOML extension read one). It is built from
// the schema the loader decodes with, so the two cannot drift:
//
//   - the keys, their nesting and their types are the Scenario struct's,
//     walked as the decoder walks it (a duration is a string with a unit,
//     a distribution an inline table, an unknown key an error);
//   - a key's default is what Parse resolves when the key is left out of
//     a skeleton scenario, given where the reference documents a single
//     default (TestJSONSchemaDefaultsAreTheLoaders checks that they
//     agree);
//   - ranges and fixed sets of values are those the validation enforces
//     (keyConstraints, which TestJSONSchemaBoundsAreTheValidators checks
//     key by key against Parse, values inside and outside);
//   - each key's description is its row of docs/scenario-reference.md:
//     its meaning, type and default (a test keeps every key documented).
//
// What JSON Schema cannot say (a duration's range, a bound that depends
// on another key, a name that must refer to a declared control plane) the
// descriptions say, and `xdssim validate` checks.
func JSONSchema() ([]byte, error) {
	rows := refRows()
	defaults, err := skeletonDefaults()
	if err != nil {
		return nil, err
	}
	g := schemaGen{rows: rows, tables: refTables(), defaults: defaults}
	root := g.object(reflect.TypeFor[Scenario](), "")
	root = append(obj{
		{"$schema", "https://json-schema.org/draft/2020-12/schema"},
		{"$id", JSONSchemaID},
		{"title", "xdssim scenario"},
		{"description", "A scenario of xdssim, the deterministic simulator of gRPC XdsClient fleets: the control planes, the fleet of clients, " +
			"the faults and changes over the run, and expectations of its outcome. Every key: docs/scenario-reference.md."},
	}, root...)
	root = append(root, kv{"$defs", obj{
		{"duration", obj{
			{"type", "string"},
			{"pattern", durationPattern},
			{"description", "A duration with a unit, as Go's time.ParseDuration reads it: \"15s\", \"500ms\", \"2m30s\" (ns, us, ms, s, m, h), at most 720h (30 days). A bare number is an error."},
		}},
		{"dist", g.dist()},
	}})
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// profileFieldsSchema describes every field of an XdsClient profile: its
// type, and the value each implementation ships (docs/model-fidelity.md,
// "Profiles", says where each comes from).
func profileFieldsSchema() obj {
	var profiles []xdsclient.Profile
	for _, name := range []string{"grpc-go", "grpc-java", "grpc-core", "spec"} {
		p, _ := xdsclient.ProfileByName(name)
		profiles = append(profiles, p)
	}
	props := obj{}
	for _, f := range xdsclient.FieldNames() {
		var ships []string
		var values []string
		for _, p := range profiles {
			v, _ := p.Field(f)
			ships = append(ships, p.Name+" "+v)
			values = append(values, v)
		}
		o := obj{}
		switch v := values[0]; {
		case v == "true" || v == "false":
			o = append(o, kv{"type", []string{"boolean", "string"}})
		case isDurationText(v):
			o = append(o, kv{"type", "string"}, kv{"pattern", durationPattern})
		case isNumberText(v):
			o = append(o, kv{"type", []string{"number", "string"}})
		default:
			o = append(o, kv{"type", "string"})
		}
		desc := "XdsClient profile field " + f + ". Ships as: " + strings.Join(ships, "; ") +
			". A value the group's implementation does not ship is a what-if. docs/model-fidelity.md, Profiles, gives the source of each."
		o = append(o, kv{"description", desc})
		props = append(props, kv{f, o})
	}
	return obj{
		{"type", "object"},
		{"description", "Overrides single fields of the profile, by name. A value the implementation does not ship is a what-if (see what_if). Numbers must be finite, and the fields are checked as a whole: backoff_initial > 0, backoff_multiplier ≥ 1, 0 ≤ backoff_jitter < 1, backoff_max ≥ backoff_initial, both resource timeouts > 0. `xdssim validate` prints every field as each group runs it."},
		{"additionalProperties", false},
		{"properties", props},
	}
}

func isDurationText(s string) bool {
	_, err := time.ParseDuration(s)
	return err == nil && s != "0"
}

func isNumberText(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// durationPattern matches what time.ParseDuration reads.
const durationPattern = `^[-+]?(0|([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$|^[-+]?0$`

// kv and obj build JSON objects whose keys keep their order.
type kv struct {
	k string
	v any
}

type obj []kv

// MarshalJSON writes the object's keys in order.
func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(e.k)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(e.v)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// refRow is one key's row of docs/scenario-reference.md.
type refRow struct {
	typ, def, meaning string
}

var refTableRow = regexp.MustCompile("(?m)^\\| `([^`]+)` \\|([^|]*)\\|([^|]*)\\|([^|]*)\\|")

// refRows reads the key table of the scenario reference, by key
// path (fleet.group[].clients, <dist>.value).
func refRows() map[string]refRow {
	rows := map[string]refRow{}
	for _, m := range refTableRow.FindAllStringSubmatch(docs.ScenarioReference, -1) {
		rows[m[1]] = refRow{typ: strings.TrimSpace(m[2]), def: strings.TrimSpace(m[3]), meaning: strings.TrimSpace(m[4])}
	}
	return rows
}

var refTableHeading = regexp.MustCompile("(?m)^## `\\[{1,2}([a-z_.]+)\\]{1,2}`[^\n]*— ([^\n]*)\n\n((?:[^|#\n][^\n]*\n)*)")

// refTables reads what the scenario reference says of each table it has
// a section for, by key path: the section's title and first paragraph.
func refTables() map[string]string {
	out := map[string]string{}
	for _, m := range refTableHeading.FindAllStringSubmatch(docs.ScenarioReference, -1) {
		if _, seen := out[m[1]]; seen {
			continue
		}
		text := strings.Join(strings.Fields(m[3]), " ")
		out[m[1]] = m[2] + ": " + text
	}
	return out
}

// staticDefault returns the single literal a reference row gives as the
// default ("`3`", "`0` (no limit)"); ok is false when the default is
// prose, depends on other keys, or there is none.
func (r refRow) staticDefault() (string, bool) {
	d := r.def
	if !strings.HasPrefix(d, "`") {
		return "", false
	}
	end := strings.Index(d[1:], "`")
	if end < 0 {
		return "", false
	}
	lit, rest := d[1:end+1], strings.TrimSpace(d[end+2:])
	if rest != "" && !(strings.HasPrefix(rest, "(") && strings.HasSuffix(rest, ")")) {
		return "", false
	}
	var v map[string]any
	if _, err := toml.Decode("v = "+lit, &v); err != nil {
		return "", false // not a value: another key's name
	}
	return lit, true
}

// unresolvedDefaults are the keys whose default the reference gives as
// one value that the resolved scenario does not hold: the schema gives
// no default, and the description says it.
var unresolvedDefaults = map[string]string{
	"fleet.group[].name":   "a pattern, group-N by place",
	"backend[].error_code": "left empty, the run takes unavailable (dataPlaneConfig)",
	"format":               "a file without it is format 1; the resolved scenario is written in the current format",
}

// required reports whether the reference says the key is required.
func (r refRow) required() bool { return r.def == "required" }

// description is the row as a plain-text description: its meaning, its
// type and its default.
func (r refRow) description(markdown bool) string {
	s := r.meaning
	if r.typ != "" {
		s += " Type: " + r.typ + "."
	}
	switch {
	case r.required():
		s += " Required."
	case r.def != "":
		s += " Default: " + r.def + "."
	}
	if !markdown {
		s = strings.ReplaceAll(s, "`", "")
		s = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(s, "$1")
		s = strings.ReplaceAll(s, "**", "")
	}
	return s
}

// constraint is what the validation allows of a key beyond its type: a
// numeric range, or a fixed set of values (of the key, or of each item of
// an array key).
type constraint struct {
	min, max         *float64
	exclMin, exclMax bool
	enum             func() []string
}

func f(v float64) *float64 { return &v }

func keys[V any](m map[string]V) func() []string {
	return func() []string {
		out := make([]string, 0, len(m))
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
}

func list(vs ...string) func() []string { return func() []string { return vs } }

const maxUint32 = float64(math.MaxUint32)

// keyConstraints are the validation's ranges and sets of values, by key
// path. Where the validation keeps the set in a table, the table is used;
// TestJSONSchemaBoundsAreTheValidators probes Parse at every bound and
// value, and compares each set with the one the validation's error
// message lists.
var keyConstraints = map[string]constraint{
	"format":                                                     {min: f(1), max: f(CurrentFormat)},
	"fleet.group[].clients":                                      {min: f(1), max: f(maxClients)},
	"fleet.group[].profile":                                      {enum: list("grpc-go", "grpc-java", "grpc-core", "spec")},
	"fleet.group[].server_features":                              {enum: xdsclient.ServerFeatureNames},
	"fleet.group[].profile_fields":                               {enum: xdsclient.FieldNames},
	"fleet.group[].rpc.rate":                                     {min: f(0), max: f(1e6)},
	"fleet.group[].rpc.arrival":                                  {enum: list("poisson", "constant")},
	"fleet.group[].rpc.start":                                    {enum: list("immediate", "random")},
	"fleet.group[].rpc.sessions":                                 {min: f(0), max: f(1000)},
	"fleet.group[].rpc.session_rpcs":                             {min: f(0), max: f(math.MaxUint32)},
	"fleet.group[].rpc.throttle_max_tokens":                      {min: f(0), max: f(1000)},
	"fleet.group[].rpc.throttle_token_ratio":                     {min: f(0), exclMin: true},
	"fleet.group[].xds_channel.backoff_schedule":                 {enum: list("grpc-go", "grpc-java", "grpc-core", "spec")},
	"fleet.group[].xds_channel.multiplier":                       {min: f(1)},
	"fleet.group[].xds_channel.jitter":                           {min: f(0), max: f(1), exclMax: true},
	"fleet.group[].data_channel.backoff_schedule":                {enum: list("grpc-go", "grpc-java", "grpc-core", "spec")},
	"fleet.group[].data_channel.multiplier":                      {min: f(1)},
	"fleet.group[].data_channel.jitter":                          {min: f(0), max: f(1), exclMax: true},
	"fleet.restart[].fraction":                                   {min: f(0), exclMin: true, max: f(1)},
	"<dist>.dist":                                                {enum: list("constant", "uniform", "exponential", "lognormal")},
	"control_plane[].cache":                                      {enum: list("linear", "snapshot", "snapshot-per-type")},
	"control_plane[].on_nack":                                    {enum: list("hold", "resend")},
	"control_plane[].empty_types":                                {enum: list("answered", "unanswered")},
	"control_plane[].workers":                                    {min: f(0), max: f(maxWorkers)},
	"control_plane[].max_streams":                                {min: f(0)},
	"control_plane[].service[].endpoints":                        {min: f(0), max: f(maxEndpoints)},
	"control_plane[].service[].lb":                               {enum: list("round_robin", "pick_first", "ring_hash", "least_request")},
	"control_plane[].service[].defect":                           {enum: defects},
	"control_plane[].service[].override_host_status":             {enum: keys(overrideStatuses)},
	"control_plane[].service[].endpoint_weights":                 {min: f(1), max: f(maxUint32)},
	"control_plane[].service[].localities[].priority":            {min: f(0), max: f(999)},
	"control_plane[].service[].localities[].weight":              {min: f(0), max: f(maxUint32)},
	"control_plane[].service[].localities[].endpoints":           {min: f(0), max: f(maxEndpoints)},
	"control_plane[].service[].withhold":                         {enum: list("listener", "route", "cluster", "endpoints")},
	"control_plane[].service[].retry.on":                         {enum: keys(retryCodes)},
	"control_plane[].service[].retry.num_retries":                {min: f(1), max: f(math.MaxUint32)},
	"control_plane[].service[].cluster[].weight":                 {min: f(1), max: f(maxUint32)},
	"control_plane[].service[].cluster[].endpoints":              {min: f(0), max: f(maxEndpoints)},
	"control_plane[].service[].cluster[].withhold":               {enum: list("cluster", "endpoints")},
	"control_plane[].service[].cluster[].endpoint_weights":       {min: f(1), max: f(maxUint32)},
	"control_plane[].service[].cluster[].localities[].priority":  {min: f(0), max: f(999)},
	"control_plane[].service[].cluster[].localities[].weight":    {min: f(0), max: f(maxUint32)},
	"control_plane[].service[].cluster[].localities[].endpoints": {min: f(0), max: f(maxEndpoints)},
	"fault[].kind":                                               {enum: keys(faultKinds)},
	"fault[].fraction":                                           {min: f(0), max: f(1)},
	"fault[].probability":                                        {min: f(0), exclMin: true, max: f(1)},
	"fault[].responses":                                          {min: f(1)},
	"change[].action":                                            {enum: list("delete_service", "restore_service", "publish_invalid", "scale_endpoints", "drain_endpoints", "set_health", "replace_endpoints", "publish", "delete_resource", "restore_resource")},
	"change[].defect":                                            {enum: defects},
	"change[].health":                                            {enum: keys(corepb.HealthStatus_value)},
	"change[].count":                                             {min: f(0), max: f(maxEndpoints)},
	"change[].first":                                             {min: f(0), max: f(maxEndpoints)},
	"data_plane.error_rate":                                      {min: f(0), max: f(1)},
	"data_plane.error_code":                                      {enum: keys(retryCodes)},
	"backend[].action":                                           {enum: keys(backendActions)},
	"backend[].first":                                            {min: f(0)},
	"backend[].count":                                            {min: f(1), max: f(100_000)},
	"backend[].error_rate":                                       {min: f(0), exclMin: true, max: f(1)},
	"backend[].error_code":                                       {enum: keys(retryCodes)},
}

// defects are the defects publish_invalid and a service's defect take.
func defects() []string {
	return strings.Split(strings.TrimPrefix(defectNames, "one of: "), ", ")
}

// schemaGen builds the schema of one struct type after another.
type schemaGen struct {
	rows     map[string]refRow
	tables   map[string]string // by key path of a table: the reference's words for it
	defaults map[string]any    // by key path: the loader's default
}

// object is the schema of the struct type t found at key path prefix.
func (g *schemaGen) object(t reflect.Type, prefix string) obj {
	fs := schemaFields(t)
	var props obj
	var required []string
	for _, name := range fs.names {
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		field := g.field(t.Field(fs.byName[name]).Type, path)
		if fs.scalar[name] {
			field = scalarSchema(field)
		}
		props = append(props, kv{name, field})
		if g.rows[path].required() {
			required = append(required, name)
		}
	}
	o := obj{{"type", "object"}, {"additionalProperties", false}, {"properties", props}}
	if len(required) > 0 {
		o = append(o, kv{"required", required})
	}
	return o
}

// field is the schema of a key of type t at path, with its description,
// default and constraints.
func (g *schemaGen) field(t reflect.Type, path string) obj {
	var o obj
	if row, ok := g.rows[path]; ok {
		o = append(o, kv{"description", row.description(false)}, kv{"markdownDescription", row.description(true)})
	} else if d := g.tableDescription(t, path); d != "" {
		o = append(o, kv{"description", d})
	}
	c := keyConstraints[path]
	o = append(o, g.typ(t, path, c)...)
	if d, ok := g.defaults[path]; ok && unresolvedDefaults[path] == "" {
		if _, static := g.rows[path].staticDefault(); static {
			o = append(o, kv{"default", d})
		}
	}
	return o
}

// scalarSchema widens the schema of a ",scalar" string key (or array of
// them) to take any scalar, as the loader does.
func scalarSchema(o obj) obj {
	scalar := []string{"string", "boolean", "number"}
	out := make(obj, 0, len(o))
	for _, e := range o {
		switch {
		case e.k == "type" && e.v == "string":
			e.v = scalar
		case e.k == "items":
			e.v = scalarSchema(e.v.(obj))
		}
		out = append(out, e)
	}
	return out
}

// typ is the part of a key's schema its Go type and constraint make.
func (g *schemaGen) typ(t reflect.Type, path string, c constraint) obj {
	if t.Kind() == reflect.Pointer {
		t = t.Elem() // an optional value: the same schema
	}
	switch {
	case t == durationType:
		return obj{{"$ref", "#/$defs/duration"}}
	case t == reflect.TypeFor[Dist]():
		return obj{{"$ref", "#/$defs/dist"}}
	case t.Kind() == reflect.Struct:
		return g.object(t, path)
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct && t.Elem() != durationType:
		return obj{{"type", "array"}, {"items", g.object(t.Elem(), path+"[]")}}
	case t.Kind() == reflect.Slice:
		return obj{{"type", "array"}, {"items", g.typ(t.Elem(), path, c)}}
	case t.Kind() == reflect.Map && path == "fleet.group[].profile_fields":
		return profileFieldsSchema()
	case t.Kind() == reflect.Map:
		o := obj{{"type", "object"}, {"additionalProperties", obj{{"type", []string{"string", "boolean", "number"}}}}}
		if c.enum != nil {
			o = append(o, kv{"propertyNames", obj{{"enum", c.enum()}}})
		}
		return o
	case t.Kind() == reflect.String:
		o := obj{{"type", "string"}}
		if c.enum != nil {
			o = append(o, kv{"enum", c.enum()})
		}
		return o
	case t.Kind() == reflect.Bool:
		return obj{{"type", "boolean"}}
	case t.Kind() == reflect.Int, t.Kind() == reflect.Int64, t.Kind() == reflect.Uint64:
		o := obj{{"type", "integer"}}
		if t.Kind() == reflect.Uint64 && c.min == nil {
			c.min = f(0)
		}
		return append(o, c.bounds()...)
	case t.Kind() == reflect.Float64:
		return append(obj{{"type", "number"}}, c.bounds()...)
	}
	panic(fmt.Sprintf("scenarios: schema key %s has unsupported type %s", path, t))
}

// bounds are the JSON Schema keywords of a numeric range.
func (c constraint) bounds() obj {
	var o obj
	if c.min != nil {
		k := "minimum"
		if c.exclMin {
			k = "exclusiveMinimum"
		}
		o = append(o, kv{k, *c.min})
	}
	if c.max != nil {
		k := "maximum"
		if c.exclMax {
			k = "exclusiveMaximum"
		}
		o = append(o, kv{k, *c.max})
	}
	return o
}

// dist is the schema of a distribution: which keys each kind takes.
func (g *schemaGen) dist() obj {
	o := g.object(reflect.TypeFor[Dist](), "<dist>")
	o = append(o, kv{"description", "A distribution of durations, as an inline table: { dist = \"constant\", value = \"1ms\" }, " +
		"{ dist = \"uniform\", min, max }, { dist = \"exponential\", mean } or { dist = \"lognormal\", median, p99 }."})
	var oneOf []obj
	for _, kind := range keyConstraints["<dist>.dist"].enum() {
		allowed := []string{"dist"}
		switch kind {
		case "constant":
			allowed = append(allowed, "value")
		case "uniform":
			allowed = append(allowed, "min", "max")
		case "exponential":
			allowed = append(allowed, "mean")
		case "lognormal":
			allowed = append(allowed, "median", "p99")
		}
		oneOf = append(oneOf, obj{
			{"properties", obj{{"dist", obj{{"const", kind}}}}},
			{"propertyNames", obj{{"enum", allowed}}},
		})
	}
	return append(o, kv{"oneOf", oneOf})
}

// skeleton is a scenario with one of every table, giving only what the
// validation requires: Parse resolves every other key to its default.
const skeleton = `
[[control_plane]]
name = "cp"
[[control_plane.service]]
name = "echo"
retry = {}
session = {}
[[control_plane.service.localities]]
[[fleet.group]]
clients = 1
[[fleet.restart]]
[[fault]]
kind = "stream-reset-after-response"
[[change]]
action = "scale_endpoints"
service = "echo"
[[backend]]
action = "down"
service = "echo"
[[expect]]
metric = "fleet.starts"
min = 0
[[sweep.param]]
key = "duration"
values = ["1m"]
`

// clusterSkeleton has a service of several clusters and routes.
const clusterSkeleton = `
[[control_plane]]
name = "cp"
[[control_plane.service]]
name = "echo"
[[control_plane.service.cluster]]
name = "a"
[[control_plane.service.cluster.localities]]
[[control_plane.service.route]]
[[fleet.group]]
clients = 1
rpc = { methods = [{ method = "/a/b" }] }
`

// skeletonDefaults returns what Parse resolves every key of the
// skeletons to, by key path, as JSON values.
func skeletonDefaults() (map[string]any, error) {
	out := map[string]any{}
	for _, doc := range []string{skeleton, clusterSkeleton} {
		s, err := Parse(&Source{File: "skeleton.toml", Name: "skeleton", Data: []byte(doc)}, nil)
		if err != nil {
			return nil, fmt.Errorf("scenarios: the schema's skeleton scenario does not validate: %w", err)
		}
		collectDefaults(reflect.ValueOf(s).Elem(), "", out)
	}
	return out, nil
}

// collectDefaults records the value of every key of v under path, the
// first element of each array of tables standing for them all.
func collectDefaults(v reflect.Value, path string, out map[string]any) {
	t := v.Type()
	fs := schemaFields(t)
	for _, name := range fs.names {
		p := name
		if path != "" {
			p = path + "." + name
		}
		fv := v.Field(fs.byName[name])
		if fv.Kind() == reflect.Pointer {
			if fv.IsNil() {
				continue
			}
			fv = fv.Elem()
		}
		switch {
		case fv.Type() == reflect.TypeFor[Dist]():
			out[p] = distJSON(fv.Interface().(Dist))
		case fv.Kind() == reflect.Struct && fv.Type() != durationType:
			collectDefaults(fv, p, out)
		case fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.Struct && fv.Type().Elem() != durationType:
			if fv.Len() > 0 {
				collectDefaults(fv.Index(0), p+"[]", out)
			}
		default:
			if _, seen := out[p]; !seen {
				out[p] = jsonValue(fv)
			}
		}
	}
}

// jsonValue is a scalar, array or map key value as its JSON default.
func jsonValue(v reflect.Value) any {
	switch {
	case v.Type() == durationType:
		return formatDuration(time.Duration(v.Int()))
	case v.Kind() == reflect.Slice:
		out := []any{}
		for i := range v.Len() {
			out = append(out, jsonValue(v.Index(i)))
		}
		return out
	case v.Kind() == reflect.Map:
		m := map[string]any{}
		iter := v.MapRange()
		for iter.Next() {
			m[iter.Key().String()] = iter.Value().Interface()
		}
		return m
	}
	return v.Interface()
}

func distJSON(d Dist) obj {
	o := obj{{"dist", d.Dist}}
	for _, k := range []struct {
		name string
		v    time.Duration
	}{{"value", d.Value}, {"min", d.Min}, {"max", d.Max}, {"mean", d.Mean}, {"median", d.Median}, {"p99", d.P99}} {
		if k.v != 0 {
			o = append(o, kv{k.name, formatDuration(k.v)})
		}
	}
	return o
}

// formatDuration writes d as a scenario would: "5m", "1m30s", "250ms".
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// tableDescription describes a table key (or an array of tables): the
// reference section's words for it, else which keys it holds.
func (g *schemaGen) tableDescription(t reflect.Type, path string) string {
	if d, ok := g.tables[strings.TrimSuffix(path, "[]")]; ok {
		return d
	}
	what := "A table"
	if t.Kind() == reflect.Slice {
		what = "An array of tables"
	}
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t == durationType {
		return ""
	}
	return fmt.Sprintf("%s of the keys %s.", what, strings.Join(schemaFields(t).names, ", "))
}
