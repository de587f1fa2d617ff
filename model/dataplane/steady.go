package dataplane

import (
	"slices"
	"time"

	"github.com/xdssim/xdssim/sim"
)

// A steady channel is one on which, while nothing else changes, every RPC
// goes at once to a READY subchannel of a live backend that answers OK
// before the RPC's deadline: what RPCs it carries then makes no difference
// to any outcome, only to how many there were. A caller may then account
// for a run of such RPCs in bulk (Steady, SkipPicks, SkipSessionRPCs)
// rather than pick, answer and finish each. All of them are about one
// cluster: the one the RPCs' route takes them to.

// Steady reports whether the channel is steady at env.Now for RPCs of
// cluster ci with the given deadline (0: none): the cluster has one
// priority and one locality and at least one endpoint its policy may use
// that is READY; every such endpoint's backend is up, fails no RPC and
// answers within the deadline whatever its service time draws, so that an
// endpoint still connecting (or backing off) to it can only join the
// READY ones; and, when sessions is set, every endpoint is READY and every
// session has its cookie's host READY where the override policy may use
// it (gRFC A55), so that no session breaks or waits.
func (ch *Channel) Steady(env *Env, ci int, deadline time.Duration, sessions bool) bool {
	return ch.steady(env, ci, deadline, sessions, false)
}

// SteadyFailing reports whether the channel is steady at env.Now for RPCs
// of cluster ci but for failures: as Steady, except that the backends may
// fail a fraction of RPCs (an error rate below 1; at least one does) and
// answer after any service time, whatever the RPCs' deadline. Nothing
// about the channel then changes but by its own RPCs (their picks,
// sessions and retries) as long as its config and the backends stay as
// they are: a failed RPC changes no subchannel's connectivity (gRPC
// reports a call's status to the application, not to the subchannel:
// grpc-go clientconn.go, C-core subchannel.cc), and the model has no
// outlier detection, so that each instance's RPCs are independent of
// every other's.
func (ch *Channel) SteadyFailing(env *Env, ci int, sessions bool) bool {
	return ch.steady(env, ci, 0, sessions, true)
}

// steady is Steady, or with failing SteadyFailing.
func (ch *Channel) steady(env *Env, ci int, deadline time.Duration, sessions, failing bool) bool {
	if ch.cfg == nil || ci < 0 || ci >= len(ch.cfg.Clusters) {
		return false
	}
	c := &ch.cfg.Clusters[ci]
	if c.Failed || c.Priorities != 1 || len(c.Localities) != 1 {
		return false
	}
	ready, fails := false, false
	for i, e := range c.Endpoints {
		if !childUsable(e.Health) {
			continue
		}
		if b := env.Backends.Get(ch.cls[ci].subs[i].backend); failing && b.ErrorRate > 0 {
			if b.ErrorRate >= 1 {
				return false
			}
			fails = true
		}
		switch ch.serves(ci, i, env, deadline, failing) {
		case servesNow:
			ready = true
		case servesLater:
			if sessions {
				return false
			}
		default:
			return false
		}
	}
	if failing && !fails {
		return false // Steady's, or not steady for another reason
	}
	if !ready || !sessions {
		return ready
	}
	allowed := ch.overrideAllowed(ci, env)
	for _, s := range ch.sessions {
		if s.host == 0 || s.started < 0 {
			return false // its next RPC starts it: let it pick exactly
		}
		ok := false
		for i, e := range c.Endpoints {
			if e.Backend == s.host-1 && allowed.Has(e.Health) && ch.serves(ci, i, env, deadline, failing) == servesNow {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return len(ch.sessions) > 0
}

// How an endpoint serves RPCs, for Steady.
const (
	servesNot   = iota // its backend is down, fails RPCs or may miss the deadline
	servesNow          // READY, to a backend that answers every RPC OK in time (or, failing, at all)
	servesLater        // not READY yet, but to such a backend
)

// serves says how endpoint i of cluster ci serves RPCs with deadline
// (0: none) at env.Now; with failing, a backend that fails some RPCs
// serves them too.
func (ch *Channel) serves(ci, i int, env *Env, deadline time.Duration, failing bool) int {
	sc := &ch.cls[ci].subs[i]
	b := env.Backends.Get(sc.backend)
	if !b.Up || b.ErrorRate > 0 && !failing {
		return servesNot
	}
	if deadline > 0 {
		if bound, ok := b.ServiceTime.Bound(); !ok || bound > deadline {
			return servesNot
		}
	}
	if st, _ := ch.state(ci, i, env); st != Ready {
		return servesLater
	}
	if b.Gen != sc.gen {
		return servesNot
	}
	return servesNow
}

// overrideAllowed is the set of health statuses the override policy may
// send a session's RPC to in cluster ci (see overridePick).
func (ch *Channel) overrideAllowed(ci int, env *Env) HealthSet {
	allowed := ch.cfg.Clusters[ci].OverrideHostStatus
	if !env.Profile.A55 {
		// grpc-go and grpc-java keep only HEALTHY and UNKNOWN endpoints
		// (see Profile.A55).
		allowed &= usable
	}
	return allowed
}

// SkipPicks moves cluster ci's policy state on as k picks without
// sessions on a steady channel would: round_robin's cursor passes k
// usable endpoints; pick_first stays where it is; ring_hash and
// least_request keep no state between picks (their random draws are not
// made).
func (ch *Channel) SkipPicks(ci, k int) {
	if k <= 0 || ch.cfg == nil || ch.cfg.Clusters[ci].LB != RoundRobin || len(ch.cls[ci].next) != 1 {
		return
	}
	c := &ch.cfg.Clusters[ci]
	var usable []int
	for i, e := range c.Endpoints {
		if childUsable(e.Health) {
			usable = append(usable, i)
		}
	}
	if len(usable) == 0 {
		return
	}
	// The next pick takes the first usable endpoint at or after the
	// cursor; k picks end on the k-th from there.
	next := &ch.cls[ci].next[0]
	j := 0
	for j < len(usable) && usable[j] < *next {
		j++
	}
	last := usable[(j+k-1)%len(usable)]
	*next = (last + 1) % len(c.Endpoints)
}

// SkipSessionRPCs takes k RPCs through the sessions of a steady channel as
// k calls of Session (n sessions, a session ends after maxRPCs RPCs; 0: no
// limit) and Pick would, each session in turn: a session that has reached
// maxRPCs starts again on a fresh pick of the child policy, in the order
// the RPCs come. It returns the number of sessions started. The sessions
// must already exist (Steady says so) and none may reach its lifetime
// within the k RPCs: the caller ends a bulk run of RPCs at the first
// session's end of life.
func (ch *Channel) SkipSessionRPCs(env *Env, ci, k int, maxRPCs uint32) (started int) {
	n := len(ch.sessions)
	if k <= 0 || n == 0 {
		return 0
	}
	// The i-th of the k RPCs (from 0) goes to session (nextSession+i)%n;
	// session d positions on has its j-th RPC (from 0) at i = d + j·n.
	type restart struct{ at, idx int }
	var restarts []restart
	for d := range n {
		idx := (ch.nextSession + d) % n
		m := k / n
		if d < k%n {
			m++
		}
		s := &ch.sessions[idx]
		if maxRPCs == 0 || m == 0 {
			s.rpcs += uint32(m)
			continue
		}
		// Its j-th RPC restarts it when the count it finds is maxRPCs:
		// the first at j = maxRPCs - rpcs, then every maxRPCs.
		for j := int(maxRPCs) - int(s.rpcs); j < m; j += int(maxRPCs) {
			if j >= 0 {
				restarts = append(restarts, restart{at: d + j*n, idx: idx})
			}
		}
		total := uint64(s.rpcs) + uint64(m) - 1
		s.rpcs = uint32(total%uint64(maxRPCs)) + 1
	}
	slices.SortFunc(restarts, func(a, b restart) int { return a.at - b.at })
	for _, r := range restarts {
		s := &ch.sessions[r.idx]
		if p := ch.priorityPick(env, ci); p.Result != Failed {
			s.host = p.Backend + 1
		}
		s.started = env.Now
	}
	ch.nextSession = (ch.nextSession + k) % n
	return len(restarts)
}

// SessionsEnd returns when the first session reaches lifetime (0: no
// limit), or sim.Time(-1) when none can.
func (ch *Channel) SessionsEnd(lifetime time.Duration) sim.Time {
	end := sim.Time(-1)
	if lifetime <= 0 {
		return end
	}
	for _, s := range ch.sessions {
		if t := s.started.Add(lifetime); end < 0 || t < end {
			end = t
		}
	}
	return end
}

// ServiceTime returns the service-time distribution shared by the
// backends of cluster ci's endpoints the policy may use, and false when
// they do not share one (a slow backend among others) or there is no
// such endpoint: an RPC's chance of being in flight a while after it
// began is then not the same whichever backend it went to.
func (c *Config) ServiceTime(ci int, b *Backends) (sim.Dist, bool) {
	if c == nil || ci < 0 || ci >= len(c.Clusters) {
		return sim.Dist{}, false
	}
	var d sim.Dist
	n := 0
	for _, e := range c.Clusters[ci].Endpoints {
		if !childUsable(e.Health) {
			continue
		}
		st := b.Get(e.Backend).ServiceTime
		if n > 0 && st != d {
			return sim.Dist{}, false
		}
		d = st
		n++
	}
	return d, n > 0
}

// OnSuccesses is k calls of OnSuccess: the bucket gains k × tokenRatio,
// up to maxTokens.
func (t *Throttle) OnSuccesses(k int) {
	if t.max == 0 || k <= 0 {
		return
	}
	t.tokens = int32(min(int64(t.max), int64(t.tokens)+int64(k)*int64(t.ratio)))
}
