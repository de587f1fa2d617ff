package dataplane

import (
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/xdssim/xdssim/model/network"
	"github.com/xdssim/xdssim/sim"
)

// Profile is how one gRPC implementation's data plane differs from
// another's in what the simulator models.
type Profile struct {
	// OverrideHost is whether the implementation has gRFC A55's
	// xds_override_host policy, which may send a session's RPC to a
	// DRAINING endpoint when override_host_status allows it. grpc-go has
	// none: its CDS config builder drops every endpoint that is not
	// HEALTHY or UNKNOWN (internal/xds/balancer/cdsbalancer/configbuilder.go),
	// so a session on a draining host is always re-picked.
	OverrideHost bool
	// CapXDSAttempts applies gRFC A6's cap of 5 attempts to a retry
	// policy from xDS. grpc-java (ManagedChannelServiceConfig) and C-core
	// (retry_service_config.cc) do; grpc-go's xDS resolver sets
	// MaxAttempts = num_retries+1 and caps only JSON service configs.
	CapXDSAttempts bool
}

// ProfileByName returns the data-plane profile of an XdsClient profile
// name (grpc-go, grpc-java, grpc-core or spec).
// Retry jitter is not a profile field: every current release jitters
// retry backoffs by U(0.8, 1.2) (gRFC A6 was changed to say so,
// grpc/proposal#452, and grpc-java followed in 1.80).
func ProfileByName(name string) Profile {
	if name == "grpc-go" {
		return Profile{OverrideHost: false, CapXDSAttempts: false}
	}
	return Profile{OverrideHost: true, CapXDSAttempts: true}
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
}

// Channel is the data-plane half of one client's channel to one target:
// the config it uses, its subchannels and its sessions.
type Channel struct {
	cfg  *Config
	subs []subchannel // one per cfg.Endpoints
	next int          // round_robin's cursor
	pf   int          // pick_first's endpoint + 1; 0: none
	// sessions are the client's A55 sessions on this channel.
	sessions    []SessionState
	nextSession int
}

// SessionState is one stateful session: the backend its cookie names.
type SessionState struct {
	host    uint32 // backend+1; 0: no cookie yet
	rpcs    uint32
	started sim.Time
}

// Config returns the channel's config; nil before it has one.
func (ch *Channel) Config() *Config { return ch.cfg }

// SetConfig switches the channel to cfg at now. Subchannels to backends
// that cfg still names keep their connections; new ones start connecting
// at once (round_robin connects to every endpoint). Setting nil drops the
// config and every connection.
func (ch *Channel) SetConfig(cfg *Config, now sim.Time) {
	if cfg == ch.cfg {
		return
	}
	old := ch.subs
	var subs []subchannel
	if cfg != nil {
		subs = make([]subchannel, len(cfg.Endpoints))
		for i, e := range cfg.Endpoints {
			subs[i] = subchannel{backend: e.Backend, nextAttempt: now}
			for _, o := range old {
				if o.backend == e.Backend {
					subs[i] = o
					break
				}
			}
		}
	}
	if ch.pf > 0 && ch.pf <= len(old) {
		b := old[ch.pf-1].backend
		ch.pf = 0
		for i := range subs {
			if subs[i].backend == b {
				ch.pf = i + 1
			}
		}
	}
	ch.cfg, ch.subs = cfg, subs
	if ch.next >= len(subs) {
		ch.next = 0
	}
}

// Reset forgets the channel's config, connections and sessions, as a
// client restart does.
func (ch *Channel) Reset() { *ch = Channel{} }

// state works out subchannel i's state at env.Now, and when it becomes
// ready if it is connecting.
func (ch *Channel) state(i int, env *Env) (SubchannelState, sim.Time) {
	sc := &ch.subs[i]
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
	// Endpoint indexes the config's endpoints; Backend and Gen are the
	// backend and the incarnation the connection reaches.
	Endpoint     int
	Backend, Gen uint32
	// At is when the RPC can go: now, or when a queued pick's subchannel
	// becomes ready.
	At sim.Time
	// NoEndpoint is set on a failed pick when the config has no endpoint
	// the policy may use at all; NoConfig when the channel has no config
	// (the resolver reported an error since the RPC began).
	NoEndpoint bool
	NoConfig   bool
	// AffinityBroken is set when the RPC belongs to a session whose
	// backend could not be used, so it went elsewhere (gRFC A55).
	AffinityBroken bool
}

// childUsable reports whether the load-balancing policy under A55's
// override-host policy may use an endpoint of health h: HEALTHY or
// UNKNOWN. The override-host policy removes DRAINING before its child
// (gRFC A55, "LB Policy for Stateful Session Affinity"), and gRPC drops
// the other statuses when it reads EDS.
func childUsable(h corepb.HealthStatus) bool {
	return h == corepb.HealthStatus_HEALTHY || h == corepb.HealthStatus_UNKNOWN
}

// Pick picks an endpoint for an RPC. session is the RPC's session, or -1.
// A channel without a config is in TRANSIENT_FAILURE: the pick fails, as
// a retry's pick does after the resolver reports an error (grpc-go
// picker_wrapper.go: a TRANSIENT_FAILURE picker fails non-wait-for-ready
// RPCs).
func (ch *Channel) Pick(env *Env, session int) Pick {
	if ch.cfg == nil {
		return Pick{Result: Failed, NoConfig: true, At: env.Now}
	}
	if session >= 0 {
		s := &ch.sessions[session]
		if s.host != 0 {
			if p, ok := ch.overridePick(env, s.host-1); ok {
				return p
			}
			p := ch.childPick(env)
			p.AffinityBroken = true
			if p.Result != Failed {
				s.host = p.Backend + 1 // the response sets a new cookie
			}
			return p
		}
		p := ch.childPick(env)
		if p.Result != Failed {
			s.host = p.Backend + 1
		}
		return p
	}
	return ch.childPick(env)
}

// overridePick is xds_override_host's pick for a session's backend (gRFC
// A55 picker pseudo-code): the backend's subchannel if its health is in
// override_host_status and it is READY, or a queued pick if it is
// connecting; otherwise the child policy picks.
func (ch *Channel) overridePick(env *Env, backend uint32) (Pick, bool) {
	allowed := ch.cfg.OverrideHostStatus
	if !env.Profile.OverrideHost {
		// grpc-go keeps only HEALTHY and UNKNOWN endpoints.
		allowed &= 1<<corepb.HealthStatus_HEALTHY | 1<<corepb.HealthStatus_UNKNOWN
	}
	for i, e := range ch.cfg.Endpoints {
		if e.Backend != backend || !allowed.Has(e.Health) {
			continue
		}
		switch st, at := ch.state(i, env); st {
		case Ready:
			return ch.picked(i, env.Now), true
		case Connecting:
			p := ch.picked(i, at)
			p.Result = Queued
			return p, true
		}
	}
	return Pick{}, false
}

func (ch *Channel) picked(i int, at sim.Time) Pick {
	sc := &ch.subs[i]
	return Pick{Result: Picked, Endpoint: i, Backend: sc.backend, Gen: sc.gen, At: at}
}

// childPick is the cluster's policy picking among usable endpoints.
func (ch *Channel) childPick(env *Env) Pick {
	n := len(ch.subs)
	start := 0
	switch ch.cfg.LB {
	case RoundRobin:
		start = ch.next
	case PickFirst:
		// pick_first stays on its connected endpoint while it is ready,
		// and otherwise tries the endpoints in order (gRFC A62).
		if ch.pf > 0 {
			if st, _ := ch.state(ch.pf-1, env); st == Ready {
				return ch.picked(ch.pf-1, env.Now)
			}
		}
	case RingHash:
		// No hash policy: a random hash per RPC, then the ring walks to
		// the next usable endpoint (gRFC A42).
		if n > 0 {
			start = env.Rand.IntN(n)
		}
	case LeastRequest:
		// Two random choices; the one with fewer outstanding RPCs if
		// ready (gRFC A48).
		if n > 0 {
			a, b := env.Rand.IntN(n), env.Rand.IntN(n)
			if ch.subs[b].inflight < ch.subs[a].inflight {
				a = b
			}
			if childUsable(ch.cfg.Endpoints[a].Health) {
				if st, _ := ch.state(a, env); st == Ready {
					return ch.picked(a, env.Now)
				}
			}
			start = a
		}
	}
	usable := false
	queued, qi := sim.Time(0), -1
	for k := range n {
		i := (start + k) % n
		if !childUsable(ch.cfg.Endpoints[i].Health) {
			continue
		}
		usable = true
		st, at := ch.state(i, env)
		switch st {
		case Ready:
			if ch.cfg.LB == RoundRobin {
				ch.next = (i + 1) % n
			}
			if ch.cfg.LB == PickFirst {
				ch.pf = i + 1
			}
			return ch.picked(i, env.Now)
		case Connecting:
			if qi < 0 || at < queued {
				queued, qi = at, i
			}
		}
	}
	if qi >= 0 {
		if ch.cfg.LB == RoundRobin {
			ch.next = (qi + 1) % n
		}
		if ch.cfg.LB == PickFirst {
			ch.pf = qi + 1
		}
		p := ch.picked(qi, queued)
		p.Result = Queued
		return p
	}
	return Pick{Result: Failed, NoEndpoint: !usable, At: env.Now}
}

// Started and Finished count an attempt in flight on a backend, for
// least_request.
func (ch *Channel) Started(backend uint32)  { ch.inflight(backend, 1) }
func (ch *Channel) Finished(backend uint32) { ch.inflight(backend, -1) }

func (ch *Channel) inflight(backend uint32, d int) {
	for i := range ch.subs {
		if ch.subs[i].backend == backend {
			if d > 0 || ch.subs[i].inflight > 0 {
				ch.subs[i].inflight = uint16(int(ch.subs[i].inflight) + d)
			}
			return
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
