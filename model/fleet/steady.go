package fleet

import (
	"time"

	"google.golang.org/grpc/codes"

	"github.com/xdssim/xdssim/model/dataplane"
	"github.com/xdssim/xdssim/sim"
)

// Steady RPCs. Most of a fleet's RPCs, most of the time, go at once to a
// READY backend that answers OK: nothing about them changes any outcome,
// only how many there were. An instance whose channel is steady
// (dataplane.Channel.Steady) stops taking one kernel event per RPC: it
// remembers since when it has been steady, and when anything that could
// end that changes (its config, a backend, a session's end of life, its
// client's stop, the end of the run), it accounts for the RPCs of the
// interval in bulk and goes back to one event per RPC, which may make it
// steady again at its next RPC.
//
// The bulk accounting has the exact path's distribution. RPCs arrive as a
// Poisson process (or at a constant rate): the count in any interval is
// Poisson with mean rate × length, independent of every other interval,
// and the arrival after the interval comes an exponential gap after its
// end (memorylessness), so drawing counts per stretch of a sample
// interval, and a fresh gap at the end, gives the same process. Each RPC
// ends one service time after it arrives; a Poisson process shifted by
// independent delays is a Poisson process of the same rate, so the
// counts by end time are drawn the same way, shifted by the mean service
// time. What is not drawn is which backend each RPC went to and the
// random draws of its pick and service time: the client's random stream
// goes on differently, so a run with steady RPCs is another sample of
// the same distribution, not the same sample (TestSteadyRPCsAreStatisticallyTheExactOnes).

// steadyEligible reports whether instance ii's RPCs from now on can be
// accounted in bulk.
func (w *world) steadyEligible(ii uint32) bool {
	if w.exactRPCs {
		return false
	}
	inst := &w.insts[ii]
	cfg := inst.ch.Config()
	if inst.xds == nil || cfg == nil || len(inst.waiting) > 0 {
		return false
	}
	load := &w.cfg.Groups[w.clients[inst.client].group].RPC
	ci, sessions, ok := steadyRoute(cfg, load)
	if !ok {
		return false
	}
	if sessions && load.SessionRPCs > 0 && load.SessionLifetime > 0 {
		// A session ended by its count inside a bulk run would start at
		// an unknown time, which its lifetime then needs.
		return false
	}
	env := w.env(ii)
	if !inst.ch.Steady(&env, ci, load.Deadline, sessions) {
		return false
	}
	if sessions {
		if end := inst.ch.SessionsEnd(load.SessionLifetime); end >= 0 && end <= env.Now {
			return false
		}
	}
	return true
}

// enterSteady makes instance ii steady from now: the arrival event it
// had scheduled is dropped (its arrivals chain moves on), and, with
// sessions that end by lifetime, an event ends the bulk run when the
// first of them does.
func (w *world) enterSteady(ii uint32) {
	inst := &w.insts[ii]
	now := w.kernel.Now()
	inst.arrivals++
	inst.steady, inst.steadyFrom = true, now
	load := &w.cfg.Groups[w.clients[inst.client].group].RPC
	if _, sessions, _ := steadyRoute(inst.ch.Config(), load); sessions {
		end := inst.ch.SessionsEnd(load.SessionLifetime)
		if end < 0 {
			return
		}
		w.kernel.Schedule(sim.Event{At: end, Entity: ii, Kind: kindSteadyEnd, Arg: uint64(inst.arrivals)})
	}
}

// steadyAcross switches steady instance ii to config cfg, when its RPCs
// carry no session on either config, and reports whether it did: its bulk
// run then goes on if the channel is steady with cfg too (as when a
// rolling deploy replaces one endpoint with another), and ends otherwise.
// Either way the run's RPCs are accounted for with cfg's policy state
// (which backend each went to changes no outcome).
func (w *world) steadyAcross(ii uint32, cfg *dataplane.Config) bool {
	inst := &w.insts[ii]
	load := &w.cfg.Groups[w.clients[inst.client].group].RPC
	if _, sessions, ok := steadyRoute(inst.ch.Config(), load); !ok || sessions {
		return false
	}
	if _, sessions, ok := steadyRoute(cfg, load); !ok || sessions {
		return false
	}
	inst.ch.SetConfig(cfg, w.kernel.Now())
	if !w.steadyEligible(ii) {
		w.leaveSteady(ii)
	}
	w.configChanged(ii)
	return true
}

// steadyEnd ends a bulk run when its first session reaches its lifetime.
func (w *world) steadyEnd(ev sim.Event) {
	inst := &w.insts[ev.Entity]
	if inst.steady && uint32(ev.Arg) == inst.arrivals {
		w.leaveSteady(ev.Entity)
	}
}

// leaveSteady accounts for instance ii's RPCs since it became steady and
// goes back to one event per RPC, scheduling its next arrival.
func (w *world) leaveSteady(ii uint32) {
	inst := &w.insts[ii]
	if !inst.steady {
		return
	}
	now := w.kernel.Now()
	next := w.settleSteady(ii, now)
	w.kernel.Schedule(sim.Event{At: next, Entity: ii, Kind: kindRPCArrival, Arg: inst.arrivalArg()})
}

// leaveAllSteady makes every steady instance leave its bulk run: a change
// of the ground truth (a backend event) can end any of them.
func (w *world) leaveAllSteady() {
	for ii := range w.insts {
		if w.insts[ii].steady {
			w.leaveSteady(uint32(ii))
		}
	}
}

// settleSteady accounts for the RPCs instance ii started in
// [steadyFrom, t) and ends its bulk run; it returns when the next RPC
// arrives.
func (w *world) settleSteady(ii uint32, t sim.Time) sim.Time {
	inst := &w.insts[ii]
	inst.steady = false
	c := &w.clients[inst.client]
	load := &w.cfg.Groups[c.group].RPC
	from := inst.steadyFrom
	gap := load.interval()
	ci, sessions, _ := steadyRoute(inst.ch.Config(), load)
	delay := inst.ch.MeanServiceTime(ci, &w.backends)
	end := sim.Time(0).Add(w.cfg.Duration)
	iv := sim.Time(w.cfg.SampleInterval)

	var n int
	var next sim.Time
	// A bulk run's cluster has one locality, or its locality is not
	// known (routing counts the cluster only).
	var cl *dataplane.Cluster
	loc := -1
	if cfg := inst.ch.Config(); w.routing.on && cfg != nil {
		cl = &cfg.Clusters[ci]
		if len(cl.Localities) == 1 {
			loc = 0
		}
	}
	add := func(arrived, ended sim.Time, k int) {
		if k == 0 {
			return
		}
		if cl != nil {
			w.routing.count(cl, loc, k, arrived)
		}
		n += k
		w.bucketAt(arrived).attempts += int32(k)
		if ended < end {
			b := w.bucketAt(ended)
			b.ok += k
			b.byCode[codes.OK] += int32(k)
			w.dp.byCode[codes.OK] += k
		}
	}
	if load.Constant {
		// Arrivals at from + k·gap, k >= 1, the ones before t.
		k := int((t - from - 1) / sim.Time(gap))
		for i := 1; i <= k; i++ {
			at := from.Add(time.Duration(i) * gap)
			add(at, at.Add(delay), 1)
		}
		next = from.Add(time.Duration(k+1) * gap)
	} else {
		// Poisson counts over the stretches of [from, t) in which both
		// the sample an RPC arrives in and the one it ends in are fixed.
		rate := 1 / gap.Seconds()
		for cur := from; cur < t; {
			stop := min(t, nextBoundary(cur, iv), nextBoundary(cur.Add(delay), iv)-sim.Time(delay))
			mid := cur + (stop-cur)/2
			add(mid, mid.Add(delay), c.rng.Poisson(rate*time.Duration(stop-cur).Seconds()))
			cur = stop
		}
		next = t.Add(c.rng.Exp(gap))
	}
	if n == 0 {
		return next
	}
	if w.tracing(ii) {
		w.traceAt(ii, time.Duration(t), TraceEvent{Kind: TraceSteadyRPCs, Count: n, Since: time.Duration(from), Rule: ruleSteady})
	}
	w.dp.rpcs += n
	w.group(ii).rpcs += n
	w.dp.attempted += n
	w.dp.attempts += n
	inst.throttle.OnSuccesses(n)
	if sessions {
		env := w.env(ii)
		env.Now = t
		w.dp.sessionsStarted += inst.ch.SkipSessionRPCs(&env, ci, n, load.SessionRPCs)
	} else {
		inst.ch.SkipPicks(ci, n)
	}
	return next
}

// steadyRoute returns the cluster the RPCs of load go to on config cfg,
// and whether they carry sessions; ok is false unless the RPCs' route has
// a single cluster: a weighted split draws each RPC's cluster, which the
// bulk path does not do, so such a channel takes the exact path.
func steadyRoute(cfg *dataplane.Config, load *RPCLoad) (ci int, sessions, ok bool) {
	if cfg == nil {
		return 0, false, false
	}
	if len(load.Methods) != 1 {
		return 0, false, false // each RPC draws its method
	}
	m := &load.Methods[0]
	r := cfg.RouteFor(m.Path, m.Headers)
	if r == nil || len(r.Clusters) != 1 {
		return 0, false, false
	}
	sessions = load.Sessions > 0 && r.Session != nil && dataplane.PathMatches(r.Session.Path, m.Path)
	return r.Clusters[0].Cluster, sessions, true
}

// nextBoundary returns the first sample boundary (a multiple of iv) after
// t: a sample interval ((k-1)iv, k·iv] holds what happens at its end.
func nextBoundary(t, iv sim.Time) sim.Time {
	if t < 0 {
		return 0
	}
	return (t/iv + 1) * iv
}

// arrivalArg is the Arg of the instance's next arrival event: its RPCs'
// generation (a client stop ends them) and its arrivals chain (a bulk run
// ends the event-per-RPC chain).
func (inst *instance) arrivalArg() uint64 { return uint64(inst.rpcGen)<<32 | uint64(inst.arrivals) }
