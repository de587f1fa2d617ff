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
	// ScenarioSHA256 is the SHA-256 of the scenario as resolved with
	// Sets (scenarios.Scenario.SHA256): shards of one sweep have the same.
	ScenarioSHA256 string `json:"scenario_sha256"`
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

// Plan is a resolved sweep, ready to run once Check has checked every
// point of its grid.
type Plan struct {
	Header
	src *scenarios.Source
	// Worst is the largest estimate of one run over the points (set by
	// Check).
	Worst scenarios.Estimate
}

// NewPlan resolves spec over the scenario src with the overrides sets
// (Resolve) and checks every point of the grid (Check) before anything
// runs.
func NewPlan(src *scenarios.Source, sets []string, spec Spec) (*Plan, error) {
	p, err := Resolve(src, sets, spec)
	if err != nil {
		return nil, err
	}
	if err := p.Check(Options{}); err != nil {
		return nil, err
	}
	return p, nil
}

// Resolve resolves spec over the scenario src with the overrides sets:
// the header of the sweep, its grid's size checked for overflow and
// against the most runs a sweep may have, before anything is planned. It
// parses the scenario once; Check parses each point. The scenario's own
// seed is the first seed.
func Resolve(src *scenarios.Source, sets []string, spec Spec) (*Plan, error) {
	base, err := scenarios.Parse(src, sets)
	if err != nil {
		return nil, err
	}
	if spec.Seeds < 1 || spec.Seeds > maxSeeds {
		return nil, fmt.Errorf("sweep: expected from 1 to %d seeds, found %d", maxSeeds, spec.Seeds)
	}
	if spec.Risk == 0 {
		spec.Risk = scenarios.DefaultRisk
	}
	if spec.Indifference.Value == 0 {
		spec.Indifference = scenarios.DefaultIndifference
	}
	paths := append(base.MetricPaths(), fleet.HeaderPaths...)
	p := &Plan{src: src}
	p.Scenario = base.Name
	p.ScenarioSHA256 = base.SHA256()
	p.Sets = slices.Clone(sets)
	if p.Sets == nil {
		p.Sets = []string{}
	}
	p.MaxSeeds = spec.MaxSeeds
	if p.MaxSeeds == 0 {
		p.MaxSeeds = max(spec.Seeds, SeedsToDecide(spec.Risk))
	}
	if p.MaxSeeds < spec.Seeds || p.MaxSeeds > maxSeeds {
		return nil, fmt.Errorf("sweep: expected as many seeds at most (%d) as at first (%d), and at most %d", p.MaxSeeds, spec.Seeds, maxSeeds)
	}
	// A seed is a TOML integer: every seed a point may get must be one,
	// checked here rather than when a run is made with it.
	if base.Seed > math.MaxInt64-uint64(p.MaxSeeds-1) {
		return nil, fmt.Errorf("sweep: seed: the seeds from %d on, up to %d of them, pass the largest seed, %d", base.Seed, p.MaxSeeds, int64(math.MaxInt64))
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
				return nil, fmt.Errorf("sweep: no metric %q in %s's summary.json%s", m, base.Name, scenarios.MetricHint(m, paths))
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
		for i, v := range pm.Values {
			if k := slices.Index(pm.Values, v); k < i {
				return nil, fmt.Errorf("sweep: param %s: the value %s is given twice", pm.Key, v)
			}
		}
		role := pm.Role
		if role == "" {
			role = scenarios.KeyRole(pm.Key)
		}
		p.Params = append(p.Params, ParamInfo{Key: pm.Key, Values: slices.Clone(pm.Values), Role: role, Label: Deployable})
	}
	if p.Params == nil {
		p.Params = []ParamInfo{}
	}
	if _, err := gridSize(p.Params, p.MaxSeeds); err != nil {
		return nil, err
	}
	return p, nil
}

// gridSize returns the number of points of the grid of params, checked
// for overflow value by value, and refuses a grid whose points × maxSeeds
// runs are more than a sweep may have.
func gridSize(params []ParamInfo, maxSeeds int) (int, error) {
	points := 1
	for _, pm := range params {
		if len(pm.Values) == 0 {
			return 0, fmt.Errorf("sweep: param %s has no values", pm.Key)
		}
		if points > maxRuns/len(pm.Values) {
			return 0, fmt.Errorf("sweep: the grid has more than %d points (%s): at most %d runs", maxRuns, gridText(params), maxRuns)
		}
		points *= len(pm.Values)
	}
	if maxSeeds < 1 || points > maxRuns/maxSeeds {
		return 0, fmt.Errorf("sweep: %d points × up to %d seeds is more than %d runs; at most %d", points, maxSeeds, maxRuns, maxRuns)
	}
	return points, nil
}

// gridText says how many values each param has: "512 × 512 × 3".
func gridText(params []ParamInfo) string {
	var out []string
	for i, pm := range params {
		if i == 8 {
			out = append(out, fmt.Sprintf("… (%d params)", len(params)))
			break
		}
		out = append(out, strconv.Itoa(len(pm.Values)))
	}
	return strings.Join(out, " × ") + " values"
}

// checkBlock is how many points Check parses between two looks at the
// errors so far.
const checkBlock = 256

// Check parses and validates every point of the grid before anything
// runs, on a pool of o.Workers, calling o.Progress as points are done; a
// point whose values the scenario refuses is an error naming the point
// (the first five, in order). It sets Worst and labels each param by what
// its values need (WhatIf when some value is hypothetical). What it finds
// does not depend on the number of workers.
func (p *Plan) Check(o Options) error {
	total := p.Points()
	type checked struct {
		err    error
		est    scenarios.Estimate
		whatIf []fleet.WhatIf
	}
	var errs []error
	done := 0
	for lo := 0; lo < total && len(errs) < 5; lo += checkBlock {
		hi := min(lo+checkBlock, total)
		block := make([]checked, hi-lo)
		bo := Options{Workers: o.Workers}
		if o.Progress != nil {
			bo.Progress = func(d, _ int) { o.Progress(done+d, total) }
		}
		forEach(hi-lo, bo, func(k int) error {
			pt := lo + k
			s, err := scenarios.Parse(p.src, p.PointSets(pt))
			if err != nil {
				block[k].err = fmt.Errorf("sweep point %d (%s): %w", pt, strings.Join(p.pointSets(pt), " "), err)
				return nil
			}
			block[k].est, block[k].whatIf = s.Estimate(), s.WhatIfs()
			return nil
		})
		done = hi
		for _, c := range block {
			if c.err != nil {
				if len(errs) < 5 {
					errs = append(errs, c.err)
				}
				continue
			}
			p.Worst = p.Worst.Max(c.est)
			for _, w := range c.whatIf {
				for i := range p.Params {
					if k := p.Params[i].Key; w.Key == k || strings.HasPrefix(w.Key, k+".") {
						p.Params[i].Label, p.Params[i].Why = WhatIf, w.Why
					}
				}
			}
		}
	}
	if len(errs) > 0 {
		return PointError{errors.Join(errs...)}
	}
	return nil
}

// PointError is a point of the grid that the scenario refuses: bad input.
type PointError struct{ Err error }

func (e PointError) Error() string { return e.Err.Error() }
func (e PointError) Unwrap() error { return e.Err }

// maxRuns bounds the runs of one sweep.
const maxRuns = 10_000_000

// maxSeeds bounds the seeds of one point (sweep.seeds and --max-seeds).
const maxSeeds = 10_000

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
// what to deploy. ConditionSets returns those of condition c.
func (h *Header) SettingSets(s int) []string   { return h.comboSets(scenarios.Knob, s) }
func (h *Header) ConditionSets(c int) []string { return h.comboSets(scenarios.Condition, c) }

// comboSets returns the --set overrides of combination c of the params of
// role.
func (h *Header) comboSets(role string, c int) []string {
	ps := h.byRole(role)
	vs := h.comboValues(ps, c)
	out := make([]string, len(ps))
	for j, i := range ps {
		out[j] = h.Params[i].Key + "=" + vs[j]
	}
	return out
}
