package viz

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/stamp"
)

// SummarySchema is the value of the "schema" key of every summary.json this
// package writes. It changes when the meaning or layout of a key changes;
// a key added (as "build" and "scenario_sha256" were) leaves it: a reader
// of the keys it knows reads them as before.
const SummarySchema = "xdssim.summary/v2"

// headerKeys are the keys summary.json starts with, in this order, before
// the expectations and the metrics. A metric path may not begin with one of
// them, nor with expectationsKey.
var headerKeys = []string{"schema", "build", "scenario", "scenario_sha256", "seed", "clients", "virtual_seconds", "events"}

// expectationsKey holds the scenario's expectations, after the header keys,
// when it has any.
const expectationsKey = "expectations"

// whatIfKey holds the scenario's hypothetical settings, right after the
// header keys, when it has any: a run without it is of what shipping
// clients do.
const whatIfKey = "what_if"

// faultsKey holds the scenario's faults with the time the fleet took to
// recover from each, after the expectations.
const faultsKey = "faults"

// routingKey and unmodelledKey hold, for a run that serves resources of
// its own, where RPCs went and what is not modelled of the resources,
// after the faults.
const (
	routingKey    = "routing"
	unmodelledKey = "unmodelled"
)

// Summary renders r, run by the build st names, as summary.json: 2-space
// indented JSON holding, in this order, "schema" (SummarySchema), "build"
// (st's "version", "revision", "dirty" and "go"), "scenario",
// "scenario_sha256" (st's), "seed", "clients", "virtual_seconds" and
// "events"; then, when the scenario has hypothetical
// settings (Results.WhatIf), "what_if": an array with each one's "key",
// "value", "ships" and "why"; then, when expectations are given,
// "expectations": an array with one object per Expectation, in the order
// given, holding "metric", "min" and "max" (each only when the scenario
// gives it), "value" (null when the run reported none) and "pass"; then
// "faults": one object per Fault, in order, with "kind", "label",
// "start_seconds", "end_seconds", "windows" and "recovery_seconds"; then,
// for a run that serves resources of its own, "routing" (its "phases"
// between config changes, and per cluster its "rpcs" per phase and its
// "localities") and "unmodelled" (per resource, the fields the simulator
// does not model, with what real clients do); then every Metric nested by
// its dotted path ("fleet.clients_started": 300
// becomes "fleet": {"clients_started": 300}), with the keys of every metric
// object sorted. Numbers print as the shortest decimal that reads back as
// the same float64, integral ones without a fraction. The output ends with a
// newline.
//
// It is an error for a metric or a bound to be NaN or infinite, for a path
// to have an empty segment, and for a path to collide with a header key,
// with "expectations" or with another path (two equal paths, or "a" beside
// "a.b"). The error names the metric.
func Summary(r *fleet.Results, st stamp.Run, expectations ...Expectation) ([]byte, error) {
	if r == nil {
		return nil, fmt.Errorf("viz: summary.json: no results")
	}
	if err := st.Check(); err != nil {
		return nil, fmt.Errorf("viz: summary.json: stamp: %w", err)
	}
	tree, err := metricTree(r.Metrics)
	if err != nil {
		return nil, fmt.Errorf("viz: summary.json: %w", err)
	}

	var b bytes.Buffer
	b.WriteString("{\n")
	fmt.Fprintf(&b, "  \"schema\": %s,\n", quoteJSON(SummarySchema))
	fmt.Fprintf(&b, "  \"build\": {\"version\": %s, \"revision\": %s, \"dirty\": %s, \"go\": %s},\n",
		quoteJSON(st.Version), quoteJSON(st.Revision), quoteJSON(st.Dirty), quoteJSON(st.Go))
	fmt.Fprintf(&b, "  \"scenario\": %s,\n", quoteJSON(r.Scenario))
	fmt.Fprintf(&b, "  \"scenario_sha256\": %s,\n", quoteJSON(st.ScenarioSHA256))
	fmt.Fprintf(&b, "  \"seed\": %s,\n", strconv.FormatUint(r.Seed, 10))
	fmt.Fprintf(&b, "  \"clients\": %s,\n", strconv.Itoa(r.Clients))
	fmt.Fprintf(&b, "  \"virtual_seconds\": %s,\n", formatSeconds(r.Duration))
	fmt.Fprintf(&b, "  \"events\": %s", strconv.FormatUint(r.Events, 10))
	if len(r.WhatIf) > 0 {
		b.WriteString(",\n")
		writeWhatIf(&b, r.WhatIf)
	}
	if len(expectations) > 0 {
		b.WriteString(",\n")
		if err := writeExpectations(&b, expectations); err != nil {
			return nil, fmt.Errorf("viz: summary.json: %w", err)
		}
	}
	b.WriteString(",\n")
	writeFaults(&b, r.Faults)
	if r.Routing != nil {
		b.WriteString(",\n")
		writeRouting(&b, r.Routing)
	}
	if len(r.Unmodelled) > 0 {
		b.WriteString(",\n")
		writeUnmodelled(&b, r.Unmodelled)
	}
	for _, k := range tree.sortedKeys() {
		b.WriteString(",\n")
		writeMember(&b, 1, k, tree.children[k])
	}
	b.WriteString("\n}\n")
	return b.Bytes(), nil
}

// writeFaults writes the "faults" array: what the scenario did to the
// fleet (kind "fault", "restart", "backend" or "change"), its label, start
// and end in virtual seconds, the failure windows it caused, and
// recovery_seconds, how long after its end those windows went on.
func writeFaults(b *bytes.Buffer, fs []fleet.Fault) {
	b.WriteString("  \"faults\": [")
	for i, f := range fs {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(b, "\n    {\"kind\": %s, \"label\": %s, \"start_seconds\": %s, \"end_seconds\": %s, \"windows\": %d, \"recovery_seconds\": %s}",
			quoteJSON(f.Kind), quoteJSON(f.Label), formatSeconds(f.Start), formatSeconds(f.End), f.Windows, formatSeconds(f.Recovery))
	}
	if len(fs) > 0 {
		b.WriteString("\n  ")
	}
	b.WriteString("]")
}

// writeRouting writes the "routing" object of a run that serves a user's
// own resources: the phases between config changes ("phases": from and to
// in virtual seconds) and, per cluster and per locality of it, the RPCs
// whose first attempt was picked there in each phase.
func writeRouting(b *bytes.Buffer, rt *fleet.Routing) {
	fmt.Fprintf(b, "  %s: {\n    \"phases\": [", quoteJSON(routingKey))
	for i, p := range rt.Phases {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(b, "{\"from_seconds\": %s, \"to_seconds\": %s}", formatSeconds(p.From), formatSeconds(p.To))
	}
	b.WriteString("],\n    \"clusters\": [")
	counts := func(n []int) string {
		parts := make([]string, len(n))
		for i, v := range n {
			parts[i] = strconv.Itoa(v)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	for i, c := range rt.Clusters {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(b, "\n      {\"name\": %s, \"rpcs\": %s, \"localities\": [", quoteJSON(c.Name), counts(c.RPCs))
		for j, l := range c.Localities {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(b, "{\"name\": %s, \"rpcs\": %s}", quoteJSON(l.Name), counts(l.RPCs))
		}
		b.WriteString("]}")
	}
	if len(rt.Clusters) > 0 {
		b.WriteString("\n    ")
	}
	b.WriteString("]\n  }")
}

// writeUnmodelled writes the "unmodelled" array: per resource served
// verbatim, the fields that change what a real client does and that the
// simulator does not model, with what the real clients do.
func writeUnmodelled(b *bytes.Buffer, ns []fleet.ResourceNote) {
	fmt.Fprintf(b, "  %s: [", quoteJSON(unmodelledKey))
	for i, n := range ns {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(b, "\n    {\"server\": %s, \"kind\": %s, \"name\": %s, \"fields\": [", quoteJSON(n.Server), quoteJSON(n.Kind), quoteJSON(n.Name))
		for j, f := range n.Fields {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(b, "\n      {\"path\": %s, \"what\": %s}", quoteJSON(f.Path), quoteJSON(f.What))
		}
		b.WriteString("\n    ]}")
	}
	b.WriteString("\n  ]")
}

// writeWhatIf writes the "what_if" array: each hypothetical setting's key,
// value, what shipping clients have and why no deployment can set it.
func writeWhatIf(b *bytes.Buffer, ws []fleet.WhatIf) {
	fmt.Fprintf(b, "  %s: [", quoteJSON(whatIfKey))
	for i, w := range ws {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(b, "\n    {\"key\": %s, \"value\": %s, \"ships\": %s, \"why\": %s}",
			quoteJSON(w.Key), quoteJSON(w.Value), quoteJSON(w.Ships), quoteJSON(w.Why))
	}
	b.WriteString("\n  ]")
}

// WriteSummary writes Summary(r, st, expectations...) to w.
func WriteSummary(w io.Writer, r *fleet.Results, st stamp.Run, expectations ...Expectation) error {
	b, err := Summary(r, st, expectations...)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// Lookup returns the number summary.json would hold for r at the dotted
// path (see fleet.Results.Value).
func Lookup(r *fleet.Results, path string) (float64, bool) { return r.Value(path) }

// LookupSummary resolves a dotted path in the bytes of a summary.json the
// way Lookup does in Results: each segment names a key one level deeper, and
// the last must hold a number. It reports false when the path is missing,
// names a string or an object, or summary is not valid JSON.
func LookupSummary(summary []byte, path string) (float64, bool) {
	dec := json.NewDecoder(bytes.NewReader(summary))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return 0, false
	}
	for _, seg := range strings.Split(path, ".") {
		obj, ok := v.(map[string]any)
		if !ok {
			return 0, false
		}
		if v, ok = obj[seg]; !ok {
			return 0, false
		}
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}

// metricNode is one key of the nested metric objects: either a leaf holding
// a metric's value or an object of further keys.
type metricNode struct {
	path     string // the full dotted path of the metric, for leaves
	value    float64
	children map[string]*metricNode // nil for leaves
}

func (n *metricNode) sortedKeys() []string {
	keys := make([]string, 0, len(n.children))
	for k := range n.children {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// metricTree nests the metrics by their dotted paths, checking that every
// value is finite and that no two paths collide.
func metricTree(metrics []fleet.Metric) (*metricNode, error) {
	root := &metricNode{children: map[string]*metricNode{}}
	// prefix records, for each object node, the first metric path that
	// created it, so that a collision names both metrics.
	prefix := map[*metricNode]string{}
	for _, m := range metrics {
		if !finite(m.Value) {
			return nil, fmt.Errorf("metric %q is %v; summary.json holds only finite numbers", m.Path, m.Value)
		}
		segs := strings.Split(m.Path, ".")
		for _, s := range segs {
			if s == "" {
				return nil, fmt.Errorf("metric path %q has an empty segment", m.Path)
			}
		}
		for _, h := range headerKeys {
			if segs[0] == h {
				return nil, fmt.Errorf("metric %q collides with the header key %q", m.Path, h)
			}
		}
		if segs[0] == expectationsKey || segs[0] == faultsKey || segs[0] == whatIfKey || segs[0] == routingKey || segs[0] == unmodelledKey {
			return nil, fmt.Errorf("metric %q collides with the key %q", m.Path, segs[0])
		}
		n := root
		for i, s := range segs {
			child, ok := n.children[s]
			last := i == len(segs)-1
			switch {
			case ok && child.children == nil:
				return nil, fmt.Errorf("metric %q collides with metric %q", m.Path, child.path)
			case ok && last:
				return nil, fmt.Errorf("metric %q collides with metric %q", m.Path, prefix[child])
			case ok:
				n = child
			case last:
				n.children[s] = &metricNode{path: m.Path, value: m.Value}
			default:
				child = &metricNode{children: map[string]*metricNode{}}
				prefix[child] = m.Path
				n.children[s] = child
				n = child
			}
		}
	}
	return root, nil
}

// writeMember writes `"key": value` at the given depth of indentation,
// recursing into objects.
func writeMember(b *bytes.Buffer, depth int, key string, n *metricNode) {
	indent := strings.Repeat("  ", depth)
	b.WriteString(indent)
	b.WriteString(quoteJSON(key))
	b.WriteString(": ")
	if n.children == nil {
		b.WriteString(formatNumber(n.value))
		return
	}
	b.WriteString("{\n")
	for i, k := range n.sortedKeys() {
		if i > 0 {
			b.WriteString(",\n")
		}
		writeMember(b, depth+1, k, n.children[k])
	}
	b.WriteString("\n")
	b.WriteString(indent)
	b.WriteString("}")
}

// quoteJSON returns s as a JSON string, leaving <, > and & readable.
// Invalid UTF-8 becomes U+FFFD, as in encoding/json.
func quoteJSON(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // encoding a string cannot fail
	return strings.TrimSuffix(b.String(), "\n")
}
