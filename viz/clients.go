package viz

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/xdssim/xdssim/model/dataplane"
	"github.com/xdssim/xdssim/model/fleet"
)

// worstClients is how many client channels the report lists by time spent
// failing.
const worstClients = 20

// clientRow is one client channel of the worst-clients table.
type clientRow struct {
	Entity      string
	Seconds     string
	Windows     int
	First, Last string
	Causes      []causeShare
}

// causeShare is the time one client channel spent failing for one cause.
type causeShare struct {
	Cause, Color, Seconds string
}

// worst returns the client channels that spent the longest in failure
// windows, longest first (then by name), at most worstClients of them.
func worst(r *fleet.Results) []clientRow {
	// channel is what one client channel's windows add up to.
	type channel struct {
		entity      string
		windows     int
		failing     time.Duration
		first, last time.Duration
		byCause     [dataplane.NumCauses]time.Duration
		seen        [dataplane.NumCauses]bool
	}
	at := map[string]int{}
	var chs []channel
	for _, in := range r.Intervals {
		c, ok := in.WindowCause()
		if !ok {
			continue
		}
		i, ok := at[in.Entity]
		if !ok {
			i = len(chs)
			at[in.Entity] = i
			chs = append(chs, channel{entity: in.Entity, first: in.Start})
		}
		ch := &chs[i]
		d := in.End - in.Start
		ch.windows++
		ch.failing += d
		ch.first = min(ch.first, in.Start)
		ch.last = max(ch.last, in.End)
		ch.byCause[c] += d
		ch.seen[c] = true
	}
	slices.SortFunc(chs, func(a, b channel) int {
		return cmp.Or(cmp.Compare(b.failing, a.failing), cmp.Compare(b.windows, a.windows), strings.Compare(a.entity, b.entity))
	})
	rows := make([]clientRow, min(len(chs), worstClients))
	for i := range rows {
		ch := &chs[i]
		rows[i] = clientRow{Entity: ch.entity, Seconds: formatMillis(ch.failing), Windows: ch.windows,
			First: formatMillis(ch.first), Last: formatMillis(ch.last)}
		for c := dataplane.Cause(0); c < dataplane.NumCauses; c++ {
			if ch.seen[c] {
				rows[i].Causes = append(rows[i].Causes, causeShare{c.String(), causeColor(c), formatMillis(ch.byCause[c])})
			}
		}
	}
	return rows
}

// cdfPoints bounds the points of one cumulative distribution.
const cdfPoints = 200

// minDuration is where the duration CDF's log axis starts: shorter windows
// (a single failed RPC is a window of length 0) are drawn there.
const minDuration = 0.01

func distributionSection(r *fleet.Results) section {
	sec := section{ID: "distributions", Title: "Distributions",
		Lead: "How long failure windows lasted, by root cause; how long the fleet took to recover after each fault ended; " +
			"and the backoff delays clients really waited before reconnecting."}
	var durs [dataplane.NumCauses][]float64
	for _, in := range r.Intervals {
		if c, ok := in.WindowCause(); ok {
			durs[c] = append(durs[c], (in.End - in.Start).Seconds())
		}
	}
	var curves []curve
	for c := dataplane.Cause(0); c < dataplane.NumCauses; c++ {
		d := durs[c]
		if len(d) == 0 {
			continue
		}
		slices.Sort(d)
		cv := curve{name: c.String(), color: causeColor(c)}
		n := len(d)
		step := max(1, n/cdfPoints)
		for i := step - 1; i < n; i += step {
			cv.x = append(cv.x, max(d[i], minDuration))
			cv.y = append(cv.y, 100*float64(i+1)/float64(n))
		}
		if cv.y[len(cv.y)-1] != 100 {
			cv.x, cv.y = append(cv.x, max(d[n-1], minDuration)), append(cv.y, 100)
		}
		curves = append(curves, cv)
	}
	if len(curves) > 0 {
		sec.Charts = append(sec.Charts, cdfChart("chart_window_durations", "Failure-window duration, by root cause (CDF)",
			"window duration (s, log)", "% of windows", curves))
	}
	if slices.ContainsFunc(r.Faults, func(f fleet.Fault) bool { return f.Recovery > 0 }) {
		cats := make([]string, len(r.Faults))
		rec := make([]float64, len(r.Faults))
		for i, f := range r.Faults {
			cats[i], rec[i] = f.Label, f.Recovery.Seconds()
		}
		sec.Charts = append(sec.Charts, barChart("chart_recovery", "Time to recover after each fault ended",
			"fault", "seconds", cats, []bar{{name: "recovery", values: rec, color: colorBad}}))
	}
	sec.Charts = append(sec.Charts, histogramCharts(r.Histograms)...)
	return sec
}

// histogramCharts draws the histograms that counted anything as bars over
// their buckets, from the first bucket used to the last. Histograms with
// the same bounds share a chart.
func histogramCharts(hs []fleet.Histogram) []chart {
	var out []chart
	done := make([]bool, len(hs))
	for i, h := range hs {
		if done[i] || h.Count == 0 {
			continue
		}
		group := []fleet.Histogram{h}
		for j := i + 1; j < len(hs); j++ {
			if !done[j] && hs[j].Count > 0 && slices.Equal(hs[j].Bounds, h.Bounds) {
				group = append(group, hs[j])
				done[j] = true
			}
		}
		out = append(out, histogramChart(group))
	}
	return out
}

// histogramChart draws histograms with equal bounds in one bar chart.
func histogramChart(hs []fleet.Histogram) chart {
	lo, hi := len(hs[0].Counts), 0
	for _, h := range hs {
		for i, n := range h.Counts {
			if n > 0 {
				lo, hi = min(lo, i), max(hi, i)
			}
		}
	}
	bounds := hs[0].Bounds
	cats := make([]string, 0, hi-lo+1)
	for i := lo; i <= hi; i++ {
		if i < len(bounds) {
			cats = append(cats, "≤ "+formatNumber(bounds[i]))
		} else {
			cats = append(cats, "> "+formatNumber(bounds[len(bounds)-1]))
		}
	}
	colors := []string{colorInfo, colorWaiting, colorGood, colorBad}
	bars := make([]bar, len(hs))
	for k, h := range hs {
		bars[k] = bar{name: h.Title, color: colors[k%len(colors)], values: make([]float64, 0, len(cats))}
		for i := lo; i <= hi; i++ {
			bars[k].values = append(bars[k].values, float64(h.Counts[i]))
		}
	}
	names := make([]string, len(hs))
	for k, h := range hs {
		names[k] = h.Name
	}
	title := hs[0].Title
	switch {
	case len(hs) == 1:
	case !slices.ContainsFunc(names, func(n string) bool { return !strings.HasSuffix(n, "_backoff") }):
		title = "Backoff delays observed"
	default:
		title = "Observed: " + strings.Join(names, ", ")
	}
	return barChart("chart_histogram_"+slug(names[0]), title, "delay ("+hs[0].Unit+")", "count", cats, bars)
}
