package fidelity

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/xdssim/xdssim/validate/grpcgo"
)

// Processing is what a real run's NACK storms show of the time grpc-go
// takes to process a response and go-control-plane to answer a request:
// the figures the scenario defaults of fleet.group[].processing_time and
// control_plane[].processing_time are measured from.
//
// In a storm the server's socket sees a strict alternation: it reads a
// NACK, writes the response, reads the next NACK. From the read of a NACK
// to the write of its response is the server's time per request (gRPC's
// read and decoding, go-control-plane's stream loop and cache, the
// response's encoding). From the write of the response to the read of the
// next NACK is the client's time per response plus a round trip: what is
// left once the case's link (its latency both ways) is taken out is the
// client's time, the figure the simulation adds per response.
type Processing struct {
	// Server and Client are the samples, one per request and response.
	Server, Client []time.Duration
	// Link is the case's one-way link latency (its mean).
	Link time.Duration
	// Loopback are round trips through a Proxy on loopback with nothing
	// to process (grpcgo.MeasureLoopback), measured when the run began:
	// the case's link should be about half of their median.
	Loopback []time.Duration
}

// minMessage is the smallest read or write that carries a request or a
// response: HTTP/2 frames of flow control (WINDOW_UPDATE, 13 bytes),
// SETTINGS and PING acknowledgements are smaller.
const minMessage = 64

// measureProcessing derives the processing times from the real run's
// storms: the reads and writes of the storm's server, within the storm.
func measureProcessing(real *RealRun, link time.Duration) *Processing {
	p := &Processing{Link: link, Loopback: real.Loopback}
	for _, name := range real.Names() {
		c := real.Clients[name]
		for _, st := range c.Streams {
			for _, s := range storms([]Stream{st}) {
				for _, conn := range real.Wire[st.Server] {
					p.add(conn, real.Start.Add(s.First), real.Start.Add(s.Last))
				}
			}
		}
	}
	if len(p.Server) == 0 {
		return nil
	}
	return p
}

// add pairs the reads and writes of one connection within [from, to].
func (p *Processing) add(conn []grpcgo.WireEvent, from, to time.Time) {
	var read, wrote time.Time // the last request read, response written, not yet paired
	for _, e := range conn {
		if e.At.Before(from) || e.At.After(to) || e.Bytes < minMessage {
			continue
		}
		if e.Write {
			if !read.IsZero() {
				p.Server = append(p.Server, e.At.Sub(read))
				read = time.Time{}
				wrote = e.At
			}
			continue
		}
		if !wrote.IsZero() {
			p.Client = append(p.Client, e.At.Sub(wrote)-2*p.Link)
			wrote = time.Time{}
		}
		if read.IsZero() {
			read = e.At
		}
	}
}

// Summary is a sample's median, 99th percentile and mean, and the
// log-normal (sim.LogNormal, given by median and p99) with the same
// median and mean: the mean is what sets a storm's rate.
type Summary struct {
	N                 int
	Median, P99, Mean time.Duration
	// FitP99 is the p99 of the log-normal with the sample's median and
	// mean; 0 when the mean is not above the median.
	FitP99 time.Duration
}

// Summarize sums a sample up.
func Summarize(d []time.Duration) Summary {
	if len(d) == 0 {
		return Summary{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	var sum time.Duration
	for _, x := range s {
		sum += x
	}
	out := Summary{N: len(s), Median: s[len(s)/2], P99: s[len(s)*99/100], Mean: sum / time.Duration(len(s))}
	if out.Median > 0 && out.Mean > out.Median {
		// Mean = median × exp(σ²/2); p99 = median × exp(z99 σ).
		sigma := math.Sqrt(2 * math.Log(float64(out.Mean)/float64(out.Median)))
		out.FitP99 = time.Duration(float64(out.Median) * math.Exp(2.3263478740408408*sigma))
	}
	return out
}

func (s Summary) String() string {
	fit := ""
	if s.FitP99 > 0 {
		fit = fmt.Sprintf("; log-normal of that median and mean: p99 %v", us(s.FitP99))
	}
	return fmt.Sprintf("median %v, p99 %v, mean %v (%d)%s", us(s.Median), us(s.P99), us(s.Mean), s.N, fit)
}

// us rounds d to the microsecond.
func us(d time.Duration) time.Duration { return d.Round(time.Microsecond) }

// ProcessingTable formats the processing times the cases' storms showed,
// a row per case with storms, as docs/model-fidelity.md records them.
func ProcessingTable(results []*Result) string {
	var b strings.Builder
	for _, r := range results {
		p := r.Processing
		if p == nil {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("| Case | go-control-plane per request | grpc-go per response | Loopback one-way (half a round trip) | The case's link |\n")
			b.WriteString("|---|---|---|---|---|\n")
		}
		lo := Summarize(p.Loopback)
		fmt.Fprintf(&b, "| `%s` | %s | %s | median %v, mean %v (%d round trips) | %v |\n", r.Case,
			Summarize(p.Server), Summarize(p.Client), us(lo.Median/2), us(lo.Mean/2), lo.N, p.Link)
	}
	return b.String()
}
