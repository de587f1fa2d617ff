package fidelity

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/xdssim/xdssim/model/controlplane"
	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/sim"
)

// Storm is a NACK storm: on one stream, responses of one type that the
// client NACKs and the server answers again at once, back to back (a
// server with on_nack = "resend" and a client that keeps rejecting what
// it is sent). How fast it spins is a round trip plus the client's time to
// process a response and the server's to answer a request, per NACK.
type Storm struct {
	Type string
	// NACKs is how many NACKs the storm had; First and Last are when the
	// server received the first and the last.
	NACKs       int
	First, Last time.Duration
}

// MinStormNACKs is the fewest back-to-back NACKs that make a storm whose
// rate is compared: a client that NACKs once or twice and waits is not
// one.
const MinStormNACKs = 100

// StormTolerance is how far a simulated storm's rate may be from the real
// one, as a share of the real rate. The simulation runs the default
// processing times, measured on one day on this 2-CPU machine (real
// storms within 25 % of the simulation's in 14 of 16); on another day the
// same machine's grpc-go took a mean of 95 to 108 µs per response against
// the defaults' 76, and the simulation's storm ran 10 % to 39 % faster
// than its real ones (+26 % for the fastest of three runs). 30 % holds
// much of that drift of the machine while still failing a storm whose
// pace the model gets wrong by a third; what it does not hold,
// calibrateStorms tells from a wrong pace.
const StormTolerance = 0.30

// calibrateStorms checks again a storm check c that failed at the default
// processing times: the case is simulated with the processing times the
// real run's storms measured (p: grpc-go's per response, go-control-plane's
// per request, each as the log-normal of its median and mean), and the
// check passes if those storms spin within StormTolerance of the real
// ones. What the check is for is the model's pace, a round trip and the
// two processing times per NACK; the defaults are one day's measurement
// of this machine, whose speed drifts by more than the tolerance from day
// to day (docs/model-fidelity.md, "Processing times"). Both comparisons
// are reported.
func calibrateStorms(c *Check, cfg fleet.Config, p *Processing, names []string) {
	cs, ss := Summarize(p.Client), Summarize(p.Server)
	client, server := fitted(cs), fitted(ss)
	if client == nil || server == nil {
		c.Detail += "; the real run's processing times give no log-normal to simulate it again with"
		return
	}
	cal := cfg
	cal.Groups = slices.Clone(cfg.Groups)
	for i := range cal.Groups {
		cal.Groups[i].ProcessingTime = *client
	}
	cal.ControlPlanes = slices.Clone(cfg.ControlPlanes)
	for i := range cal.ControlPlanes {
		cal.ControlPlanes[i].Server.Capacity.ProcessingTime = *server
	}
	obs, err := Simulate(cal)
	if err != nil {
		c.Detail += fmt.Sprintf("; with the measured processing times the simulation failed: %v", err)
		return
	}
	var simStorms []Storm
	for _, n := range names {
		if o := obs.Clients[n]; o != nil {
			simStorms = append(simStorms, storms(o.Streams)...)
		}
	}
	c.CalibratedRate = stormRate(simStorms)
	if c.CalibratedRate == 0 || c.RealRate == 0 {
		return
	}
	c.CalibratedOff = (c.CalibratedRate - c.RealRate) / c.RealRate
	c.Detail += fmt.Sprintf("; with this run's measured processing times (grpc-go %v, go-control-plane %v a message, means) sim %.0f NACKs/s: %+.0f %%",
		us(cs.Mean), us(ss.Mean), c.CalibratedRate, 100*c.CalibratedOff)
	if abs(c.CalibratedOff) <= StormTolerance {
		c.Pass = true
	}
}

// fitted is the log-normal with the sample's median and mean (Summary
// FitP99), or nil when the sample does not give one.
func fitted(s Summary) *sim.Dist {
	if s.Median <= 0 || s.FitP99 < s.Median {
		return nil
	}
	d := sim.LogNormal(s.Median, s.FitP99)
	return &d
}

// Storms reports whether cfg can have a NACK storm: a server that answers
// every NACK at once.
func Storms(cfg fleet.Config) bool {
	for _, cp := range cfg.ControlPlanes {
		if cp.Server.OnNACK == controlplane.ResendNACKs {
			return true
		}
	}
	return false
}

// Rate is the storm's NACKs per second.
func (s Storm) Rate() float64 {
	if s.NACKs < 2 || s.Last <= s.First {
		return 0
	}
	return float64(s.NACKs-1) / (s.Last - s.First).Seconds()
}

// storms finds the NACK storms of a client's streams, stream by stream
// and type by type (LDS, RDS, CDS, EDS).
func storms(streams []Stream) []Storm {
	var out []Storm
	for _, st := range streams {
		for _, t := range []string{"LDS", "RDS", "CDS", "EDS"} {
			var cur Storm
			end := func() {
				if cur.NACKs >= MinStormNACKs {
					out = append(out, cur)
				}
				cur = Storm{Type: t}
			}
			end()
			answered := false // the last message was a response
			for _, m := range st.Messages {
				if m.Type != t {
					continue
				}
				switch {
				case m.Response:
					answered = true
				case m.NACK && (answered || cur.NACKs == 0):
					if cur.NACKs == 0 {
						cur.First = m.At
					}
					cur.NACKs++
					cur.Last = m.At
					answered = false
				default:
					end()
					answered = false
				}
			}
			end()
		}
	}
	return out
}

// stormRate sums storms up as one rate: all their NACK intervals over all
// their time.
func stormRate(ss []Storm) float64 {
	n, d := 0, time.Duration(0)
	for _, s := range ss {
		n += s.NACKs - 1
		d += s.Last - s.First
	}
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// compareStorms checks the case's NACK storms: each client had the same
// storms in both runs, of the same types, and all of them together spun
// at a rate (their NACK intervals over their time) within StormTolerance
// of the real one. Nothing is calibrated: the simulation's storms run at
// the case's link latency and the default processing times.
//
// The real rate is the machine's: other work on it slows the real storms
// (docs/model-fidelity.md, "Processing times"), so a failure says how
// loaded the machine was.
func compareStorms(names []string, sim, real map[string][]Storm, load string) Check {
	c := Check{Client: "every client", What: "NACK storms", Pass: true}
	types := func(ss []Storm) string {
		var t []string
		for _, s := range ss {
			t = append(t, fmt.Sprintf("%s (%d NACKs)", s.Type, s.NACKs))
		}
		return orNothing(strings.Join(t, ", "))
	}
	var all [2][]Storm
	for _, n := range names {
		s, r := sim[n], real[n]
		if len(s) > 0 || len(r) > 0 {
			c.Clients++
		}
		c.Count += len(s)
		all[0], all[1] = append(all[0], s...), append(all[1], r...)
		same := len(s) == len(r)
		for i := 0; same && i < len(s); i++ {
			same = s[i].Type == r[i].Type
		}
		if !same && c.Pass {
			c.Pass = false
			c.Detail = fmt.Sprintf("%s: sim has %s, real has %s", n, types(s), types(r))
		}
	}
	if c.Count == 0 || !c.Pass {
		return c
	}
	c.SimRate, c.RealRate = stormRate(all[0]), stormRate(all[1])
	c.RateOff = (c.SimRate - c.RealRate) / c.RealRate
	if abs(c.RateOff) > StormTolerance {
		c.Pass = false
		c.Detail = fmt.Sprintf("sim %.0f NACKs/s, real %.0f NACKs/s: %+.0f %%, tolerance ±%.0f %%", c.SimRate, c.RealRate, 100*c.RateOff, 100*StormTolerance)
		if load != "" {
			c.Detail += fmt.Sprintf(" (the machine's %s when the run ended)", load)
		}
	}
	return c
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// StormRuns is how many times a storm case runs at most. A storm's rate
// is the machine's speed, and whatever else the machine does only slows
// the real storm (on this 2-CPU machine the same quiet run of
// nack-policy measured 5 701 to 7 152 NACKs/s): as a benchmark keeps its
// fastest run, a case whose one disagreement is a real storm slower than
// the simulation's runs again, and its fastest real storm is compared.
const StormRuns = 3

// SlowStormOnly reports whether the result's one failing check is a real
// NACK storm slower than the simulation's, which another run may undo.
func (r *Result) SlowStormOnly() bool {
	slow := false
	for _, c := range r.Checks {
		switch {
		case c.Pass:
		case c.What == "NACK storms" && c.RealRate > 0 && c.RateOff > 0:
			slow = true
		default:
			return false
		}
	}
	return slow
}

// Fastest returns the result of runs whose real storms were fastest, its
// storm check holding every run's real rate (Check.RealRuns); runs holds
// the results of one case's runs in order.
func Fastest(runs []*Result) *Result {
	best := 0
	var rates []float64
	for i, r := range runs {
		rates = append(rates, stormCheck(r).RealRate)
		if rates[i] > rates[best] {
			best = i
		}
	}
	r := runs[best]
	if c := stormCheck(r); len(runs) > 1 && c.What != "" {
		c.RealRuns = rates
		if !c.Pass {
			c.Detail += "; " + c.runsText()
		}
	}
	return r
}

// runsText says which of several real runs' storms was compared.
func (c *Check) runsText() string {
	rates := make([]string, len(c.RealRuns))
	for i, v := range c.RealRuns {
		rates[i] = fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("the fastest of %d real runs (%s NACKs/s)", len(c.RealRuns), strings.Join(rates, ", "))
}

// stormCheck returns the result's NACK storms check (a zero one if none).
func stormCheck(r *Result) *Check {
	for i := range r.Checks {
		if r.Checks[i].What == "NACK storms" {
			return &r.Checks[i]
		}
	}
	return &Check{}
}
