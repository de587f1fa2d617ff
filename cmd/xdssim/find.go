package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/xdssim/xdssim/scenarios"
	"github.com/xdssim/xdssim/sweep"
)

// cmdFind is `xdssim sweep --find key=lo..hi`: a threshold search, seed by
// seed, for where the one constraint stops holding.
func cmdFind(src *scenarios.Source, sets []string, s *scenarios.Scenario, spec sweep.Spec, vals flagValues, workers int, stdout, stderr io.Writer) error {
	key, lo, hi, err := sweep.ParseFind(vals.last("find"))
	if err != nil {
		return inputError{err}
	}
	if len(spec.Constraints) != 1 {
		return badInput("--find: expected exactly one --constraint (or [sweep] constraint), the bound whose crossing to find; found %d", len(spec.Constraints))
	}
	steps := 8
	if v := vals.last("steps"); v != "" {
		if steps, err = strconv.Atoi(v); err != nil || steps < 1 || steps > 60 {
			return badInput("--steps %s: expected a number of bisection steps from 1 to 60", v)
		}
	}
	// Both ends must be values the scenario accepts, and runs of them
	// within the bounds on a run's cost.
	ends := func(i int) []string { return append(append([]string{}, sets...), key+"="+[]string{lo, hi}[i]) }
	est, err := worstEstimate(src, 2, ends)
	if err != nil {
		return err
	}
	lim, err := sweepLimits(vals, est, 2*spec.Seeds, workers)
	if err != nil {
		return err
	}
	out := vals.last("out")
	if out == "" {
		out = filepath.Join("xdssim-out", s.Name+"-find")
	}
	if err := checkWritable("out", out, true); err != nil {
		return err // before the runs, not after
	}
	f := sweep.Find{Key: key, Lo: lo, Hi: hi, Constraint: spec.Constraints[0], Steps: steps}
	for i := range spec.Seeds {
		f.Seeds = append(f.Seeds, s.Seed+uint64(i))
	}
	fmt.Fprintf(stderr, "xdssim: threshold search on %s: %s between %s and %s where %s stops or starts holding, %d seeds, %d steps, %s\n",
		s.Name, key, lo, hi, f.Constraint, len(f.Seeds), steps, workersText(workers))
	res, err := sweep.RunFind(src, sets, f, sweep.Options{Workers: workers, MaxEvents: lim.events, ExactRPCs: vals.given("exact-rpcs")})
	if err != nil {
		return runErr(err, est)
	}
	b, err := res.JSON()
	if err != nil {
		return err
	}
	name := filepath.Join(out, "find.json")
	if err := writeFile(name, func(w io.Writer) error { _, err := w.Write(b); return err }); err != nil {
		return err
	}
	var per []string
	for k, t := range res.Thresholds {
		v := "none"
		if t != nil {
			v = fmtNum(*t) + res.Unit
		}
		per = append(per, fmt.Sprintf("seed %d: %s", res.Seeds[k], v))
	}
	fmt.Fprintf(stdout, "%s: %s\n", key, strings.Join(per, ", "))
	st := res.Stat()
	if st.N == 0 {
		fmt.Fprintln(stdout, name)
		return breachedError{msg: fmt.Sprintf("%s does not cross %s between %s and %s for any seed", key, f.Constraint, lo, hi)}
	}
	side := "holds"
	if !res.HoldsAtLo[firstWith(res)] {
		side = "breaks"
	}
	fmt.Fprintf(stdout, "threshold: %s = %s%s [%s, %s] (95 %% interval over %d seeds; below it %s %s) in %d runs\n",
		key, fmtNum(st.Mean), res.Unit, fmtNum(st.Low), fmtNum(st.High), st.N, f.Constraint, side, res.Runs)
	fmt.Fprintln(stdout, name)
	return nil
}

// firstWith is the first seed that has a threshold.
func firstWith(r *sweep.FindResult) int {
	for k, t := range r.Thresholds {
		if t != nil {
			return k
		}
	}
	return 0
}
