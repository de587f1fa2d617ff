package sweep

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/xdssim/xdssim/scenarios"
	"github.com/xdssim/xdssim/stamp"
)

// ShardSchema is the "schema" of a shard's file. v2 added the hashes of
// the scenario and of the header; v3 the build of xdssim that ran the
// shard ("build"), which the strict reader of v2 would refuse as an
// unknown key: a shard of v2 is refused by name instead.
const ShardSchema = "xdssim.sweep-shard/v3"

// MaxShardSize is the largest shard file Merge reads: about 700 000 runs
// of 7 metrics. A larger sweep is split into more shards.
const MaxShardSize = 256 << 20

// Shard names shard I of N, 0 <= I < N: it runs the runs whose index is I
// modulo N, so every shard gets points from all over the grid.
type Shard struct{ I, N int }

func (s Shard) String() string { return strconv.Itoa(s.I) + "/" + strconv.Itoa(s.N) }

// FileName is the name of the shard's file in its output directory:
// shard-0003-of-0016.json for 3/16.
func (s Shard) FileName() string { return fmt.Sprintf("shard-%04d-of-%04d.json", s.I, s.N) }

// ParseShard reads "i/n". When i is empty ("/n"), it is index, the value of
// JOB_COMPLETION_INDEX a Kubernetes Indexed Job gives each pod ("" when
// unset, an error then).
func ParseShard(s, index string) (Shard, error) {
	is, ns, ok := strings.Cut(s, "/")
	if is == "" {
		is = index
	}
	n, errN := strconv.Atoi(ns)
	i, errI := strconv.Atoi(is)
	switch {
	case !ok || errN != nil || n < 1:
		return Shard{}, fmt.Errorf("--shard %s: expected i/n, such as 2/8 (or /8 with JOB_COMPLETION_INDEX set), with n >= 1", s)
	case is == "":
		return Shard{}, fmt.Errorf("--shard %s: no shard index, and JOB_COMPLETION_INDEX is not set", s)
	case errI != nil || i < 0 || i >= n:
		return Shard{}, fmt.Errorf("--shard %s: expected a shard index from 0 to %d, found %q", s, n-1, is)
	}
	return Shard{I: i, N: n}, nil
}

// Indices returns the run indices of a sweep of total runs that the shard
// runs.
func (s Shard) Indices(total int) []int {
	out := make([]int, 0, s.Count(total))
	for r := s.I; r < total; r += s.N {
		out = append(out, r)
	}
	return out
}

// Count is the number of runs of a sweep of total runs that the shard
// runs.
func (s Shard) Count(total int) int {
	if s.I >= total {
		return 0
	}
	return (total-1-s.I)/s.N + 1
}

type shardJSON struct {
	Schema string `json:"schema"`
	Shard  int    `json:"shard"`
	Shards int    `json:"shards"`
	// HeaderSHA256 is the SHA-256 of the header's JSON: Merge recomputes
	// it, so that a header edited by hand is caught.
	HeaderSHA256 string `json:"header_sha256"`
	// Build is the build of xdssim that ran the shard: every shard of a
	// merge must name the same one. The header's hash does not cover it.
	Build stamp.Build `json:"build"`
	Header
	Runs []runJSON `json:"runs"`
}

// HeaderSHA256 is the SHA-256, in hex, of the JSON of h: shards of one
// sweep have the same, and carry it (header_sha256).
func HeaderSHA256(h Header) (string, error) {
	b, err := json.Marshal(h)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// ShardJSON renders what shard s of the sweep h ran with build b: the
// header, the build and the runs, for Merge.
func ShardJSON(h Header, b stamp.Build, s Shard, runs []Run) ([]byte, error) {
	hash, err := HeaderSHA256(h)
	if err != nil {
		return nil, err
	}
	out := shardJSON{Schema: ShardSchema, Shard: s.I, Shards: s.N, HeaderSHA256: hash, Build: b, Header: h, Runs: []runJSON{}}
	for _, r := range runs {
		out.Runs = append(out.Runs, toRunJSON(r, h.Metrics))
	}
	return marshalIndent(out)
}

// ShardFile is one shard's file, by name, for Merge: its bytes, or how to
// read them (Merge then reads one file at a time, and holds only the runs
// of those it has read).
type ShardFile struct {
	Name string
	Data []byte
	Read func() ([]byte, error)
}

// shardName reads the shard and shard count of a file named as
// Shard.FileName names it; ok is false for another name.
func shardName(name string) (s Shard, ok bool) {
	var i, n int
	var rest string
	k, _ := fmt.Sscanf(filepath.Base(name), "shard-%d-of-%d%s", &i, &n, &rest)
	if k != 3 || rest != ".json" {
		return Shard{}, false
	}
	return Shard{I: i, N: n}, true
}

// parseShard reads one shard file strictly: one JSON object of the
// schema, no unknown key, nothing after it, a header that holds together
// (CheckHeader) and matches its hash, a shard index in range and matching
// the file's name, and exactly the shard's runs, in order, each of the
// point and seed its index says, with one value per metric.
func parseShard(f ShardFile) (*shardJSON, []Run, error) {
	if len(f.Data) > MaxShardSize {
		return nil, nil, fmt.Errorf("larger than %d MiB: split the sweep into more shards", MaxShardSize>>20)
	}
	var s shardJSON
	dec := json.NewDecoder(bytes.NewReader(f.Data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, nil, fmt.Errorf("expected a shard of a sweep (%s): %v", ShardSchema, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, fmt.Errorf("expected the end of the file after the shard's JSON object, found more (at byte %d)", dec.InputOffset())
	}
	if s.Schema != ShardSchema {
		return nil, nil, fmt.Errorf("schema %q, want %q (a shard of another version of xdssim: run the shards again with this one)", s.Schema, ShardSchema)
	}
	if err := CheckHeader(&s.Header); err != nil {
		return nil, nil, err
	}
	if hash, err := HeaderSHA256(s.Header); err != nil || hash != s.HeaderSHA256 {
		return nil, nil, fmt.Errorf("the header does not match its header_sha256: it was changed after the shard was written")
	}
	if s.Shards < 1 || s.Shards > maxRuns {
		return nil, nil, fmt.Errorf("expected a shard count from 1 to %d, found %d", maxRuns, s.Shards)
	}
	if s.Shard < 0 || s.Shard >= s.Shards {
		return nil, nil, fmt.Errorf("shard %d of %d is out of range (0 to %d)", s.Shard, s.Shards, s.Shards-1)
	}
	sh := Shard{I: s.Shard, N: s.Shards}
	if named, ok := shardName(f.Name); ok && named != sh {
		return nil, nil, fmt.Errorf("holds shard %s, but its name says %s", sh, named)
	}
	if want := sh.Count(s.Header.Runs()); len(s.Runs) != want {
		return nil, nil, fmt.Errorf("shard %s has %d runs, want %d", sh, len(s.Runs), want)
	}
	runs := make([]Run, len(s.Runs))
	for k, rj := range s.Runs {
		want := sh.I + k*sh.N
		if rj.Run != want {
			return nil, nil, fmt.Errorf("run %d where run %d should be", rj.Run, want)
		}
		pt, seed := s.RunOf(want)
		if rj.Point != pt || rj.Seed != seed {
			return nil, nil, fmt.Errorf("run %d is of point %d, seed %d; the sweep's run %d is of point %d, seed %d", rj.Run, rj.Point, rj.Seed, want, pt, seed)
		}
		for i, e := range rj.Breached {
			if e < 0 || e >= len(s.Expect) || (i > 0 && e <= rj.Breached[i-1]) {
				return nil, nil, fmt.Errorf("run %d: expect_breached %v: expected increasing indices of the %d expectations", rj.Run, rj.Breached, len(s.Expect))
			}
		}
		r, err := fromRunJSON(rj, s.Metrics)
		if err != nil {
			return nil, nil, err
		}
		runs[k] = r
	}
	if err := s.Build.Check(); err != nil {
		return nil, nil, err
	}
	return &s, runs, nil
}

// Merge combines the files of every shard of one sweep into the Result the
// unsharded sweep gives. A shard's file is untrusted input: it is read
// strictly (parseShard), and it is an error for the files to be of
// different sweeps (their headers, with the hash of the scenario, differ),
// for a shard to be missing or given twice, or for a shard to lack a run
// it should have. Nothing is allocated in proportion to a count a file
// claims, only to what the files hold.
func Merge(files []ShardFile) (*Result, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("merge: no shard files")
	}
	var head []byte
	var h Header
	var build stamp.Build
	var runs []Run
	seen := map[int]string{}
	n := 0
	for _, f := range files {
		if f.Data == nil && f.Read != nil {
			b, err := f.Read()
			if err != nil {
				return nil, fmt.Errorf("merge: %s: %v", f.Name, err)
			}
			f.Data = b
		}
		s, rs, err := parseShard(f)
		if err != nil {
			return nil, fmt.Errorf("merge: %s: %v", f.Name, err)
		}
		hb, _ := json.Marshal(s.Header)
		switch {
		case head == nil:
			head, h, n, build = hb, s.Header, s.Shards, s.Build
		case !bytes.Equal(hb, head):
			return nil, fmt.Errorf("merge: %s is a shard of another sweep than %s (%s)", f.Name, files[0].Name, headerDiff(h, s.Header))
		case s.Shards != n:
			return nil, fmt.Errorf("merge: %s is shard %d of %d, but %s is of %d", f.Name, s.Shard, s.Shards, files[0].Name, n)
		case s.Build != build:
			// Two builds may compute other figures from one scenario:
			// their runs are not one sweep's.
			return nil, fmt.Errorf("merge: %s was run by xdssim %s, but %s by xdssim %s: run every shard of a sweep with the same build", f.Name, s.Build, files[0].Name, build)
		}
		if other, dup := seen[s.Shard]; dup {
			return nil, fmt.Errorf("merge: shard %d/%d is given twice: %s and %s", s.Shard, n, other, f.Name)
		}
		seen[s.Shard] = f.Name
		runs = append(runs, rs...)
	}
	if len(seen) < n {
		var missing []string
		for i := 0; i < n && len(missing) < 10; i++ {
			if _, ok := seen[i]; !ok {
				missing = append(missing, Shard{i, n}.String())
			}
		}
		more := ""
		if left := n - len(seen) - len(missing); left > 0 {
			more = fmt.Sprintf(" and %d more", left)
		}
		return nil, fmt.Errorf("merge: missing shard(s) %s%s of the sweep of %s (%d of %d given)", strings.Join(missing, ", "), more, h.Scenario, len(seen), n)
	}
	res, err := Summarize(h, runs)
	if err != nil {
		return nil, err
	}
	res.Build = build
	return res, nil
}

// headerDiff says what differs between two headers.
func headerDiff(a, b Header) string {
	switch {
	case a.Scenario != b.Scenario || a.ScenarioSHA256 != b.ScenarioSHA256:
		return "their scenarios differ"
	case !slices.Equal(a.Sets, b.Sets):
		return "their --set overrides differ"
	case !slices.Equal(a.Seeds, b.Seeds) || a.MaxSeeds != b.MaxSeeds:
		return "their seeds differ"
	case !slices.Equal(a.Metrics, b.Metrics):
		return "their metrics differ"
	case a.ExactRPCs != b.ExactRPCs:
		return "one ran with --exact-rpcs, the other without"
	}
	return "their params, objectives or constraints differ"
}

// CheckHeader checks a header read from a file: what a plan's header
// always is. Every count is checked for overflow and bounded by the most
// runs a sweep may have, before anything is sized by it.
func CheckHeader(h *Header) error {
	if h.Scenario == "" {
		return fmt.Errorf("the header names no scenario")
	}
	if err := stamp.CheckSHA256("scenario_sha256", h.ScenarioSHA256); err != nil {
		return err
	}
	switch {
	case len(h.Seeds) == 0:
		return fmt.Errorf("the header has no seeds")
	case h.MaxSeeds < len(h.Seeds) || h.MaxSeeds > maxSeeds:
		return fmt.Errorf("max_seeds %d: expected from the number of seeds (%d) to %d", h.MaxSeeds, len(h.Seeds), maxSeeds)
	case h.Seeds[0] > math.MaxInt64-uint64(h.MaxSeeds-1):
		return fmt.Errorf("seeds from %d, up to %d of them, pass the largest seed, %d", h.Seeds[0], h.MaxSeeds, int64(math.MaxInt64))
	case !(h.Risk > 0 && h.Risk <= 0.5):
		return fmt.Errorf("risk %v: expected above 0 and at most 0.5", h.Risk)
	case len(h.Metrics) == 0:
		return fmt.Errorf("the header has no metrics")
	}
	for i, seed := range h.Seeds {
		if seed != h.Seeds[0]+uint64(i) {
			return fmt.Errorf("seeds %v: expected consecutive seeds", h.Seeds)
		}
	}
	if _, err := scenarios.ParseIndifference(h.Indifference); err != nil {
		return fmt.Errorf("indifference: %v", err)
	}
	for i, m := range h.Metrics {
		if m == "" || slices.Index(h.Metrics, m) < i {
			return fmt.Errorf("metrics %q: expected distinct summary.json paths", h.Metrics)
		}
	}
	keys := map[string]bool{}
	for _, p := range h.Params {
		switch {
		case p.Key == "" || keys[p.Key]:
			return fmt.Errorf("params: expected distinct keys, found %q", p.Key)
		case len(p.Values) == 0:
			return fmt.Errorf("param %s has no values", p.Key)
		case p.Role != scenarios.Knob && p.Role != scenarios.Condition:
			return fmt.Errorf("param %s: role %q, expected %q or %q", p.Key, p.Role, scenarios.Knob, scenarios.Condition)
		case p.Label != Deployable && p.Label != WhatIf:
			return fmt.Errorf("param %s: label %q, expected %q or %q", p.Key, p.Label, Deployable, WhatIf)
		}
		keys[p.Key] = true
		for i, v := range p.Values {
			if v == "" || slices.Index(p.Values, v) < i {
				return fmt.Errorf("param %s: expected distinct values, found %q", p.Key, v)
			}
		}
	}
	if _, err := gridSize(h.Params, h.MaxSeeds); err != nil {
		return err
	}
	if _, _, err := h.goals(); err != nil {
		return err
	}
	return nil
}
