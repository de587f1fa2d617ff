package fleet

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/xdssim/xdssim/sim"
)

// RPC latency: each RPC's time from its start to its final status, its
// wait for a first config, every attempt, the retry backoff and the
// deadline included (an RPC that runs out of deadline took exactly its
// deadline). RPCs without a final status (their client stopped, or the run
// ended, while they were in flight) have none, as they have no code.
//
// Latencies go into log-bucketed histograms of a fixed layout, the
// log-linear layout of HdrHistogram (Tene): durations below 128 ns have a
// bucket each; above, every power of two [2^e, 2^(e+1)) is cut into 64
// buckets of equal width 2^(e−6), so that a bucket is at most 1/64 of its
// lower bound wide; 2^48 ns (78 hours) and beyond share the last bucket. A
// bucket keeps the count and the sum of its durations, and a quantile is
// the mean of the durations in the bucket that holds it: in the same
// bucket as the true empirical quantile, so less than 1/64 (1.6 %) from
// it, and exact when every duration of that bucket is the same (a
// constant service time, an RPC deadline).

const (
	latSubBits  = 6
	latSub      = 1 << latSubBits // buckets per power of two
	latLinear   = 2 * latSub      // durations below this have a bucket each
	latMaxExp   = 47              // the last power of two with buckets of its own
	latBuckets  = latLinear + (latMaxExp-latSubBits)*latSub
	latMaxValue = 1<<(latMaxExp+1) - 1
)

// latBucket returns the index of the bucket that holds d.
func latBucket(d time.Duration) int {
	v := uint64(min(max(d, 0), latMaxValue))
	if v < latLinear {
		return int(v)
	}
	e := bits.Len64(v) - 1 // v is in [2^e, 2^(e+1)), e > latSubBits
	return latLinear + (e-latSubBits-1)*latSub + int(v>>(e-latSubBits))&(latSub-1)
}

// latBounds returns the durations bucket i holds: [lo, hi).
func latBounds(i int) (lo, hi time.Duration) {
	if i < latLinear {
		return time.Duration(i), time.Duration(i + 1)
	}
	j := i - latLinear
	e := j/latSub + latSubBits + 1
	w := time.Duration(1) << (e - latSubBits)
	lo = time.Duration(latSub+j%latSub) * w
	return lo, lo + w
}

// LatencyHistogram is a distribution of RPC latencies in the fixed
// log-bucketed layout described in latency.go: a bucket at most 1/64 of
// its lower bound wide, its count and the sum of its durations. The zero
// value is empty.
type LatencyHistogram struct {
	counts []int64
	sums   []float64 // nanoseconds; exact while below 2^53
	n      int64
}

// add records k latencies of d, which are in bucket i.
func (h *LatencyHistogram) add(i int, d time.Duration, k int) {
	if h.counts == nil {
		h.counts = make([]int64, latBuckets)
		h.sums = make([]float64, latBuckets)
	}
	h.counts[i] += int64(k)
	h.sums[i] += float64(k) * float64(d)
	h.n += int64(k)
}

// merge adds o's latencies to h.
func (h *LatencyHistogram) merge(o *LatencyHistogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		if c > 0 {
			if h.counts == nil {
				h.counts = make([]int64, latBuckets)
				h.sums = make([]float64, latBuckets)
			}
			h.counts[i] += c
			h.sums[i] += o.sums[i]
		}
	}
	h.n += o.n
}

// Count returns how many latencies h holds.
func (h *LatencyHistogram) Count() int64 { return h.n }

// Quantile returns the empirical p-quantile of h's latencies, the
// smallest latency at or above a share p of them (gonum's
// stat.Empirical), as the mean of its bucket's latencies; 0 when h is
// empty.
func (h *LatencyHistogram) Quantile(p float64) time.Duration {
	return bucketQuantile(h.n, p, func(yield func(n int64, sum float64) bool) {
		for i, c := range h.counts {
			if c > 0 && !yield(c, h.sums[i]) {
				return
			}
		}
	})
}

// Counts returns how many latencies each bucket holds, in the order of
// the buckets, which is every histogram's; the caller must not change it.
// Two histograms' cumulative counts compare their distributions at the
// buckets' bounds (a Kolmogorov–Smirnov distance on binned data).
func (h *LatencyHistogram) Counts() []int64 {
	if h.counts == nil {
		return make([]int64, latBuckets)
	}
	return h.counts
}

// bucketQuantile returns the empirical p-quantile of n latencies whose
// buckets' counts and sums buckets yields in ascending order: the mean of
// the bucket that holds the smallest latency at or above a share p of
// them.
func bucketQuantile(n int64, p float64, buckets func(yield func(n int64, sum float64) bool)) time.Duration {
	if n == 0 {
		return 0
	}
	var q time.Duration
	var cum int64
	buckets(func(c int64, sum float64) bool {
		cum += c
		q = time.Duration(math.Round(sum / float64(c)))
		return float64(cum)/float64(n) < p
	})
	return q
}

// latencyQuantiles are the quantiles summary.json reports, by name.
var latencyQuantiles = []struct {
	name string
	p    float64
}{{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}, {"p999", 0.999}}

// sampleLatency is one bucket of the latencies of the RPCs that ended in
// one sample interval: key is the sample << 32 | the bucket, plus one (0:
// an empty slot of sampleTable).
type sampleLatency struct {
	key uint64
	n   int64
	sum float64
}

// sampleTable holds the latencies of the RPCs that ended in each sample
// interval, by sample and bucket: most samples use few buckets, so they
// are kept in a hash table (open addressing, linear probing, at most half
// full) rather than as a histogram per sample. Only sorted does its order
// show, so the run stays deterministic.
type sampleTable struct {
	slots []sampleLatency // a power of two of them
	used  int
}

// add records k latencies of d, in bucket i, in sample.
func (t *sampleTable) add(sample, i int, d time.Duration, k int) {
	if 2*(t.used+1) > len(t.slots) {
		t.grow()
	}
	key := uint64(sample)<<32 | uint64(i) + 1
	mask := uint64(len(t.slots) - 1)
	j := (key * sim.Golden) >> 32 & mask
	for t.slots[j].key != key && t.slots[j].key != 0 {
		j = (j + 1) & mask
	}
	s := &t.slots[j]
	if s.key == 0 {
		s.key = key
		t.used++
	}
	s.n += int64(k)
	s.sum += float64(k) * float64(d)
}

// grow doubles the table.
func (t *sampleTable) grow() {
	old := t.slots
	t.slots, t.used = make([]sampleLatency, max(2*len(old), 256)), 0
	mask := uint64(len(t.slots) - 1)
	for _, s := range old {
		if s.key == 0 {
			continue
		}
		j := (s.key * sim.Golden) >> 32 & mask
		for t.slots[j].key != 0 {
			j = (j + 1) & mask
		}
		t.slots[j] = s
		t.used++
	}
}

// sorted returns the table's entries by sample, then bucket.
func (t *sampleTable) sorted() []sampleLatency {
	out := make([]sampleLatency, 0, t.used)
	for _, s := range t.slots {
		if s.key != 0 {
			s.key--
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b sampleLatency) int { return cmp.Compare(a.key, b.key) })
	return out
}

// latencies are the run's RPC latencies: a histogram per group and target,
// and, for the series, the latencies that ended in each sample interval.
type latencies struct {
	// hists holds group g's target t at first[g] + t.
	hists    []LatencyHistogram
	first    []int
	bySample sampleTable
	// rng draws the latencies of a bulk run's RPCs that ended
	// (settleSteady), from a stream of their own, so that settleSteady's
	// other draws are those of a run without them.
	rng sim.Rand
}

func (w *world) buildLatencies() {
	l := &w.lat
	l.first = make([]int, len(w.cfg.Groups))
	n := 0
	for gi, g := range w.cfg.Groups {
		l.first[gi] = n
		n += len(g.Targets)
	}
	l.hists = make([]LatencyHistogram, n)
}

// latencyHist returns the latency histogram of instance ii's group and
// target.
func (w *world) latencyHist(ii uint32) *LatencyHistogram {
	inst := &w.insts[ii]
	return &w.lat.hists[w.lat.first[w.clients[inst.client].group]+int(inst.target)]
}

// recordLatency records k RPCs of instance ii that ended at t, each d
// after it began.
func (w *world) recordLatency(ii uint32, t sim.Time, d time.Duration, k int) {
	w.lat.record(w.latencyHist(ii), w.sampleOf(t), d, k)
}

// record records k latencies of d in h and in sample.
func (l *latencies) record(h *LatencyHistogram, sample int, d time.Duration, k int) {
	i := latBucket(d)
	h.add(i, d, k)
	l.bySample.add(sample, i, d, k)
}

// latencyMetrics adds the RPC latency quantiles, in seconds: the fleet's
// under rpc.latency_seconds, each group's under
// groups.<group>.rpc.latency_seconds and, in a group with several
// targets, each target's under groups.<group>.targets.<target>.rpc.latency_seconds.
func latencyMetrics(cfg *Config, w *world, add func(string, float64)) {
	quantiles := func(prefix string, h *LatencyHistogram) {
		for _, q := range latencyQuantiles {
			add(prefix+"rpc.latency_seconds."+q.name, h.Quantile(q.p).Seconds())
		}
	}
	var fleetHist LatencyHistogram
	for gi, g := range cfg.Groups {
		var group LatencyHistogram
		for t, target := range g.Targets {
			var h LatencyHistogram
			if w != nil {
				h = w.lat.hists[w.lat.first[gi]+t]
			}
			group.merge(&h)
			if len(g.Targets) > 1 {
				quantiles("groups."+g.Name+".targets."+target+".", &h)
			}
		}
		fleetHist.merge(&group)
		quantiles("groups."+g.Name+".", &group)
	}
	quantiles("", &fleetHist)
}

// fleetLatency returns the fleet's latency histogram.
func (w *world) fleetLatency() LatencyHistogram {
	var h LatencyHistogram
	for i := range w.lat.hists {
		h.merge(&w.lat.hists[i])
	}
	return h
}

// latencySeries are the p50 and p99 of the latencies of the RPCs that
// ended in each sample interval, in milliseconds; NaN in a sample in which
// none did.
func (w *world) latencySeries(samples int) []Series {
	p50 := Series{Name: "rpc.latency_p50", Title: "RPC latency p50 (RPCs ended in the sample)", Unit: "ms", Values: make([]float64, samples)}
	p99 := Series{Name: "rpc.latency_p99", Title: "RPC latency p99 (RPCs ended in the sample)", Unit: "ms", Values: make([]float64, samples)}
	ss := w.lat.bySample.sorted()
	for k := range samples {
		p50.Values[k], p99.Values[k] = math.NaN(), math.NaN()
	}
	for i := 0; i < len(ss); {
		k := int(ss[i].key >> 32)
		j := i
		var n int64
		for ; j < len(ss) && int(ss[j].key>>32) == k; j++ {
			n += ss[j].n
		}
		if k < samples {
			one := ss[i:j]
			q := func(p float64) float64 {
				d := bucketQuantile(n, p, func(yield func(int64, float64) bool) {
					for _, s := range one {
						if !yield(s.n, s.sum) {
							return
						}
					}
				})
				return float64(d) / float64(time.Millisecond)
			}
			p50.Values[k], p99.Values[k] = q(0.5), q(0.99)
		}
		i = j
	}
	return []Series{p50, p99}
}
