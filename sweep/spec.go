// Package sweep runs many independent runs of one scenario: a grid of
// values of some of its keys × seeds, on a pool of workers, and answers
// "which setting is safe for my fleet, and how sure are we?": it
// summarises each point over its seeds (mean and a 95 % interval inside
// the metric's support), judges each constraint on every run with an
// exact binomial bound on the share of runs breaching it, picks the best
// setting of the knobs that meets the constraints under every swept
// condition by ranking and selection (Kim and Nelson's procedure, with
// seeds spent where the answer is still open), splits the runs into
// shards and merges shards back (shard.go), compares two variants on the
// same seeds (compare.go) and searches for the value of a key at which a
// constraint stops holding, seed by seed (find.go). The statistics are
// pure functions (stats.go, select.go), tested on synthetic data whose
// answer is known.
//
// Every run is a deterministic run of the resolved scenario, and results
// are collected by run index, never by completion order, so a sweep's
// outputs are byte-identical whatever the number of workers or shards
// (docs/architecture.md, "Sweeps and sharding").
package sweep

import (
	"fmt"
	"strings"

	"github.com/xdssim/xdssim/scenarios"
)

// Param is one key a sweep varies and the values it takes, each written as
// --set takes it.
type Param struct {
	Key    string
	Values []string
	// Role is scenarios.Knob or scenarios.Condition; "": the key's
	// default role (scenarios.KeyRole).
	Role string
}

// Spec is what a sweep varies and looks for: a scenario's [sweep] table
// with the command line's flags applied.
type Spec struct {
	// Params are the keys varied; the grid is every combination of their
	// values, the first param varying slowest.
	Params []Param
	// Seeds is how many seeds each point runs with, from the scenario's
	// seed on.
	Seeds int
	// Metrics are the summary.json paths recorded; empty: the headline
	// figures the scenario reports. The metrics of the objectives and
	// constraints are recorded too.
	Metrics     []string
	Objectives  []scenarios.Objective
	Constraints []scenarios.Constraint
	// ObjectivesFrom and ConstraintsFrom say where the objectives and the
	// constraints came from: the scenario's [sweep] table or flags.
	ObjectivesFrom, ConstraintsFrom string
	// MaxSeeds bounds the seeds of a point whose answer is still open; 0:
	// SeedsToDecide(Risk), or Seeds if that is more.
	MaxSeeds int
	// Risk is the accepted share of runs breaching a constraint.
	Risk float64
	// Indifference is the smallest difference of the first objective
	// that matters.
	Indifference scenarios.Indifference
}

// SpecOf returns the Spec of the scenario's [sweep] table; a scenario
// without one gives no params, 5 seeds and the default risk.
func SpecOf(s *scenarios.Scenario) (Spec, error) {
	spec := Spec{Seeds: 5, Risk: scenarios.DefaultRisk, Indifference: scenarios.DefaultIndifference}
	sw := s.Sweep
	if sw == nil {
		return spec, nil
	}
	spec.Seeds, spec.MaxSeeds, spec.Risk = sw.Seeds, sw.MaxSeeds, sw.Risk
	ind, err := scenarios.ParseIndifference(sw.Indifference)
	if err != nil {
		return Spec{}, fmt.Errorf("sweep.indifference: %w", err)
	}
	spec.Indifference = ind
	spec.Metrics = append(spec.Metrics, sw.Metrics...)
	for _, p := range sw.Params {
		vs, err := p.ParamValues()
		if err != nil {
			return Spec{}, fmt.Errorf("sweep.param %s: %w", p.Key, err)
		}
		spec.Params = append(spec.Params, Param{Key: p.Key, Values: vs, Role: p.Role})
	}
	from := "the [sweep] table of " + s.Name
	if len(sw.Objectives) > 0 {
		spec.ObjectivesFrom = from
	}
	if len(sw.Constraints) > 0 {
		spec.ConstraintsFrom = from
	}
	for _, o := range sw.Objectives {
		ob, err := scenarios.ParseObjective(o)
		if err != nil {
			return Spec{}, err
		}
		spec.Objectives = append(spec.Objectives, ob)
	}
	for _, c := range sw.Constraints {
		con, err := scenarios.ParseConstraint(c)
		if err != nil {
			return Spec{}, err
		}
		spec.Constraints = append(spec.Constraints, con)
	}
	return spec, nil
}

// ParseRole reads --role's "key=knob" or "key=condition".
func ParseRole(arg string) (key, role string, err error) {
	key, role, ok := strings.Cut(arg, "=")
	key, role = strings.TrimSpace(key), strings.TrimSpace(role)
	if !ok || key == "" || (role != scenarios.Knob && role != scenarios.Condition) {
		return "", "", fmt.Errorf("--role %s: expected key=knob or key=condition, such as fleet.group[0].clients=condition", arg)
	}
	return key, role, nil
}

// ParseParam reads a --param: "key=v1,v2,…" (commas inside brackets or
// quotes do not split) or "key=lo..hi:steps".
func ParseParam(arg string) (Param, error) {
	key, rest, ok := strings.Cut(arg, "=")
	key, rest = strings.TrimSpace(key), strings.TrimSpace(rest)
	if !ok || key == "" || rest == "" {
		return Param{}, fmt.Errorf("--param %s: expected key=v1,v2,… or key=lo..hi:steps, such as control_plane[0].workers=2,4,8", arg)
	}
	if strings.Contains(rest, "..") && strings.Contains(rest, ":") && !strings.ContainsAny(rest, "[\"'") {
		vs, err := scenarios.ParseRange(rest)
		if err != nil {
			return Param{}, fmt.Errorf("--param %s: %w", arg, err)
		}
		return Param{Key: key, Values: vs}, nil
	}
	vs, err := splitValues(rest)
	if err != nil {
		return Param{}, fmt.Errorf("--param %s: %w", arg, err)
	}
	seen := map[string]bool{}
	for _, v := range vs {
		if v == "" {
			return Param{}, fmt.Errorf("--param %s: an empty value", arg)
		}
		if seen[v] {
			return Param{}, fmt.Errorf("--param %s: the value %s is given twice", arg, v)
		}
		seen[v] = true
	}
	return Param{Key: key, Values: vs}, nil
}

// splitValues splits a comma-separated list of --set values, leaving
// commas inside [], {} and quotes alone.
func splitValues(s string) ([]string, error) {
	var out []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
		case c == ',' && depth == 0:
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	if quote != 0 || depth != 0 {
		return nil, fmt.Errorf("unbalanced quotes or brackets in %q", s)
	}
	return append(out, strings.TrimSpace(s[start:])), nil
}
