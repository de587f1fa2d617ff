package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/xdssim/xdssim/scenarios"
)

// A set of outputs says which run wrote it: its manifest (outset.go)
// records the run's identity. A command refuses an output directory that
// holds the set of another run (exit 2), unless --overwrite; the same run
// again replaces its own set, which is the same output. A directory that
// holds xdssim's outputs and no manifest (an older xdssim's) holds
// another run's. The default output directory of a run that is not the
// scenario's own (another seed, an override, a flag that changes the
// outputs) carries the first 8 hex digits of the run's ID, so that two
// such runs never share one.

// runIdentity is what a set's manifest records of the run that wrote it
// ("run" in .xdssim-set.json).
type runIdentity struct {
	// Command is "run", "sweep" (merge's too: it writes what one sweep
	// writes), "sweep --find" or "compare".
	Command string `json:"command"`
	// Scenario names the scenario ("default"; compare's "A vs B").
	Scenario string `json:"scenario"`
	// ScenarioSHA256 holds the SHA-256 of each scenario run, resolved
	// with its overrides (scenarios.Scenario.SHA256): one, or compare's A
	// and B.
	ScenarioSHA256 []string `json:"scenario_sha256"`
	// Seeds are the seeds of the runs (a sweep's first seeds).
	Seeds []uint64 `json:"seeds"`
	// Overrides are the overrides of the command line, as flags
	// ("--set key=value"), for messages: what they change is in
	// ScenarioSHA256 and ID.
	Overrides []string `json:"overrides"`
	// ID is the SHA-256 of the command and of everything that makes its
	// outputs what they are (newIdentity): two commands with one ID
	// write the same set, but for the build that wrote it.
	ID string `json:"id"`
}

// newIdentity returns the identity of a command whose outputs the inputs
// (plain data, encoded as JSON) determine; its ID is the SHA-256 of the
// command and that JSON.
func newIdentity(command, scenario string, hashes []string, seeds []uint64, overrides []string, inputs any) runIdentity {
	b, err := json.Marshal(struct {
		Command string `json:"command"`
		Inputs  any    `json:"inputs"`
	}{command, inputs})
	if err != nil {
		panic(fmt.Sprintf("encoding the inputs of %s: %v", command, err)) // plain data always encodes
	}
	sum := sha256.Sum256(b)
	if overrides == nil {
		overrides = []string{}
	}
	return runIdentity{Command: command, Scenario: scenario, ScenarioSHA256: hashes, Seeds: seeds, Overrides: overrides, ID: hex.EncodeToString(sum[:])}
}

// short is the part of the ID a default directory's name carries.
func (id runIdentity) short() string { return id.ID[:min(8, len(id.ID))] }

// describe says what the run was, for a message: "xdssim run of default,
// seed 7, --set fleet.group[0].clients=5".
func (id runIdentity) describe() string {
	s := "xdssim " + id.Command + " of " + id.Scenario
	if len(id.Seeds) > 0 {
		s += ", " + seedsText(id.Seeds)
	}
	if len(id.Overrides) > 0 {
		s += ", " + strings.Join(id.Overrides, " ")
	}
	return s
}

// seedsText writes seeds as "seed 7", "seeds 1–10" (consecutive) or
// "seeds 1, 4", naming at most mostSeeds of them: the seeds of a
// manifest or shard on disk are read, not trusted, and a message stays
// short.
func seedsText(seeds []uint64) string {
	switch len(seeds) {
	case 0:
		return "no seed"
	case 1:
		return "seed " + strconv.FormatUint(seeds[0], 10)
	}
	consecutive := true
	for i := range seeds[1:] {
		consecutive = consecutive && seeds[i+1] == seeds[i]+1
	}
	if consecutive {
		return fmt.Sprintf("seeds %d–%d", seeds[0], seeds[len(seeds)-1])
	}
	parts := make([]string, 0, mostSeeds+1)
	for _, s := range seeds[:min(len(seeds), mostSeeds)] {
		parts = append(parts, strconv.FormatUint(s, 10))
	}
	if len(seeds) > mostSeeds {
		parts = append(parts, fmt.Sprintf("… (%d in all)", len(seeds)))
	}
	return "seeds " + strings.Join(parts, ", ")
}

// mostSeeds is how many seeds seedsText names.
const mostSeeds = 10

// overrideFlags writes overrides as the flags that give them ("--set
// k=v", "--add k={...}"), leaving out the seed, which describe says.
func overrideFlags(sets []string) []string {
	out := []string{}
	for _, o := range sets {
		if setsSeed(o) {
			continue
		}
		flag, arg := scenarios.OverrideFlag(o)
		out = append(out, flag+" "+scenarios.ShellQuote(arg))
	}
	return out
}

// defaultOut is a command's default output directory: xdssim-out/BASE
// when the run is the one the command gives with no flag (plain is that
// run's ID; "" when there is none) and that directory holds no other
// run's outputs, else BASE, then "-seedN" when its
// first seed is not the scenario's own (ownSeed), then "-" and the first 8
// hex digits of its ID: xdssim-out/default-seed7-3f2a91c0.
func defaultOut(base string, id runIdentity, plain string, ownSeed uint64) string {
	if id.ID == plain {
		out := filepath.Join("xdssim-out", base)
		if p := readPrevious(out); len(p.names) == 0 || (p.run != nil && p.run.ID == id.ID) {
			return out
		}
		// The scenario as it is, but its plain directory holds another
		// run's outputs (the file was edited since, or another file has
		// its name): beside it, named by the ID, so that neither refuses
		// the run nor replaces the other.
	}
	if len(id.Seeds) > 0 && id.Seeds[0] != ownSeed {
		base += "-seed" + strconv.FormatUint(id.Seeds[0], 10)
	}
	return filepath.Join("xdssim-out", base+"-"+id.short())
}

// outFlag is the flag that names an output directory in messages: "out"
// when --out gave it, "" when it is the default (the message names the
// directory alone).
func outFlag(given bool) string {
	if given {
		return "out"
	}
	return ""
}

// runInputs are what make a run's outputs, beside the command: the
// scenario resolved (its seed and overrides included) and how its RPCs
// are taken. --metrics and --metrics-start are left out: they change
// only how the same run is exported.
type runInputs struct {
	ScenarioSHA256 string `json:"scenario_sha256"`
	ExactRPCs      bool   `json:"exact_rpcs"`
}

// runIdentityOf is the identity of `xdssim run` of s with the overrides
// sets, exact when --exact-rpcs.
func runIdentityOf(s *scenarios.Scenario, sets []string, exact bool) runIdentity {
	h := s.SHA256()
	return newIdentity("run", s.Name, []string{h}, []uint64{s.Seed}, overrideFlags(sets), runInputs{h, exact})
}
