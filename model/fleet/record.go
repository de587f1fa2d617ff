package fleet

import (
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"

	"github.com/xdssim/xdssim/model/controlplane"

	"github.com/xdssim/xdssim/model/network"
	"github.com/xdssim/xdssim/sim"
)

// fleetCounters are the fleet-wide xDS figures, kept up to date as events
// run so that a sample reads them without scanning the fleet.
type fleetCounters struct {
	// primary counts instances' channels to their first server by state.
	primary [network.Shutdown + 1]int
	// onFallback and complete count instances on a fallback server and
	// instances with their whole config cached.
	onFallback, complete int

	resourceTimerFired                int
	timerFiredSinceSample             int
	fallbackSwitches, fallbackReverts int
	nacksSent                         int
	streamsFailedBeforeResponse       int
	changesSkipped                    int
	// keepaliveCloses counts xDS transports closed by keepalive or
	// TCP_USER_TIMEOUT (keepalive.go).
	keepaliveCloses int
}

// groupCounters are the figures summary.json reports per group, under
// groups.<name>, so that groups that differ in one setting can be compared
// in one run.
type groupCounters struct {
	rpcs, failed              int
	timerFired, timerSpurious int
	fallbackSwitches          int
	affinityBreaks, retries   int
	// instances counts the group's XdsClient instances.
	instances int
}

// group returns the counters of the group of instance ii.
func (w *world) group(ii uint32) *groupCounters {
	return &w.groups[w.clients[w.insts[ii].client].group]
}

// Series of the fleet, in the order they are reported.
const (
	seriesRunning = iota
	seriesDown
	seriesStarts
	seriesReady
	seriesConnecting
	seriesTransientFailure
	seriesIdle
	seriesComplete
	seriesFallback
	seriesTimerFirings
	seriesStatus   // the first of the cache status series, in statusSeries order
	numFleetSeries = seriesStatus + len(statusSeries)
)

// statusSeries are the CSDS statuses the cache status series count, in
// the order they are reported.
var statusSeries = [...]struct {
	status adminpb.ClientResourceStatus
	name   string
}{
	{adminpb.ClientResourceStatus_REQUESTED, "requested"},
	{adminpb.ClientResourceStatus_ACKED, "acked"},
	{adminpb.ClientResourceStatus_NACKED, "nacked"},
	{adminpb.ClientResourceStatus_DOES_NOT_EXIST, "does_not_exist"},
	{adminpb.ClientResourceStatus_TIMEOUT, "timeout"},
	{adminpb.ClientResourceStatus_RECEIVED_ERROR, "received_error"},
}

// Histograms of the run, in the order they are reported.
const (
	histConnBackoff = iota
	histADSBackoff
	numHists
)

// backoffBounds are the bucket bounds of the backoff histograms, in
// seconds: the R10 preferred numbers (1, 1.25, 1.6, 2, …, 8) from 10 ms to
// 1000 s, so every bucket is about 25 % wider than the one before.
var backoffBounds = func() []float64 {
	r10 := []float64{1, 1.25, 1.6, 2, 2.5, 3.15, 4, 5, 6.3, 8}
	var b []float64
	for decade := 0.01; decade < 1000; decade *= 10 {
		for _, m := range r10 {
			b = append(b, math.Round(m*decade*1e4)/1e4)
		}
	}
	return append(b, 1000)
}()

func (w *world) buildHistograms() {
	h := func(name, title string) Histogram {
		return Histogram{Name: name, Title: title, Unit: "s", Bounds: backoffBounds, Counts: make([]int, len(backoffBounds)+1)}
	}
	w.hists = [numHists]Histogram{
		histConnBackoff: h("network.connect_backoff", "Connection backoff delays of XdsClient channels (gRPC connection-backoff)"),
		histADSBackoff:  h("xds.ads_backoff", "ADS stream retry delays (gRFC A57 backoff)"),
	}
}

// observe adds a value to the histogram.
func (h *Histogram) observe(v float64) {
	i, _ := slices.BinarySearch(h.Bounds, v)
	h.Counts[i]++
	h.Sum += v
	h.Count++
}

// Per-server series, in the order they are reported.
const (
	cpOpenStreams = iota
	cpNewStreams
	cpRequests
	cpResponses
	cpACKs
	cpNACKs
	cpQueue
	cpLatencyP99
	numServerSeries
)

func (w *world) buildSeries() {
	n := int(w.cfg.Duration/w.cfg.SampleInterval) + 1
	s := func(name, title, unit string) Series {
		return Series{Name: name, Title: title, Unit: unit, Values: make([]float64, 0, n)}
	}
	w.series = []Series{
		seriesRunning: s("clients.running", "Clients running", "clients"),
		seriesDown:    s("clients.restarting", "Clients down for a restart", "clients"),
		seriesStarts:  s("clients.starts", "Client starts per second", "starts/s"),
	}
	if len(w.insts) > 0 {
		w.series = append(w.series[:seriesReady],
			s("xds.primary_ready", "XdsClient channels to their primary server: READY", "channels"),
			s("xds.primary_connecting", "XdsClient channels to their primary server: CONNECTING", "channels"),
			s("xds.primary_transient_failure", "XdsClient channels to their primary server: TRANSIENT_FAILURE", "channels"),
			s("xds.primary_idle", "XdsClient channels to their primary server: IDLE", "channels"),
			s("xds.config_complete", "XdsClient instances with every resource of their target cached", "instances"),
			s("xds.on_fallback", "XdsClient instances on a fallback server (gRFC A71)", "instances"),
			s("xds.resource_timer_firings", "Does-not-exist timer firings per second (gRFC A57)", "firings/s"),
		)
		for _, st := range statusSeries {
			w.series = append(w.series, s("xds.resources."+st.name,
				"Cache entries by CSDS status: "+st.status.String(), "entries"))
		}
	}
	for _, srv := range w.servers {
		p := "control_plane." + srv.Name() + "."
		t := srv.Name() + ": "
		first := len(w.series)
		w.series = append(w.series,
			s(p+"open_streams", t+"open ADS streams", "streams"),
			s(p+"new_streams", t+"new ADS streams per second", "streams/s"),
			s(p+"requests", t+"DiscoveryRequests per second", "requests/s"),
			s(p+"responses", t+"DiscoveryResponses per second", "responses/s"),
			s(p+"acks", t+"ACKs per second", "ACKs/s"),
			s(p+"nacks", t+"NACKs per second", "NACKs/s"),
			s(p+"queue_depth", t+"requests waiting for a worker", "requests"),
			s(p+"latency_p99", t+"response latency p99 (queue + service)", "ms"),
		)
		idx := make([]int, numServerSeries)
		for i := range idx {
			idx[i] = first + i
		}
		w.serverSe = append(w.serverSe, idx)
	}
	// With more than one group using xDS, the share of each group's
	// instances whose ADS stream to their primary is connected (gRFC A78
	// grpc.xds_client.connected): implementations that reconnect on
	// different schedules show apart.
	xdsGroups := 0
	for _, g := range w.groups {
		if g.instances > 0 {
			xdsGroups++
		}
	}
	if xdsGroups > 1 {
		for gi, g := range w.groups {
			if g.instances == 0 {
				continue
			}
			name := w.cfg.Groups[gi].Name
			w.groupSe = append(w.groupSe, groupSeries{group: gi, index: len(w.series)})
			w.series = append(w.series, s("xds.primary_connected_percent."+name,
				"Group "+name+": XdsClient instances connected to their primary server (gRFC A78 grpc.xds_client.connected), % of its instances", "%"))
		}
	}
}

// groupSeries is one group's series: the group and the series' index.
type groupSeries struct{ group, index int }

// perSample turns a count since the last sample into a rate per second.
// The sample at 0 counts what happened at exactly 0, and is not a rate.
func (w *world) perSample() float64 {
	if w.sample == 0 {
		return 1
	}
	return 1 / w.cfg.SampleInterval.Seconds()
}

func (w *world) takeSample(t sim.Time) {
	add := func(i int, v float64) { w.series[i].Values = append(w.series[i].Values, v) }
	add(seriesRunning, float64(w.running))
	add(seriesDown, float64(w.down))
	add(seriesStarts, float64(w.startsSinceSample)*w.perSample())
	w.startsSinceSample = 0
	if len(w.insts) > 0 {
		add(seriesReady, float64(w.fx.primary[network.Ready]))
		add(seriesConnecting, float64(w.fx.primary[network.Connecting]))
		add(seriesTransientFailure, float64(w.fx.primary[network.TransientFailure]))
		add(seriesIdle, float64(w.fx.primary[network.Idle]))
		add(seriesComplete, float64(w.fx.complete))
		add(seriesFallback, float64(w.fx.onFallback))
		add(seriesTimerFirings, float64(w.fx.timerFiredSinceSample)*w.perSample())
		w.fx.timerFiredSinceSample = 0
	}
	// One pass over the instances samples the gRFC A78 series and
	// counts what the status and group series below read.
	w.sampleA78()
	if len(w.insts) > 0 {
		for i, st := range statusSeries {
			add(seriesStatus+i, float64(w.a78.statuses[st.status]))
		}
	}
	for _, gs := range w.groupSe {
		add(gs.index, 100*float64(w.a78.connectedToFirst[gs.group])/float64(w.groups[gs.group].instances))
	}
	w.sampleTracks(w.sample)
	for si, srv := range w.servers {
		smp := srv.Sample(t)
		idx := w.serverSe[si]
		add(idx[cpOpenStreams], float64(smp.OpenStreams))
		add(idx[cpNewStreams], smp.NewStreamsPerSec)
		add(idx[cpRequests], smp.RequestsPerSec)
		add(idx[cpResponses], smp.ResponsesPerSec)
		add(idx[cpACKs], float64(smp.ACKs)*w.perSample())
		add(idx[cpNACKs], float64(smp.NACKs)*w.perSample())
		add(idx[cpQueue], float64(smp.QueueDepth))
		add(idx[cpLatencyP99], float64(smp.LatencyP99.Microseconds())/1000)
	}
	w.sample++
	if w.progress != nil {
		w.progress(time.Duration(t), w.cfg.Duration)
	}
}

// metrics returns the headline figures of a run of cfg, sorted by path.
// It depends on the run only through the figures it reads, so that
// [MetricPaths] lists the same paths for a run that has not happened.
func metrics(cfg *Config, w *world) []Metric {
	var m []Metric
	add := func(path string, v float64) { m = append(m, Metric{Path: path, Value: v}) }
	var fx fleetCounters
	var fleetFig [3]int
	if w != nil {
		fx, fleetFig = w.fx, [3]int{w.peakDown, w.restarts, w.starts}
	}
	add("fleet.peak_restarting", float64(fleetFig[0]))
	add("fleet.restarts", float64(fleetFig[1]))
	add("fleet.starts", float64(fleetFig[2]))
	insts := 0
	for _, g := range cfg.Groups {
		if len(g.Servers) > 0 {
			insts += g.Clients * len(g.Targets)
		}
	}
	add("xds.resource_timer_fired", float64(fx.resourceTimerFired))
	add("xds.fallback_switches", float64(fx.fallbackSwitches))
	add("xds.fallback_reverts", float64(fx.fallbackReverts))
	add("xds.nacks_sent", float64(fx.nacksSent))
	add("xds.streams_failed_before_response", float64(fx.streamsFailedBeforeResponse))
	add("xds.keepalive_closes", float64(fx.keepaliveCloses))
	add("xds.instances", float64(insts))
	add("xds.changes_skipped", float64(fx.changesSkipped))
	for si, cp := range cfg.ControlPlanes {
		var t controlplane.Totals
		if w != nil {
			t = w.servers[si].Totals()
		}
		p := "control_plane." + cp.Server.Name + "."
		add(p+"streams_opened", float64(t.StreamsOpened))
		add(p+"streams_rejected", float64(t.StreamsRejected))
		add(p+"requests", float64(t.Requests))
		add(p+"responses", float64(t.Responses))
		add(p+"acks", float64(t.ACKs))
		add(p+"nacks", float64(t.NACKs))
		add(p+"peak_open_streams", float64(t.PeakOpenStreams))
		add(p+"peak_queue_depth", float64(t.PeakQueueDepth))
	}
	dataPlaneMetrics(cfg, w, add)
	latencyMetrics(cfg, w, add)
	groupMetrics(cfg, w, add)
	sort.Slice(m, func(i, j int) bool { return m[i].Path < m[j].Path })
	return m
}

// HeaderPaths are the numeric figures of summary.json's header that a
// sweep may bound or chart beside the Metrics (see Results.Value).
var HeaderPaths = []string{"clients", "events", "virtual_seconds"}

// MetricPaths lists the paths of the headline figures a run of cfg
// reports (Results.Metrics), sorted: what a scenario's expectations may
// name.
func MetricPaths(cfg *Config) []string {
	m := metrics(cfg, nil)
	paths := make([]string, len(m))
	for i := range m {
		paths[i] = m[i].Path
	}
	return paths
}

// MetricRange returns the values a summary.json figure at path can take
// and whether it counts events (a whole number), from the way the figures
// are named: a ratio ("success_ratio") lies in [0, 1], a percentage
// ("_percent") in [0, 100], a span of time ("_seconds", "client_seconds", a
// quantile such as "duration_seconds.p99") or an amplification is a non-negative real, and
// every other figure counts something. Every figure of summary.json is
// non-negative.
func MetricRange(path string) (lo, hi float64, count bool) {
	last := path[strings.LastIndexByte(path, '.')+1:]
	switch {
	case strings.HasSuffix(path, "success_ratio"):
		return 0, 1, false
	case strings.HasSuffix(path, "_percent"):
		return 0, 100, false
	case strings.HasSuffix(last, "_seconds") || strings.Contains(path, "_seconds.") || last == "amplification":
		return 0, math.Inf(1), false
	}
	return 0, math.Inf(1), true
}
