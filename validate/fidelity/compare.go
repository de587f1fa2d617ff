package fidelity

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/model/network"
)

// Tolerance is how far a time of the real run may be from the same time in
// the simulation. Two things make them differ, and it adds both:
//
//   - Sampling: failure windows are seen through RPCs sent every
//     RPCInterval, so each run sees a boundary up to one interval late;
//     a real client's resource states through CSDS, polled every
//     [CSDSPoll]; the client processes start up to StartSkew after their
//     scheduled time; Slack covers goroutine and process scheduling on a
//     loaded 2-core machine. Base is their sum.
//   - Backoff jitter: after a connectivity outage, a client reconnects on
//     its next retry, and the retry times are random (1 s, then ×1.6 each
//     time with a uniform factor in [0.8, 1.2]: grpc-go
//     internal/backoff and the channel's connection backoff, the defaults
//     in docs/model-fidelity.md). The two runs draw different factors, so a time that
//     falls after an outage may lie anywhere in the band of the possible
//     first retries after it. [Outage] derives the band.
type Tolerance struct {
	RPCInterval time.Duration
	StartSkew   time.Duration
	Slack       time.Duration
	Outages     []Outage
}

// Slack is the scheduling slack in every tolerance.
const Slack = 250 * time.Millisecond

// CSDSPoll is how often a real client polls its CSDS resource states
// (package grpcgo).
const CSDSPoll = 100 * time.Millisecond

// Base is the tolerance of a time that follows no outage.
func (t Tolerance) Base() time.Duration { return t.RPCInterval + CSDSPoll + t.StartSkew + t.Slack }

// At returns the tolerance of a time that is at about at in both runs:
// Base, plus the band of every outage whose reconnect band holds at.
func (t Tolerance) At(at time.Duration) time.Duration {
	tol := t.Base()
	for _, o := range t.Outages {
		if at >= o.End-tol && at <= o.End+o.Band+tol {
			tol += o.Band
		}
	}
	return tol
}

// Outage is a span in which clients could not reach a server, and the band
// after its end in which they reconnect.
type Outage struct {
	// End is when the server was reachable again.
	End time.Duration
	// Band is how long after End the first retry may come: the latest
	// first retry after End over every choice of jitter.
	Band time.Duration
}

// ReconnectBand returns how late after an outage of length d a client
// that retried all along may reconnect.
//
// grpc-go retries in two places. The XdsClient retries its ADS stream on
// its own backoff: at 0, then 1 s later (Backoff(0) is exactly 1 s), then
// 1.6^k s × U(0.8, 1.2) after the k-th retry (internal/backoff,
// ads_stream.go). The stream's pick connects the channel only if the
// channel is IDLE: after a refused connect it sits in TRANSIENT_FAILURE
// for its own backoff (the same sequence, clientconn.go
// resetTransportAndUnlock), and a pick then fails at once
// (picker_wrapper.go). So the reconnect comes at a stream retry: the
// first one at or after d, or, if the channel is still in its backoff
// then, the next one. The one after is always in time: the channel's
// backoff after a connect at retry j is at most 1.2·1.6^j s, while the
// two stream gaps after retry j add up to at least 0.8·1.6^j·2.6 s.
//
// With every factor 0.8 the k-th stream retry comes at lo[k], with every
// factor 1.2 at hi[k]; a run's k-th retry lies in [lo[k], hi[k]]. The
// first retry at or after d can be the K-th only if lo[K-1] < d, so the
// reconnect comes at the latest at hi[K+1] for the largest such K.
func ReconnectBand(d time.Duration, kind network.FaultKind) time.Duration {
	timeout := network.DefaultBackoffConfig().MinConnectTimeout
	switch {
	case kind == network.BlackholeHold && d < timeout:
		// The first attempt is still waiting for the server's preface
		// when the hold clears, and completes at once (the bytes held
		// meanwhile are delivered).
		return 0
	case kind == network.Blackhole || kind == network.BlackholeHold:
		// A connect attempt into a blackhole hangs until its deadline,
		// the 20 s minimum connect timeout (grpc
		// doc/connection-backoff.md); when the blackhole clears, the
		// attempt in flight may complete at once or retry a connect
		// timeout later.
		return timeout
	}
	var lo, hi []float64
	ds := d.Seconds()
	for k := 0; ; k++ {
		if k == 0 {
			lo, hi = append(lo, 1), append(hi, 1)
			continue
		}
		step := math.Min(math.Pow(1.6, float64(k)), 120)
		lo, hi = append(lo, lo[k-1]+0.8*step), append(hi, hi[k-1]+1.2*step)
		if lo[k-1] >= ds {
			// lo[k-2] < d <= lo[k-1]: K = k-1, and hi[k] is the latest.
			return time.Duration((hi[k] - ds) * float64(time.Second))
		}
	}
}

// ToleranceFor derives the tolerance of cfg's comparison.
func ToleranceFor(cfg fleet.Config, startSkew time.Duration) Tolerance {
	t := Tolerance{StartSkew: startSkew, Slack: Slack}
	for _, g := range cfg.Groups {
		t.RPCInterval = max(t.RPCInterval, time.Duration(float64(time.Second)/g.RPC.Rate))
	}
	for i := range cfg.Faults {
		f := &cfg.Faults[i]
		if f.Kind != network.ServerDown && f.Kind != network.ServerRestart && f.Kind != network.Blackhole && f.Kind != network.BlackholeHold {
			continue
		}
		end := f.End()
		if end == network.Never || time.Duration(end) >= cfg.Duration {
			continue
		}
		o := Outage{End: time.Duration(end)}
		// The retries began at the fault, or at a client's start within it.
		for _, g := range cfg.Groups {
			start := max(time.Duration(f.Start), g.StartAt)
			if start < o.End {
				o.Band = max(o.Band, ReconnectBand(o.End-start, f.Kind))
			}
		}
		t.Outages = append(t.Outages, o)
	}
	return t
}

// Check is one comparison of one client.
type Check struct {
	Client string
	What   string // "xDS messages", "failure windows", "resource timers", "fallback switches", "NACK storms"
	Pass   bool
	// Count is how many things were compared; MaxDelta the largest time
	// difference among them.
	Count    int
	MaxDelta time.Duration
	// For "NACK storms": Clients is how many clients had one, SimRate
	// and RealRate the storms' rate in each run (NACKs per second), and
	// RateOff the relative difference.
	Clients                    int
	SimRate, RealRate, RateOff float64
	// CalibratedRate and CalibratedOff are the simulated storms' rate,
	// and its difference from the real one, with the processing times
	// the real run measured in place of the defaults (calibrateStorms);
	// 0 when the default comparison passed.
	CalibratedRate, CalibratedOff float64
	// RealRuns holds each real run's rate when the case ran more than
	// once (StormRuns); RealRate is the fastest.
	RealRuns []float64
	Detail   string
}

// Result is the comparison of one case.
type Result struct {
	Case      string
	Tolerance Tolerance
	Checks    []Check
	// Notes are what the simulator does not use or model of the case's
	// own files (Case.Notes).
	Notes []string
	// Processing is what the real run's NACK storms show of the clients'
	// and servers' processing times; nil without a storm.
	Processing *Processing
}

// Pass reports whether every check passed.
func (r *Result) Pass() bool {
	for _, c := range r.Checks {
		if !c.Pass {
			return false
		}
	}
	return true
}

// Compare checks the real run against the simulation, client by client.
func Compare(cfg fleet.Config, sim *Observation, real *RealRun) *Result {
	tol := ToleranceFor(cfg, real.StartSkew)
	res := &Result{Case: cfg.Name, Tolerance: tol, Processing: measureProcessing(real, cfg.Link.Latency.Mean())}
	names := sim.Names()
	for _, n := range real.Names() {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	simStorms, realStorms := map[string][]Storm{}, map[string][]Storm{}
	for _, n := range names {
		s, r := sim.Clients[n], real.Clients[n]
		if s == nil {
			s = &ClientObservation{}
		}
		if r == nil {
			r = &ClientObservation{}
		}
		res.Checks = append(res.Checks,
			compareMessages(n, s.Streams, r.Streams),
			compareTimes(n, "failure windows", tol, windowTimes(s.Windows), windowTimes(r.Windows)),
			compareTimes(n, "resource timers", tol, timerTimes(s.Timers), timerTimes(r.Timers)),
			compareTimes(n, "fallback switches", tol, switchTimes(s.Switches), switchTimes(r.Switches)))
		simStorms[n], realStorms[n] = storms(s.Streams), storms(r.Streams)
	}
	if hasMesh(cfg) {
		for _, n := range names {
			var s, r []ResourceState
			if c := sim.Clients[n]; c != nil {
				s = c.States
			}
			if c := real.Clients[n]; c != nil {
				r = c.States
			}
			res.Checks = append(res.Checks, compareFinalStates(n, s, r))
		}
		res.Checks = append(res.Checks, compareRouting(sim.Routing, real.Routing))
	}
	storm := compareStorms(names, simStorms, realStorms, real.Load)
	if !storm.Pass && storm.SimRate > 0 && res.Processing != nil {
		calibrateStorms(&storm, cfg, res.Processing, names)
	}
	res.Checks = append(res.Checks, storm)
	for i := range cfg.Faults {
		f := &cfg.Faults[i]
		if f.Kind != network.Blackhole && f.Kind != network.BlackholeHold {
			continue
		}
		from, to := time.Duration(f.Start), min(time.Duration(f.End()), cfg.Duration)
		if f.End() == network.Never {
			to = cfg.Duration
		}
		for _, si := range faultServers(cfg, f) {
			name := cfg.ControlPlanes[si].Server.Name
			res.Checks = append(res.Checks, compareConns(name, tol, connsIn(sim.Conns[name], from, to), connsIn(real.Conns[name], from, to)))
		}
	}
	return res
}

// faultServers lists the servers f covers: its own, or every one.
func faultServers(cfg fleet.Config, f *network.Fault) []int {
	if len(f.Servers) > 0 {
		return f.Servers
	}
	out := make([]int, len(cfg.ControlPlanes))
	for i := range out {
		out[i] = i
	}
	return out
}

// connsIn returns the connection events in [from, to).
func connsIn(cs []Conn, from, to time.Duration) []Conn {
	var out []Conn
	for _, c := range cs {
		if c.At >= from && c.At < to {
			out = append(out, c)
		}
	}
	return out
}

// compareConns checks what the clients did to their connections to a
// blackholed server while it was blackholed: as many attempts opened and
// as many connections given up, each at about the same time. The real run
// sees a connect attempt as the connection its proxy accepts (the kernel
// completes the handshake; nothing more comes back, so grpc-go still waits
// for the server's SETTINGS until its deadline) and gives one up when the
// client closes it: at the connect deadline, or when keepalive fails. The
// proxy cannot tell whose connection it is, and the order of two clients'
// events a few milliseconds apart is a race, so opens and give-ups are
// compared as two lists, each in time order.
//
// A time is allowed the base tolerance, plus what backoff jitter may have
// moved it: the two runs draw different factors in [0.8, 1.2] for every
// delay between giving a connection up and opening the next, and for a
// deadline stretched past the 20 s minimum by a long backoff, so each such
// span before an event (in the simulation, all servers' clients merged)
// adds 0.4 times its length to that event's tolerance.
func compareConns(server string, tol Tolerance, sim, real []Conn) Check {
	c := Check{Client: "server " + server, What: "connections in blackholes", Pass: true, Count: len(sim)}
	label := func(opened bool) string {
		if opened {
			return "open"
		}
		return "give up"
	}
	minConnect := network.DefaultBackoffConfig().MinConnectTimeout
	var jitter time.Duration
	allow := make([]time.Duration, len(sim))
	for i := range sim {
		if i > 0 {
			span := sim[i].At - sim[i-1].At
			if sim[i].Opened && !sim[i-1].Opened || !sim[i].Opened && sim[i-1].Opened && span > minConnect {
				jitter += span * 2 / 5
			}
		}
		allow[i] = jitter
	}
	for _, opened := range []bool{true, false} {
		var s, r []time.Duration
		var a []time.Duration
		for i, x := range sim {
			if x.Opened == opened {
				s, a = append(s, x.At), append(a, allow[i])
			}
		}
		for _, x := range real {
			if x.Opened == opened {
				r = append(r, x.At)
			}
		}
		if len(s) != len(r) {
			c.Pass = false
			c.Detail = fmt.Sprintf("%s: sim has %d, real has %d:\n  sim:  %s\n  real: %s", label(opened), len(s), len(r), formatDurations(s), formatDurations(r))
			return c
		}
		for i := range s {
			d := s[i] - r[i]
			if d < 0 {
				d = -d
			}
			c.MaxDelta = max(c.MaxDelta, d)
			if limit := tol.Base() + a[i]; d > limit {
				c.Pass = false
				c.Detail = fmt.Sprintf("%s %d: sim %v, real %v: %v apart, tolerance %v", label(opened), i+1,
					s[i].Round(time.Millisecond), r[i].Round(time.Millisecond), d.Round(time.Millisecond), limit.Round(time.Millisecond))
				return c
			}
		}
	}
	return c
}

func formatDurations(ds []time.Duration) string {
	var parts []string
	for _, d := range ds {
		parts = append(parts, d.Round(time.Millisecond).String())
	}
	return orNothing(strings.Join(parts, ", "))
}

// compareMessages checks that the streams carried the same requests and
// responses, in the same order, on the same servers: exactly, apart from
// their times.
func compareMessages(client string, sim, real []Stream) Check {
	c := Check{Client: client, What: "xDS messages", Pass: true}
	s, r := transcript(sim), transcript(real)
	c.Count = len(s)
	for i := 0; i < max(len(s), len(r)); i++ {
		var a, b string
		if i < len(s) {
			a = s[i]
		}
		if i < len(r) {
			b = r[i]
		}
		if a != b {
			c.Pass = false
			c.Detail = fmt.Sprintf("line %d differs:\n  sim:  %s\n  real: %s", i+1, orNothing(a), orNothing(b))
			return c
		}
	}
	return c
}

// transcript writes streams as lines: one per stream opening, then its
// messages type by type (LDS, RDS, CDS, EDS), each type's in the order
// they happened. Three things are left out because they are races, not
// behaviour:
//
//   - The order across types: it is a race between the client's writes
//     and the server's, and grpc-go even resends the types of a new
//     stream in map order (ads_stream.go sendExisting). Within a type the
//     order is causal: a request, its response, the ACK.
//   - Nonce values: go-control-plane counts nonces per stream across
//     types, so their values follow the order across types. What matters
//     is which response a request answers, so a request's nonce is
//     written as "last" (the last response of its type on the stream),
//     "older" (an earlier response) or "" (none).
//   - How a client subscribes to the names of a type (the two clusters
//     of a weighted split at once): one request or several, in which
//     order, and how they cross the responses. The opening of a type is
//     written as its outcome (see openingOf).
//   - How often a request/response exchange repeats back to back: a
//     server that resends every NACK (on_nack = "resend") and the client
//     that NACKs it again spin as fast as the machine lets them. A run of
//     repeats is written once with "(repeats)" after it.
func transcript(streams []Stream) []string {
	var out []string
	for i, s := range streams {
		out = append(out, fmt.Sprintf("stream %d to %s", i+1, s.Server))
		sent := map[string]bool{}
		for _, t := range []string{"LDS", "RDS", "CDS", "EDS"} {
			var msgs []Message // of type t, requests with their nonce named
			last := ""
			for _, m := range s.Messages {
				if m.Type != t {
					if m.Response {
						sent[m.Nonce] = true
					}
					continue
				}
				if m.Response {
					msgs = append(msgs, m)
					sent[m.Nonce], last = true, m.Nonce
					continue
				}
				n := m
				switch {
				case m.Nonce == "":
				case m.Nonce == last:
					n.Nonce = "last"
				case sent[m.Nonce]:
					n.Nonce = "older"
				default:
					n.Nonce = "unknown"
				}
				msgs = append(msgs, n)
			}
			var lines []string
			for _, m := range openingOf(msgs) {
				if m.Response {
					lines = append(lines, fmt.Sprintf("  <- %s version=%q", m.Type, m.Version))
				} else {
					lines = append(lines, "  "+m.String())
				}
			}
			out = append(out, collapseRepeats(lines)...)
		}
	}
	return out
}

// openingOf writes the opening of a type's messages as its outcome: the
// first request with the names the opening ends with, the response it
// ACKed, and that ACK. The opening runs from the first message to the
// first response of another version than the first response's, or to the
// first request that drops a name; in it the client subscribes to names
// and gets them. It is left as it is if it holds a NACK or does not end
// with an ACK. Whether a client subscribing to several names at once (the
// clusters of a weighted split) sends one request or one per name, in
// which order, and how those cross the responses, are races: grpc-go's
// dependency manager ranges over a map of clusters (xdsdepmgr
// maybeSendUpdateLocked), its ADS stream ACKs and resubscribes as its
// goroutines go, and go-control-plane picks between a request and a
// response ready at once (sotw/v3 xds.go reflect.Select).
func openingOf(msgs []Message) []Message {
	end := len(msgs) // the first message after the opening
	version, names := "", map[string]bool{}
	seen := false
	for k, m := range msgs {
		if m.Response {
			if seen && m.Version != version {
				end = k
				break
			}
			version, seen = m.Version, true
			continue
		}
		if len(m.Names) < len(names) {
			end = k
			break
		}
		for _, n := range m.Names {
			names[n] = true
		}
	}
	var first, ack, resp *Message
	for k := range msgs[:end] {
		m := &msgs[k]
		switch {
		case m.NACK:
			return msgs
		case m.Response:
			resp = m
		case first == nil:
			first = m
		}
		if !m.Response {
			ack = m
		}
	}
	if first == nil || resp == nil || ack == first || ack.Nonce != "last" || len(ack.Names) != len(names) {
		return msgs
	}
	f := *first
	f.Names = ack.Names
	return append([]Message{f, *resp, *ack}, msgs[end:]...)
}

// collapseRepeats writes a pair of lines that repeats back to back once,
// followed by "(repeats)". A repeat that the lines end in the middle of
// (a NACK loop the run's end or the stream's stopped between a response
// and its NACK, where it stops being a race) belongs to it.
func collapseRepeats(lines []string) []string {
	var out []string
	for i := 0; i < len(lines); {
		if i+3 < len(lines) && lines[i] == lines[i+2] && lines[i+1] == lines[i+3] {
			j := i + 2
			for j+1 < len(lines) && lines[j] == lines[i] && lines[j+1] == lines[i+1] {
				j += 2
			}
			if j == len(lines)-1 && lines[j] == lines[i] {
				j++
			}
			out = append(out, lines[i], lines[i+1], "  (repeats)")
			i = j
			continue
		}
		out = append(out, lines[i])
		i++
	}
	return out
}

// Transcript formats a client's streams as the comparison sees them.
func Transcript(c *ClientObservation) string {
	if c == nil {
		return ""
	}
	return strings.Join(transcript(c.Streams), "\n")
}

// timed is a time with the label it must match.
type timed struct {
	at    time.Duration
	label string
}

func windowTimes(ws []Window) []timed {
	var out []timed
	for _, w := range ws {
		out = append(out, timed{w.Start, "window start"}, timed{w.End, "window end"})
	}
	return out
}

func timerTimes(ts []TimerFiring) []timed {
	var out []timed
	for _, t := range ts {
		out = append(out, timed{t.At, t.Type + " " + t.Name})
	}
	return out
}

func switchTimes(ss []Switch) []timed {
	var out []timed
	for _, s := range ss {
		l := "fallback to " + s.Server
		if s.Revert {
			l = "revert to " + s.Server
		}
		out = append(out, timed{s.At, l})
	}
	return out
}

// compareTimes checks that both runs had the same things, in order, each
// at times within the tolerance.
func compareTimes(client, what string, tol Tolerance, sim, real []timed) Check {
	c := Check{Client: client, What: what, Pass: true, Count: len(sim)}
	if len(sim) != len(real) {
		c.Pass = false
		c.Detail = fmt.Sprintf("sim has %d, real has %d:\n  sim:  %s\n  real: %s", len(sim), len(real), formatTimed(sim), formatTimed(real))
		return c
	}
	for i := range sim {
		d := sim[i].at - real[i].at
		if d < 0 {
			d = -d
		}
		c.MaxDelta = max(c.MaxDelta, d)
		if sim[i].label != real[i].label {
			c.Pass = false
			c.Detail = fmt.Sprintf("%d: sim %s, real %s", i+1, sim[i].label, real[i].label)
			return c
		}
		if limit := tol.At(min(sim[i].at, real[i].at)); d > limit {
			c.Pass = false
			c.Detail = fmt.Sprintf("%s: sim %v, real %v: %v apart, tolerance %v", sim[i].label,
				sim[i].at.Round(time.Millisecond), real[i].at.Round(time.Millisecond), d.Round(time.Millisecond), limit.Round(time.Millisecond))
			return c
		}
	}
	return c
}

func formatTimed(ts []timed) string {
	if len(ts) == 0 {
		return "(none)"
	}
	var parts []string
	for _, t := range ts {
		parts = append(parts, fmt.Sprintf("%s at %v", t.label, t.at.Round(time.Millisecond)))
	}
	return strings.Join(parts, ", ")
}

func orNothing(s string) string {
	if s == "" {
		return "(nothing)"
	}
	return s
}
