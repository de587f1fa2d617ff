package fleet

import (
	"strings"
	"time"

	"github.com/xdssim/xdssim/model/dataplane"
)

// Results is everything one run produced, in the form the outputs need it.
// It holds no wall-clock figures: two runs of the same scenario and seed
// produce equal Results.
type Results struct {
	// Scenario is the scenario's name; Description its one-line description.
	Scenario    string
	Description string
	// Seed is the run seed every random stream was derived from.
	Seed uint64
	// Clients is the number of simulated clients in the fleet.
	Clients int
	// Duration is the virtual time the run covered.
	Duration time.Duration
	// Events is the number of kernel events processed.
	Events uint64
	// ReplayedRPCs counts the RPCs taken one by one in replayed bulk runs
	// (a backend failed some of them), not as kernel events: what the
	// bulk path covered, for tests and benchmarks to see.
	ReplayedRPCs int
	// Groups are the fleet's groups, in scenario order.
	Groups []GroupInfo

	// SampleInterval is the virtual time between two samples. Sample i was
	// taken at virtual time i*SampleInterval, so every Series has one value
	// per sample and len(Values) == Samples for all of them.
	SampleInterval time.Duration
	Samples        int
	// Series are the time series sampled over the run, in a fixed order.
	Series []Series

	// Metrics are the headline figures, each under a dotted path that is
	// its place in summary.json ("fleet.clients_started"). They are sorted
	// by Path.
	Metrics []Metric

	// Tracks follow a deterministic sample of at most MaxTracks XdsClient
	// instances through the run, one TrackState per TrackInterval: column
	// k covers the samples from k*TrackInterval/SampleInterval on.
	TrackInterval time.Duration
	Tracks        []Track

	// Histograms are distributions of values observed during the run.
	Histograms []Histogram

	// RPCLatency is the distribution of the fleet's RPC latencies, each
	// from the RPC's start to its final status (latency.go).
	RPCLatency LatencyHistogram

	// Intervals are per-entity spans of virtual time (a client's lifetime,
	// later its RPC failure windows), sorted by Start, then Entity.
	Intervals []Interval

	// Faults are the spans of virtual time in which the scenario injected
	// something (a restart, an outage); reports shade them on every chart.
	Faults []Fault

	// Resolved is the scenario as run, with every default filled in, as
	// TOML: enough to reproduce the run from the report alone.
	Resolved string
	// WhatIf lists the scenario's hypothetical settings (Config.WhatIf);
	// empty for a run of what shipping clients do.
	WhatIf []WhatIf
	// Unmodelled lists what the simulator does not model of the
	// resources served verbatim (Config.Unmodelled).
	Unmodelled []ResourceNote
	// Routing is where RPCs went per cluster and locality, for runs that
	// serve a user's own resources; nil otherwise.
	Routing *Routing

	// XdsClientMetrics are gRFC A78's XdsClient metrics over the run,
	// one series per instrument, group and label values, one value per
	// sample (a78.go).
	XdsClientMetrics []XdsClientMetric
}

// Series is one sampled time series.
type Series struct {
	// Name identifies the series ("clients.running"); Title is for people.
	Name  string
	Title string
	// Unit names what a value counts ("clients", "events/s").
	Unit string
	// Values holds one value per sample.
	Values []float64
}

// Metric is one headline figure.
type Metric struct {
	Path  string
	Value float64
}

// Interval is a span of virtual time of one entity.
type Interval struct {
	Entity string
	Kind   string
	Start  time.Duration
	End    time.Duration
	// Source, for a failure window, labels the fault, restart, backend
	// event or config change that caused it (Fault.Label); "" when none
	// of them explains it.
	Source string
}

// windowKindPrefix begins the Kind of an Interval that is an RPC failure
// window; the name of its root cause follows.
const windowKindPrefix = "failure_window/"

// WindowKind is the Kind of the Interval of an RPC failure window with root
// cause c: "failure_window/" and the cause's name.
func WindowKind(c dataplane.Cause) string { return windowKindPrefix + c.String() }

// WindowCause returns the root cause of an Interval that is an RPC failure
// window; ok is false for any other Interval.
func (in Interval) WindowCause() (c dataplane.Cause, ok bool) {
	name, ok := strings.CutPrefix(in.Kind, windowKindPrefix)
	if !ok {
		return 0, false
	}
	return dataplane.ParseCause(name)
}

// Fault is a span of virtual time in which a fault or scenario event was
// active.
type Fault struct {
	// Kind is KindFault, KindRestart, KindBackend or KindChange.
	Kind  string
	Label string
	Start time.Duration
	// End is when it ended; a change's is its time.
	End time.Duration
	// Windows is how many RPC failure windows it caused: those whose
	// root cause it is (ground truth: what it broke, where, when).
	Windows int
	// Recovery is how long after End its own failure windows went on; 0
	// when none outlasted it, or it caused none.
	Recovery time.Duration
}

// GroupInfo describes one group of clients.
type GroupInfo struct {
	Name    string
	Clients int
	// Profile is the XdsClient profile the group's clients run
	// ("grpc-go"); "" for a group that uses no xDS.
	Profile string
}

// Histogram counts observed values in buckets.
type Histogram struct {
	// Name identifies the histogram ("xds.ads_backoff"); Title is for
	// people; Unit is the unit of the values ("s").
	Name, Title, Unit string
	// Bounds are the buckets' upper bounds, ascending: Counts[i] counts
	// the values in (Bounds[i-1], Bounds[i]] (Counts[0] those at most
	// Bounds[0]), and the last of Counts, one more than Bounds, those
	// above the last bound.
	Bounds []float64
	Counts []int
	// Sum is the sum of the values; Count how many there were.
	Sum   float64
	Count int
}

// Value returns the number summary.json holds for r at the dotted path:
// one of the numeric header keys ("seed", "clients", "virtual_seconds",
// "events") or the path of a Metric ("fleet.clients_started"). It reports
// false for any other path, including one that names an object of the
// summary ("fleet") rather than a number, and for a nil r.
func (r *Results) Value(path string) (float64, bool) {
	if r == nil {
		return 0, false
	}
	switch path {
	case "seed":
		return float64(r.Seed), true
	case "clients":
		return float64(r.Clients), true
	case "virtual_seconds":
		return r.Duration.Seconds(), true
	case "events":
		return float64(r.Events), true
	}
	for _, m := range r.Metrics {
		if m.Path == path {
			return m.Value, true
		}
	}
	return 0, false
}
