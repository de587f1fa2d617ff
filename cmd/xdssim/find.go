package main

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/xdssim/xdssim/scenarios"
	"github.com/xdssim/xdssim/stamp"
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
	steps := 40
	if v, ok := flagGiven(vals, "steps"); ok {
		if steps, err = strconv.Atoi(v); err != nil || steps < 1 || steps > 60 {
			return badInput("--steps %s: expected a number of bisection steps from 1 to 60", v)
		}
	}
	coverage := 0.9
	if v, ok := flagGiven(vals, "coverage"); ok {
		c, err := scenarios.ParseShare(v)
		if err != nil {
			return badInput("--coverage: the share of seeds the bound must hold on: %v", err)
		}
		coverage = c
	}
	resolution := 0.0
	if v, ok := flagGiven(vals, "resolution"); ok {
		r, err := strconv.ParseFloat(v, 64)
		if d, derr := time.ParseDuration(v); derr == nil {
			r, err = d.Seconds(), nil
		}
		if err != nil || !(r > 0) || math.IsInf(r, 0) {
			return badInput("--resolution %s: expected the bracket width to refine each seed to, a number above 0 (or a duration for a duration key)", v)
		}
		resolution = r
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
	f := sweep.Find{Key: key, Lo: lo, Hi: hi, Constraint: spec.Constraints[0], MaxSteps: steps, Resolution: resolution, Coverage: coverage}
	if f.Seeds, err = consecutiveSeeds(s.Seed, spec.Seeds); err != nil {
		return err
	}
	exact := vals.given("exact-rpcs")
	h := s.SHA256()
	id := newIdentity("sweep --find", s.Name, []string{h}, f.Seeds, overrideFlags(sets), struct {
		ScenarioSHA256, Key, Lo, Hi, Constraint string
		Steps                                   int
		Resolution, Coverage                    string
		Seeds                                   []uint64
		ExactRPCs                               bool
	}{h, key, lo, hi, f.Constraint.String(), steps, strconv.FormatFloat(resolution, 'g', -1, 64), strconv.FormatFloat(coverage, 'g', -1, 64), f.Seeds, exact})
	out := vals.last("out")
	if out == "" {
		out = defaultOut(s.Name+"-find", id, "", ownSeed(src, s))
	}
	dir, err := checkOutDir(outFlag(vals.given("out")), out, stderr)
	if err != nil {
		return err // before the runs, not after
	}
	if err := dir.claim(id, vals.given("overwrite")); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "xdssim: threshold search on %s: %s between %s and %s where %s stops or starts holding, %d seeds, %s\n",
		s.Name, key, lo, hi, f.Constraint, len(f.Seeds), workersText(workers))
	res, err := sweep.RunFind(src, sets, f, sweep.Options{Workers: workers, MaxEvents: lim.events, ExactRPCs: exact, Build: stamp.Read()})
	if err != nil {
		return runErr(err, est)
	}
	b, err := res.JSON()
	if err != nil {
		return err
	}
	name := filepath.Join(out, "find.json")
	if err := dir.publish([]output{{name: "find.json", write: writeBytes(b)}}, nil); err != nil {
		return err
	}
	printFind(stdout, res, f)
	fmt.Fprintln(stdout, name)
	if res.Crossing == 0 && res.Safe.Value == nil {
		return breachedError{msg: fmt.Sprintf("%s does not cross %s between %s and %s for any seed", key, f.Constraint, lo, hi)}
	}
	if res.Safe.Value == nil {
		return breachedError{msg: fmt.Sprintf("no value of %s between %s and %s is known to hold %s on the seeds", key, lo, hi, f.Constraint)}
	}
	return nil
}

// printFind prints a threshold search's answer: each seed's threshold,
// their median and spread, and the bound that holds on a share of seeds.
func printFind(w io.Writer, res *sweep.FindResult, f sweep.Find) {
	unit := func(v float64) string { return sweep.FormatFigure(v) + res.Unit }
	var per []string
	for _, st := range res.Seeds {
		v := "none"
		switch {
		case st.Threshold != nil:
			v = unit(*st.Threshold)
		case res.Direction == sweep.HoldsBelow && st.HoldsAtLo, res.Direction == sweep.HoldsAbove && st.HoldsAtHi:
			v = "holds throughout"
		default:
			v = "breaks throughout"
		}
		per = append(per, fmt.Sprintf("seed %d: %s", st.Seed, v))
	}
	// A threshold is the first value at which the constraint breaks,
	// coming from the side where it holds.
	from := "going up from " + unit(res.Lo)
	if res.Direction == sweep.HoldsAbove {
		from = "coming down from " + unit(res.Hi)
	}
	fmt.Fprintf(w, "%s, first value at which %s breaks, %s: %s\n", res.Key, f.Constraint, from, strings.Join(per, ", "))
	side := "at or below"
	if res.Direction == sweep.HoldsAbove {
		side = "at or above"
	}
	if res.Median != nil {
		spread := ""
		if res.Spread != nil {
			spread = ", seed-to-seed spread (sd) " + unit(*res.Spread)
		}
		fmt.Fprintf(w, "threshold: median %s over the %d of %d seeds that cross%s; each seed's bracket refined to %s\n",
			unit(*res.Median), res.Crossing, len(res.Seeds), spread, unit(res.Resolution))
	}
	sb := res.Safe
	switch {
	case sb.Value == nil:
		fmt.Fprintf(w, "safe bound: none: %s already breaks at the safe end of the range on too many of %d seeds\n", f.Constraint, len(res.Seeds))
	case sb.Enough:
		beyond := ""
		if sb.Beyond {
			beyond = " (it holds on the whole range; the bound may lie beyond)"
		}
		fmt.Fprintf(w, "safe bound: %s holds %s %s = %s on at least %s of seeds, with 95 %% confidence (%d seeds; %s)%s\n",
			f.Constraint, side, res.Key, unit(*sb.Value), sweep.Percent(sb.Share), len(res.Seeds), rankText(sb.Rank, res.Direction), beyond)
	default:
		fmt.Fprintf(w, "safe bound: %d seeds are too few to bound the value that holds on %s of seeds with 95 %% confidence (%d are needed); %s holds %s %s = %s on at least %s of seeds, with 95 %% confidence\n",
			len(res.Seeds), sweep.Percent(sb.Wanted), sweep.SeedsToDecide(1-sb.Wanted), f.Constraint, side, res.Key, unit(*sb.Value), sweep.Percent(sb.Share))
	}
	fmt.Fprintf(w, "%d runs\n", res.Runs)
}

// rankText names the order statistic a bound is: "the lowest seed's
// limit", "the 3rd lowest".
func rankText(rank int, direction string) string {
	end := "lowest"
	if direction == sweep.HoldsAbove {
		end = "highest"
	}
	if rank == 1 {
		return "the " + end + " seed's limit"
	}
	return "the " + ordinal(rank) + " " + end + " seed's limit"
}

// ordinal writes 1 as "1st", 2 as "2nd".
func ordinal(n int) string {
	switch {
	case n%100 >= 11 && n%100 <= 13:
		return strconv.Itoa(n) + "th"
	case n%10 == 1:
		return strconv.Itoa(n) + "st"
	case n%10 == 2:
		return strconv.Itoa(n) + "nd"
	case n%10 == 3:
		return strconv.Itoa(n) + "rd"
	}
	return strconv.Itoa(n) + "th"
}
