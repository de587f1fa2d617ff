package dataplane

import (
	"cmp"
	"math"
	"slices"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/xdssim/xdssim/internal/prefetch"
	"github.com/xdssim/xdssim/model/network"
	"github.com/xdssim/xdssim/sim"
)

// Profile is how one gRPC implementation's data plane differs from
// another's in what the simulator models.
type Profile struct {
	// A55 is whether the implementation has gRFC A55 stateful session
	// affinity: the envoy.filters.http.stateful_session filter, whose
	// cookie makes a session, and the xds_override_host policy, which
	// sends a session's RPC to its cookie's host while that host's health
	// is in override_host_status, DRAINING included if listed. Only C-core
	// has it (XdsHttpStatefulSessionFilter, xds_override_host.cc), and
	// the spec profile. grpc-go and grpc-java have neither: a Listener
	// with a non-optional session filter is NACKed there (see
	// xdsclient.FilterSet), an optional one is skipped, so their RPCs
	// carry no session; and both drop DRAINING endpoints (grpc-go's CDS
	// config builder keeps only HEALTHY and UNKNOWN,
	// internal/xds/balancer/cdsbalancer/configbuilder.go; grpc-java's
	// XdsEndpointResource marks DRAINING unhealthy).
	A55 bool
	// CapXDSAttempts applies gRFC A6's cap of 5 attempts to a retry
	// policy from xDS. grpc-java (ManagedChannelServiceConfig) and C-core
	// (retry_service_config.cc) do; grpc-go's xDS resolver sets
	// MaxAttempts = num_retries+1 and caps only JSON service configs.
	CapXDSAttempts bool
	// EmptyOverrideHostStatusIsDefault makes a Cluster whose
	// override_host_status is set but keeps none of UNKNOWN, HEALTHY and
	// DRAINING (empty, or only values a client ignores) mean the default
	// set, UNKNOWN and HEALTHY. gRFC A55 copies the field into the
	// xds_override_host policy's config, whose override_host_status
	// "Default is [UNKNOWN, HEALTHY]", and an empty list there is unset;
	// the spec profile reads it so (C-core did, while it passed the set in
	// that config: cds.cc omitted an empty overrideHostStatus). Today's
	// C-core applies the default only when the field is unset
	// (xds_cluster_parser.cc CdsResourceParse, override_host_status_found)
	// and XdsOverrideHostLb::UpdateLocked uses the parsed set as it is, so
	// an empty one overrides nothing. grpc-go and grpc-java never read the
	// field.
	EmptyOverrideHostStatusIsDefault bool
}

// ProfileByName returns the data-plane profile of an XdsClient profile
// name (grpc-go, grpc-java, grpc-core or spec).
// Retry jitter is not a profile field: every current release jitters
// retry backoffs by U(0.8, 1.2) (gRFC A6 was changed to say so,
// grpc/proposal#452, and grpc-java followed in 1.80).
func ProfileByName(name string) Profile {
	switch name {
	case "grpc-go":
		return Profile{A55: false, CapXDSAttempts: false}
	case "grpc-java":
		return Profile{A55: false, CapXDSAttempts: true}
	case "grpc-core":
		return Profile{A55: true, CapXDSAttempts: true}
	}
	return Profile{A55: true, CapXDSAttempts: true, EmptyOverrideHostStatusIsDefault: true}
}

// SubchannelState is a subchannel's connectivity as a picker sees it.
type SubchannelState uint8

// Subchannel states.
const (
	Ready SubchannelState = iota
	Connecting
	TransientFailure
)

// subchannel is a client's connection to one endpoint's backend. Its state
// is worked out lazily, when a pick looks at it, from the backend's ground
// truth and the connection backoff: an RPC-free client costs nothing.
type subchannel struct {
	backend     uint32
	gen         uint32   // the incarnation it is connected to; 0: none
	readyAt     sim.Time // when the connection to gen became usable
	nextAttempt sim.Time // when it next tries to connect, if not connected
	failures    uint8    // consecutive failed connects
	inflight    uint16
}

// Env is the world a pick looks at.
type Env struct {
	Now      sim.Time
	Backends *Backends
	Backoff  *network.BackoffConfig
	Link     *network.LinkConfig
	Rand     *sim.Rand
	Profile  Profile
	// Hash is the RPC's hash from its route's hash policies, when Hashed
	// (see Route.RequestHash); ring_hash then lands where the hash says
	// instead of at random.
	Hash   uint64
	Hashed bool
}

// Channel is the data-plane half of one client's channel to one target:
// the config it uses and, per cluster, its subchannels and priorities;
// and its sessions.
type Channel struct {
	cfg *Config
	cls []clusterLB // per cfg.Clusters
	// sessions are the client's A55 sessions on this channel.
	sessions    []SessionState
	nextSession int
	// leastRequest: a cluster of cfg uses least_request, the one policy
	// that reads the attempts in flight (Started, Finished).
	leastRequest bool
	// own is room for the state of a config's first cluster, its first
	// locality's cursor and its first priority, in the channel: a
	// config's update reads them, and a fleet's channels, in an array
	// that never moves, are thousands (they point into it, so a Channel
	// in use must not be copied). More grow on the heap.
	own struct {
		cls   [1]clusterLB
		next  [1]int
		prios [1]priority
	}
}

// clusterLB is a channel's load-balancing state for one cluster: the
// policy tree gRPC builds under the cluster (gRFC A27 priority, then
// weighted_target over localities, then the endpoint policy).
type clusterLB struct {
	subs  []subchannel // per Cluster.Endpoints
	next  []int        // round_robin's cursor per locality
	pf    int          // pick_first's endpoint + 1; 0: none
	prios []priority
}

// priority is one child of gRFC A27's priority policy.
type priority struct {
	started sim.Time // when it was started
	on      bool     // the child was started (its subchannels connect)
	// ready: the child has been READY since it started or since it last
	// failed; failed: it reported TRANSIENT_FAILURE since it was last
	// READY. Either ends its failover timer. (The flags after the time:
	// 16 bytes, not 24.)
	ready, failed bool
}

// FailoverTimeout is how long gRFC A27's priority policy waits for a
// priority it started to become READY before it starts the next one
// (grpc-go balancer/priority DefaultPriorityInitTimeout).
const FailoverTimeout = 10 * time.Second

// notStarted is the next attempt of a subchannel whose priority has not
// started: it never connects until it does.
const notStarted = sim.Time(math.MaxInt64)

// SessionState is one stateful session: the backend its cookie names.
type SessionState struct {
	host    uint32 // backend+1; 0: no cookie yet
	rpcs    uint32
	started sim.Time
}

// Warm fetches what an RPC's pick reads of the channel apart from the
// channel itself, its sessions and the first lines of its clusters'
// subchannels, all at once (package prefetch), and returns the sum of
// what it read, which the caller keeps so that the reads are made.
func (ch *Channel) Warm() uint64 {
	x := prefetch.Slice(ch.sessions, 2)
	for i := range ch.cls {
		x += prefetch.Slice(ch.cls[i].subs, 4)
	}
	return x
}

// Hint asks for what a config update reads of the channel apart from the
// channel itself, its clusters' subchannels (package prefetch), without
// waiting for them.
func (ch *Channel) Hint() {
	for i := range ch.cls {
		prefetch.HintSlice(ch.cls[i].subs, 4)
	}
}

// Config returns the channel's config; nil before it has one.
func (ch *Channel) Config() *Config { return ch.cfg }

// SetConfig switches the channel to cfg at now. A cluster that cfg keeps
// keeps its priorities, and its subchannels to backends that cfg still
// names keep their connections; new subchannels of a started priority
// start connecting at once (round_robin connects to every endpoint), and
// a new cluster starts its first priority. A new round_robin cluster
// starts its rotation at an endpoint drawn from r (nil: the first, for a
// test that wants a fixed start). Setting nil drops the config and every
// connection.
func (ch *Channel) SetConfig(cfg *Config, now sim.Time, r *sim.Rand) {
	ch.SetConfigWith(cfg, now, r, nil)
}

// SetConfigUnpicked is SetConfig for a channel that never picks, that of
// a client that sends no RPCs: it keeps cfg but no load-balancing state,
// a million clients' subchannels that nothing would read, and draws from
// r what SetConfig draws (each round_robin locality's starting cursor,
// for the localities the old config's cluster of the same name did not
// have: see rebuild), so that the client's stream is the same either
// way. A channel must stay unpicked once it is: Pick, Steady and the
// rest would find no state.
func (ch *Channel) SetConfigUnpicked(cfg *Config, r *sim.Rand) {
	if cfg == ch.cfg {
		return
	}
	lr := false
	if cfg != nil {
		for ci := range cfg.Clusters {
			c := &cfg.Clusters[ci]
			lr = lr || c.LB == LeastRequest
			// The old state's cursors, one per locality of the old
			// cluster of this name, are those it would keep.
			drawn := 0
			if ch.cfg != nil {
				if k := ch.cfg.ClusterIndex(c.Name); k >= 0 {
					drawn = min(len(ch.cfg.Clusters[k].Localities), len(c.Localities))
				}
			}
			drawCursors(c, drawn, r, nil)
		}
	}
	ch.cfg, ch.cls, ch.leastRequest = cfg, nil, lr
}

// A Scratch holds the buffers SetConfigWith builds a channel's new state
// in before it copies it into the channel's own, so that a config update
// allocates nothing once the buffers and the channel's slices have grown
// to the config's size. A world keeps one for all its channels; it is not
// safe for concurrent use.
type Scratch struct {
	cls     []clusterLB
	subs    []subchannel
	next    []int
	prios   []priority
	started []startedSub
}

// SetConfigWith is SetConfig with the buffers of s (nil: fresh ones).
// The new state of every cluster is built first, reading the old one,
// then copied over the old one's storage.
func (ch *Channel) SetConfigWith(cfg *Config, now sim.Time, r *sim.Rand, s *Scratch) {
	if cfg == ch.cfg {
		return
	}
	if cfg == nil {
		ch.cfg, ch.cls, ch.leastRequest = nil, nil, false
		return
	}
	if s == nil {
		s = new(Scratch)
	}
	s.cls, s.subs, s.next, s.prios = s.cls[:0], s.subs[:0], s.next[:0], s.prios[:0]
	lr := false
	for ci := range cfg.Clusters {
		s.cls = append(s.cls, ch.rebuild(&cfg.Clusters[ci], now, r, s))
		lr = lr || cfg.Clusters[ci].LB == LeastRequest
	}
	n := len(cfg.Clusters)
	if ch.cls == nil {
		ch.cls = ch.own.cls[:0]
	}
	if cap(ch.cls) < n {
		ch.cls = append(ch.cls[:cap(ch.cls)], make([]clusterLB, n-cap(ch.cls))...)
	}
	ch.cls = ch.cls[:n]
	for ci := range s.cls {
		src, dst := &s.cls[ci], &ch.cls[ci]
		if dst == &ch.own.cls[0] && dst.next == nil {
			dst.next, dst.prios = ch.own.next[:0], ch.own.prios[:0]
		}
		dst.subs = append(dst.subs[:0], src.subs...)
		dst.next = append(dst.next[:0], src.next...)
		dst.prios = append(dst.prios[:0], src.prios...)
		dst.pf = src.pf
	}
	clear(s.cls)
	ch.cfg, ch.leastRequest = cfg, lr
}

// rebuild makes the state of cluster c from the state the channel has
// for a cluster of its name.
//
// round_robin starts at a random endpoint of each locality: grpc-go's
// picker starts at next = randIntN(len(pickers)) and its endpoint list is
// rotated by a random offset (balancer/endpointsharding/endpointsharding.go
// updateStateLocked, rotateEndpoints), C-core's draws its
// last_picked_index_ uniformly (round_robin.cc RoundRobin::Picker), and
// grpc-java's starts its sequence at new Random().nextInt()
// (RoundRobinLoadBalancer). Without it every client of a fleet would send
// its first RPC, and with sessions its every session, to the same
// endpoints. grpc-go and C-core draw again for every picker they build
// (each time a subchannel's state changes); the model draws once per
// locality, when the channel first has it, and then rotates, as grpc-java
// does: an update keeps each locality's cursor modulo its new size
// (ReadyPicker.nextIndex: index.getAndIncrement() % size, the sequence
// kept across updates), and a locality the update adds draws its own.
//
// Its state lives in the buffers of s, appended, for SetConfigWith to
// copy.
func (ch *Channel) rebuild(c *Cluster, now sim.Time, r *sim.Rand, s *Scratch) clusterLB {
	var old *clusterLB
	if ch.cfg != nil {
		if k := ch.cfg.ClusterIndex(c.Name); k >= 0 {
			old = &ch.cls[k]
		}
	}
	st := clusterLB{subs: grow(&s.subs, len(c.Endpoints)), next: grow(&s.next, len(c.Localities)), prios: grow(&s.prios, c.Priorities)}
	drawn := 0 // the localities whose cursor the old state gives
	if old != nil {
		copy(st.prios, old.prios)
		drawn = min(len(old.next), len(st.next))
		for l := range drawn {
			if n := c.Localities[l].N; n > 0 {
				st.next[l] = old.next[l] % n
			}
		}
	}
	drawCursors(c, drawn, r, st.next)
	if len(st.prios) > 0 && !st.prios[0].on {
		st.prios[0] = priority{on: true, started: now}
	}
	// A subchannel to a backend the old state has, started, carries over:
	// the first such, found by a scan of the old subchannels when they
	// are few, else through an index of them sorted by backend, so that
	// an update of a cluster of n endpoints costs n log n, not n².
	var started []startedSub
	indexed := old != nil && len(old.subs)*len(c.Endpoints) > scanLimit
	if indexed {
		started = s.started[:0]
		for k, o := range old.subs {
			if o.nextAttempt != notStarted {
				started = append(started, startedSub{o.backend, uint32(k)})
			}
		}
		slices.SortFunc(started, func(a, b startedSub) int {
			return cmp.Or(cmp.Compare(a.backend, b.backend), cmp.Compare(a.index, b.index))
		})
		s.started = started
	}
	for i, e := range c.Endpoints {
		next := notStarted
		if st.prios[c.Localities[e.Locality].Priority].on {
			next = now
		}
		st.subs[i] = subchannel{backend: e.Backend, nextAttempt: next}
		switch {
		case old == nil:
		case indexed:
			k, ok := slices.BinarySearchFunc(started, e.Backend, func(s startedSub, b uint32) int { return cmp.Compare(s.backend, b) })
			if ok {
				st.subs[i] = old.subs[started[k].index]
			}
		default:
			for _, o := range old.subs {
				if o.backend == e.Backend && o.nextAttempt != notStarted {
					st.subs[i] = o
					break
				}
			}
		}
	}
	if old != nil && old.pf > 0 && old.pf <= len(old.subs) {
		b := old.subs[old.pf-1].backend
		for i := range st.subs {
			if st.subs[i].backend == b {
				st.pf = i + 1
			}
		}
	}
	return st
}

// drawCursors draws round_robin's starting cursor of each locality of c
// from the first one an old state does not give (see rebuild), into next
// when it is not nil (SetConfigUnpicked makes the draws alone).
func drawCursors(c *Cluster, from int, r *sim.Rand, next []int) {
	if c.LB != RoundRobin || r == nil {
		return
	}
	for l := from; l < len(c.Localities); l++ {
		if n := c.Localities[l].N; n > 1 {
			x := r.IntN(n)
			if next != nil {
				next[l] = x
			}
		}
	}
}

// grow appends n zero elements to *buf and returns them.
func grow[T any](buf *[]T, n int) []T {
	k := len(*buf)
	*buf = slices.Grow(*buf, n)[:k+n]
	t := (*buf)[k : k+n : k+n]
	clear(t)
	return t
}

// scanLimit is the most old × new subchannels rebuild compares one by one;
// past it, it indexes the old ones.
const scanLimit = 4096

// A startedSub is an old subchannel that has started: its backend and its
// index in the old state.
type startedSub struct{ backend, index uint32 }

// ClusterIndex returns the index of the cluster named name, or -1.
func (c *Config) ClusterIndex(name string) int {
	for i := range c.Clusters {
		if c.Clusters[i].Name == name {
			return i
		}
	}
	return -1
}

// Reset forgets the channel's config, connections and sessions, as a
// client restart does.
func (ch *Channel) Reset() { *ch = Channel{} }

// state works out the state of subchannel i of cluster ci at env.Now, and
// when it becomes ready if it is connecting.
func (ch *Channel) state(ci, i int, env *Env) (SubchannelState, sim.Time) {
	sc := &ch.cls[ci].subs[i]
	b := env.Backends.Get(sc.backend)
	now := env.Now
	if sc.gen != 0 {
		if b.Up && b.Gen == sc.gen {
			if now >= sc.readyAt {
				return Ready, sc.readyAt
			}
			return Connecting, sc.readyAt
		}
		// The connection was lost when the backend went down (a restart
		// counts: b.Since is when the new incarnation came up, no later
		// than the loss was noticed). A lost READY connection goes IDLE
		// and round_robin reconnects at once (grpc-go
		// balancer/roundrobin, pickfirst leaf: IDLE -> Connect).
		sc.gen, sc.failures = 0, 0
		sc.nextAttempt = b.Since
	}
	for sc.nextAttempt <= now {
		at := sc.nextAttempt
		if b.Up && at >= b.Since {
			sc.gen, sc.failures = b.Gen, 0
			sc.readyAt = at.Add(env.Link.Handshake(env.Rand))
			if now >= sc.readyAt {
				return Ready, sc.readyAt
			}
			return Connecting, sc.readyAt
		}
		// Refused after a round trip: TRANSIENT_FAILURE, then the
		// connection backoff of the implementation (grpc
		// doc/connection-backoff.md; network.BackoffConfig.NextAttempt).
		failed := at.Add(env.Link.RoundTrip(env.Rand))
		sc.nextAttempt = env.Backoff.NextAttempt(at, failed, env.Backoff.Delay(int(sc.failures), env.Rand))
		if sc.failures < 255 {
			sc.failures++
		}
	}
	return TransientFailure, 0
}

// PickResult says how a pick went.
type PickResult uint8

// Pick results.
const (
	// Picked: the RPC goes to the endpoint now.
	Picked PickResult = iota
	// Queued: no subchannel is ready but one is connecting; the RPC waits
	// for it (the picker returns ErrNoSubConnAvailable) and goes at At.
	Queued
	// Failed: every subchannel is in TRANSIENT_FAILURE, or there is none;
	// a non-wait-for-ready RPC fails UNAVAILABLE.
	Failed
)

// Pick is the outcome of picking an endpoint for one RPC.
type Pick struct {
	Result PickResult
	// Endpoint indexes the cluster's endpoints; Backend and Gen are the
	// backend and the incarnation the connection reaches.
	Endpoint     int
	Backend, Gen uint32
	// At is when the RPC can go: now, or when a queued pick's subchannel
	// becomes ready.
	At sim.Time
	// NoEndpoint is set on a failed pick when the cluster has no endpoint
	// the policy may use at all; NoConfig when the channel has no config
	// (the resolver reported an error since the RPC began); ClusterFailed
	// when an error took the RPC's cluster away, with its Cause.
	NoEndpoint    bool
	NoConfig      bool
	ClusterFailed bool
	Cause         Cause
	// AffinityBroken is set when the RPC belongs to a session whose
	// backend could not be used, so it went elsewhere (gRFC A55);
	// BreakReason says why.
	AffinityBroken bool
	BreakReason    BreakReason
}

// BreakReason says why a session's backend could not be used (gRFC A55,
// "LB Policy for Stateful Session Affinity": the override-host policy
// uses the cookie's host only when the cluster still has it, with a health
// status override_host_status allows, and a connection to it is usable).
type BreakReason uint8

const (
	// NoBreak: the session's backend was used.
	NoBreak BreakReason = iota
	// BreakRemoved: the host is no longer an endpoint of the cluster.
	BreakRemoved
	// BreakStatus: the host's health status is not one the override
	// allows (DRAINING without it in override_host_status, UNHEALTHY).
	BreakStatus
	// BreakUnreachable: the host is allowed, but no connection to it is
	// READY or CONNECTING.
	BreakUnreachable
	// NumBreakReasons is the number of reasons, NoBreak included.
	NumBreakReasons
)

var breakNames = [NumBreakReasons]string{"none", "host_removed", "host_status", "host_unreachable"}

// String is the reason's name in summary.json
// (sessions.affinity_breaks_by_reason.<name>).
func (r BreakReason) String() string {
	if r < NumBreakReasons {
		return breakNames[r]
	}
	return "unknown"
}

// childUsable reports whether the load-balancing policy under A55's
// override-host policy may use an endpoint of health h: HEALTHY or
// UNKNOWN. The override-host policy removes DRAINING before its child
// (gRFC A55, "LB Policy for Stateful Session Affinity"), and gRPC drops
// the other statuses when it reads EDS.
func childUsable(h corepb.HealthStatus) bool {
	return usable.Has(h)
}

// Pick picks an endpoint of cluster ci (an index into the config's
// Clusters) for an RPC. session is the RPC's session, or -1. A channel
// without a config is in TRANSIENT_FAILURE: the pick fails, as a retry's
// pick does after the resolver reports an error (grpc-go
// picker_wrapper.go: a TRANSIENT_FAILURE picker fails non-wait-for-ready
// RPCs). A failed cluster's picker fails every pick with its error.
func (ch *Channel) Pick(env *Env, ci, session int) Pick {
	if ch.cfg == nil {
		return Pick{Result: Failed, NoConfig: true, At: env.Now}
	}
	if c := &ch.cfg.Clusters[ci]; c.Failed {
		return Pick{Result: Failed, ClusterFailed: true, Cause: c.Cause, At: env.Now}
	}
	if session >= 0 {
		s := &ch.sessions[session]
		if s.host != 0 {
			p, why := ch.overridePick(env, ci, s.host-1)
			if why == NoBreak {
				return p
			}
			p = ch.priorityPick(env, ci)
			p.AffinityBroken, p.BreakReason = true, why
			if p.Result != Failed {
				s.host = p.Backend + 1 // the response sets a new cookie
			}
			return p
		}
		p := ch.priorityPick(env, ci)
		if p.Result != Failed {
			s.host = p.Backend + 1
		}
		return p
	}
	return ch.priorityPick(env, ci)
}

// overridePick is xds_override_host's pick for a session's backend (gRFC
// A55 picker pseudo-code): the backend's subchannel if its health is in
// override_host_status and it is READY, or a queued pick if it is
// connecting; otherwise the child policy picks.
func (ch *Channel) overridePick(env *Env, ci int, backend uint32) (Pick, BreakReason) {
	c := &ch.cfg.Clusters[ci]
	allowed := ch.overrideAllowed(ci, env)
	why := BreakRemoved
	for _, be := range c.endpointsOf(backend) {
		i := int(be.ep)
		if !allowed.Has(c.Endpoints[i].Health) {
			why = max(why, BreakStatus)
			continue
		}
		why = BreakUnreachable
		if ch.cls[ci].subs[i].nextAttempt == notStarted {
			continue
		}
		switch st, at := ch.state(ci, i, env); st {
		case Ready:
			return ch.picked(ci, i, env.Now), NoBreak
		case Connecting:
			p := ch.picked(ci, i, at)
			p.Result = Queued
			return p, NoBreak
		}
	}
	return Pick{}, why
}

func (ch *Channel) picked(ci, i int, at sim.Time) Pick {
	sc := &ch.cls[ci].subs[i]
	return Pick{Result: Picked, Endpoint: i, Backend: sc.backend, Gen: sc.gen, At: at}
}

// priorityPick is gRFC A27's priority policy: it uses the first priority
// that is READY, or CONNECTING within its failover timer (or since it was
// last READY); a priority in TRANSIENT_FAILURE or whose timer ran out
// starts the next one. A higher priority that recovers takes over again.
// When every priority fails, the last one's picker fails the RPC. The
// children's states are worked out at the pick, as the subchannels' are.
func (ch *Channel) priorityPick(env *Env, ci int) Pick {
	c := &ch.cfg.Clusters[ci]
	if c.Priorities == 1 && len(c.Localities) == 1 {
		return ch.endpointPick(env, ci, 0, len(c.Endpoints), 0) // the common case
	}
	if c.Priorities <= 1 {
		return ch.pickIn(env, ci, 0)
	}
	st := &ch.cls[ci]
	var last Pick
	queued := Pick{Result: Failed}
	for p := range st.prios {
		ps := &st.prios[p]
		if !ps.on {
			ch.startPriority(ci, p, env.Now)
		}
		pk := ch.pickIn(env, ci, uint32(p))
		switch pk.Result {
		case Picked:
			ps.ready, ps.failed = true, false
			return pk
		case Queued:
			// A queued RPC is picked again at every picker update: it
			// goes with the first priority to become READY.
			if queued.Result != Queued || pk.At < queued.At {
				queued = pk
			}
			if !ps.failed && (ps.ready || env.Now < ps.started.Add(FailoverTimeout)) {
				return queued
			}
		case Failed:
			ps.ready, ps.failed = false, true
		}
		last = pk
	}
	// Every priority failed or timed out: the last one's picker decides
	// (grpc-go balancer/priority syncPriority).
	if last.Result == Queued {
		return queued
	}
	return last
}

// startPriority starts priority p of cluster ci at now: its subchannels
// begin to connect.
func (ch *Channel) startPriority(ci, p int, now sim.Time) {
	st := &ch.cls[ci]
	st.prios[p] = priority{on: true, started: now}
	c := &ch.cfg.Clusters[ci]
	for i, e := range c.Endpoints {
		if int(c.Localities[e.Locality].Priority) == p && st.subs[i].nextAttempt == notStarted {
			st.subs[i].nextAttempt = now
		}
	}
}

// pickIn is priority p's child: weighted_target over the priority's
// localities, each with the cluster's endpoint policy (gRFC A52
// xds_wrr_locality for round_robin and least_request), or ring_hash and
// pick_first over all of the priority's endpoints (gRFC A42, A62).
func (ch *Channel) pickIn(env *Env, ci int, p uint32) Pick {
	c := &ch.cfg.Clusters[ci]
	if c.prios == nil {
		c.index() // a Config built by hand
	}
	if int(p) >= len(c.prios) || c.prios[p].firstLoc < 0 {
		return Pick{Result: Failed, NoEndpoint: true, At: env.Now}
	}
	ps := c.prios[p]
	if ps.firstLoc == ps.lastLoc || c.LB == RingHash || c.LB == PickFirst {
		return ch.endpointPick(env, ci, ps.lo, ps.hi, ps.firstLoc)
	}
	return ch.localityPick(env, ci, ps.firstLoc, ps.lastLoc)
}

// localityPick is weighted_target: a random pick, by locality weight,
// among the localities whose child is READY (grpc-go
// balancer/weightedtarget, a random WRR over the READY children); none
// READY, the RPC waits for the first one connecting, or fails.
func (ch *Channel) localityPick(env *Env, ci, first, last int) Pick {
	c := &ch.cfg.Clusters[ci]
	var total uint64
	usable := false
	queued, qi := sim.Time(0), -1
	for l := first; l <= last; l++ {
		st, at, any := ch.localityState(env, ci, l)
		usable = usable || any
		switch st {
		case Ready:
			total += uint64(c.Localities[l].Weight)
		case Connecting:
			if qi < 0 || at < queued {
				queued, qi = at, l
			}
		}
	}
	if total > 0 {
		x := uint64(env.Rand.Float64() * float64(total))
		for l := first; l <= last; l++ {
			if st, _, _ := ch.localityState(env, ci, l); st != Ready {
				continue
			}
			if w := uint64(c.Localities[l].Weight); x >= w {
				x -= w
				continue
			}
			loc := c.Localities[l]
			return ch.endpointPick(env, ci, loc.First, loc.First+loc.N, l)
		}
	}
	if qi >= 0 {
		loc := c.Localities[qi]
		return ch.endpointPick(env, ci, loc.First, loc.First+loc.N, qi)
	}
	return Pick{Result: Failed, NoEndpoint: !usable, At: env.Now}
}

// localityState is the state of locality l's child: READY if one of its
// usable subchannels is, else CONNECTING (with when the first becomes
// ready) if one is, else TRANSIENT_FAILURE. any reports whether it has a
// usable endpoint at all.
func (ch *Channel) localityState(env *Env, ci, l int) (st SubchannelState, at sim.Time, any bool) {
	c := &ch.cfg.Clusters[ci]
	loc := c.Localities[l]
	st = TransientFailure
	for i := loc.First; i < loc.First+loc.N; i++ {
		if !childUsable(c.Endpoints[i].Health) {
			continue
		}
		any = true
		switch s, t := ch.state(ci, i, env); s {
		case Ready:
			return Ready, t, true
		case Connecting:
			if st != Connecting || t < at {
				st, at = Connecting, t
			}
		}
	}
	return st, at, any
}

// endpointPick is the cluster's endpoint policy over endpoints [lo, hi)
// (locality l's for round_robin's cursor).
func (ch *Channel) endpointPick(env *Env, ci, lo, hi, l int) Pick {
	c := &ch.cfg.Clusters[ci]
	st := &ch.cls[ci]
	n := hi - lo
	start := 0
	switch c.LB {
	case RoundRobin:
		start = st.next[l]
	case PickFirst:
		// pick_first stays on its connected endpoint while it is ready,
		// and otherwise tries the endpoints in order (gRFC A62).
		if st.pf > lo && st.pf <= hi {
			if s, _ := ch.state(ci, st.pf-1, env); s == Ready {
				return ch.picked(ci, st.pf-1, env.Now)
			}
		}
	case RingHash:
		// No hash policy: a random hash per RPC, then the ring walks to
		// the next usable endpoint (gRFC A42); an endpoint's share of the
		// ring is its weight times its locality's.
		// With a hash policy that yields a value, the RPC's hash picks
		// the place: RPCs with the same hash go to the same endpoint
		// while the endpoints stay the same.
		if n > 0 && env.Hashed {
			start = ringAt(env.Hash, c, lo, hi)
		} else if n > 0 {
			start = ringStart(env.Rand, c, lo, hi)
		}
	case LeastRequest:
		// Two random choices; the one with fewer outstanding RPCs if
		// ready (gRFC A48).
		if n > 0 {
			a, b := lo+env.Rand.IntN(n), lo+env.Rand.IntN(n)
			if st.subs[b].inflight < st.subs[a].inflight {
				a = b
			}
			if childUsable(c.Endpoints[a].Health) {
				if s, _ := ch.state(ci, a, env); s == Ready {
					return ch.picked(ci, a, env.Now)
				}
			}
			start = a - lo
		}
	}
	usable := false
	queued, qi := sim.Time(0), -1
	for k := range n {
		i := lo + (start+k)%n
		if !childUsable(c.Endpoints[i].Health) {
			continue
		}
		usable = true
		s, at := ch.state(ci, i, env)
		switch s {
		case Ready:
			if c.LB == RoundRobin {
				st.next[l] = (i - lo + 1) % n
			}
			if c.LB == PickFirst {
				st.pf = i + 1
			}
			return ch.picked(ci, i, env.Now)
		case Connecting:
			if qi < 0 || at < queued {
				queued, qi = at, i
			}
		}
	}
	if qi >= 0 {
		if c.LB == RoundRobin {
			st.next[l] = (qi - lo + 1) % n
		}
		if c.LB == PickFirst {
			st.pf = qi + 1
		}
		p := ch.picked(ci, qi, queued)
		p.Result = Queued
		return p
	}
	return Pick{Result: Failed, NoEndpoint: !usable, At: env.Now}
}

// ringAt returns where hash h lands among endpoints [lo, hi), as an
// offset from lo: each endpoint owns a share of the hash space
// proportional to its weight times its locality's, in endpoint order.
func ringAt(h uint64, c *Cluster, lo, hi int) int {
	var total uint64
	for i := lo; i < hi; i++ {
		e := &c.Endpoints[i]
		total += uint64(max(e.Weight, 1)) * uint64(max(c.Localities[e.Locality].Weight, 1))
	}
	x := h % total
	for i := lo; i < hi; i++ {
		e := &c.Endpoints[i]
		w := uint64(max(e.Weight, 1)) * uint64(max(c.Localities[e.Locality].Weight, 1))
		if x < w {
			return i - lo
		}
		x -= w
	}
	return hi - 1 - lo
}

// ringStart draws where a random hash lands among endpoints [lo, hi): each
// endpoint owns a share of the ring proportional to its weight times its
// locality's (gRFC A42). It returns an offset from lo. Equal weights draw
// as a uniform index.
func ringStart(r *sim.Rand, c *Cluster, lo, hi int) int {
	w := func(i int) uint64 {
		e := &c.Endpoints[i]
		return uint64(max(e.Weight, 1)) * uint64(max(c.Localities[e.Locality].Weight, 1))
	}
	equal := true
	var total uint64
	for i := lo; i < hi; i++ {
		total += w(i)
		equal = equal && w(i) == w(lo)
	}
	if equal {
		return r.IntN(hi - lo)
	}
	x := uint64(r.Float64() * float64(total))
	for i := lo; i < hi; i++ {
		if x < w(i) {
			return i - lo
		}
		x -= w(i)
	}
	return hi - 1 - lo
}

// Started and Finished count an attempt in flight on a backend, for
// least_request. A channel none of whose clusters uses it counts nothing:
// a policy that starts later starts from zero, as grpc-go's
// least_request balancer, built when the config names it, does.
func (ch *Channel) Started(backend uint32)  { ch.inflight(backend, 1) }
func (ch *Channel) Finished(backend uint32) { ch.inflight(backend, -1) }

func (ch *Channel) inflight(backend uint32, d int) {
	if !ch.leastRequest {
		return
	}
	for ci := range ch.cls {
		subs := ch.cls[ci].subs
		for i := range subs {
			if subs[i].backend == backend {
				if d > 0 || subs[i].inflight > 0 {
					subs[i].inflight = uint16(int(subs[i].inflight) + d)
				}
				return
			}
		}
	}
}

// Session returns the session the next RPC belongs to, starting a new one
// in its place when the current one has reached maxRPCs RPCs or lifetime
// (0: no limit). n is how many sessions the client keeps; started reports
// whether a session began.
func (ch *Channel) Session(now sim.Time, n int, lifetime time.Duration, maxRPCs uint32) (idx int, started bool) {
	if len(ch.sessions) != n {
		ch.sessions = make([]SessionState, n)
		for i := range ch.sessions {
			ch.sessions[i].started = -1
		}
		ch.nextSession = 0
	}
	idx = ch.nextSession
	ch.nextSession = (ch.nextSession + 1) % n
	s := &ch.sessions[idx]
	if s.started < 0 || (maxRPCs > 0 && s.rpcs >= maxRPCs) || (lifetime > 0 && now.Sub(s.started) >= lifetime) {
		*s = SessionState{started: now}
		started = true
	}
	s.rpcs++
	return idx, started
}
