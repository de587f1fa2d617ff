package sweep

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xdssim/xdssim/scenarios"
)

// The sentences below are what the CLI prints and sweep.html shows, so
// that both say the same thing the same way.

// SettingText writes setting s as its knobs' overrides, what to deploy.
func (r *Result) SettingText(s int) string {
	sets := r.SettingSets(s)
	if len(sets) == 0 {
		return "the scenario's own setting"
	}
	return strings.Join(sets, " ")
}

// SettingsText writes settings by their knobs' overrides.
func (r *Result) SettingsText(ss []int) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = r.SettingText(s)
	}
	return strings.Join(out, "; ")
}

// VerdictText writes setting s with its verdict when that is not
// "meets": "workers=8 (undecided)".
func (r *Result) VerdictText(s int) string {
	if v := r.Settings[s].Verdict; v != Meets {
		return r.SettingText(s) + " (" + v.String() + ")"
	}
	return r.SettingText(s)
}

// VerdictsText is VerdictText of each of ss.
func (r *Result) VerdictsText(ss []int) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = r.VerdictText(s)
	}
	return strings.Join(out, "; ")
}

// OpenPoints returns the points whose verdict stayed undecided, split in
// those whose setting the selection eliminated (a better setting meets
// the constraints: more seeds would not change the answer) and the rest.
func (r *Result) OpenPoints() (eliminated, open []int) {
	for _, p := range r.Points {
		if p.Verdict != Undecided {
			continue
		}
		if r.Robust.Best >= 0 && !slices.Contains(r.Robust.Survivors, p.Setting) {
			eliminated = append(eliminated, p.Index)
		} else {
			open = append(open, p.Index)
		}
	}
	return eliminated, open
}

// CheckText says how constraint i fared at a point: "meets: 0 of 59
// breach (risk ≤ 4.951 %)", "breaks: 5 of 5 breach (risk ≥ 54.93 %)",
// "undecided: 0 of 5 breach (risk ≤ 45.07 %)", or for a constraint on the
// mean "meets: mean in [12, 14]".
func (r *Result) CheckText(i int, k Check) string {
	con, _ := scenarios.ParseConstraint(r.Constraints[i])
	if con.Mean {
		return fmt.Sprintf("%s: mean in [%s, %s]", k.Verdict, FormatFigure(k.Low), FormatFigure(k.High))
	}
	risk := "risk ≤ " + Percent(k.High)
	if k.Verdict == Breaks {
		risk = "risk ≥ " + Percent(k.Low)
	}
	return fmt.Sprintf("%s: %d of %d breach (%s)", k.Verdict, k.Breaches, k.N, risk)
}

// Percent writes a share as the outputs write percentages: 0.05 as
// "5 %".
func Percent(v float64) string { return FormatFigure(100*v) + " %" }

// without returns xs without x.
func without(xs []int, x int) []int {
	var out []int
	for _, v := range xs {
		if v != x {
			out = append(out, v)
		}
	}
	return out
}

// EqualOnEverySeed reports whether the pick is tied with other settings
// whose objective is equal to its own on every seed: then SureText names
// them, and no runner-up or paired interval adds anything.
func (r *Result) EqualOnEverySeed(p Pick) bool {
	return p.Best >= 0 && p.Separated && len(without(p.Survivors, p.Best)) > 0
}

// SureText says how sure a pick is: selected with its probability of
// correct selection, tied (equal on every seed), or not separated within
// the seeds.
func (r *Result) SureText(p Pick) string {
	others := without(p.Survivors, p.Best)
	switch {
	case p.Best < 0:
		return ""
	case r.EqualOnEverySeed(p):
		return "tied with " + r.VerdictsText(others) + ": equal on every seed, so choose between them on other grounds"
	case p.Separated && len(p.Meeting)+len(p.Undecided) == 1:
		return "the only setting not known to break a constraint"
	case p.Separated:
		return fmt.Sprintf("selected with a probability of correct selection of at least %s when it is at least %s better than every other (indifference zone %s; Kim and Nelson's procedure)",
			Percent(p.PCS), FormatFigure(p.Delta), r.Indifference)
	}
	if r.OnlyBetterUndecided(p) {
		return fmt.Sprintf("no probability of correct selection is claimed: %s may be better, but after %d seeds it is not known to meet the constraints (raise --max-seeds or --risk to decide it)",
			r.SettingsText(others), r.MaxSeeds)
	}
	return fmt.Sprintf("not separated from %s within %d seeds at an indifference zone of %s: no probability of correct selection is claimed",
		r.SettingsText(others), r.MaxSeeds, FormatFigure(p.Delta))
}

// OnlyBetterUndecided reports whether what keeps the pick from being
// selected is only settings better on the objective whose constraints are
// undecided (Pick.Better): then SureText names them, and the selection
// did separate the pick from every setting known to meet the constraints.
func (r *Result) OnlyBetterUndecided(p Pick) bool {
	others := without(p.Survivors, p.Best)
	if p.Best < 0 || p.Separated || len(others) == 0 {
		return false
	}
	for _, o := range others {
		if !slices.Contains(p.Better, o) {
			return false
		}
	}
	return true
}

// NoPickText says why a competition has no pick: "" when it has one.
func (r *Result) NoPickText(p Pick, under string) string {
	switch {
	case p.Best >= 0:
		return ""
	case len(r.Objectives) == 0 && len(r.Constraints) == 0:
		return "no objective and no constraint: nothing to recommend"
	case len(r.Objectives) == 0 && len(p.Meeting) > 0:
		return "settings that meet every constraint " + under + ": " + r.SettingsText(p.Meeting)
	}
	msg := fmt.Sprintf("no setting of the knobs is known to meet every constraint %s: %d of %d break one", under, len(p.Breaking), len(r.Settings))
	if len(p.Undecided) > 0 {
		msg += fmt.Sprintf(", %d undecided after up to %d seeds (%s): more seeds (--max-seeds) or a higher --risk may decide them",
			len(p.Undecided), r.MaxSeeds, r.SettingsText(p.Undecided))
	}
	return msg
}

// ConditionsText names the conditions a pick holds under.
func (r *Result) ConditionsText() string {
	if r.Conditions() == 1 {
		return "under the scenario's condition"
	}
	return "under every swept condition"
}

// ObjectiveMetric is the metric of the first objective, "" without one.
func (r *Result) ObjectiveMetric() string {
	if len(r.Objectives) == 0 {
		return ""
	}
	_, m, _ := strings.Cut(r.Objectives[0], " ")
	return m
}

// Signed writes a difference with its sign: "+443 [430, 456]".
func Signed(s Stat) string {
	t := s.Text("–")
	if s.N > 0 && s.Mean > 0 {
		return "+" + t
	}
	return t
}

// Reproduce returns the `xdssim run` command, for the scenario named ref,
// that reproduces the recommended setting under its hardest condition on
// the first seed, and that condition's overrides; "" without a
// recommendation.
func (r *Result) Reproduce(ref string) (cmd string, condition []string) {
	if r.Robust.Best < 0 {
		return "", nil
	}
	c := r.Hardest(r.Robust.Best)
	sets := append(slices.Clone(r.Sets), r.SettingSets(r.Robust.Best)...)
	condition = r.ConditionSets(c)
	cmd = scenarios.Command("run", ref, r.Seeds[0], append(sets, condition...))
	if r.ExactRPCs {
		cmd += " --exact-rpcs"
	}
	return cmd, condition
}
