package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// ShardSchema is the "schema" of a shard's file.
const ShardSchema = "xdssim.sweep-shard/v1"

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
	out := []int{}
	for r := s.I; r < total; r += s.N {
		out = append(out, r)
	}
	return out
}

type shardJSON struct {
	Schema string `json:"schema"`
	Shard  int    `json:"shard"`
	Shards int    `json:"shards"`
	Header
	Runs []runJSON `json:"runs"`
}

// ShardJSON renders what shard s of the sweep h ran: the header and its
// runs, for Merge.
func ShardJSON(h Header, s Shard, runs []Run) ([]byte, error) {
	out := shardJSON{Schema: ShardSchema, Shard: s.I, Shards: s.N, Header: h, Runs: []runJSON{}}
	for _, r := range runs {
		out.Runs = append(out.Runs, toRunJSON(r, h.Metrics))
	}
	return marshalIndent(out)
}

// ShardFile is one shard's file, by name, for Merge.
type ShardFile struct {
	Name string
	Data []byte
}

// Merge combines the files of every shard of one sweep into the Result the
// unsharded sweep gives. It is an error for the files to be of different
// sweeps, for a shard to be missing or given twice, or for a shard to lack
// a run it should have.
func Merge(files []ShardFile) (*Result, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("merge: no shard files")
	}
	var head []byte
	var h Header
	var runs []Run
	seen := map[int]string{}
	n := 0
	for _, f := range files {
		var s shardJSON
		dec := json.NewDecoder(bytes.NewReader(f.Data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			return nil, fmt.Errorf("merge: %s: %v", f.Name, err)
		}
		if s.Schema != ShardSchema {
			return nil, fmt.Errorf("merge: %s: schema %q, want %q", f.Name, s.Schema, ShardSchema)
		}
		hb, _ := json.Marshal(s.Header)
		switch {
		case head == nil:
			head, h, n = hb, s.Header, s.Shards
		case !bytes.Equal(hb, head):
			return nil, fmt.Errorf("merge: %s is a shard of another sweep than %s (their scenario, params, seeds, metrics or --exact-rpcs differ)", f.Name, files[0].Name)
		case s.Shards != n:
			return nil, fmt.Errorf("merge: %s is shard %d of %d, but %s is of %d", f.Name, s.Shard, s.Shards, files[0].Name, n)
		}
		if s.Shard < 0 || s.Shard >= n {
			return nil, fmt.Errorf("merge: %s: shard %d of %d is out of range", f.Name, s.Shard, n)
		}
		if other, dup := seen[s.Shard]; dup {
			return nil, fmt.Errorf("merge: shard %d/%d is given twice: %s and %s", s.Shard, n, other, f.Name)
		}
		seen[s.Shard] = f.Name
		want := Shard{s.Shard, n}.Indices(h.Runs())
		if len(s.Runs) != len(want) {
			return nil, fmt.Errorf("merge: %s: shard %d/%d has %d runs, want %d", f.Name, s.Shard, n, len(s.Runs), len(want))
		}
		for k, rj := range s.Runs {
			if rj.Run != want[k] {
				return nil, fmt.Errorf("merge: %s: run %d where run %d should be", f.Name, rj.Run, want[k])
			}
			r, err := fromRunJSON(rj, h.Metrics)
			if err != nil {
				return nil, fmt.Errorf("merge: %s: %v", f.Name, err)
			}
			runs = append(runs, r)
		}
	}
	var missing []string
	for i := range n {
		if _, ok := seen[i]; !ok {
			missing = append(missing, Shard{i, n}.String())
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("merge: missing shard(s) %s of the sweep of %s", strings.Join(missing, ", "), h.Scenario)
	}
	return Summarize(h, runs)
}
