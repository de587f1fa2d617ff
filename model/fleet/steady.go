package fleet

import (
	"cmp"
	"math"
	"slices"
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
// time. The RPCs still in flight when the bulk run ends are drawn
// exactly (settleSteady) and go on as exact RPCs, so that what ended the
// run (a backend's crash, the client's stop) ends them as it ends the
// exact path's. Those that ended have the latency the exact path gives
// them, their service time, drawn given that it ended by the run's end
// (endedServiceTime; a constant service time needs no draw). What is not
// drawn is which backend each RPC that ended went to and the random
// draws of its pick and service time: the
// client's random stream goes on differently, so a run with steady RPCs
// is another sample of the same distribution, not the same sample
// (TestSteadyRPCsAreStatisticallyTheExactOnes).

// steadyEligible reports whether instance ii's RPCs from now on can be
// accounted in bulk.
func (w *world) steadyEligible(ii uint32) bool {
	if w.exactRPCs {
		return false
	}
	load, ci, sessions, ok := w.bulkRoute(ii)
	if !ok {
		return false
	}
	inst := &w.insts[ii]
	cfg := inst.ch.Config()
	if sessions && load.SessionRPCs > 0 && load.SessionLifetime > 0 {
		// A session ended by its count inside a bulk run would start at
		// an unknown time, which its lifetime then needs.
		return false
	}
	env := w.env(ii)
	if !inst.ch.Steady(&env, ci, load.Deadline, sessions) {
		return false
	}
	if _, ok := cfg.ServiceTime(ci, &w.backends); !ok {
		return false // settleSteady draws every RPC's service time alike
	}
	if sessions {
		if end := inst.ch.SessionsEnd(load.SessionLifetime); end >= 0 && end <= env.Now {
			return false
		}
	}
	return true
}

// replayEligible reports whether instance ii's RPCs from now on can be
// replayed in bulk: its channel is steady but for a backend that fails a
// fraction of RPCs (dataplane.Channel.SteadyFailing), and none of its
// RPCs waits for a config. A traced instance takes its RPCs one by one,
// so that its trace tells each in time order.
func (w *world) replayEligible(ii uint32) bool {
	if w.exactRPCs || w.failing == 0 && w.cfg.DataPlane.Backend.ErrorRate == 0 || w.tracing(ii) {
		return false
	}
	_, ci, sessions, ok := w.bulkRoute(ii)
	if !ok {
		return false
	}
	env := w.env(ii)
	return w.insts[ii].ch.SteadyFailing(&env, ci, sessions)
}

// bulkRoute returns what either kind of bulk run needs of instance ii:
// its RPC load, the cluster its RPCs go to and whether they carry
// sessions. ok is false when its channel has no config, an RPC waits for
// one, or the RPCs' route does not take them to one cluster (steadyRoute).
func (w *world) bulkRoute(ii uint32) (load *RPCLoad, ci int, sessions, ok bool) {
	inst := &w.insts[ii]
	cfg := inst.ch.Config()
	if inst.xds == nil || cfg == nil || len(inst.waiting) > 0 {
		return nil, 0, false, false
	}
	load = &w.cfg.Groups[w.clients[inst.client].group].RPC
	ci, sessions, ok = steadyRoute(cfg, load)
	return load, ci, sessions, ok
}

// enterReplay makes instance ii's RPCs from now on, this one included, a
// bulk run to be replayed when it ends (replay). The arrival chain moves
// on, as enterSteady's does; a session's end of life does not end the
// run: the replay takes the RPCs one by one, and the one that finds its
// session over starts another (dataplane.Channel.Session) as the exact
// path does. The instance's RPCs in flight or waiting to retry join the
// run: their pending events are dropped (their slots' gen moves on) and
// the replay takes them over, so that it takes every event of the
// instance's RPCs from now to its end, in time order.
func (w *world) enterReplay(ii uint32) {
	inst := &w.insts[ii]
	inst.arrivals++
	inst.steady, inst.replay, inst.steadyFrom = true, true, w.kernel.Now()
	for s := inst.rpcs; s != 0; s = w.rpcs.slots[s-1].next {
		w.rpcs.slots[s-1].gen++
	}
}

// replay ends instance ii's replayed bulk run at t (after every event at t
// with through, before them without): it runs the run's RPCs, and those
// in flight when it began (enterReplay), one by one on a kernel of their
// own, the exact path's code on the instance alone, from the run's first
// arrival to t, and moves what is still pending then
// (its next arrival, its RPCs in flight or waiting to retry) to the
// fleet's kernel, where they go on as exact RPCs.
//
// This is the exact path, in another order. While the run lasts, nothing
// its RPCs depend on changes but by themselves: its config and the
// backends do not (either ends the run first), no other instance's RPC
// touches its channel, throttle or failure window, a backend has no
// capacity or queue that instances share, and the figures its
// RPCs add to (counts, the per-sample buckets, the latency histograms,
// the list of failure windows, sorted at the end) are sums, which do not
// depend on the order they are added in. Its draws come from its client's
// random stream as the exact path's do, at other places in it: a run with
// replays is another sample of the same distribution.
func (w *world) replay(ii uint32, t sim.Time, through bool) {
	inst := &w.insts[ii]
	inst.steady, inst.replay = false, false
	main, lk := w.kernel, w.local
	from := inst.steadyFrom
	lk.Restart(from)
	lk.Schedule(sim.Event{At: from, Entity: ii, Kind: kindRPCArrival, Arg: inst.arrivalArg()})
	// The RPCs that were in flight at from (enterReplay), their events
	// after the arrival that began the run, as they were in the fleet's
	// kernel. (Two of them due at once would run newest first, where the
	// fleet's kernel runs them in the order they were scheduled: one
	// instance's RPCs are not due at once but by chance of measure zero.)
	for s := inst.rpcs; s != 0; s = w.rpcs.slots[s-1].next {
		r := &w.rpcs.slots[s-1]
		kind := uint32(kindRPCAttempt)
		if r.retrying {
			kind = kindRPCRetry
		}
		lk.Schedule(sim.Event{At: r.due, Entity: s - 1, Kind: kind, Arg: uint64(r.gen)})
	}
	if !through {
		t--
	}
	if t >= from {
		before := w.dp.rpcs
		w.kernel, w.replaying = lk, true
		lk.Run(t)
		w.kernel, w.replaying = main, false
		w.dp.replayed += w.dp.rpcs - before
	}
	lk.MoveTo(main)
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
// carry no session on either config and its backends answer in the same
// service time on both, and reports whether it did: its bulk run then
// goes on if the channel is steady with cfg too (as when a rolling deploy
// replaces one endpoint with another), and ends otherwise. Either way the
// run's RPCs are accounted for with cfg's policy state (which backend
// each went to changes no outcome) and service time (the same).
func (w *world) steadyAcross(ii uint32, cfg *dataplane.Config) bool {
	inst := &w.insts[ii]
	if inst.replay {
		return false // its RPCs so far are replayed on the config they had
	}
	load := &w.cfg.Groups[w.clients[inst.client].group].RPC
	was, sessions, ok := steadyRoute(inst.ch.Config(), load)
	if !ok || sessions {
		return false
	}
	ci, sessions, ok := steadyRoute(cfg, load)
	if !ok || sessions {
		return false
	}
	before, _ := inst.ch.Config().ServiceTime(was, &w.backends)
	if after, ok := cfg.ServiceTime(ci, &w.backends); !ok || after != before {
		return false // settleSteady reads the service time of the config it ends on
	}
	inst.ch.SetConfigWith(cfg, w.kernel.Now(), w.clients[inst.client].rng, &w.lbScratch)
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
	if inst.replay {
		w.replay(ii, now, false)
		return
	}
	next := w.settleSteady(ii, now, true)
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

// flight is an RPC of a bulk run still in flight when the run ends: when
// it began and when its backend answers.
type flight struct{ began, done sim.Time }

// settleSteady accounts for the RPCs instance ii began in [steadyFrom, t)
// and ends its bulk run; it returns when the next RPC arrives. The RPCs
// that ended by t are counted in bulk. Those still in flight at t are
// drawn as the exact path would have them: with keep, they go on one by
// one from t (resumeRPC), so that what ends the run (a backend's crash, a
// config change) and their deadline treat them as exact RPCs; without
// (their client stops, the run ends), they are counted as begun and end
// without an outcome, as an exact RPC in flight then does. Poisson
// arrivals are drawn by settlePoisson.
func (w *world) settleSteady(ii uint32, t sim.Time, keep bool) sim.Time {
	inst := &w.insts[ii]
	inst.steady = false
	c := &w.clients[inst.client]
	load := &w.cfg.Groups[c.group].RPC
	// The draws below vary in number with the RPCs in flight: they come
	// from a stream of this bulk run's own (the run's seed, the instance,
	// the bulk run's number), so that the client's stream, and every later
	// draw of it, does not depend on how the bulk run ended, and the n-th
	// bulk run of an instance draws alike in two runs on one seed: they
	// stay paired (common random numbers; sim.Rand.Reseed).
	rng := &w.settleRng
	rng.Reseed(w.cfg.Seed ^ sim.Mix64(uint64(ii)+sim.Golden) ^ sim.Mix64(uint64(inst.arrivals)))
	from := inst.steadyFrom
	gap := load.interval()
	ci, sessions, _ := steadyRoute(inst.ch.Config(), load)
	// The latencies of the RPCs that ended are drawn from a stream of
	// their own (the same bulk run's), so that the draws above and below
	// are those of a run that records none.
	w.lat.rng.Reseed(w.cfg.Seed ^ sim.Mix64(uint64(ii)+sim.Golden) ^ sim.Mix64(uint64(inst.arrivals)) ^ latencyStream)
	b := w.bulkRunOf(ii, ci)
	fly := w.flying[:0]

	var n int // the RPCs that ended by t
	var next sim.Time
	if load.Constant {
		// Arrivals at from + k·gap, k >= 1, the ones before t.
		k := int((t - from - 1) / sim.Time(gap))
		for i := 1; i <= k; i++ {
			at := from.Add(time.Duration(i) * gap)
			age := time.Duration(t - at)
			if p := b.st.Survival(age); p == 0 || p < 1 && rng.Float64() >= p {
				n += w.settleEnded(&b, t, at, 1, at, at)
				continue
			}
			fly = append(fly, flight{began: at, done: at.Add(b.st.SampleAbove(rng, age))})
		}
		next = from.Add(time.Duration(k+1) * gap)
	} else {
		w.bulkStarts = append(w.bulkStarts[:0], from)
		n, fly = w.settlePoisson(&b, w.bulkStarts, t, rng, fly, nil)
		next = t.Add(rng.Exp(gap))
	}
	if n > 0 {
		if w.tracing(ii) {
			w.traceAt(ii, time.Duration(t), TraceEvent{Kind: TraceSteadyRPCs, Count: n, Since: time.Duration(from), Rule: ruleSteady})
		}
		w.ended(w.group(ii), n)
		inst.throttle.OnSuccesses(n)
		if sessions {
			env := w.env(ii)
			env.Now = t
			w.dp.sessionsStarted += inst.ch.SkipSessionRPCs(&env, ci, n, load.SessionRPCs)
		} else {
			inst.ch.SkipPicks(ci, n)
		}
	}
	// The RPCs in flight take their picks after the ones that ended, in
	// the order they began.
	slices.SortFunc(fly, func(a, b flight) int { return cmp.Compare(a.began, b.began) })
	for _, f := range fly {
		if keep {
			w.resumeRPC(ii, f.began, f.done)
			continue
		}
		w.unfinished(w.group(ii), f.began)
	}
	w.flying = fly[:0]
	return next
}

// settleAtEnd accounts, when the run ends at t, for the RPCs of every
// bulk run still going and of every replayed one.
//
// Bulk runs of Poisson arrivals alike (the same bulkRun: service time,
// rate, group, target and cluster) and without sessions are accounted
// together: the sum of independent Poisson processes is one of the summed
// rate, so their RPCs are one Poisson process whose rate steps up at each
// run's start (settlePoisson), drawn once per stretch of the class instead
// of once per stretch of each run: fleet-10k's 20 000 runs end with about
// 40 000 draws instead of 7 million. What each run's share would have left
// behind is not read once the run has ended (a client's picks and retry
// tokens), and the RPCs in flight at t end without an outcome whoever
// sent them. A traced run's share, which its trace shows, is drawn apart
// (traceShares). The draws come from a stream of the class's own (keyed
// by its first instance), so the counts are another sample of the same
// distribution as accounting for each run alone
// (TestRunsEndingTogetherAreCountedAsEachAlone,
// TestSteadyRPCsAreStatisticallyTheExactOnes).
func (w *world) settleAtEnd(t sim.Time) {
	type class struct {
		b      bulkRun
		first  uint32 // its first instance, which keys its draws
		starts []sim.Time
		traced traceShares
	}
	var classes []class
	index := map[bulkRun]int{}
	for i := range w.insts {
		ii := uint32(i)
		inst := &w.insts[ii]
		switch {
		case inst.replay:
			// The fleet's kernel ran every event at t; what is left is
			// in flight when the run ends.
			w.replay(ii, t, true)
			continue
		case !inst.steady:
			continue
		}
		load := &w.cfg.Groups[w.clients[inst.client].group].RPC
		ci, sessions, _ := steadyRoute(inst.ch.Config(), load)
		if load.Constant || sessions || w.settleAlone {
			w.settleSteady(ii, t, false)
			continue
		}
		inst.steady = false
		b := w.bulkRunOf(ii, ci)
		k, ok := index[b]
		if !ok {
			k = len(classes)
			index[b] = k
			classes = append(classes, class{b: b, first: ii})
		}
		classes[k].starts = append(classes[k].starts, inst.steadyFrom)
		if w.tracing(ii) {
			classes[k].traced.members = append(classes[k].traced.members, tracedShare{ii: ii, from: inst.steadyFrom})
		}
	}
	var traced []tracedShare
	for k := range classes {
		c := &classes[k]
		slices.Sort(c.starts)
		seed := w.cfg.Seed ^ sim.Mix64(uint64(c.first)+sim.Golden) ^ endStream
		w.settleRng.Reseed(seed)
		w.lat.rng.Reseed(seed ^ latencyStream)
		var sh *traceShares
		if len(c.traced.members) > 0 {
			sh = &c.traced
			sh.rng.Reseed(seed ^ traceStream)
			slices.SortStableFunc(sh.members, func(a, b tracedShare) int { return cmp.Compare(a.from, b.from) })
		}
		n, fly := w.settlePoisson(&c.b, c.starts, t, &w.settleRng, w.flying[:0], sh)
		traced = append(traced, c.traced.members...)
		g := &w.groups[c.b.group]
		w.ended(g, n)
		for _, f := range fly {
			w.unfinished(g, f.began)
		}
		w.flying = fly[:0]
	}
	// The traced instances' shares, in the order of the instances.
	slices.SortFunc(traced, func(a, b tracedShare) int { return cmp.Compare(a.ii, b.ii) })
	for _, m := range traced {
		if m.n > 0 {
			w.traceAt(m.ii, time.Duration(t), TraceEvent{Kind: TraceSteadyRPCs, Count: m.n, Since: time.Duration(m.from), Rule: ruleSteady})
		}
	}
}

// traceShares draws the share of each traced instance of the RPCs of bulk
// runs accounted together (settleAtEnd), for its trace. The k RPCs of a
// stretch in which j runs were going are each of any of the j alike
// (independent Poisson processes of one rate, summed), so the runs'
// shares are multinomial: the first traced run's Binomial(k, 1/j), the
// next one's Binomial of what is left over j−1, and so on. The draws come
// from a stream of their own, so that tracing leaves the class's draws,
// and the run, as they are.
type traceShares struct {
	rng     sim.Rand
	members []tracedShare // by when their runs began
}

// tracedShare is a traced instance's share: its bulk run began at from,
// and n of the RPCs that ended are its.
type tracedShare struct {
	ii   uint32
	from sim.Time
	n    int
}

// split shares out k RPCs that ended, of a stretch from cur in which j
// runs were going. A nil traceShares has nothing to share.
func (sh *traceShares) split(k, j int, cur sim.Time) {
	if sh == nil {
		return
	}
	for i := range sh.members {
		m := &sh.members[i]
		if k == 0 || m.from > cur {
			return
		}
		x := sh.rng.Binomial(k, 1/float64(j))
		m.n += x
		k -= x
		j--
	}
}

// traceStream keys the streams that draw traced instances' shares of the
// bulk runs accounted together at the end of a run.
var traceStream = sim.HashKey("bulk run shares")

// endStream keys the streams that draw the bulk runs accounted together
// at the end of a run.
var endStream = sim.HashKey("bulk runs at the end")

// ended counts n RPCs of a bulk run of group g that ended by its end,
// one attempt each (settleEnded counts their outcomes).
func (w *world) ended(g *groupCounters, n int) {
	w.dp.rpcs += n
	g.rpcs += n
	w.dp.attempted += n
	w.dp.attempts += n
}

// unfinished counts an RPC of a bulk run that began at began and is still
// in flight when the run ends: begun, without an outcome, as an exact RPC
// in flight then is.
func (w *world) unfinished(g *groupCounters, began sim.Time) {
	w.ended(g, 1)
	w.bucketAt(began).attempts++
}

// bulkRun is what accounting for the RPCs of a bulk run reads: their
// service time, how often they arrive, and where their outcomes are
// counted. Bulk runs alike in all of these are accounted together at the
// end of a run (settleAtEnd).
type bulkRun struct {
	st    sim.Dist
	gap   time.Duration
	group uint32
	hist  *LatencyHistogram
	// cl is the cluster the RPCs go to, with loc its one locality (-1 for
	// none or not known), when routing is counted; nil otherwise.
	cl  *dataplane.Cluster
	loc int
}

// bulkRunOf returns what the bulk run of instance ii, whose RPCs go to
// cluster ci of its config, is accounted by.
func (w *world) bulkRunOf(ii uint32, ci int) bulkRun {
	inst := &w.insts[ii]
	group := w.clients[inst.client].group
	cfg := inst.ch.Config()
	st, _ := cfg.ServiceTime(ci, &w.backends) // shared: steadyEligible checked it, steadyAcross kept it
	b := bulkRun{st: st, gap: w.cfg.Groups[group].RPC.interval(), group: group, hist: w.latencyHist(ii), loc: -1}
	// A bulk run's cluster has one locality, or its locality is not known
	// (routing counts the cluster only).
	if w.routing.on {
		b.cl = &cfg.Clusters[ci]
		if len(b.cl.Localities) == 1 {
			b.loc = 0
		}
	}
	return b
}

// settleEnded counts k RPCs of bulk run b that began at times in [lo, hi]
// (lo == hi: at lo) and ended by t, arrived standing for when they began,
// and returns k.
func (w *world) settleEnded(b *bulkRun, t, arrived sim.Time, k int, lo, hi sim.Time) int {
	if k == 0 {
		return 0
	}
	if b.cl != nil {
		w.routing.count(b.cl, b.loc, k, arrived)
	}
	w.bucketAt(arrived).attempts += int32(k)
	// They ended by t: a mean service time after they began, at the
	// latest just before t.
	end := min(arrived.Add(b.st.Mean()), t-1)
	bk := w.bucketAt(end)
	bk.ok += k
	bk.byCode[codes.OK] += int32(k)
	w.dp.byCode[codes.OK] += k
	// Each went at once to a READY backend: its latency is its service
	// time, given that it ended by t.
	sample := w.sampleOf(end)
	if fixed, ok := b.st.Fixed(); ok {
		w.lat.record(b.hist, sample, fixed, k)
		return k
	}
	for range k {
		w.lat.record(b.hist, sample, w.endedServiceTime(b.st, t, lo, hi), 1)
	}
	return k
}

// settlePoisson accounts for the Poisson arrivals of bulk runs alike (b)
// that began at starts (sorted) and end at t: from each start on, RPCs
// arrive at b's rate, so that over [starts[j], starts[j+1]) the arrivals
// are a Poisson process of j+1 times the rate (a sum of independent
// Poisson processes). It counts the RPCs that ended by t, returning how
// many, and appends those still in flight at t to fly.
//
// Which RPCs are in flight at t: an RPC that began at a is with
// probability S(t−a), S the service time's survival function,
// independently of the others (each draws its own service time), and
// then answers at a plus a draw of the service time conditioned on being
// longer than t−a. They are drawn by thinning (Lewis and Shedler): over a
// stretch of [from, t) whose youngest RPC would be in flight with
// probability at most p, a Poisson count of candidates of mean
// rate·length·p, each at a uniform time in the stretch and kept with
// probability S(t−a)/p, and a Poisson count of mean rate·length·(1−p) of
// RPCs that ended; the stretches end at ages that double from the mean
// service time, so that p falls fast and the candidates are a few times
// rate × mean service time. Stretches are also cut where an RPC's sample
// interval or the one it ends in would change, and at each start.
func (w *world) settlePoisson(b *bulkRun, starts []sim.Time, t sim.Time, rng *sim.Rand, fly []flight, sh *traceShares) (int, []flight) {
	iv := sim.Time(w.cfg.SampleInterval)
	delay := b.st.Mean()
	rate := 1 / b.gap.Seconds()
	ages := w.thinningAges(b.st)
	n := 0
	j := 0 // the starts at or before cur
	for cur := starts[0]; cur < t; {
		for j < len(starts) && starts[j] <= cur {
			j++
		}
		stop := min(t, nextBoundary(cur, iv), nextBoundary(cur.Add(delay), iv)-sim.Time(delay))
		if j < len(starts) {
			stop = min(stop, starts[j])
		}
		for k := len(ages) - 1; k >= 0; k-- { // the youngest age cut after cur
			if at := t - sim.Time(ages[k]); at > cur {
				stop = min(stop, at)
				break
			}
		}
		mid := cur + (stop-cur)/2
		mean := float64(j) * rate * time.Duration(stop-cur).Seconds()
		if p := b.st.Survival(time.Duration(t - stop)); p > 0 {
			for range rng.Poisson(mean * p) {
				at := cur + sim.Time(rng.Float64()*float64(stop-cur))
				age := time.Duration(t - at)
				if q := b.st.Survival(age) / p; q < 1 && rng.Float64() >= q {
					n += w.settleEnded(b, t, mid, 1, at, at)
					sh.split(1, j, cur)
					continue
				}
				fly = append(fly, flight{began: at, done: at.Add(b.st.SampleAbove(rng, age))})
			}
			mean *= 1 - p
		}
		k := w.settleEnded(b, t, mid, rng.Poisson(mean), cur, stop)
		sh.split(k, j, cur)
		n += k
		cur = stop
	}
	return n, fly
}

// latencyStream keys the streams that draw the latencies of bulk runs'
// RPCs.
var latencyStream = sim.HashKey("rpc latency")

// endedServiceTime draws the service time of an RPC of a bulk run that
// began at a uniform time a in [lo, hi] and ended by t, from service time
// st: st conditioned on being at most t − a, which is what the exact path
// has for an RPC that ended by t. A draw of st that is at most t − hi
// satisfies it whatever a; otherwise a is drawn, and a draw above t − a
// is replaced by one of st given that it is at most t − a (sim.Dist
// SampleBelow): with probability P(S ≤ x) the first draw, else the
// conditional one, which together are S given S ≤ x.
func (w *world) endedServiceTime(st sim.Dist, t, lo, hi sim.Time) time.Duration {
	rng := &w.lat.rng
	s := st.Sample(rng)
	if s <= t.Sub(hi) {
		return s
	}
	a := lo
	if hi > lo {
		a += sim.Time(rng.Float64() * float64(hi-lo))
	}
	if x := t.Sub(a); s > x {
		return st.SampleBelow(rng, x)
	}
	return s
}

// thinningAges returns the ages at which settleSteady takes a new bound
// on the chance that an RPC of service time st is still in flight: the
// mean service time doubled until that chance is below 10⁻⁴ (none for a
// service time that is always 0). Past the last the bound stays, which is
// still exact, only slower were it not small.
func (w *world) thinningAges(st sim.Dist) []time.Duration {
	ages := w.ages[:0]
	for a := st.Mean(); a > 0 && a < math.MaxInt64/2; a *= 2 {
		ages = append(ages, a)
		if st.Survival(a) < 1e-4 {
			break
		}
	}
	w.ages = ages
	return ages
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
