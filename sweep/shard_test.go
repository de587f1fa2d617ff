package sweep

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
)

// hostile edits a shard file's JSON (f changes the decoded object) and,
// with rehash, gives it the header hash of its edited header, so that the
// checks behind the hash are reached.
func hostile(t *testing.T, f ShardFile, rehash bool, edit func(m map[string]any)) ShardFile {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(f.Data, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if rehash {
		delete(m, "header_sha256")
		var s shardJSON
		b, _ := json.Marshal(m)
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		m["header_sha256"], _ = HeaderSHA256(s.Header)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return ShardFile{Name: f.Name, Data: b}
}

// params returns n params of k values each, as a shard's header holds
// them.
func params(n, k int) []any {
	var out []any
	for i := range n {
		var vs []any
		for v := range k {
			vs = append(vs, fmt.Sprint(v+1))
		}
		out = append(out, map[string]any{"key": fmt.Sprintf("k%d", i), "values": vs, "role": "knob", "label": "deployable"})
	}
	return out
}

// TestMergeTreatsShardFilesAsUntrustedInput: the hostile shard files of
// issue 27, each of which used to panic, hang, run out of memory, print a
// 179 MB error or be accepted, are refused with what is wrong, and Merge
// allocates nothing in proportion to a count a file claims.
func TestMergeTreatsShardFilesAsUntrustedInput(t *testing.T) {
	p := testPlan(t, func(s *Spec) { s.Seeds = 1 })
	shard := func(i, n int) ShardFile { return testShard(t, p, i, n) }
	a0, a1 := shard(0, 2), shard(1, 2)
	firstRun := func(key string, v any) func(m map[string]any) {
		return func(m map[string]any) { m["runs"].([]any)[0].(map[string]any)[key] = v }
	}
	header := func(key string, v any) func(m map[string]any) { return func(m map[string]any) { m[key] = v } }
	for _, tt := range []struct {
		name   string
		rehash bool
		edit   func(m map[string]any)
		err    string
	}{
		{"a run of point -1", false, firstRun("point", -1), "run 0 is of point -1, seed 1; the sweep's run 0 is of point 0, seed 1"},
		{"a run of point 99", false, firstRun("point", 99), "run 0 is of point 99"},
		{"a run of another seed", false, firstRun("seed", 7), "run 0 is of point 0, seed 7"},
		{"a run breaching an expectation the sweep has not", false, firstRun("expect_breached", []any{3}), "expect_breached [3]"},
		{"a run without a metric", false, firstRun("metrics", map[string]any{}), "run 0 has 0 metrics, want 2"},
		{"a run with a metric of another name", false, firstRun("metrics", map[string]any{"a": 1, "b": 2}), "run 0 has no value of"},
		{"a billion shards", true, header("shards", 1_000_000_000), "expected a shard count from 1 to 10000000, found 1000000000"},
		{"a header implying 2^40 runs", true, header("params", params(40, 2)), "the grid has more than 10000000 points"},
		{"a header of 2^63 points", true, header("params", params(63, 2)), "the grid has more than 10000000 points"},
		{"a header with no seeds", true, header("seeds", []any{}), "the header has no seeds"},
		{"seeds past 2^63-1", true, func(m map[string]any) { m["seeds"] = []any{uint64(math.MaxInt64)}; m["max_seeds"] = 2 }, "pass the largest seed"},
		{"seeds that do not follow each other", true, func(m map[string]any) { m["seeds"] = []any{1, 3}; m["max_seeds"] = 2 }, "expected consecutive seeds"},
		{"a param with no values", true, header("params", params(1, 0)), "param k0 has no values"},
		{"a param's value twice", true, header("params", []any{map[string]any{"key": "k", "values": []any{"4", "4"}, "role": "knob", "label": "deployable"}}),
			"param k: expected distinct values"},
		{"a role that is neither", true, header("params", []any{map[string]any{"key": "k", "values": []any{"4"}, "role": "dial", "label": "deployable"}}), `role "dial"`},
		{"no scenario hash", true, header("scenario_sha256", ""), "scenario_sha256: expected 64 hex digits"},
		{"an edited header", false, header("max_seeds", 2), "the header does not match its header_sha256"},
		{"an unknown key", false, header("extra", 1), `unknown field "extra"`},
		{"another schema", false, header("schema", "xdssim.sweep-shard/v2"), `schema "xdssim.sweep-shard/v2", want "xdssim.sweep-shard/v3" (a shard of another version of xdssim`},
		{"no build", false, func(m map[string]any) { delete(m, "build") }, "build.version: missing"},
		{"a build with a newline", false, func(m map[string]any) { m["build"].(map[string]any)["revision"] = "abc\ndef" }, "build.revision"},
		{"a build neither dirty nor clean", false, func(m map[string]any) { m["build"].(map[string]any)["dirty"] = "maybe" }, "build.dirty"},
		{"a shard index out of range", false, header("shard", 2), "shard 2 of 2 is out of range (0 to 1)"},
		{"a shard whose name says another", false, header("shard", 1), "holds shard 1/2, but its name says 0/2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Merge([]ShardFile{hostile(t, a0, tt.rehash, tt.edit), a1})
			if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), a0.Name) {
				t.Errorf("Merge error %v, want one naming %s and saying %q", err, a0.Name, tt.err)
			}
		})
	}
	t.Run("shards written 1e9", func(t *testing.T) {
		bad := ShardFile{Name: a0.Name, Data: []byte(strings.Replace(string(a0.Data), `"shards": 2`, `"shards": 1e9`, 1))}
		if _, err := Merge([]ShardFile{bad, a1}); err == nil || !strings.Contains(err.Error(), "cannot unmarshal number 1e9") {
			t.Errorf("Merge error %v", err)
		}
	})
	t.Run("trailing garbage", func(t *testing.T) {
		bad := ShardFile{Name: a0.Name, Data: append(append([]byte{}, a0.Data...), "garbage{"...)}
		if _, err := Merge([]ShardFile{bad, a1}); err == nil || !strings.Contains(err.Error(), "expected the end of the file after the shard's JSON object") {
			t.Errorf("Merge error %v", err)
		}
	})
	t.Run("a file named as another shard", func(t *testing.T) {
		bad := ShardFile{Name: "dir/shard-0001-of-0002.json", Data: a0.Data}
		if _, err := Merge([]ShardFile{bad}); err == nil || !strings.Contains(err.Error(), "holds shard 0/2, but its name says 1/2") {
			t.Errorf("Merge error %v", err)
		}
	})
	t.Run("ten million shards, all but a few missing: a short error", func(t *testing.T) {
		var files []ShardFile
		for i := range p.Runs() {
			f := shard(i, 10_000_000)
			files = append(files, ShardFile{Name: fmt.Sprintf("s%d.json", i), Data: f.Data})
		}
		_, err := Merge(files)
		if err == nil || !strings.Contains(err.Error(), "missing shard(s) 4/10000000, 5/10000000") ||
			!strings.Contains(err.Error(), "and 9999986 more of the sweep of outage (4 of 10000000 given)") || len(err.Error()) > 500 {
			t.Errorf("Merge error (%d bytes) %.600v", len(fmt.Sprint(err)), err)
		}
	})
	t.Run("shards of another scenario", func(t *testing.T) {
		other := hostile(t, a1, true, header("scenario_sha256", strings.Repeat("0", 64)))
		if _, err := Merge([]ShardFile{a0, other}); err == nil || !strings.Contains(err.Error(), "another sweep than shard-0000-of-0002.json (their scenarios differ)") {
			t.Errorf("Merge error %v", err)
		}
	})
	if _, err := Merge([]ShardFile{a1, a0}); err != nil {
		t.Errorf("the untouched shards: %v", err)
	}
}
