package sweep

import (
	"errors"
	"fmt"
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

// ParamInfo is one param of a sweep with its label.
type ParamInfo struct {
	Key    string   `json:"key"`
	Values []string `json:"values"`
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
	// Seeds are the seeds every point runs with, in order.
	Seeds       []uint64 `json:"seeds"`
	Metrics     []string `json:"metrics"`
	Objectives  []string `json:"objectives"`
	Constraints []string `json:"constraints"`
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
	cfg := base.FleetConfig()
	paths := append(fleet.MetricPaths(&cfg), fleet.HeaderPaths...)
	p := &Plan{src: src}
	p.Scenario = base.Name
	p.Sets = slices.Clone(sets)
	if p.Sets == nil {
		p.Sets = []string{}
	}
	for i := range spec.Seeds {
		p.Seeds = append(p.Seeds, base.Seed+uint64(i))
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
	for _, pm := range spec.Params {
		if len(pm.Values) == 0 {
			return nil, fmt.Errorf("sweep: param %s has no values", pm.Key)
		}
		for _, q := range p.Params {
			if q.Key == pm.Key {
				return nil, fmt.Errorf("sweep: param %s is given twice", pm.Key)
			}
		}
		p.Params = append(p.Params, ParamInfo{Key: pm.Key, Values: slices.Clone(pm.Values), Label: Deployable})
	}
	if p.Params == nil {
		p.Params = []ParamInfo{}
	}
	if n := p.Points(); n*len(p.Seeds) > maxRuns {
		return nil, fmt.Errorf("sweep: %d points × %d seeds is %d runs; at most %d", n, len(p.Seeds), n*len(p.Seeds), maxRuns)
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

// RunOf returns the point and seed of run index r: runs go point by point,
// seed by seed.
func (h *Header) RunOf(r int) (point int, seed uint64) {
	return r / len(h.Seeds), h.Seeds[r%len(h.Seeds)]
}

// runSets returns every override of run r.
func (h *Header) runSets(r int) []string {
	pt, seed := h.RunOf(r)
	return append(h.PointSets(pt), "seed="+strconv.FormatUint(seed, 10))
}
