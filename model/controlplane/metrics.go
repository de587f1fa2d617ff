package controlplane

import (
	"slices"
	"time"

	"github.com/xdssim/xdssim/sim"
)

// Totals are a server's counters over a whole run. The JSON names are the
// keys the fleet publishes under summary.json control_plane.<server>.
type Totals struct {
	// StreamsOpened counts accepted ADS streams; StreamsRejected those
	// refused over Capacity.MaxStreams.
	StreamsOpened   int64 `json:"streams_opened"`
	StreamsRejected int64 `json:"streams_rejected"`
	// Requests counts DiscoveryRequests processed, StaleRequests those
	// among them ignored for a stale nonce.
	Requests      int64 `json:"requests"`
	StaleRequests int64 `json:"stale_requests"`
	// Responses counts DiscoveryResponses sent.
	Responses int64 `json:"responses"`
	// ACKs and NACKs count requests whose response_nonce is the latest
	// nonce of their type on the stream, once per nonce: without and with
	// error_detail.
	ACKs  int64 `json:"acks"`
	NACKs int64 `json:"nacks"`
	// ResourceErrors counts xRFC TP3 resource_errors entries sent.
	ResourceErrors int64 `json:"resource_errors"`
	// PeakOpenStreams and PeakQueueDepth are the largest number of open
	// streams and of requests waiting for a worker at any time.
	PeakOpenStreams int `json:"peak_open_streams"`
	PeakQueueDepth  int `json:"peak_queue_depth"`
}

// Sample is one point of a server's time series: the state at At and
// the activity since the previous sample.
type Sample struct {
	At sim.Time
	// OpenStreams and QueueDepth are the state at At.
	OpenStreams int
	QueueDepth  int
	// Rates per second of virtual time since the previous sample.
	NewStreamsPerSec float64
	RequestsPerSec   float64
	ResponsesPerSec  float64
	// ACKs and NACKs since the previous sample.
	ACKs, NACKs int64
	// Response latency (queue wait plus service time) of the requests
	// completed since the previous sample, nearest-rank percentiles; zero
	// when none completed.
	Completed                               int
	LatencyP50, LatencyP90, LatencyP99, Max time.Duration
}

// metrics accumulates totals and the current sample interval.
type metrics struct {
	totals Totals
	open   int

	lastAt   sim.Time
	last     Totals  // totals at the last sample
	latency  []int64 // latencies completed since the last sample, ns
	scratchL []int64 // reused for sorting
}

func (m *metrics) streamOpened() {
	m.totals.StreamsOpened++
	m.open++
	m.totals.PeakOpenStreams = max(m.totals.PeakOpenStreams, m.open)
}

func (m *metrics) streamClosed() { m.open-- }

func (m *metrics) completed(d time.Duration) { m.latency = append(m.latency, int64(d)) }

// sample closes the interval ending at now.
func (m *metrics) sample(now sim.Time, depth int) Sample {
	s := Sample{At: now, OpenStreams: m.open, QueueDepth: depth}
	if dt := now.Sub(m.lastAt).Seconds(); dt > 0 {
		s.NewStreamsPerSec = float64(m.totals.StreamsOpened-m.last.StreamsOpened) / dt
		s.RequestsPerSec = float64(m.totals.Requests-m.last.Requests) / dt
		s.ResponsesPerSec = float64(m.totals.Responses-m.last.Responses) / dt
	}
	s.ACKs = m.totals.ACKs - m.last.ACKs
	s.NACKs = m.totals.NACKs - m.last.NACKs
	if n := len(m.latency); n > 0 {
		l := append(m.scratchL[:0], m.latency...)
		slices.Sort(l)
		s.Completed = n
		s.LatencyP50 = time.Duration(nearestRank(l, 50))
		s.LatencyP90 = time.Duration(nearestRank(l, 90))
		s.LatencyP99 = time.Duration(nearestRank(l, 99))
		s.Max = time.Duration(l[n-1])
		m.scratchL = l
	}
	m.latency = m.latency[:0]
	m.last = m.totals
	m.lastAt = now
	return s
}

// nearestRank returns the pct-th percentile of sorted x by the
// nearest-rank method: the value of rank ceil(pct·n/100).
func nearestRank(x []int64, pct int) int64 {
	k := (pct*len(x)+99)/100 - 1
	return x[min(max(k, 0), len(x)-1)]
}
