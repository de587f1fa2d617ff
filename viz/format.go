package viz

import (
	"math"
	"strconv"
	"time"
)

// formatNumber renders v the way summary.json and the report print every
// figure: the shortest decimal that reads back as v, integral values without
// a fraction ("300", not "300.0"), exponent notation only below 1e-6 or from
// 1e21 up (the rule encoding/json and ECMAScript use). -0 prints as "0".
// v must be finite.
func formatNumber(v float64) string {
	if v == 0 {
		return "0"
	}
	abs := math.Abs(v)
	if abs < 1e-6 || abs >= 1e21 {
		b := strconv.AppendFloat(nil, v, 'e', -1, 64)
		// Shorten "e-07" to "e-7", as ECMAScript does.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
		return string(b)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// formatSeconds renders a span of virtual time in seconds, as formatNumber.
func formatSeconds(d time.Duration) string {
	return formatNumber(d.Seconds())
}

// finite reports whether v is neither NaN nor an infinity.
func finite(v float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0)
}

// formatAny renders v as formatNumber does, and NaN and the infinities as
// Go prints them ("NaN", "+Inf"), for the places that show them rather
// than refuse them.
func formatAny(v float64) string {
	if !finite(v) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return formatNumber(v)
}

// formatMillis renders a span of virtual time in seconds rounded to the
// millisecond, for tables people read.
func formatMillis(d time.Duration) string {
	return formatSeconds(d.Round(time.Millisecond))
}
