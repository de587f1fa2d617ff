package fleet

import (
	"bytes"
	"encoding/binary"
	"net"
	"slices"
	"strconv"
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/grpc/codes"

	"github.com/xdssim/xdssim/internal/prefetch"
	"github.com/xdssim/xdssim/model/controlplane"
	"github.com/xdssim/xdssim/model/dataplane"
	"github.com/xdssim/xdssim/model/network"
	"github.com/xdssim/xdssim/model/xdsclient"
	"github.com/xdssim/xdssim/sim"
)

// rpc is one RPC in flight: its retry state and its current attempt.
type rpc struct {
	inst    uint32
	instGen uint32 // the instance's rpcGen when the RPC began
	gen     uint32 // bumped when the slot is reused; events carry it
	session int32  // -1: none
	// id numbers the RPC within the run (traces name it); began is when
	// it began, which its latency counts from.
	id    uint64
	began sim.Time
	// cfg and cluster are the config the RPC began on and the cluster its
	// route picked in it (gRFC A28: once per RPC, its retries included).
	cfg     *dataplane.Config
	cluster int32
	call    dataplane.Call
	// deadline is the RPC's deadline; 0: none.
	deadline sim.Time
	// The current attempt: the backend and incarnation it went to, and
	// what the backend answers if the connection holds.
	backend, bgen uint32
	code          codes.Code
	cause         dataplane.Cause
	waiting       bool // waiting for the channel's first config
	broken        bool // the RPC's session lost its backend
	// due is when its pending event runs: the end of its attempt, or
	// with retrying its next attempt (replay takes the event over).
	due      sim.Time
	retrying bool
	// next links the instance's RPCs (instance.rpcs): the next one's
	// slot plus one, 0 for none.
	next uint32
	// hashed: the route's hash policies gave the RPC hash (ring_hash).
	hashed bool
	hash   uint64
}

// rpcSlots holds the RPCs in flight; a slot's index is its events' Entity.
type rpcSlots struct {
	slots []rpc
	spare []uint32
}

func (rs *rpcSlots) alloc() uint32 {
	if n := len(rs.spare); n > 0 {
		s := rs.spare[n-1]
		rs.spare = rs.spare[:n-1]
		return s
	}
	rs.slots = append(rs.slots, rpc{})
	return uint32(len(rs.slots) - 1)
}

func (rs *rpcSlots) free(s uint32) {
	rs.slots[s].gen++
	rs.spare = append(rs.spare, s)
}

// freeRPC frees RPC slot s, which leaves its instance's RPCs.
func (w *world) freeRPC(s uint32) {
	r := &w.rpcs.slots[s]
	if inst := &w.insts[r.inst]; r.instGen == inst.rpcGen {
		for p := &inst.rpcs; *p != 0; p = &w.rpcs.slots[*p-1].next {
			if *p == s+1 {
				*p = r.next
				break
			}
		}
	}
	w.rpcs.free(s)
}

// dpCounters are the data plane's totals.
type dpCounters struct {
	rpcs, failed    int
	attempted       int // RPCs that made at least one attempt
	byCode          [codes.Unauthenticated + 1]int
	attempts        int
	retries         int
	throttled       int
	sessionsStarted int
	affinityBreaks  int
	breaksBy        [dataplane.NumBreakReasons]int
	timerSpurious   int
	// replayed counts the RPCs that began in replayed bulk runs
	// (steady.go), not as kernel events.
	replayed int
	windows  []windowRecord
	buckets  []bucket // per sample: what ended in it
}

// bucket counts what happened in one sample interval ((k-1)I, kI].
type bucket struct {
	ok, failed int
	byCode     [codes.Unauthenticated + 1]int32
	// byCause counts the RPCs that ended in failure, or whose session
	// broke, by cause.
	byCause  [dataplane.NumCauses]int32
	attempts int32 // attempts started, retries included
	retries  int32 // retry attempts started
	breaks   int32 // sessions whose backend was lost
}

// windowRecord is a closed failure window of one instance.
type windowRecord struct {
	inst uint32
	// source is the index of the incident that caused the window (see
	// attribute), -1 for none.
	source int32
	w      dataplane.Window
}

// sampleOf returns the sample whose interval ((k-1)I, kI] holds t.
func (w *world) sampleOf(t sim.Time) int {
	iv := int64(w.cfg.SampleInterval)
	return int((int64(t) + iv - 1) / iv)
}

func (w *world) bucketAt(t sim.Time) *bucket {
	k := w.sampleOf(t)
	for len(w.dp.buckets) <= k {
		w.dp.buckets = append(w.dp.buckets, bucket{})
	}
	return &w.dp.buckets[k]
}

// buildDataPlane sets up the backends and the backend events.
func (w *world) buildDataPlane() {
	w.backends.Defaults = w.cfg.DataPlane.Backend
	w.dp.buckets = make([]bucket, 0, int(w.cfg.Duration/w.cfg.SampleInterval)+2)
	w.eventBackends = make([][]idRun, len(w.cfg.BackendEvents))
	// Events on the same range share its runs: 300 events on 100 000
	// backends each name them once.
	ranges := map[BackendRange][]idRun{}
	for i, e := range w.cfg.BackendEvents {
		var runs []idRun
		add := func(key string) { runs = appendRun(runs, w.backends.ID(key)) }
		for _, key := range e.Backends {
			add(key)
		}
		if e.Range.Count > 0 {
			if len(runs) == 0 {
				if r, ok := ranges[e.Range]; ok {
					runs = r
				} else {
					e.Range.each(add)
					ranges[e.Range] = runs
				}
			} else {
				e.Range.each(add)
			}
		}
		w.eventBackends[i] = runs
		w.kernel.Schedule(sim.Event{At: sim.Time(0).Add(e.At), Entity: uint32(i), Kind: kindBackend})
		if e.Duration > 0 && e.At+e.Duration < w.cfg.Duration {
			w.kernel.Schedule(sim.Event{At: sim.Time(0).Add(e.At + e.Duration), Entity: uint32(i), Kind: kindBackend, Arg: 1})
		}
	}
}

// An idRun is the backend identifiers first to first+n-1.
type idRun struct{ first, n uint32 }

// appendRun appends id to runs, extending the last run when id follows it.
func appendRun(runs []idRun, id uint32) []idRun {
	if k := len(runs) - 1; k >= 0 && runs[k].first+runs[k].n == id {
		runs[k].n++
		return runs
	}
	return append(runs, idRun{first: id, n: 1})
}

// eachID yields the identifiers of runs, in order.
func eachID(runs []idRun) func(yield func(uint32) bool) {
	return func(yield func(uint32) bool) {
		for _, r := range runs {
			for id := r.first; id < r.first+r.n; id++ {
				if !yield(id) {
					return
				}
			}
		}
	}
}

// backendEvent applies the start (Arg 0) or end (Arg 1) of a backend event.
func (w *world) backendEvent(ev sim.Event) {
	w.leaveAllSteady() // the backends' ground truth changes under them
	e := &w.cfg.BackendEvents[ev.Entity]
	now := w.kernel.Now()
	end := ev.Arg == 1
	for id := range eachID(w.eventBackends[ev.Entity]) {
		b := w.backends.Get(id)
		switch e.Action {
		case BackendDown:
			if end {
				w.backends.Start(id, now)
			} else {
				w.backends.Crash(id, now)
			}
		case BackendDrain:
			// Through its termination grace period a draining backend
			// serves every RPC it gets; then it stops.
			if end {
				w.backends.Crash(id, now)
			}
		case BackendSlow:
			b.ServiceTime = e.ServiceTime
			if end {
				b.ServiceTime = w.cfg.DataPlane.Backend.ServiceTime
			}
		case BackendFail:
			b.ErrorRate, b.ErrorCode = e.ErrorRate, e.ErrorCode
			if end {
				b.ErrorRate, b.ErrorCode = w.cfg.DataPlane.Backend.ErrorRate, w.cfg.DataPlane.Backend.ErrorCode
			}
		}
	}
	if e.Action == BackendFail {
		if end {
			w.failing--
		} else {
			w.failing++
		}
	}
}

// startRPCs starts the instance's RPC arrivals.
func (w *world) startRPCs(ii uint32) {
	inst := &w.insts[ii]
	load := &w.cfg.Groups[w.clients[inst.client].group].RPC
	if !load.sends() {
		return
	}
	inst.rpcGen++
	inst.rpcs = 0
	inst.ch.Reset()
	inst.steady, inst.replay = false, false
	if load.ThrottleMaxTokens > 0 {
		inst.throttle = dataplane.NewThrottle(load.ThrottleMaxTokens, load.ThrottleTokenRatio)
	}
	// A channel to an xds:/// target starts IDLE; the application's first
	// RPC on it starts the xDS resolver (whose watch the XdsClient begins
	// as the client starts) and waits in the channel for the first
	// resolver result, wait_for_ready or not: grpc-go NewClient ("Use of
	// the ClientConn for RPCs will automatically cause it to connect"),
	// newClientStream (idlenessMgr.OnCallBegin, then
	// waitForResolvedAddrs); grpc-java ManagedChannelImpl
	// RealChannel.newCall (exitIdleMode, then a pending call until the
	// first config selector); C-core client_channel_filter.cc
	// StartTransportStreamOpBatch (an IDLE channel starts resolving) and
	// CheckResolution (no resolver result yet: the call is queued). So
	// the first RPC goes as the client starts. RandomStart puts it at a
	// random phase of the arrivals instead, as for an application that
	// connected its channel beforehand and whose load does not start
	// with it.
	var first time.Duration
	if load.RandomStart {
		rng := w.clients[inst.client].rng
		mean := load.interval()
		first = rng.Exp(mean)
		if load.Constant {
			first = time.Duration(rng.Uniform(0, float64(mean)))
		}
	}
	w.kernel.After(first, sim.Event{Entity: ii, Kind: kindRPCArrival, Arg: inst.arrivalArg()})
}

// interval is the mean time between two RPCs. A rate too low for any RPC
// to arrive during a run gives sim.MaxDraw, not an overflowed duration.
func (l *RPCLoad) interval() time.Duration { return sim.DurationOf(float64(time.Second) / l.Rate) }

// sends reports whether the group's clients send RPCs at all; those of a
// group that does not never pick, so their channels keep no
// load-balancing state (rederive).
func (l *RPCLoad) sends() bool { return l.Rate > 0 }

// stopRPCs ends the instance's RPCs, as a process exit does: arrivals
// stop, RPCs in flight vanish uncounted, an open failure window closes.
func (w *world) stopRPCs(ii uint32) {
	inst := &w.insts[ii]
	switch {
	case inst.replay:
		w.replay(ii, w.kernel.Now(), false) // what is left is dropped below
	case inst.steady:
		w.settleSteady(ii, w.kernel.Now(), false)
	}
	inst.rpcGen++
	inst.rpcs = 0
	inst.ch.Reset()
	for _, s := range inst.waiting {
		w.freeRPC(s)
	}
	inst.waiting = inst.waiting[:0]
	if win, ok := inst.win.Close(); ok {
		w.windowClosed(ii, win)
	}
}

// rpcArrival begins one RPC and schedules the next arrival.
func (w *world) rpcArrival(ev sim.Event) {
	ii := ev.Entity
	inst := &w.insts[ii]
	w.warm += prefetch.Of(inst) + inst.ch.Warm() // see receive
	if ev.Arg != inst.arrivalArg() || inst.xds == nil {
		return
	}
	if !w.replaying && w.replayEligible(ii) {
		// This RPC and the next are replayed one by one when the bulk
		// run ends (steady.go).
		w.enterReplay(ii)
		return
	}
	c := &w.clients[inst.client]
	load := &w.cfg.Groups[c.group].RPC
	gap := load.interval()
	if !load.Constant {
		gap = c.rng.Exp(gap)
	}
	w.kernel.After(gap, sim.Event{Entity: ii, Kind: kindRPCArrival, Arg: ev.Arg})
	w.arrive(ii)
	if !w.replaying && w.steadyEligible(ii) {
		// The next RPCs are accounted in bulk; the arrival just
		// scheduled is dropped (steady.go).
		w.enterSteady(ii)
	}
}

// arrive begins one RPC of instance ii now.
func (w *world) arrive(ii uint32) {
	inst := &w.insts[ii]
	now := w.kernel.Now()
	w.dp.rpcs++
	w.group(ii).rpcs++
	id := uint64(w.dp.rpcs)
	if inst.ch.Config() == nil && w.resolverFailed(ii) {
		// The resolver reported an error: the channel is in
		// TRANSIENT_FAILURE and a non-wait-for-ready RPC fails at once.
		if w.tracing(ii) {
			w.trace(ii, TraceEvent{Kind: TracePick, RPC: id, Attempt: 1, Code: codes.Unavailable, Cause: w.noConfigCause(ii),
				Detail: "the resolver reported an error",
				Rule:   pickRule(&dataplane.Pick{Result: dataplane.Failed, NoConfig: true}, 0, false)})
		}
		w.finish(ii, id, now, now, codes.Unavailable, w.noConfigCause(ii), false)
		return
	}
	s := w.newRPC(ii, id, now)
	r := &w.rpcs.slots[s]
	if inst.ch.Config() == nil {
		// No resolver result yet: the channel is IDLE or CONNECTING and
		// the RPC waits for a config, up to its deadline (grpc-go
		// picker_wrapper.go blocks the pick until the first picker).
		r.waiting = true
		inst.waiting = append(inst.waiting, s)
		if r.deadline != 0 {
			// Its cause is known when the deadline runs out (attemptDone).
			r.code = codes.DeadlineExceeded
			w.kernel.Schedule(sim.Event{At: r.deadline, Entity: s, Kind: kindRPCAttempt, Arg: uint64(r.gen)})
		}
		return
	}
	w.begin(s, now, 0)
}

// newRPC takes a slot for RPC number id of instance ii, which began at
// began.
func (w *world) newRPC(ii uint32, id uint64, began sim.Time) uint32 {
	inst := &w.insts[ii]
	load := &w.cfg.Groups[w.clients[inst.client].group].RPC
	s := w.rpcs.alloc()
	r := &w.rpcs.slots[s]
	*r = rpc{inst: ii, instGen: inst.rpcGen, gen: r.gen, session: -1, id: id, began: began, next: inst.rpcs}
	inst.rpcs = s + 1
	if load.Deadline > 0 {
		r.deadline = began.Add(load.Deadline)
	}
	return s
}

// resumeRPC takes on, one by one, an RPC of instance ii's bulk run that
// began at began and is still in flight now, when the run ends
// (settleSteady): it is counted as begun, its attempt goes to the backend
// the channel's policy picks now (the channel was steady: a READY one
// whose backend answers OK) and is answered at done. From then on it is
// an exact RPC: its backend's crash fails it (attemptDone), its client's
// stop drops it, its retries and deadline are its own.
func (w *world) resumeRPC(ii uint32, began, done sim.Time) {
	w.dp.rpcs++
	w.group(ii).rpcs++
	w.begin(w.newRPC(ii, uint64(w.dp.rpcs), began), began, done)
}

// begin starts an RPC's first attempt on the channel's config: an RPC that
// began at began, whose backend answers at done (0: as the backend draws
// it; resumeRPC's RPCs have theirs drawn already).
func (w *world) begin(s uint32, began, done sim.Time) {
	r := &w.rpcs.slots[s]
	ii := r.inst
	inst := &w.insts[ii]
	now := w.kernel.Now()
	load := &w.cfg.Groups[w.clients[inst.client].group].RPC
	cfg := inst.ch.Config()
	m := load.method(w.clients[inst.client].rng)
	route := cfg.RouteFor(m.Path, m.Headers)
	if route == nil {
		// No route matches the method: grpc-go's config selector fails
		// the RPC UNAVAILABLE before any pick.
		if w.tracing(ii) {
			w.trace(ii, TraceEvent{Kind: TracePick, RPC: r.id, Attempt: 1, Code: codes.Unavailable, Cause: dataplane.NoHealthyEndpoint,
				Detail: "no route matches " + m.Path, Rule: "gRFC A28 route matching: grpc-go xds resolver config selector"})
		}
		w.freeRPC(s)
		w.finish(ii, r.id, r.began, now, codes.Unavailable, dataplane.NoHealthyEndpoint, false)
		return
	}
	r.cfg, r.cluster = cfg, int32(route.PickCluster(w.clients[inst.client].rng))
	if len(route.HashPolicies) > 0 {
		r.hash, r.hashed = route.RequestHash(m.Headers, uint64(ii)+1)
	}
	w.dp.attempted++
	r.call.Start(route.Retry, began, r.deadline)
	if load.Sessions > 0 && route.Session != nil && dataplane.PathMatches(route.Session.Path, m.Path) {
		// The RPC takes its session as it began: an RPC of a bulk run
		// still in flight when the run ends (resumeRPC) took it then,
		// before the session's lifetime that may end the run ran out.
		idx, started := inst.ch.Session(began, load.Sessions, load.SessionLifetime, load.SessionRPCs)
		r.session = int32(idx)
		if started {
			w.dp.sessionsStarted++
		}
	}
	w.attempt(s, began, done)
}

// configChanged releases the RPCs waiting for a config: they start on the
// new one, or fail if the resolver reported an error.
func (w *world) configChanged(ii uint32) {
	inst := &w.insts[ii]
	if len(inst.waiting) == 0 {
		return
	}
	waiting := inst.waiting
	inst.waiting = nil
	now := w.kernel.Now()
	for _, s := range waiting {
		r := &w.rpcs.slots[s]
		r.gen++ // cancels its deadline event
		r.waiting = false
		if inst.ch.Config() != nil {
			w.begin(s, now, 0)
			continue
		}
		w.freeRPC(s)
		w.finish(ii, r.id, r.began, now, codes.Unavailable, w.noConfigCause(ii), false)
	}
}

// attempt picks a backend for the RPC's current attempt, which began at
// began, and schedules its end: at done when that is not 0 (resumeRPC),
// else when the backend's answer is ready.
func (w *world) attempt(s uint32, began, done sim.Time) {
	r := &w.rpcs.slots[s]
	ii := r.inst
	inst := &w.insts[ii]
	c := &w.clients[inst.client]
	now := w.kernel.Now()
	w.dp.attempts++
	b := w.bucketAt(began)
	b.attempts++
	env := w.env(ii)
	var p dataplane.Pick
	ci, ok := w.rpcCluster(r, inst)
	env.Hash, env.Hashed = r.hash, r.hashed
	if ok {
		p = inst.ch.Pick(&env, ci, int(r.session))
	} else {
		// The config changed under the RPC and no longer has its cluster.
		p = dataplane.Pick{Result: dataplane.Failed, NoEndpoint: true, At: now}
	}
	if w.tracing(ii) {
		w.tracePick(ii, r, &p, ci, ok)
	}
	if p.AffinityBroken && !r.broken {
		// The session's backend could not be used (gRFC A55): its state
		// is lost, which is not an RPC failure, so it is counted on its
		// own and opens no failure window.
		r.broken = true
		w.dp.affinityBreaks++
		w.dp.breaksBy[p.BreakReason]++
		w.group(ii).affinityBreaks++
		b.breaks++
	}
	if p.Result == dataplane.Failed {
		var cause dataplane.Cause
		switch {
		case p.NoConfig:
			cause = w.noConfigCause(ii)
		case p.ClusterFailed:
			cause = p.Cause
		case p.NoEndpoint:
			cause = dataplane.NoHealthyEndpoint
		default:
			cause = w.downCause(ii, r)
		}
		w.attemptEnded(s, now, codes.Unavailable, cause)
		return
	}
	if w.routing.on && r.call.Attempts() == 1 {
		cl := &r.cfg.Clusters[ci]
		w.routing.count(cl, cl.Endpoints[p.Endpoint].Locality, 1, now)
	}
	deadline := r.deadline
	code := codes.OK // a steady channel's backends answer OK (dataplane.Channel.Steady)
	if done == 0 {
		done, code = w.backends.Answer(p.Backend, p.At, c.rng)
	}
	r.backend, r.bgen, r.code = p.Backend, p.Gen, code
	r.cause = dataplane.BackendError
	at := done
	if deadline != 0 && done > deadline {
		at, r.code, r.cause = deadline, codes.DeadlineExceeded, dataplane.Deadline
	}
	inst.ch.Started(p.Backend)
	r.due, r.retrying = at, false
	w.kernel.Schedule(sim.Event{At: at, Entity: s, Kind: kindRPCAttempt, Arg: uint64(r.gen)})
}

// attemptDone ends an attempt that reached a backend, or an RPC whose
// deadline ran out while it waited for a config.
func (w *world) attemptDone(ev sim.Event) {
	s := ev.Entity
	r := &w.rpcs.slots[s]
	if uint32(ev.Arg) != r.gen {
		return
	}
	inst := &w.insts[r.inst]
	if r.instGen != inst.rpcGen {
		w.freeRPC(s) // the client stopped under it
		return
	}
	ii, code, cause := r.inst, r.code, r.cause
	if r.waiting {
		// A deadline that ran out while the RPC waited for a config: why
		// there is none is as things stand now.
		inst.waiting = slices.DeleteFunc(inst.waiting, func(x uint32) bool { return x == s })
		w.freeRPC(s)
		w.finish(ii, r.id, r.began, w.kernel.Now(), code, w.noConfigCause(ii), false)
		return
	}
	inst.ch.Finished(r.backend)
	if !w.backends.Alive(r.backend, r.bgen) {
		// The connection reset under the RPC: the backend crashed or
		// restarted.
		code, cause = codes.Unavailable, w.downCause(ii, r)
	}
	w.attemptEnded(s, w.kernel.Now(), code, cause)
}

// attemptEnded feeds an attempt's outcome to the retry machine.
func (w *world) attemptEnded(s uint32, now sim.Time, code codes.Code, cause dataplane.Cause) {
	r := &w.rpcs.slots[s]
	inst := &w.insts[r.inst]
	d := r.call.AttemptDone(now, code, &inst.throttle, w.clients[inst.client].rng)
	if d.Throttled {
		w.dp.throttled++
	}
	if w.tracing(r.inst) {
		w.traceAt(r.inst, time.Duration(now), TraceEvent{Kind: TraceAttempt, RPC: r.id, Attempt: r.call.Attempts(), Code: code,
			Cause: cause, Rule: ruleAttempt})
		if d.Retry || d.Throttled {
			rule := ruleRetry
			if d.Throttled {
				rule = ruleThrottled
			}
			w.traceAt(r.inst, time.Duration(now), TraceEvent{Kind: TraceRetry, RPC: r.id, Attempt: r.call.Attempts(),
				Delay: d.At.Sub(now), Throttled: d.Throttled, Rule: rule})
		}
	}
	if d.Retry { // gRFC A6: the next attempt picks again after the backoff
		w.dp.retries++
		w.group(r.inst).retries++
		w.bucketAt(d.At).retries++
		r.cause = cause
		r.due, r.retrying = d.At, true
		w.kernel.Schedule(sim.Event{At: d.At, Entity: s, Kind: kindRPCRetry, Arg: uint64(r.gen)})
		return
	}
	// When the deadline runs out while the RPC waits to retry, it ends
	// DEADLINE_EXCEEDED and the failure that made it retry is the cause.
	ii, broken, id, began := r.inst, r.broken, r.id, r.began
	w.freeRPC(s)
	w.finish(ii, id, began, d.At, d.Code, cause, broken)
}

// rpcRetry starts a retry attempt.
func (w *world) rpcRetry(ev sim.Event) {
	s := ev.Entity
	r := &w.rpcs.slots[s]
	if uint32(ev.Arg) != r.gen {
		return
	}
	if r.instGen != w.insts[r.inst].rpcGen {
		w.freeRPC(s)
		return
	}
	r.call.BeginRetry()
	w.attempt(s, w.kernel.Now(), 0)
}

// finish records the final outcome at t of RPC number id, which began at
// began.
func (w *world) finish(ii uint32, id uint64, began, t sim.Time, code codes.Code, cause dataplane.Cause, broken bool) {
	w.recordLatency(ii, t, t.Sub(began), 1)
	if w.tracing(ii) {
		e := TraceEvent{Kind: TraceRPC, Code: code, RPC: id, Latency: t.Sub(began), Rule: ruleRPC}
		if code != codes.OK {
			e.Cause = cause
		}
		if broken {
			e.Detail = "on another backend than its session's (gRFC A55)"
		}
		w.traceAt(ii, time.Duration(t), e)
	}
	b := w.bucketAt(t)
	b.byCode[code]++
	w.dp.byCode[code]++
	if code == codes.OK {
		// A session that lost its backend is counted at its pick; its RPC
		// did not fail.
		b.ok++
		return
	}
	w.dp.failed++
	w.group(ii).failed++
	b.failed++
	b.byCause[cause]++
	inst := &w.insts[ii]
	wasOpen := inst.win.Open()
	win, closed := inst.win.Fail(t, w.cfg.DataPlane.WindowGap, code, cause)
	if closed {
		w.windowClosed(ii, win)
	}
	if (closed || !wasOpen) && w.tracing(ii) {
		w.traceAt(ii, time.Duration(t), TraceEvent{Kind: TraceWindowOpen, RPC: id, Code: code, Cause: cause, Rule: ruleWindow})
	}
}

// windowClosed records instance ii's failure window win, which is over.
func (w *world) windowClosed(ii uint32, win dataplane.Window) {
	w.dp.windows = append(w.dp.windows, windowRecord{inst: ii, source: -1, w: win})
	if w.tracing(ii) {
		w.traceAt(ii, time.Duration(win.End), TraceEvent{Kind: TraceWindowClose, Since: time.Duration(win.Start),
			Count: int(win.Failures), Cause: win.Cause(), Rule: ruleWindow})
	}
}

func (w *world) env(ii uint32) dataplane.Env {
	inst := &w.insts[ii]
	c := &w.clients[inst.client]
	g := &w.cfg.Groups[c.group]
	link := &w.cfg.Link
	if g.Link != nil {
		link = g.Link
	}
	return dataplane.Env{Now: w.kernel.Now(), Backends: &w.backends, Backoff: &g.DataChannel, Link: link, Rand: c.rng, Profile: g.DataPlane}
}

// noConfigCause says why an instance has no usable config: the first
// resource of its chain that an error took away; else, with nothing
// failed, whether a control plane is reachable (it has not sent a
// resource yet) or none is.
func (w *world) noConfigCause(ii uint32) dataplane.Cause {
	for _, wt := range w.insts[ii].watched {
		if wt.failed {
			return wt.cause
		}
	}
	if w.reachable(ii) {
		return dataplane.NoConfigResourceNotSent
	}
	return dataplane.NoConfigCPUnreachable
}

// reachable reports, from ground truth, whether a control plane of the
// instance's bootstrap can be reached now: a channel to it is READY and
// the network delivers messages between them (no blackhole holds them,
// the server is not down). Whether an ADS stream happens to be open does
// not matter: a server that ends every stream after its first response is
// up and answering.
func (w *world) reachable(ii uint32) bool {
	inst := &w.insts[ii]
	now := w.kernel.Now()
	ref := w.clients[inst.client].ref
	for k := uint32(0); k < uint32(inst.nconns); k++ {
		c := &w.conns[inst.firstConn+k]
		if c.ch.State() != network.Ready {
			continue
		}
		if w.faults.Delivery(now, ref, int(c.cp)).Verdict == network.Delivered {
			return true
		}
	}
	return false
}

// rpcCluster returns the index of the RPC's cluster in the channel's
// current config: the one its route picked, found again by name if the
// config changed since.
func (w *world) rpcCluster(r *rpc, inst *instance) (int, bool) {
	cfg := inst.ch.Config()
	if cfg == nil || cfg == r.cfg {
		return int(r.cluster), true
	}
	k := cfg.ClusterIndex(r.cfg.Clusters[r.cluster].Name)
	return k, k >= 0
}

// watchFailed records why a watched resource was taken away, from ground
// truth: a does-not-exist timer is spurious if a server of the instance
// held the resource when it fired.
func (w *world) watchFailed(ii uint32, n *xdsclient.Notification) dataplane.Cause {
	switch n.Cause {
	case xdsclient.CauseNACK:
		return dataplane.NACK
	case xdsclient.CauseDeleted:
		return dataplane.ResourceDeleted
	case xdsclient.CauseServerError:
		return dataplane.ResourceError
	case xdsclient.CauseTimeout:
		if w.serverHolds(ii, n.Type, n.Name) {
			return dataplane.ResourceTimerSpurious
		}
		return dataplane.ResourceDoesNotExist
	}
	return dataplane.NoConfigCPUnreachable
}

// serverHolds reports whether any server of the instance's bootstrap holds
// the resource.
func (w *world) serverHolds(ii uint32, t xdsclient.ResourceType, name string) bool {
	g := &w.cfg.Groups[w.clients[w.insts[ii].client].group]
	for _, cp := range g.Servers {
		if _, ok := w.servers[cp].Lookup(controlplane.ResourceType(t), name); ok {
			return true
		}
	}
	return false
}

// downCause labels a failure of RPC r to reach a backend: stale EDS when
// the server the instance is using holds other endpoints for the RPC's
// cluster than the instance has.
func (w *world) downCause(ii uint32, r *rpc) dataplane.Cause {
	inst := &w.insts[ii]
	g := &w.cfg.Groups[w.clients[inst.client].group]
	srv := 0 // the highest-priority active server (gRFC A71)
	for s := 0; s < int(inst.nconns) && inst.xds != nil; s++ {
		if inst.xds.Active(s) {
			srv = s
			break
		}
	}
	eds := ""
	if r.cfg != nil {
		eds = r.cfg.Clusters[r.cluster].EDS
	}
	for _, wt := range inst.watched {
		if wt.typ != xdsclient.EDS || wt.res == nil || (eds != "" && wt.name != eds) {
			continue
		}
		cur, ok := w.servers[g.Servers[srv]].Lookup(controlplane.EDS, wt.name)
		if !ok || !bytes.Equal(cur.GetValue(), wt.res.Raw.GetValue()) {
			return dataplane.BackendDownStaleEDS
		}
	}
	return dataplane.BackendDown
}

// channelConfig returns the shared data-plane config of a resolved set of
// resources, building it the first time.
func (w *world) channelConfig(ii uint32, lis, rc *xdsclient.Decoded, clusters []clusterRef) *dataplane.Config {
	g := &w.cfg.Groups[w.clients[w.insts[ii].client].group]
	id := func(d *xdsclient.Decoded) uint32 {
		if d == nil {
			return 0
		}
		n, ok := w.ids[d]
		if !ok {
			n = uint32(len(w.ids) + 1)
			w.ids[d] = n
		}
		return n
	}
	// The key: the resources it is built from, which are shared by every
	// client that has them (by their ids; a failed cluster by its cause),
	// and the implementation. Looking a []byte key up does not allocate.
	b := binary.LittleEndian.AppendUint32(w.keyBuf[:0], id(lis))
	b = binary.LittleEndian.AppendUint32(b, id(rc))
	prof, ok := w.profIDs[g.DataPlane]
	if !ok {
		prof = uint32(len(w.profIDs))
		w.profIDs[g.DataPlane] = prof
	}
	b = binary.LittleEndian.AppendUint32(b, prof)
	for _, c := range clusters {
		b = binary.LittleEndian.AppendUint32(b, id(c.cl))
		b = binary.LittleEndian.AppendUint32(b, id(c.eds))
		if c.failed {
			b = append(b, 1+byte(c.cause))
		} else {
			b = append(b, 0)
		}
		b = append(b, c.name...)
		b = append(b, 0)
	}
	w.keyBuf = b
	if c, ok := w.dpConfigs[string(b)]; ok {
		return c
	}
	var route *routepb.RouteConfiguration
	if rc != nil {
		route = rc.Message.(*routepb.RouteConfiguration)
	}
	res := make([]dataplane.ClusterResources, len(clusters))
	for i, c := range clusters {
		res[i] = dataplane.ClusterResources{Name: c.name, Failed: c.failed, Cause: c.cause}
		if !c.failed {
			res[i].Cluster = c.cl.Message.(*clusterpb.Cluster)
			res[i].CLA = c.eds.Message.(*endpointpb.ClusterLoadAssignment)
		}
	}
	target := lis.Name
	c, err := dataplane.BuildConfig(target, lis.Message.(*listenerpb.Listener), route, res, g.DataPlane,
		func(cluster, addr string) uint32 { return w.backends.ID(dataplane.BackendKey(cluster, addr)) })
	if err != nil {
		// Resources the XdsClient accepted but no route matches the
		// target: the channel has no config and its RPCs wait for one.
		c = nil
	}
	w.routing.label(c)
	w.dpConfigs[string(b)] = c
	return c
}

// BackendKey is dataplane.BackendKey for a generated endpoint address and
// port, as scenarios name backends.
func BackendKey(cluster, ip string, port uint32) string {
	return dataplane.BackendKey(cluster, net.JoinHostPort(ip, strconv.Itoa(int(port))))
}

// tracePick reports the pick p of RPC r's current attempt, in cluster ci
// of the channel's config (none when !ok).
func (w *world) tracePick(ii uint32, r *rpc, p *dataplane.Pick, ci int, ok bool) {
	e := TraceEvent{Kind: TracePick, RPC: r.id, Attempt: r.call.Attempts()}
	var lb dataplane.LBPolicy
	if cfg := w.insts[ii].ch.Config(); ok && cfg != nil {
		cl := &cfg.Clusters[ci]
		lb = cl.LB
		if p.Result != dataplane.Failed && p.Endpoint < len(cl.Endpoints) {
			e.Backend = cl.Endpoints[p.Endpoint].Address
		}
	}
	if p.Result == dataplane.Failed {
		e.Code = codes.Unavailable
		switch {
		case p.NoConfig:
			e.Detail = "the resolver reported an error"
		case p.ClusterFailed:
			e.Detail = "its cluster failed"
		case p.NoEndpoint:
			e.Detail = "no usable endpoint"
		default:
			e.Detail = "no endpoint READY"
		}
	} else if now := w.kernel.Now(); p.At > now {
		e.Delay = p.At.Sub(now) // the pick waits for its subchannel to connect
	}
	e.Rule = pickRule(p, lb, r.session >= 0)
	w.trace(ii, e)
}
