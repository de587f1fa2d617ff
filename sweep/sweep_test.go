package sweep

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/xdssim/xdssim/scenarios"
	"github.com/xdssim/xdssim/stamp"
)

// testBuild is the build the tests' shards and sweeps name.
var testBuild = stamp.Build{Version: "v1.2.3", Revision: "879b914b08c1adee68d666f822139378c2cedf88", Dirty: "false", Go: "go1.26.8"}

// testPlan resolves testdata/outage.toml's [sweep] (2 × 2 points × 3
// seeds) with the given changes to its spec.
func testPlan(t *testing.T, change func(*Spec)) *Plan {
	t.Helper()
	src, err := scenarios.Open("testdata/outage.toml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := scenarios.Parse(src, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := SpecOf(s)
	if err != nil {
		t.Fatal(err)
	}
	if change != nil {
		change(&spec)
	}
	p, err := NewPlan(src, nil, spec)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestGridVariesTheFirstParamSlowestAndRunsSeedBySeed(t *testing.T) {
	p := testPlan(t, nil)
	if p.Points() != 4 || p.Runs() != 12 {
		t.Fatalf("%d points, %d runs; want 4 and 12", p.Points(), p.Runs())
	}
	one, two := `["primary"]`, `["primary", "fallback"]`
	want := [][]string{{one, "1s"}, {one, "9s"}, {two, "1s"}, {two, "9s"}}
	for pt, w := range want {
		if got := p.PointValues(pt); !slices.Equal(got, w) {
			t.Errorf("point %d = %q, want %q", pt, got, w)
		}
	}
	if pt, seed := p.RunOf(7); pt != 2 || seed != 2 {
		t.Errorf("run 7 is point %d seed %d; want point 2 seed 2", pt, seed)
	}
	if got := p.runSets(2, 2); !slices.Equal(got, []string{"fleet.group[0].servers=" + two, "fleet.restart[0].downtime=1s", "seed=2"}) {
		t.Errorf("run 7 sets %q", got)
	}
	if p.Settings() != 2 || p.Conditions() != 2 || p.SettingOf(2) != 1 || p.ConditionOf(2) != 0 || !slices.Equal(p.SettingSets(1), []string{"fleet.group[0].servers=" + two}) {
		t.Errorf("settings %d, conditions %d; point 2 is setting %d under condition %d", p.Settings(), p.Conditions(), p.SettingOf(2), p.ConditionOf(2))
	}
}

// TestOutputsDoNotDependOnWorkersOrShards: one worker, three workers, and
// four shards merged give byte-identical sweep.json and sweep.csv.
// Reference: docs/architecture.md, "Sweeps and sharding".
func TestOutputsDoNotDependOnWorkersOrShards(t *testing.T) {
	p := testPlan(t, nil)
	outputs := func(res *Result) string {
		t.Helper()
		j, err := res.JSON()
		if err != nil {
			t.Fatal(err)
		}
		c, err := res.CSV()
		if err != nil {
			t.Fatal(err)
		}
		return string(j) + "\n--\n" + string(c)
	}
	var want string
	for _, workers := range []int{1, 3} {
		runs, err := p.Execute(nil, Options{Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		res, err := Summarize(p.Header, runs)
		if err != nil {
			t.Fatal(err)
		}
		res.Build = testBuild
		got := outputs(res)
		if want == "" {
			want = got
		} else if got != want {
			t.Errorf("%d workers give other outputs than 1", workers)
		}
	}
	var files []ShardFile
	for i := 3; i >= 0; i-- { // in any order
		sh := Shard{I: i, N: 4}
		runs, err := p.Execute(sh.Indices(p.Runs()), Options{Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		b, err := ShardJSON(p.Header, testBuild, sh, runs)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, ShardFile{Name: sh.FileName(), Data: b})
	}
	res, err := Merge(files)
	if err != nil {
		t.Fatal(err)
	}
	if got := outputs(res); got != want {
		t.Errorf("4 shards merged give other outputs than one sweep:\n%s\nwant\n%s", got, want)
	}
	for _, s := range []string{`"schema": "xdssim.sweep/v2"`, `"build": {`, `"revision": "` + testBuild.Revision + `"`, `"recommendation": {`, `"label": "deployable"`, `"role": "condition"`, `"ci95": [`} {
		if !strings.Contains(want, s) {
			t.Errorf("sweep.json has no %s", s)
		}
	}
	if lines := strings.Count(want[strings.Index(want, "\n--\n")+4:], "\n"); lines != 1+12 {
		t.Errorf("sweep.csv has %d lines, want a header and 12 runs", lines)
	}
}

func TestMergeRefusesIncompleteOrMixedShards(t *testing.T) {
	p := testPlan(t, func(s *Spec) { s.Seeds = 1 })
	q := testPlan(t, func(s *Spec) { s.Seeds = 1; s.Metrics = []string{"rpc.failed"} })
	a0, a1, b1 := testShard(t, p, 0, 2), testShard(t, p, 1, 2), testShard(t, q, 1, 2)
	truncated := ShardFile{Name: "cut.json", Data: bytes.Replace(a1.Data, []byte(`"run": 3`), []byte(`"run": 1`), 1)}
	otherBuild := ShardFile{Name: a1.Name, Data: bytes.Replace(bytes.Replace(a1.Data, []byte(`"v1.2.3"`), []byte(`"v1.2.4"`), 1), []byte(`"dirty": "false"`), []byte(`"dirty": "true"`), 1)}
	for _, tt := range []struct {
		name  string
		files []ShardFile
		err   string
	}{
		{"missing", []ShardFile{a0}, "missing shard(s) 1/2"},
		{"twice", []ShardFile{a0, a0, a1}, "given twice"},
		{"another sweep", []ShardFile{a0, b1}, "another sweep"},
		{"another build", []ShardFile{a0, otherBuild}, "shard-0001-of-0002.json was run by xdssim v1.2.4 (revision " + testBuild.Revision + ", dirty true, go1.26.8), but shard-0000-of-0002.json by xdssim v1.2.3"},
		{"a run out of place", []ShardFile{a0, truncated}, "run 1 where run 3 should be"},
		{"not JSON", []ShardFile{{Name: "x.json", Data: []byte("{")}}, "x.json"},
	} {
		if _, err := Merge(tt.files); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: Merge error %v, want one saying %q", tt.name, err, tt.err)
		}
	}
	if _, err := Merge([]ShardFile{a1, a0}); err != nil {
		t.Errorf("complete: %v", err)
	}
}

// testShard runs shard i of n of the plan and returns its file.
func testShard(t *testing.T, p *Plan, i, n int) ShardFile {
	t.Helper()
	sh := Shard{I: i, N: n}
	runs, err := p.Execute(sh.Indices(p.Runs()), Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := ShardJSON(p.Header, testBuild, sh, runs)
	if err != nil {
		t.Fatal(err)
	}
	return ShardFile{Name: sh.FileName(), Data: b}
}

// fixed is a header of one knob (4 values) and n seeds, metrics a and b,
// with runs giving a and b per point, each within ±0.1 of its point's
// value.
func fixed(objectives, constraints []string, a, b []float64, n int) (Header, []Run) {
	h := Header{Scenario: "s", Sets: []string{}, MaxSeeds: n, Risk: 0.05, Indifference: "5%", Metrics: []string{"a", "b"},
		Params:     []ParamInfo{{Key: "control_plane[0].workers", Values: []string{"1", "2", "3", "4"}, Role: scenarios.Knob, Label: Deployable}},
		Objectives: objectives, Constraints: constraints}
	for k := range n {
		h.Seeds = append(h.Seeds, uint64(k+1))
	}
	var runs []Run
	for pt := range a {
		for k := range n {
			d := float64(k%3-1) * 0.1
			runs = append(runs, Run{Index: n*pt + k, Point: pt, Seed: uint64(k + 1), Values: []float64{a[pt] + d, b[pt] - d}})
		}
	}
	return h, runs
}

func TestTheRecommendationIsTheBestSettingMeetingTheConstraints(t *testing.T) {
	a := []float64{4, 1, 2, 3}
	b := []float64{10, 2000, 500, 100}
	for _, tt := range []struct {
		name      string
		obj, cons []string
		best      int
		feasible  bool
		pareto    []int
		sets      int
	}{
		{"unconstrained", []string{"minimize a"}, nil, 1, true, nil, 1},
		{"on every run", []string{"minimize a"}, []string{"b <= 1000"}, 2, true, nil, 1},
		{"on the mean", []string{"minimize a"}, []string{"mean b <= 1000"}, 2, true, nil, 1},
		{"maximize", []string{"maximize a"}, []string{"b < 100"}, 0, true, nil, 1},
		{"infeasible", []string{"minimize a"}, []string{"b > 5000"}, -1, false, nil, 0},
		{"no objective", nil, []string{"b <= 1000"}, -1, true, nil, 0},
		{"trade-off", []string{"minimize a", "minimize b"}, nil, 1, true, []int{0, 1, 2, 3}, 1},
		{"dominated settings", []string{"minimize a", "maximize b"}, nil, 1, true, []int{1}, 1},
	} {
		h, runs := fixed(tt.obj, tt.cons, a, b, 60)
		res, err := Summarize(h, runs)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var front []int
		for _, f := range res.Pareto {
			front = append(front, f.Setting)
		}
		sets := 0
		if res.Robust.Best >= 0 {
			sets = len(res.SettingSets(res.Robust.Best))
		}
		if res.Robust.Best != tt.best || res.Feasible() != tt.feasible || !slices.Equal(front, tt.pareto) || sets != tt.sets {
			t.Errorf("%s: best %d feasible %v pareto %v sets %d; want %d %v %v %d", tt.name, res.Robust.Best, res.Feasible(), front, sets, tt.best, tt.feasible, tt.pareto, tt.sets)
		}
		if tt.best >= 0 && (!res.Robust.Separated || res.Robust.PCS != Confidence) {
			t.Errorf("%s: the best is not separated: %+v", tt.name, res.Robust)
		}
	}
}

func TestSummarizeRefusesMissingOrRepeatedRuns(t *testing.T) {
	h, runs := fixed(nil, nil, []float64{1, 2, 3, 4}, []float64{1, 2, 3, 4}, 2)
	if _, err := Summarize(h, runs[1:]); err == nil || !strings.Contains(err.Error(), "point 0 has no run of seed 1") {
		t.Errorf("missing: %v", err)
	}
	if _, err := Summarize(h, append(runs, runs[2])); err == nil || !strings.Contains(err.Error(), "run 2 is given twice") {
		t.Errorf("twice: %v", err)
	}
	bad := slices.Clone(runs)
	bad[0].Point = 9
	if _, err := Summarize(h, bad); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("a point out of range: %v", err)
	}
}

func TestPairedIntervalsAreNarrowerThanWelchs(t *testing.T) {
	// Two values 1 and 3: mean 2, sd √2, t(0.975, 1) = 12.706.
	s := Describe([]float64{1, 3, math.NaN()})
	if s.N != 2 || s.Mean != 2 || math.Abs(s.SD-math.Sqrt2) > 1e-12 || math.Abs(s.HalfWidth()-12.7062) > 1e-3 {
		t.Errorf("Describe(1, 3) = %+v", s)
	}
	if s := Describe([]float64{5}); s.N != 1 || s.Mean != 5 || !math.IsNaN(s.Low) {
		t.Errorf("Describe(5) = %+v; want no interval", s)
	}
	// Paired runs share most of their noise: the paired interval is the
	// spread of the differences, far narrower than Welch's.
	a := []float64{10, 20, 30, 40, 50}
	b := []float64{11, 21.5, 30.5, 41, 51}
	pd, w := Paired(a, b), Welch(a, b)
	if pd.Mean != 1 || w.Mean != 1 || !(pd.HalfWidth() < w.HalfWidth()/10) {
		t.Errorf("paired %+v, Welch %+v; want both mean 1, paired ten times narrower", pd, w)
	}
}

func TestParamFlagParses(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Param
		err  string
	}{
		{in: "control_plane[0].workers=2,4,8", want: Param{Key: "control_plane[0].workers", Values: []string{"2", "4", "8"}}},
		{in: "fleet.group[0].profile_fields.resource_timeout=15s..30s:2", want: Param{Key: "fleet.group[0].profile_fields.resource_timeout", Values: []string{"15s", "30s"}}},
		{in: `fleet.group[0].servers=["a","b"],["b"]`, want: Param{Key: "fleet.group[0].servers", Values: []string{`["a","b"]`, `["b"]`}}},
		{in: `fleet.group[0].profile="grpc-go", "grpc-java"`, want: Param{Key: "fleet.group[0].profile", Values: []string{`"grpc-go"`, `"grpc-java"`}}},
		{in: "x", err: "expected key=v1,v2"},
		{in: "x=1,1", err: "given twice"},
		{in: "x=1,,2", err: "empty value"},
		{in: "x=1..2:0", err: "steps must be"},
		{in: `x=["a`, err: "unbalanced"},
	} {
		got, err := ParseParam(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseParam(%q) = %v, %v; want error %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got.Key != tt.want.Key || !slices.Equal(got.Values, tt.want.Values) {
			t.Errorf("ParseParam(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestPlanChecksEveryPointAndLabelsWhatIfs(t *testing.T) {
	src, err := scenarios.Open("testdata/outage.toml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewPlan(src, nil, Spec{Seeds: 1, Params: []Param{{Key: "fleet.group[0].clients", Values: []string{"5", "-1"}}}})
	if err == nil || !strings.Contains(err.Error(), "sweep point 1 (fleet.group[0].clients=-1)") {
		t.Errorf("a bad point: %v", err)
	}
	_, err = NewPlan(src, nil, Spec{Seeds: 1, Metrics: []string{"fleet.start"}})
	if err == nil || !strings.Contains(err.Error(), `no metric "fleet.start"`) {
		t.Errorf("a bad metric: %v", err)
	}
	// The ADS backoff cap is hard-coded in grpc-go: a what-if. The
	// restart fraction is the world's: deployable.
	p, err := NewPlan(src, []string{"what_if=true"}, Spec{Seeds: 1, Params: []Param{
		{Key: "fleet.group[0].profile_fields.backoff_max", Values: []string{"30s", "2m"}},
		{Key: "fleet.restart[0].fraction", Values: []string{"0.5"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Params[0].Label != WhatIf || p.Params[0].Why == "" || p.Params[1].Label != Deployable {
		t.Errorf("labels: %+v", p.Params)
	}
	if !slices.Equal(p.Metrics, []string{"rpc.success_ratio", "rpc.failed", "rpc.latency_seconds.p99", "failure_windows.peak_clients_percent", "failure_windows.duration_seconds.p99", "failure_windows.client_seconds", "xds.resource_timer_spurious", "xds.fallback_switches"}) {
		t.Errorf("default metrics %q", p.Metrics)
	}
}

func TestShardFlagParses(t *testing.T) {
	for _, tt := range []struct {
		in, env string
		want    Shard
		err     string
	}{
		{in: "2/8", want: Shard{2, 8}},
		{in: "/8", env: "5", want: Shard{5, 8}},
		{in: "1/4", env: "3", want: Shard{1, 4}},
		{in: "/8", err: "JOB_COMPLETION_INDEX is not set"},
		{in: "8/8", err: "from 0 to 7"},
		{in: "1", err: "expected i/n"},
		{in: "1/0", err: "expected i/n"},
	} {
		got, err := ParseShard(tt.in, tt.env)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseShard(%q, %q) = %v, %v; want error %q", tt.in, tt.env, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseShard(%q, %q) = %v, %v; want %v", tt.in, tt.env, got, err, tt.want)
		}
	}
	if got := (Shard{1, 4}).Indices(10); !slices.Equal(got, []int{1, 5, 9}) {
		t.Errorf("shard 1/4 of 10 runs: %v", got)
	}
}

// TestTheSameSeedsCorrelateTheVariants: two variants run on the same
// seeds share their randomness (every client's start, every latency
// draw), so their figures are positively correlated seed by seed: the
// per-seed differences vary less than independent runs' would
// (Var(B − A) < Var(A) + Var(B)), which is what makes the paired
// interval the narrower one.
func TestTheSameSeedsCorrelateTheVariants(t *testing.T) {
	src, err := scenarios.Open("testdata/outage.toml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compare(Variant{Name: "A", Src: src}, Variant{Name: "B", Src: src, Sets: []string{"fleet.restart[0].downtime=5s"}},
		[]uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, []string{"failure_windows.client_seconds", "rpc.failed"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range c.Rows {
		if r.Paired.N != 12 || math.Abs(r.Paired.Mean-(r.B.Mean-r.A.Mean)) > 1e-9 {
			t.Errorf("%s: paired mean %v, want B − A = %v", r.Metric, r.Paired.Mean, r.B.Mean-r.A.Mean)
		}
		if vd, va, vb := r.Paired.SD*r.Paired.SD, r.A.SD*r.A.SD, r.B.SD*r.B.SD; !(vd < va+vb) {
			t.Errorf("%s: the differences vary as much as independent runs (%v ≥ %v + %v): the seeds do not pair them", r.Metric, vd, va, vb)
		}
		t.Logf("%s: B − A = %.4g, paired ±%.3g, unpaired ±%.3g", r.Metric, r.Paired.Mean, r.Paired.HalfWidth(), r.Unpaired.HalfWidth())
	}
	if c.First[0] == nil || c.First[1] == nil || c.First[0].Seed != 1 {
		t.Error("the first seed's results are not kept for the timelines")
	}
}

// TestLibrarySweepTablesResolve: every [sweep] table of the library names
// keys, values and metrics its scenario accepts at every point.
func TestLibrarySweepTablesResolve(t *testing.T) {
	n := 0
	for _, e := range scenarios.Library() {
		src, err := scenarios.Open(e.Name)
		if err != nil {
			t.Fatal(err)
		}
		s, err := scenarios.Parse(src, nil)
		if err != nil || s.Sweep == nil {
			continue
		}
		n++
		spec, err := SpecOf(s)
		if err != nil {
			t.Errorf("%s: %v", e.Name, err)
			continue
		}
		if _, err := NewPlan(src, nil, spec); err != nil {
			t.Errorf("%s: %v", e.Name, err)
		}
	}
	if n == 0 {
		t.Error("no library scenario has a [sweep] table")
	}
}

// TestAddedSeedsDoNotDependOnWorkers: a sweep that adds seeds where its
// answer is open gives the same outputs on one worker and on three: a
// round's runs are chosen from the runs before it alone.
func TestAddedSeedsDoNotDependOnWorkers(t *testing.T) {
	p := testPlan(t, func(s *Spec) {
		s.Seeds, s.MaxSeeds = 2, 8
		s.Constraints = []scenarios.Constraint{mustConstraint(t, "failure_windows.client_seconds <= 300")}
	})
	var want []byte
	for _, workers := range []int{1, 3} {
		res, err := p.Run(Options{Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Runs) <= p.Runs() {
			t.Fatalf("%d runs: no seeds were added to the %d first runs", len(res.Runs), p.Runs())
		}
		got, err := res.JSON()
		if err != nil {
			t.Fatal(err)
		}
		if want == nil {
			want = got
		} else if !bytes.Equal(got, want) {
			t.Errorf("%d workers give other outputs than 1", workers)
		}
	}
}

// TestCheckNamesTheFirstBadPointsWhateverTheWorkers: Check runs on a pool,
// but the points it names are the first five the scenario refuses, in
// order, and the labels and estimate it finds are the same with 1 worker
// or 3.
func TestCheckNamesTheFirstBadPointsWhateverTheWorkers(t *testing.T) {
	src, err := scenarios.Open("testdata/outage.toml")
	if err != nil {
		t.Fatal(err)
	}
	var fractions []string
	for i := range 600 {
		fractions = append(fractions, fmt.Sprint(0.1+float64(i%300)/1000+float64(i/300)*5))
	}
	spec := Spec{Seeds: 1, MaxSeeds: 1, Params: []Param{{Key: "fleet.restart[0].fraction", Values: fractions}}}
	var msgs []string
	for _, workers := range []int{1, 3} {
		p, err := Resolve(src, nil, spec)
		if err != nil {
			t.Fatal(err)
		}
		err = p.Check(Options{Workers: workers})
		if err == nil {
			t.Fatal("Check accepted fractions above 1")
		}
		msgs = append(msgs, err.Error())
	}
	if msgs[0] != msgs[1] || !strings.HasPrefix(msgs[0], "sweep point 300 (fleet.restart[0].fraction=5.1)") || strings.Count(msgs[0], "sweep point") != 5 ||
		!strings.Contains(msgs[0], "sweep point 304 ") {
		t.Errorf("1 worker:\n%s\n3 workers:\n%s", msgs[0], msgs[1])
	}
}
