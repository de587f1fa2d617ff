package sweep

import (
	"math"
	"strconv"
	"strings"
)

// FormatFigure writes a figure the one way the CLI, sweep.html and
// compare.html show it: about four significant digits ("12.35", "0.5"),
// a whole number from 1 000 up with every digit and a narrow no-break
// space between thousands ("14 605"), an exponent only below 10⁻³ or from
// 10¹² ("2.5e-4"), never float noise ("0.1", not "0.10000000000000001").
// ∞ and −∞ are written so; NaN as "–". sweep.json and sweep.csv keep every
// digit.
func FormatFigure(v float64) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case math.IsInf(v, 1):
		return "∞"
	case math.IsInf(v, -1):
		return "−∞"
	case v == 0:
		return "0"
	}
	sign := ""
	if v < 0 {
		sign, v = "−", -v
	}
	switch {
	case v < 1e-3 || v >= 1e12:
		t := strconv.FormatFloat(v, 'e', 3, 64)
		mant, exp, _ := strings.Cut(t, "e")
		mant = trimZeros(mant)
		e, _ := strconv.Atoi(exp)
		return sign + mant + "e" + strconv.Itoa(e)
	case v >= 999.5:
		return sign + groupThousands(strconv.FormatFloat(math.Round(v), 'f', 0, 64))
	}
	// Four significant digits, written out in full.
	digits := 3 - int(math.Floor(math.Log10(v)))
	t := strconv.FormatFloat(v, 'f', max(0, digits), 64)
	if r, _ := strconv.ParseFloat(t, 64); r >= 999.5 {
		return sign + groupThousands(strconv.FormatFloat(math.Round(v), 'f', 0, 64))
	}
	return sign + trimZeros(t)
}

// trimZeros drops the trailing zeros of a decimal fraction, and its point
// when nothing is left after it.
func trimZeros(t string) string {
	if !strings.Contains(t, ".") {
		return t
	}
	t = strings.TrimRight(t, "0")
	return strings.TrimSuffix(t, ".")
}

// thousandsSep is a narrow no-break space (U+202F), the SI's separator:
// it reads as a gap without being mistaken for a decimal point or the comma
// between an interval's bounds, and never breaks a number across lines.
const thousandsSep = "\u202f"

// groupThousands puts thousandsSep between the groups of three digits of
// a whole number.
func groupThousands(d string) string {
	if len(d) <= 3 {
		return d
	}
	var b strings.Builder
	head := len(d) % 3
	if head > 0 {
		b.WriteString(d[:head])
	}
	for i := head; i < len(d); i += 3 {
		if b.Len() > 0 {
			b.WriteString(thousandsSep)
		}
		b.WriteString(d[i : i+3])
	}
	return b.String()
}
