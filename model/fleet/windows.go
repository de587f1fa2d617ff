package fleet

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"gonum.org/v1/gonum/stat"
	"google.golang.org/grpc/codes"

	"github.com/xdssim/xdssim/model/dataplane"
)

// reportedCodes are the status codes the data plane can end an RPC with,
// by the names of grpc's doc/statuscodes.md; summary.json has
// rpc.by_code.<NAME> for each.
var reportedCodes = []struct {
	code codes.Code
	name string
}{
	{codes.OK, "OK"}, {codes.Canceled, "CANCELLED"}, {codes.DeadlineExceeded, "DEADLINE_EXCEEDED"},
	{codes.ResourceExhausted, "RESOURCE_EXHAUSTED"}, {codes.Internal, "INTERNAL"}, {codes.Unavailable, "UNAVAILABLE"},
}

// closeWindows ends every failure window still open at the end of the run,
// in instance order.
func (w *world) closeWindows() {
	for ii := range w.insts {
		if win, ok := w.insts[ii].win.Close(); ok {
			w.windowClosed(uint32(ii), win)
		}
	}
	slices.SortStableFunc(w.dp.windows, func(a, b windowRecord) int {
		return cmp.Or(cmp.Compare(a.w.Start, b.w.Start), cmp.Compare(a.inst, b.inst))
	})
}

// loadedInstances counts the instances that send RPCs.
func loadedInstances(cfg *Config) int {
	n := 0
	for _, g := range cfg.Groups {
		if len(g.Servers) > 0 && g.RPC.sends() {
			n += g.Clients * len(g.Targets)
		}
	}
	return n
}

// dataPlaneMetrics adds the RPC, failure-window, session and retry figures.
func dataPlaneMetrics(cfg *Config, w *world, add func(string, float64)) {
	var dp dpCounters
	var faults []Fault
	var peak float64
	if w != nil {
		dp, faults, peak = w.dp, w.spans, w.peakFailing
	}
	add("rpc.total", float64(dp.rpcs))
	add("rpc.failed", float64(dp.failed))
	add("rpc.success_ratio", successRatio(dp.rpcs, dp.failed))
	add("rpc.attempts", float64(dp.attempts))
	for _, c := range reportedCodes {
		add("rpc.by_code."+c.name, float64(dp.byCode[c.code]))
	}
	add("xds.resource_timer_spurious", float64(dp.timerSpurious))
	add("sessions.started", float64(dp.sessionsStarted))
	add("sessions.affinity_breaks", float64(dp.affinityBreaks))
	for why := dataplane.NoBreak + 1; why < dataplane.NumBreakReasons; why++ {
		add("sessions.affinity_breaks_by_reason."+why.String(), float64(dp.breaksBy[why]))
	}
	add("retries.attempts", float64(dp.retries))
	add("retries.throttled", float64(dp.throttled))
	amp := 1.0
	if dp.attempted > 0 {
		amp = float64(dp.attempts) / float64(dp.attempted)
	}
	add("retries.amplification", amp)

	durs := make([]float64, 0, len(dp.windows))
	var total float64
	var count [dataplane.NumCauses]int
	var secs [dataplane.NumCauses]float64
	for i := range dp.windows {
		win := &dp.windows[i].w
		d := win.Duration().Seconds()
		durs = append(durs, d)
		total += d
		count[win.Cause()]++
		secs[win.Cause()] += d
	}
	slices.Sort(durs)
	add("failure_windows.count", float64(len(durs)))
	add("failure_windows.peak_clients_percent", peak)
	add("failure_windows.client_seconds", total)
	for _, q := range []struct {
		name string
		p    float64
	}{{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}} {
		add("failure_windows.duration_seconds."+q.name, quantile(durs, q.p))
	}
	maxD := 0.0
	if len(durs) > 0 {
		maxD = durs[len(durs)-1]
	}
	add("failure_windows.duration_seconds.max", maxD)
	for c := dataplane.Cause(0); c < dataplane.NumCauses; c++ {
		add("failure_windows.by_cause."+c.String()+".count", float64(count[c]))
		add("failure_windows.by_cause."+c.String()+".client_seconds", secs[c])
	}
	rec := 0.0
	for _, f := range faults {
		rec = math.Max(rec, f.Recovery.Seconds())
	}
	add("failure_windows.max_recovery_seconds", rec)
}

// dataPlaneSeries are the RPC series, built from what ended in each sample
// interval and from the failure windows.
func (w *world) dataPlaneSeries(samples int) []Series {
	n := loadedInstances(&w.cfg)
	if n == 0 || samples == 0 {
		return nil
	}
	iv := w.cfg.SampleInterval
	perSec := 1 / iv.Seconds()
	bucket := func(k int) bucket {
		if k < len(w.dp.buckets) {
			return w.dp.buckets[k]
		}
		return bucket{}
	}
	mk := func(name, title, unit string) Series {
		return Series{Name: name, Title: title, Unit: unit, Values: make([]float64, samples)}
	}
	// In a failure window: a window covers the samples from the one its
	// start falls in to the one its end falls in.
	var inWindow [dataplane.NumCauses + 1][]int
	for c := range inWindow {
		inWindow[c] = make([]int, samples+1)
	}
	at := func(t int64) int { return min(int((t+int64(iv)-1)/int64(iv)), samples) }
	var present [dataplane.NumCauses]bool
	for i := range w.dp.windows {
		win := &w.dp.windows[i].w
		a, b := at(int64(win.Start)), at(int64(win.End))
		cause := win.Cause()
		present[cause] = true
		for _, c := range []int{int(dataplane.NumCauses), int(cause)} {
			inWindow[c][a]++
			inWindow[c][min(b+1, samples)]--
		}
	}
	out := []Series{mk("rpc.clients_failing", "Client channels in an RPC failure window", "%")}
	var byCause []Series
	var causes []dataplane.Cause
	for c := dataplane.Cause(0); c < dataplane.NumCauses; c++ {
		if present[c] {
			causes = append(causes, c)
			byCause = append(byCause, mk("rpc.clients_failing."+c.String(),
				"Client channels in a failure window: "+c.String(), "%"))
		}
	}
	run := make([]int, len(causes)+1)
	for k := 0; k < samples; k++ {
		run[0] += inWindow[dataplane.NumCauses][k]
		out[0].Values[k] = 100 * float64(run[0]) / float64(n)
		for j, c := range causes {
			run[j+1] += inWindow[c][k]
			byCause[j].Values[k] = 100 * float64(run[j+1]) / float64(n)
		}
	}
	out = append(out, byCause...)

	// The error rate by cause: of the RPCs that ended in a sample, the
	// share that failed (or lost their session) for each cause.
	for _, c := range causes {
		s := mk("rpc.error_rate."+c.String(), "RPCs failing: "+c.String(), "% of RPCs")
		for k := 0; k < samples; k++ {
			b := bucket(k)
			s.Values[k] = math.NaN()
			if n := b.ok + b.failed; n > 0 {
				s.Values[k] = 100 * float64(b.byCause[c]) / float64(n)
			}
		}
		out = append(out, s)
	}

	success := mk("rpc.success_ratio", "RPC success ratio", "ratio")
	retries := mk("retries.rate", "Retry attempts per second", "retries/s")
	amp := mk("retries.amplification", "Attempts per RPC (retry amplification)", "attempts/RPC")
	for k := 0; k < samples; k++ {
		b := bucket(k)
		success.Values[k] = math.NaN()
		if b.ok+b.failed > 0 {
			success.Values[k] = float64(b.ok) / float64(b.ok+b.failed)
		}
		retries.Values[k] = float64(b.retries) * perSec
		amp.Values[k] = math.NaN()
		if first := b.attempts - b.retries; first > 0 {
			amp.Values[k] = float64(b.attempts) / float64(first)
		}
	}
	out = append(out, success)
	out = append(out, w.latencySeries(samples)...)
	for _, c := range reportedCodes {
		if w.dp.byCode[c.code] == 0 {
			continue
		}
		s := mk("rpc.rate."+c.name, "RPCs per second ending "+c.name, "RPCs/s")
		for k := 0; k < samples; k++ {
			s.Values[k] = float64(bucket(k).byCode[c.code]) * perSec
		}
		out = append(out, s)
	}
	out = append(out, retries, amp)
	if w.dp.sessionsStarted > 0 {
		s := mk("sessions.affinity_breaks", "Sessions whose backend was lost, per second (gRFC A55)", "breaks/s")
		for k := 0; k < samples; k++ {
			s.Values[k] = float64(bucket(k).breaks) * perSec
		}
		out = append(out, s)
	}
	return out
}

// successRatio is the share of rpcs that did not fail; 1 when there were
// none.
func successRatio(rpcs, failed int) float64 {
	if rpcs == 0 {
		return 1
	}
	return float64(rpcs-failed) / float64(rpcs)
}

// quantile is the empirical p-quantile of sorted values; 0 when there are
// none.
func quantile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return stat.Quantile(p, stat.Empirical, sorted, nil)
}

// groupMetrics adds the figures of each group under groups.<name>.
func groupMetrics(cfg *Config, w *world, add func(string, float64)) {
	durs := make([][]float64, len(cfg.Groups))
	if w != nil {
		for i := range w.dp.windows {
			r := &w.dp.windows[i]
			g := w.clients[w.insts[r.inst].client].group
			durs[g] = append(durs[g], r.w.Duration().Seconds())
		}
	}
	for gi, g := range cfg.Groups {
		var c groupCounters
		if w != nil {
			c = w.groups[gi]
		}
		p := "groups." + g.Name + "."
		add(p+"rpc.total", float64(c.rpcs))
		add(p+"rpc.failed", float64(c.failed))
		add(p+"rpc.success_ratio", successRatio(c.rpcs, c.failed))
		d := durs[gi]
		slices.Sort(d)
		total := 0.0
		for _, x := range d {
			total += x
		}
		add(p+"failure_windows.count", float64(len(d)))
		add(p+"failure_windows.client_seconds", total)
		add(p+"failure_windows.duration_seconds.p99", quantile(d, 0.99))
		add(p+"xds.resource_timer_fired", float64(c.timerFired))
		add(p+"xds.resource_timer_spurious", float64(c.timerSpurious))
		add(p+"xds.fallback_switches", float64(c.fallbackSwitches))
		add(p+"sessions.affinity_breaks", float64(c.affinityBreaks))
		add(p+"retries.attempts", float64(c.retries))
	}
}

// windowIntervals lists the failure windows as intervals.
func (w *world) windowIntervals() []Interval {
	out := make([]Interval, 0, len(w.dp.windows))
	for i := range w.dp.windows {
		r := &w.dp.windows[i]
		inst := &w.insts[r.inst]
		g := &w.cfg.Groups[w.clients[inst.client].group]
		in := Interval{
			Entity: fmt.Sprintf("%s/%s", w.clientName(inst.client), g.Targets[inst.target]),
			Kind:   WindowKind(r.w.Cause()),
			Start:  time.Duration(r.w.Start), End: time.Duration(r.w.End),
		}
		if r.source >= 0 {
			in.Source = w.sources[r.source]
		}
		out = append(out, in)
	}
	return out
}
