package viz

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/scenarios"
)

// Expectation is one of a scenario's expectations ([[expect]]) checked
// against the Results of a run.
type Expectation struct {
	// Metric is the summary.json path the expectation bounds.
	Metric string
	// Min and Max are its bounds, both inclusive; nil where the scenario
	// gives none.
	Min, Max *float64
	// Value is what the run reported at Metric: Lookup's value, NaN if
	// the run reported nothing there.
	Value float64
	// Pass is whether Value is within the bounds. A value equal to a bound
	// passes; NaN never does.
	Pass bool
}

// Evaluate checks the expectations of a scenario against the Results of
// its run, and returns one Expectation per scenarios.Expect, in the same
// order; nil when there are none.
func Evaluate(r *fleet.Results, expect []scenarios.Expect) []Expectation {
	if len(expect) == 0 {
		return nil
	}
	out := make([]Expectation, len(expect))
	for i, e := range expect {
		v, ok := Lookup(r, e.Metric)
		if !ok {
			v = math.NaN()
		}
		out[i] = Expectation{Metric: e.Metric, Min: copyBound(e.Min), Max: copyBound(e.Max), Value: v, Pass: e.Holds(v)}
	}
	return out
}

func copyBound(b *float64) *float64 {
	if b == nil {
		return nil
	}
	v := *b
	return &v
}

// Breached returns how many of es did not pass.
func Breached(es []Expectation) int {
	n := 0
	for _, e := range es {
		if !e.Pass {
			n++
		}
	}
	return n
}

// Bound says which values pass: ">= 0.999", "<= 10", or "in [0.5, 2]"
// with both bounds; "any" with neither.
func (e Expectation) Bound() string {
	switch {
	case e.Min != nil && e.Max != nil:
		return "in [" + formatAny(*e.Min) + ", " + formatAny(*e.Max) + "]"
	case e.Min != nil:
		return ">= " + formatAny(*e.Min)
	case e.Max != nil:
		return "<= " + formatAny(*e.Max)
	default:
		return "any"
	}
}

// valueText is e's value as the CLI table and the report show it: brief,
// with 6 significant digits (or as many as its integer part has), an
// integer in full; but in full wherever the brief form would read as equal
// to a bound it is not equal to. summary.json has every digit.
func (e Expectation) valueText() string {
	v := e.Value
	if !finite(v) || v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return formatAny(v)
	}
	digits := max(6, int(math.Floor(math.Log10(math.Abs(v))))+1)
	short, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', digits, 64), 64)
	for _, b := range []*float64{e.Min, e.Max} {
		if b != nil && short == *b && v != *b {
			return formatNumber(v)
		}
	}
	return formatNumber(short)
}

// result is the word the CLI table and the report show for e.
func (e Expectation) result() string {
	if e.Pass {
		return "pass"
	}
	return "FAIL"
}

// WriteExpectations writes es as the plain-text table `xdssim run` prints:
// a line saying how many were breached, then one aligned row per
// expectation (metric, bound, value, pass or FAIL), the bounds as in
// summary.json and the values brief (6 significant digits). It writes
// nothing when es is empty.
func WriteExpectations(w io.Writer, es []Expectation) error {
	if len(es) == 0 {
		return nil
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "expectations: %d of %d breached\n", Breached(es), len(es))
	tw := tabwriter.NewWriter(&b, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, "  metric\tbound\tvalue\tresult")
	for _, e := range es {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", oneLine(e.Metric), e.Bound(), e.valueText(), e.result())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

// oneLine keeps a table row on one line and its columns apart, whatever
// a metric path holds.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
}

// writeExpectations writes the "expectations" member of summary.json, at
// depth 1: an array of objects holding metric, min and max when given,
// value (null when the run reported none) and pass.
func writeExpectations(b *bytes.Buffer, es []Expectation) error {
	b.WriteString("  \"expectations\": [")
	for i, e := range es {
		for _, bound := range []*float64{e.Min, e.Max} {
			if bound != nil && !finite(*bound) {
				return fmt.Errorf("expectation %q has the bound %v; summary.json holds only finite numbers", e.Metric, *bound)
			}
		}
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n    {\n")
		fmt.Fprintf(b, "      \"metric\": %s,\n", quoteJSON(e.Metric))
		if e.Min != nil {
			fmt.Fprintf(b, "      \"min\": %s,\n", formatNumber(*e.Min))
		}
		if e.Max != nil {
			fmt.Fprintf(b, "      \"max\": %s,\n", formatNumber(*e.Max))
		}
		value := "null"
		if finite(e.Value) {
			value = formatNumber(e.Value)
		}
		fmt.Fprintf(b, "      \"value\": %s,\n", value)
		fmt.Fprintf(b, "      \"pass\": %t\n", e.Pass)
		b.WriteString("    }")
	}
	if len(es) > 0 {
		b.WriteString("\n  ")
	}
	b.WriteString("]")
	return nil
}
