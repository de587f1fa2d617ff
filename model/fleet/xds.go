package fleet

import (
	"fmt"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdssim/xdssim/internal/prefetch"
	"github.com/xdssim/xdssim/model/dataplane"
	"github.com/xdssim/xdssim/model/network"
	"github.com/xdssim/xdssim/model/xdsclient"
	"github.com/xdssim/xdssim/sim"
)

// instance is one XdsClient instance of a client: the one for one
// data-plane target (gRFC A71, "Change global XdsClient from a single
// instance to per-target instances"). It follows the target's resources
// the way gRPC's xDS resolver and config dependency manager do: the
// Listener names a RouteConfiguration (or inlines one), which names
// Clusters, each of which names its endpoints.
type instance struct {
	// The fields an RPC touches come first, together, so that an RPC of
	// an instance reads few cache lines: a large fleet's RPCs land on
	// instances at random, and each line read is a miss.
	client uint32
	// rpcGen is its RPCs' generation (bumped when the client stops).
	// Steady RPCs (steady.go): arrivals numbers the chain of arrival
	// events, which a bulk run ends; steady is set during a bulk run,
	// which began at steadyFrom, and replay when the run's RPCs are
	// replayed one by one at its end (a backend fails some of them).
	rpcGen    uint32
	arrivals  uint32
	target    uint16 // index into the group's Targets
	nconns    uint8
	steady    bool
	fallback  bool // a channel to a lower-priority server is active
	complete  bool // every resource of the target's config is cached
	replay    bool
	firstConn uint32 // its conns: firstConn .. +len(group.Servers)
	// xds is in the first line too: a response's arrival reads it
	// (readResponses) with client, and nothing else of the instance.
	xds *xdsclient.Client
	// The data plane: the channel's config, connections and sessions,
	// its retry throttle and its open failure window.
	ch       dataplane.Channel
	throttle dataplane.Throttle
	// rpcs is the first of its RPCs of this generation that hold a slot
	// (plus one; 0: none); rpc.next links the others.
	rpcs       uint32
	steadyFrom sim.Time
	win        dataplane.Tracker
	waiting    []uint32 // RPCs waiting for a first config

	watched []watch
	timers  []uint32 // its armed timer slots
	// own is room for the watches an instance usually has (its target's
	// listener, route, cluster and endpoints), next to the rest of it: a
	// response reads them, and a world's instances are made once, in an
	// array that never moves, so watched can point into it.
	own [4]watch
}

// watch is one resource the instance watches and what it last got: the
// resource, or nil when it has none (not yet, or an error replaced it).
type watch struct {
	name string
	res  *xdsclient.Decoded
	typ  xdsclient.ResourceType
	// failed is set when an error took the resource away; cause says why.
	failed bool
	cause  dataplane.Cause
	marked bool // scratch for re-deriving the watch set
}

// watcherID is the one watcher each instance registers for every resource.
const watcherID xdsclient.WatcherID = 1

func (w *world) addInstances(id uint32) {
	c := &w.clients[id]
	g := &w.cfg.Groups[c.group]
	if len(g.Servers) == 0 {
		return
	}
	c.firstInst = uint32(len(w.insts))
	w.groups[c.group].instances += len(g.Targets)
	for ti := range g.Targets {
		ii := uint32(len(w.insts))
		w.insts = append(w.insts, instance{client: id, target: uint16(ti), firstConn: uint32(len(w.conns)), nconns: uint8(len(g.Servers))})
		for si, cp := range g.Servers {
			cn := conn{inst: ii, cp: uint16(cp), local: uint8(si), ch: network.NewChannel(&g.XDSChannel, c.rng)}
			if si == 0 {
				cn.flags |= connPrimaryState
				w.fx.primary[network.Idle]++
			}
			w.conns = append(w.conns, cn)
			w.connInst = append(w.connInst, ii)
		}
	}
}

// startInstances creates the client's XdsClient instances and has each
// watch its target's Listener.
func (w *world) startInstances(id uint32) {
	c := &w.clients[id]
	g := &w.cfg.Groups[c.group]
	if len(g.Servers) == 0 {
		return
	}
	// The bootstrap's node is built when a request carries it (node), not
	// kept: a million clients would each hold one for their first request.
	var boot xdsclient.Bootstrap
	for _, cp := range g.Servers {
		boot.Servers = append(boot.Servers, xdsclient.ServerConfig{URI: w.cfg.ControlPlanes[cp].Server.Name, Features: g.Features})
	}
	keys := w.poolKeysOf(c.group)
	for ti, target := range g.Targets {
		ii := c.firstInst + uint32(ti)
		x, err := xdsclient.New(xdsclient.Config{
			Target: keys[ti], Bootstrap: boot, SharedProfile: &g.Profile, Rand: c.rng, AutoDone: true,
			Effects: &w.effects, // xdsInput copies every effect out at once
			Metrics: w.sink(ii),
		})
		if err != nil {
			panic(fmt.Sprintf("fleet: client %s: %v", w.clientName(id), err)) // the scenario was validated
		}
		inst := &w.insts[ii]
		inst.xds, w.xdsOf[ii] = x, x
		for k := range uint32(inst.nconns) {
			w.conns[inst.firstConn+k].flags &^= connReadPaused // a new XdsClient reads
		}
		if inst.watched == nil {
			inst.watched = inst.own[:0]
		}
		inst.watched = append(inst.watched[:0], watch{typ: xdsclient.LDS, name: target})
		w.xdsInput(ii, inWatch, -1, x.Watch(w.now(), xdsclient.LDS, target, watcherID))
		w.startRPCs(ii)
	}
}

// poolKeysOf returns the XdsClient pool keys of group gi's targets: each
// client's instances keep theirs (xdsclient.Config.Target), so a group's
// clients share one string per target instead of holding one each.
func (w *world) poolKeysOf(gi uint32) []string {
	if w.poolKeys == nil {
		w.poolKeys = make([][]string, len(w.cfg.Groups))
	}
	if w.poolKeys[gi] == nil {
		for _, target := range w.cfg.Groups[gi].Targets {
			w.poolKeys[gi] = append(w.poolKeys[gi], "xds:///"+target)
		}
	}
	return w.poolKeys[gi]
}

// stopInstances tears the client's instances down, as a process exit
// does: streams end (the servers see them close), channels and timers go.
func (w *world) stopInstances(id uint32) {
	c := &w.clients[id]
	g := &w.cfg.Groups[c.group]
	for ti := range g.Targets {
		if len(g.Servers) == 0 {
			break
		}
		ii := c.firstInst + uint32(ti)
		inst := &w.insts[ii]
		for k := uint32(0); k < uint32(inst.nconns); k++ {
			w.resetChannel(inst.firstConn + k)
		}
		for _, s := range inst.timers {
			w.timers.free(s)
		}
		inst.timers = inst.timers[:0]
		if inst.fallback {
			w.fx.onFallback--
		}
		if inst.complete {
			w.fx.complete--
		}
		if inst.xds != nil {
			inst.xds.Retire() // its gauges leave the group's A78 sums
		}
		inst.fallback, inst.complete, inst.xds, w.xdsOf[ii] = false, false, nil, nil
		w.stopRPCs(ii)
	}
}

func (w *world) now() time.Duration { return time.Duration(w.kernel.Now()) }

// effectQueue holds XdsClient effects not yet carried out. Carrying one
// out may feed the instance (or another) an input whose effects join the
// queue, so they are carried out in order without recursion.
type effectQueue struct {
	items    []queuedEffect
	draining bool
}

// queuedEffect is an effect of instance inst, produced by input in on the
// instance's server srv (-1: an input of no server); the input only
// serves to name the rule of a traced effect (rules.go).
type queuedEffect struct {
	inst uint32
	in   input
	srv  int8
	e    xdsclient.Effect
}

// xdsInput carries out the effects that input in, on the instance's
// server srv (-1 for a watch), produced.
func (w *world) xdsInput(ii uint32, in input, srv int, effs []xdsclient.Effect) {
	for _, e := range effs {
		w.xq.items = append(w.xq.items, queuedEffect{inst: ii, in: in, srv: int8(srv), e: e})
	}
	if w.xq.draining {
		return
	}
	w.xq.draining = true
	for i := 0; i < len(w.xq.items); i++ {
		q := w.xq.items[i]
		w.carryOut(q.inst, q.in, int(q.srv), &q.e)
	}
	clear(w.xq.items)
	w.xq.items = w.xq.items[:0]
	w.xq.draining = false
}

func (w *world) carryOut(ii uint32, in input, srv int, e *xdsclient.Effect) {
	inst := &w.insts[ii]
	if inst.xds == nil {
		return // the client stopped while this effect was queued
	}
	if w.tracing(ii) {
		w.traceEffect(ii, in, srv, e)
	}
	ci := inst.firstConn + uint32(e.Server)
	switch e.Kind {
	case xdsclient.OpenStream:
		c := &w.conns[ci]
		c.flags &^= connWaitForReady
		if e.WaitForReady {
			c.flags |= connWaitForReady
		}
		c.flags |= connWantStream
		w.openStream(ci)
	case xdsclient.CloseStream:
		// The XdsClient releases the channel (gRFC A71 revert, or no
		// resources left on it).
		w.resetChannel(ci)
	case xdsclient.Send:
		if e.Request.ErrorDetail != nil {
			w.fx.nacksSent++
		}
		if w.send(ci, e.Request) {
			w.xdsInput(ii, inSendDone, e.Server, inst.xds.SendDone(w.now(), e.Server))
		}
	case xdsclient.ArmTimer:
		if e.Timer.Kind == xdsclient.RetryTimer {
			w.hists[histADSBackoff].observe(e.Delay.Seconds())
		}
		s := w.timerSlot(ii, e.Timer)
		w.timers.slots[s].t.Arm(w.kernel, w.kernel.Now().Add(e.Delay), s, kindXDSTimer)
	case xdsclient.CancelTimer:
		w.cancelTimer(ii, e.Timer)
	case xdsclient.Notify:
		w.notified(ii, &e.Notification)
	case xdsclient.PauseRead:
		w.conns[ci].flags |= connReadPaused // readResponses holds responses
	case xdsclient.ResumeRead:
		w.conns[ci].flags &^= connReadPaused
		w.readResponses(ci)
	}
	w.checkFallback(ii)
}

// checkFallback follows whether the instance is on a fallback server: it
// has an active channel to a server other than its first (gRFC A71).
func (w *world) checkFallback(ii uint32) {
	inst := &w.insts[ii]
	if inst.xds == nil {
		return
	}
	active := 0
	for s := int(inst.nconns) - 1; s >= 1; s-- {
		if inst.xds.Active(s) {
			active = s
		}
	}
	on := active > 0
	switch {
	case on && !inst.fallback:
		w.fx.fallbackSwitches++
		w.group(ii).fallbackSwitches++
		w.fx.onFallback++
		if w.tracing(ii) {
			w.traceConn(inst.firstConn+uint32(active), TraceEvent{Kind: TraceFallback, Rule: ruleFallback})
		}
	case !on && inst.fallback:
		w.fx.fallbackReverts++
		w.fx.onFallback--
		if w.tracing(ii) {
			w.traceConn(inst.firstConn, TraceEvent{Kind: TraceRevert, Rule: ruleRevert})
		}
	}
	inst.fallback = on
}

// notified follows a watcher callback: it keeps the instance's record of
// which resources it has, and watches what a new resource names, as the
// xDS resolver and dependency manager do (LDS -> RDS -> CDS -> EDS).
func (w *world) notified(ii uint32, n *xdsclient.Notification) {
	inst := &w.insts[ii]
	if n.Kind != xdsclient.ResourceChanged {
		return // an AmbientError keeps the last good resource
	}
	for i := range inst.watched {
		wt := &inst.watched[i]
		if wt.typ == n.Type && wt.name == n.Name {
			wt.res, wt.failed = n.Resource, n.Resource == nil
			if wt.failed {
				wt.cause = w.watchFailed(ii, n)
			}
		}
	}
	w.rederive(ii)
}

// rederive recomputes the set of resources the instance needs from what
// it has, watches the new ones and unwatches the ones no longer named.
func (w *world) rederive(ii uint32) {
	inst := &w.insts[ii]
	for i := range inst.watched {
		inst.watched[i].marked = i == 0 // the Listener is always needed
	}
	// need marks a resource as needed and returns it if the instance has
	// it. A new watch is answered by a notification (a replay from the
	// cache, or the server's response) that re-derives again.
	need := func(t xdsclient.ResourceType, name string) *xdsclient.Decoded {
		for i := range inst.watched {
			if inst.watched[i].typ == t && inst.watched[i].name == name {
				inst.watched[i].marked = true
				return inst.watched[i].res
			}
		}
		inst.watched = append(inst.watched, watch{typ: t, name: name, marked: true})
		w.xdsInput(ii, inWatch, -1, inst.xds.Watch(w.now(), t, name, watcherID))
		return nil
	}
	// The channel's config is built from the listener, its route and
	// every cluster the route names with its endpoints; a cluster whose
	// Cluster or endpoints an error took away is in the config with its
	// error (gRFC A74 XdsConfig), and the RPCs routed to it fail. A cluster
	// neither received nor failed yet leaves the config unresolved.
	complete, resolved := false, false
	var lis, rc *xdsclient.Decoded
	w.clusters = w.clusters[:0]
	if lis = need(xdsclient.LDS, inst.watched[0].name); lis != nil {
		clusters := lis.Clusters
		routeOK := true
		if lis.RouteConfigName != "" {
			rc = need(xdsclient.RDS, lis.RouteConfigName)
			routeOK = rc != nil
			clusters = nil
			if rc != nil {
				clusters = rc.Clusters
			}
		}
		complete = routeOK && len(clusters) > 0
		resolved = complete
		for _, name := range clusters {
			cr := clusterRef{name: name}
			cl := need(xdsclient.CDS, name)
			if cl == nil {
				complete = false
				cr.failed, cr.cause, cr.pending = w.watchError(ii, xdsclient.CDS, name)
			} else {
				eds := cl.EDSServiceName
				if eds == "" {
					eds = name
				}
				cr.cl = cl
				if cr.eds = need(xdsclient.EDS, eds); cr.eds == nil {
					complete = false
					cr.failed, cr.cause, cr.pending = w.watchError(ii, xdsclient.EDS, eds)
				}
			}
			resolved = resolved && !cr.pending
			w.clusters = append(w.clusters, cr)
		}
	}
	// The dependency manager re-derives its cluster and endpoint watches
	// only from a listener and route it has; while either is missing (an
	// error took it away) it keeps the watches it had, and a listener
	// error only stops the route watch (gRFC A74; grpc-go xdsdepmgr
	// onListenerResourceError, maybeSendUpdateLocked; the validate/
	// deletion case shows it).
	if lis == nil || (lis.RouteConfigName != "" && rc == nil) {
		for i := range inst.watched {
			if t := inst.watched[i].typ; t == xdsclient.CDS || t == xdsclient.EDS {
				inst.watched[i].marked = true
			}
		}
	}
	kept := inst.watched[:0]
	for _, wt := range inst.watched {
		if wt.marked {
			kept = append(kept, wt)
			continue
		}
		w.xdsInput(ii, inUnwatch, -1, inst.xds.Unwatch(w.now(), wt.typ, wt.name, watcherID))
	}
	inst.watched = kept
	switch {
	case resolved:
		cfg := w.channelConfig(ii, lis, rc, w.clusters)
		if cfg == inst.ch.Config() {
			break // the same config: nothing changes for the channel
		}
		if inst.steady && w.steadyAcross(ii, cfg) {
			break // switched without ending the bulk run first (steady.go)
		}
		w.leaveSteady(ii)
		c := &w.clients[inst.client]
		if w.cfg.Groups[c.group].RPC.sends() {
			inst.ch.SetConfigWith(cfg, w.kernel.Now(), c.rng, &w.lbScratch)
		} else {
			inst.ch.SetConfigUnpicked(cfg, c.rng) // nothing will pick
		}
		w.configChanged(ii)
	case w.resolverFailed(ii):
		// An error took the listener or route away (gRFC A88
		// ResourceChanged with an error): the resolver reports it and RPCs
		// fail. A config that is only incomplete (a new name not fetched
		// yet) keeps the last one, as gRPC's dependency manager does.
		w.leaveSteady(ii)
		inst.ch.SetConfig(nil, w.kernel.Now(), nil)
		w.configChanged(ii)
	}
	if complete != inst.complete {
		inst.complete = complete
		if complete {
			w.fx.complete++
		} else {
			w.fx.complete--
		}
	}
}

// clusterRef is one cluster of an instance's config as rederive finds it:
// its resources, or the error that took one away, or nothing yet.
type clusterRef struct {
	name    string
	cl, eds *xdsclient.Decoded
	failed  bool
	cause   dataplane.Cause
	pending bool
}

// watchError says why the instance has no (t, name): an error took it
// (failed, with its cause), or it has not come yet (pending).
func (w *world) watchError(ii uint32, t xdsclient.ResourceType, name string) (failed bool, cause dataplane.Cause, pending bool) {
	for _, wt := range w.insts[ii].watched {
		if wt.typ == t && wt.name == name && wt.failed {
			return true, wt.cause, false
		}
	}
	return false, 0, true
}

// resolverFailed reports whether an error took away the instance's
// listener or route: the resolver reports an error and the channel has no
// config.
func (w *world) resolverFailed(ii uint32) bool {
	for _, wt := range w.insts[ii].watched {
		if wt.failed && (wt.typ == xdsclient.LDS || wt.typ == xdsclient.RDS) {
			return true
		}
	}
	return false
}

// timerSlots are the kernel timers behind XdsClient timers. Each armed
// timer has a slot; the slot's index is the kernel event's Entity.
type timerSlots struct {
	slots []timerSlot
	spare []uint32
}

type timerSlot struct {
	inst uint32
	id   xdsclient.TimerID
	t    sim.Timer
}

func (ts *timerSlots) alloc(ii uint32, id xdsclient.TimerID) uint32 {
	if n := len(ts.spare); n > 0 {
		s := ts.spare[n-1]
		ts.spare = ts.spare[:n-1]
		ts.slots[s].inst, ts.slots[s].id = ii, id
		return s
	}
	ts.slots = append(ts.slots, timerSlot{inst: ii, id: id})
	return uint32(len(ts.slots) - 1)
}

func (ts *timerSlots) free(s uint32) {
	ts.slots[s].t.Stop()
	ts.slots[s].id = xdsclient.TimerID{}
	ts.spare = append(ts.spare, s)
}

// timerSlot returns the slot of the instance's timer id, allocating one.
func (w *world) timerSlot(ii uint32, id xdsclient.TimerID) uint32 {
	inst := &w.insts[ii]
	for _, s := range inst.timers {
		if w.timers.slots[s].id == id {
			return s
		}
	}
	s := w.timers.alloc(ii, id)
	inst.timers = append(inst.timers, s)
	return s
}

func (w *world) cancelTimer(ii uint32, id xdsclient.TimerID) {
	inst := &w.insts[ii]
	for i, s := range inst.timers {
		if w.timers.slots[s].id == id {
			w.timers.free(s)
			inst.timers = append(inst.timers[:i], inst.timers[i+1:]...)
			return
		}
	}
}

func (w *world) xdsTimerFired(ev sim.Event) {
	s := ev.Entity
	slot := &w.timers.slots[s]
	if !slot.t.Fire(ev) {
		return
	}
	ii, id := slot.inst, slot.id
	w.warm += prefetch.Of(&w.insts[ii]) // see receive
	w.cancelTimer(ii, id)
	inst := &w.insts[ii]
	if inst.xds == nil {
		return
	}
	if id.Kind == xdsclient.ResourceTimer {
		w.fx.resourceTimerFired++
		w.fx.timerFiredSinceSample++
		g := w.group(ii)
		g.timerFired++
		spurious := w.serverHolds(ii, id.Type, id.Name)
		if spurious {
			w.dp.timerSpurious++
			g.timerSpurious++
		}
		if w.tracing(ii) {
			w.traceConn(inst.firstConn+uint32(id.Server), TraceEvent{Kind: TraceResourceTimer, Type: id.Type,
				Names: []string{id.Name}, Spurious: spurious, Timer: id, Rule: ruleResourceTimer})
		}
	} else if w.tracing(ii) {
		w.traceConn(inst.firstConn+uint32(id.Server), TraceEvent{Kind: TraceRetryTimer, Timer: id, Rule: ruleRetryTimer})
	}
	w.xdsInput(ii, inTimer, id.Server, inst.xds.TimerFired(w.now(), id))
}

// decodeCache decodes and validates each resource once: servers share one
// *anypb.Any per (server, resource, version), so every client that
// receives it shares one *xdsclient.Decoded (docs/architecture.md,
// "Performance rules": what is immutable is shared).
type decodeCache struct {
	res map[*anypb.Any]*xdsclient.Decoded
	// out is the one decoded response, handed to a client and reused for
	// the next (the client keeps nothing of it).
	out      xdsclient.DecodedResponse
	decodeFn func(xdsclient.ResourceType, *anypb.Any) *xdsclient.Decoded // dc.decode, bound once
}

// response decodes resp into the cache's one decoded response, valid
// until the next call.
func (dc *decodeCache) response(resp *discoverypb.DiscoveryResponse) *xdsclient.DecodedResponse {
	if dc.decodeFn == nil {
		dc.res, dc.decodeFn = map[*anypb.Any]*xdsclient.Decoded{}, dc.decode
	}
	xdsclient.DecodeResponseInto(&dc.out, resp, dc.decodeFn)
	return &dc.out
}

// decode returns the decoded form of raw, decoding it the first time.
func (dc *decodeCache) decode(t xdsclient.ResourceType, raw *anypb.Any) *xdsclient.Decoded {
	d, ok := dc.res[raw]
	if !ok {
		d = xdsclient.Decode(t, raw)
		dc.res[raw] = d
	}
	return d
}

// node returns the bootstrap node of the client: its id is the client's
// name and its cluster the group's.
func (w *world) node(id uint32) *corepb.Node {
	return &corepb.Node{Id: w.clientName(id), Cluster: w.cfg.Groups[w.clients[id].group].Name}
}
