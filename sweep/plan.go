package sweep

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/scenarios"
)

// Headline are the summary.json paths a sweep records when its spec names
// no metrics, those of them the scenario reports: the report's headline
// figures.
var Headline = []string{
	"rpc.success_ratio",
	"rpc.failed",
	"rpc.latency_seconds.p99",
	"failure_windows.peak_clients_percent",
	"failure_windows.duration_seconds.p99",
	"failure_windows.client_seconds",
	"xds.resource_timer_spurious",
	"xds.fallback_switches",
}

// Labels of a param: whether a deployment can give its key the values the
// sweep tries.
const (
	// Deployable: every value is one a deployment can set today (a
	// bootstrap server_features entry, an xDS resource field, a service
	// config or channel option) or the world around the clients.
	Deployable = "deployable"
	// WhatIf: some value is one only a change to a gRPC implementation
	// could give (what_if = true); ParamInfo.Why says why.
	WhatIf = "what-if"
)

// ParamInfo is one param of a sweep with its role and label.
type ParamInfo struct {
	Key    string   `json:"key"`
	Values []string `json:"values"`
	// Role is scenarios.Knob (a setting the sweep may recommend) or
	// scenarios.Condition (the world the setting must hold under).
	Role string `json:"role"`
	// Label is Deployable or WhatIf.
	Label string `json:"label"`
	// Why says, for a what-if, why no deployment can set it.
	Why string `json:"why,omitempty"`
}

// Header is everything about a sweep but its runs: what a shard carries
// so that merged shards give what one sweep gives.
type Header struct {
	Scenario string `json:"scenario"`
	// Sets are the --set overrides every run has, before its point's.
	Sets   []string    `json:"sets"`
	Params []ParamInfo `json:"params"`
	// Seeds are the seeds every point runs with, in order; a point whose
	// answer is still open gets the seeds after them, up to MaxSeeds in
	// all.
	Seeds    []uint64 `json:"seeds"`
	MaxSeeds int      `json:"max_seeds"`
	// Risk is the accepted share of runs breaching a constraint.
	Risk float64 `json:"risk"`
	// Indifference is the smallest difference of the first objective
	// that matters, as scenarios.ParseIndifference reads it.
	Indifference string   `json:"indifference"`
	Metrics      []string `json:"metrics"`
	Objectives   []string `json:"objectives"`
	Constraints  []string `json:"constraints"`
	// ObjectivesFrom and ConstraintsFrom say where they came from.
	ObjectivesFrom  string `json:"objectives_from"`
	ConstraintsFrom string `json:"constraints_from"`
	// Expect are the scenario's expectations ([[expect]]), each counted
	// per point.
	Expect []string `json:"expect"`
	// ExactRPCs says the runs took every RPC one by one (xdssim sweep
	// --exact-rpcs, Options.ExactRPCs); shards of a sweep must agree.
	ExactRPCs bool `json:"exact_rpcs,omitempty"`
}

// Plan is a resolved sweep: every point of its grid checked, ready to run.
type Plan struct {
	Header
	src *scenarios.Source
	// Worst is the largest estimate of one run over the points.
	Worst scenarios.Estimate
}

// NewPlan resolves spec over the scenario src with the overrides sets.
// Every point of the grid is parsed and validated before anything runs; a
// point whose values the scenario refuses is an error naming the point.
// The scenario's own seed is the first seed.
func NewPlan(src *scenarios.Source, sets []string, spec Spec) (*Plan, error) {
	base, err := scenarios.Parse(src, sets)
	if err != nil {
		return nil, err
	}
	if spec.Seeds < 1 {
		return nil, fmt.Errorf("sweep: expected at least one seed, found %d", spec.Seeds)
	}
	if spec.Risk == 0 {
		spec.Risk = scenarios.DefaultRisk
	}
	if spec.Indifference.Value == 0 {
		spec.Indifference = scenarios.DefaultIndifference
	}
	cfg := base.FleetConfig()
	paths := append(fleet.MetricPaths(&cfg), fleet.HeaderPaths...)
	p := &Plan{src: src}
	p.Scenario = base.Name
	p.Sets = slices.Clone(sets)
	if p.Sets == nil {
		p.Sets = []string{}
	}
	p.MaxSeeds = spec.MaxSeeds
	if p.MaxSeeds == 0 {
		p.MaxSeeds = max(spec.Seeds, SeedsToDecide(spec.Risk))
	}
	if p.MaxSeeds < spec.Seeds {
		return nil, fmt.Errorf("sweep: expected at most as many seeds (%d) as the most a point may get (%d)", spec.Seeds, p.MaxSeeds)
	}
	if base.Seed > math.MaxUint64-uint64(p.MaxSeeds) {
		return nil, fmt.Errorf("sweep: the seeds from %d on, %d of them, pass the largest seed, %d", base.Seed, p.MaxSeeds, uint64(math.MaxUint64))
	}
	for i := range spec.Seeds {
		p.Seeds = append(p.Seeds, base.Seed+uint64(i))
	}
	p.Risk, p.Indifference = spec.Risk, spec.Indifference.String()
	p.ObjectivesFrom, p.ConstraintsFrom = spec.ObjectivesFrom, spec.ConstraintsFrom
	p.Expect = []string{}
	for _, e := range base.Expect {
		p.Expect = append(p.Expect, e.String())
	}
	metrics := slices.Clone(spec.Metrics)
	if len(metrics) == 0 {
		for _, m := range Headline {
			if slices.Contains(paths, m) {
				metrics = append(metrics, m)
			}
		}
	}
	p.Objectives, p.Constraints = []string{}, []string{}
	for _, o := range spec.Objectives {
		metrics = append(metrics, o.Metric)
		p.Objectives = append(p.Objectives, o.String())
	}
	for _, c := range spec.Constraints {
		metrics = append(metrics, c.Metric)
		p.Constraints = append(p.Constraints, c.String())
	}
	if len(spec.Objectives) > 2 {
		return nil, fmt.Errorf("sweep: expected one objective, or two to chart their trade-off, found %d", len(spec.Objectives))
	}
	for _, m := range metrics {
		if !slices.Contains(p.Metrics, m) {
			if !slices.Contains(paths, m) {
				return nil, fmt.Errorf("sweep: no metric %q in %s's summary.json", m, base.Name)
			}
			p.Metrics = append(p.Metrics, m)
		}
	}
	seen := map[string]string{}
	for _, pm := range spec.Params {
		if len(pm.Values) == 0 {
			return nil, fmt.Errorf("sweep: param %s has no values", pm.Key)
		}
		norm, err := scenarios.NormalizeKey(pm.Key)
		if err != nil {
			return nil, fmt.Errorf("sweep: param %s: %w", pm.Key, err)
		}
		if other, dup := seen[norm]; dup {
			return nil, fmt.Errorf("sweep: param %s is given twice (as %s and %s)", norm, other, pm.Key)
		}
		seen[norm] = pm.Key
		role := pm.Role
		if role == "" {
			role = scenarios.KeyRole(pm.Key)
		}
		p.Params = append(p.Params, ParamInfo{Key: pm.Key, Values: slices.Clone(pm.Values), Role: role, Label: Deployable})
	}
	if p.Params == nil {
		p.Params = []ParamInfo{}
	}
	// The grid's size, checked for overflow value by value, before
	// anything is planned.
	points := 1
	for _, pm := range p.Params {
		if points > maxRuns/len(pm.Values) {
			return nil, fmt.Errorf("sweep: the grid has more than %d points; at most %d runs", maxRuns, maxRuns)
		}
		points *= len(pm.Values)
	}
	if points > maxRuns/p.MaxSeeds {
		return nil, fmt.Errorf("sweep: %d points × up to %d seeds is more than %d runs; at most %d", points, p.MaxSeeds, maxRuns, maxRuns)
	}
	// Check every point, and label each param by what its values need.
	var errs []error
	for pt := range p.Points() {
		s, err := scenarios.Parse(src, p.PointSets(pt))
		if err != nil {
			errs = append(errs, fmt.Errorf("sweep point %d (%s): %w", pt, strings.Join(p.pointSets(pt), " "), err))
			if len(errs) == 5 {
				break
			}
			continue
		}
		p.Worst = p.Worst.Max(s.Estimate())
		for _, w := range s.FleetConfig().WhatIf {
			for i := range p.Params {
				if k := p.Params[i].Key; w.Key == k || strings.HasPrefix(w.Key, k+".") {
					p.Params[i].Label, p.Params[i].Why = WhatIf, w.Why
				}
			}
		}
	}
	if len(errs) > 0 {
		return nil, PointError{errors.Join(errs...)}
	}
	return p, nil
}

// PointError is a point of the grid that the scenario refuses: bad input.
type PointError struct{ Err error }

func (e PointError) Error() string { return e.Err.Error() }
func (e PointError) Unwrap() error { return e.Err }

// maxRuns bounds the runs of one sweep.
const maxRuns = 10_000_000

// Points is the number of points of the grid.
func (h *Header) Points() int {
	n := 1
	for _, p := range h.Params {
		n *= len(p.Values)
	}
	return n
}

// Runs is the number of runs of the sweep: points × seeds.
func (h *Header) Runs() int { return h.Points() * len(h.Seeds) }

// PointValues returns the value of each param at point pt.
func (h *Header) PointValues(pt int) []string {
	out := make([]string, len(h.Params))
	for i := len(h.Params) - 1; i >= 0; i-- {
		n := len(h.Params[i].Values)
		out[i] = h.Params[i].Values[pt%n]
		pt /= n
	}
	return out
}

// pointSets returns the overrides of point pt alone.
func (h *Header) pointSets(pt int) []string {
	vs := h.PointValues(pt)
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = h.Params[i].Key + "=" + v
	}
	return out
}

// PointSets returns every override of point pt: the sweep's, then the
// point's.
func (h *Header) PointSets(pt int) []string {
	return append(slices.Clone(h.Sets), h.pointSets(pt)...)
}

// RunOf returns the point and seed of run index r of the first seeds:
// runs go point by point, seed by seed.
func (h *Header) RunOf(r int) (point int, seed uint64) {
	return r / len(h.Seeds), h.Seeds[r%len(h.Seeds)]
}

// SeedAt returns the k-th seed of every point (from 0): the seeds follow
// each other from the scenario's.
func (h *Header) SeedAt(k int) uint64 { return h.Seeds[0] + uint64(k) }

// runSets returns every override of the run of point pt on seed.
func (h *Header) runSets(pt int, seed uint64) []string {
	return append(h.PointSets(pt), "seed="+strconv.FormatUint(seed, 10))
}

// byRole returns the indices of the params of role, in order.
func (h *Header) byRole(role string) []int {
	var out []int
	for i, p := range h.Params {
		if p.Role == role {
			out = append(out, i)
		}
	}
	return out
}

// combos is the number of combinations of the params ps.
func (h *Header) combos(ps []int) int {
	n := 1
	for _, i := range ps {
		n *= len(h.Params[i].Values)
	}
	return n
}

// comboOf returns the index, among the combinations of the params ps
// (the first slowest), of the values of point pt.
func (h *Header) comboOf(ps []int, pt int) int {
	vi := h.valueIndices(pt)
	c := 0
	for _, i := range ps {
		c = c*len(h.Params[i].Values) + vi[i]
	}
	return c
}

// comboValues returns the values of combination c of the params ps.
func (h *Header) comboValues(ps []int, c int) []string {
	out := make([]string, len(ps))
	for j := len(ps) - 1; j >= 0; j-- {
		n := len(h.Params[ps[j]].Values)
		out[j] = h.Params[ps[j]].Values[c%n]
		c /= n
	}
	return out
}

// valueIndices returns the index of each param's value at point pt.
func (h *Header) valueIndices(pt int) []int {
	out := make([]int, len(h.Params))
	for i := len(h.Params) - 1; i >= 0; i-- {
		n := len(h.Params[i].Values)
		out[i] = pt % n
		pt /= n
	}
	return out
}

// Settings is the number of settings: combinations of the knobs' values
// (1 without knobs: the scenario's own setting).
func (h *Header) Settings() int { return h.combos(h.byRole(scenarios.Knob)) }

// Conditions is the number of conditions: combinations of the conditions'
// values (1 without conditions).
func (h *Header) Conditions() int { return h.combos(h.byRole(scenarios.Condition)) }

// SettingOf and ConditionOf return the setting and the condition of
// point pt.
func (h *Header) SettingOf(pt int) int   { return h.comboOf(h.byRole(scenarios.Knob), pt) }
func (h *Header) ConditionOf(pt int) int { return h.comboOf(h.byRole(scenarios.Condition), pt) }

// SettingValues and ConditionValues return the values of the knobs of
// setting s and of the conditions of condition c.
func (h *Header) SettingValues(s int) []string {
	return h.comboValues(h.byRole(scenarios.Knob), s)
}
func (h *Header) ConditionValues(c int) []string {
	return h.comboValues(h.byRole(scenarios.Condition), c)
}

// SettingSets returns the --set overrides of setting s's knobs alone:
// what to deploy.
func (h *Header) SettingSets(s int) []string {
	ks := h.byRole(scenarios.Knob)
	vs := h.comboValues(ks, s)
	out := make([]string, len(ks))
	for j, i := range ks {
		out[j] = h.Params[i].Key + "=" + vs[j]
	}
	return out
}

// ConditionSets returns the --set overrides of condition c alone.
func (h *Header) ConditionSets(c int) []string {
	cs := h.byRole(scenarios.Condition)
	vs := h.comboValues(cs, c)
	out := make([]string, len(cs))
	for j, i := range cs {
		out[j] = h.Params[i].Key + "=" + vs[j]
	}
	return out
}
