package controlplane

import (
	"slices"
)

// subscription is a stream's SotW subscription to one type: what
// go-control-plane's stream/v3 Subscription holds (the names the last
// request asked for, and the version each returned resource was sent at),
// with the maps interned. A server's streams mostly ask for the same names
// and are sent the same versions, and the cache never alters either map
// (cache/v3 Subscription: "The returned map must not be altered by the
// Cache"), so streams that agree share one map each instead of holding two
// of their own per type. Whether it is a wildcard is kept beside it (see
// cacheSub): gRPC clients never ask for one, and a server keeps four
// subscriptions per stream.
type subscription struct {
	subscribed map[string]struct{} // shared: never modified
	returned   map[string]string   // shared: never modified
	// names is the first of the names set was last given, when they were
	// distinct and none the wildcard, so that subscribed holds exactly
	// them: a request carrying the same slice again, which no caller
	// writes to (Request.Names), subscribes the same set. A client's ACK
	// resends its subscription from the same snapshot, so set need not
	// read the names again.
	names *string
}

// ReturnedResources implements cache/v3 Subscription.
func (s *subscription) ReturnedResources() map[string]string { return s.returned }

// SubscribedResources implements cache/v3 Subscription.
func (s *subscription) SubscribedResources() map[string]struct{} { return s.subscribed }

// cacheSub is a subscription and whether it is a wildcard, as the cache
// sees it. It implements cache/v3 Subscription.
type cacheSub struct {
	subscription
	wildcard bool
}

// IsWildcard implements cache/v3 Subscription.
func (s *cacheSub) IsWildcard() bool { return s.wildcard }

// explicitWildcard is the name that asks for every resource of a type.
const explicitWildcard = "*"

// set applies the names of a SotW request, as stream/v3
// Subscription.SetResourceSubscription does with legacy wildcards off:
// the explicit wildcard "*" makes the subscription a wildcard, which set
// returns; every other name is subscribed; and, unless the wildcard is
// set, resources no longer subscribed are forgotten as returned, so that
// subscribing to them again brings them again even at an unchanged
// version.
func (s *subscription) set(names []string, in *interner) (wildcard bool) {
	if len(names) == 0 || &names[0] != s.names || len(names) != len(s.subscribed) || in.forgot {
		wildcard = slices.Contains(names, explicitWildcard)
		s.subscribed = in.names(names)
		s.names = nil
		if !wildcard && len(names) > 0 && len(s.subscribed) == len(names) {
			s.names = &names[0]
		}
	}
	if s.returned == nil {
		// The cache clones it and adds to the clone: never nil.
		s.returned = in.versions(map[string]string{})
	}
	if wildcard || len(s.returned) == 0 {
		return wildcard
	}
	for name := range s.returned {
		if _, ok := s.subscribed[name]; !ok {
			kept := make(map[string]string, len(s.returned))
			for n, v := range s.returned {
				if _, ok := s.subscribed[n]; ok {
					kept[n] = v
				}
			}
			s.returned = in.versions(kept)
			return false
		}
	}
	return false
}

// setReturned records the versions a response returned, as stream/v3
// Subscription.SetReturnedResources does.
func (s *subscription) setReturned(m map[string]string, in *interner) {
	if m == nil {
		m = map[string]string{}
	}
	s.returned = in.versions(m)
}

// interner hands out one shared map for equal contents. It forgets
// everything once it holds maxInterned maps of a kind, so that a long run
// of changing versions cannot grow it without bound; maps already handed
// out stay valid, they are only no longer shared with newcomers.
type interner struct {
	nameSets map[string]map[string]struct{}
	versionM map[string]map[string]string
	scratch  []string
	key      []byte // the key being looked up; a string only once stored
	// forgot is set once the name sets were forgotten: a subscription
	// set before then may hold a set no longer shared, so set looks
	// every request's names up again.
	forgot bool
}

const maxInterned = 4096

// names returns the shared set of names, "*" left out.
func (in *interner) names(names []string) map[string]struct{} {
	in.scratch = append(in.scratch[:0], names...)
	slices.Sort(in.scratch)
	in.scratch = slices.Compact(in.scratch)
	in.key = in.key[:0]
	for _, n := range in.scratch {
		if n == explicitWildcard {
			continue
		}
		in.key = append(append(in.key, n...), 0)
	}
	if m, ok := in.nameSets[string(in.key)]; ok {
		return m
	}
	m := make(map[string]struct{}, len(in.scratch))
	for _, n := range in.scratch {
		if n != explicitWildcard {
			m[n] = struct{}{}
		}
	}
	if in.nameSets == nil || len(in.nameSets) >= maxInterned {
		in.forgot = in.forgot || in.nameSets != nil
		in.nameSets = map[string]map[string]struct{}{}
	}
	in.nameSets[string(in.key)] = m
	return m
}

// versions returns the shared map equal to m; m itself the first time.
// The caller must not modify m afterwards.
func (in *interner) versions(m map[string]string) map[string]string {
	in.scratch = in.scratch[:0]
	for n := range m {
		in.scratch = append(in.scratch, n)
	}
	slices.Sort(in.scratch)
	in.key = in.key[:0]
	for _, n := range in.scratch {
		in.key = append(append(append(append(in.key, n...), 0), m[n]...), 0)
	}
	if shared, ok := in.versionM[string(in.key)]; ok {
		return shared
	}
	if in.versionM == nil || len(in.versionM) >= maxInterned {
		in.versionM = map[string]map[string]string{}
	}
	in.versionM[string(in.key)] = m
	return m
}

// versionTable holds once each version string that a stream's typeStates
// keep (the last sent, the last ACKed), so that a typeState holds two
// 32-bit ids instead of two strings: a server keeps four typeStates per
// stream, and a fleet a million streams. Id 0 is the empty version. A
// version is forgotten when no typeState names it any more, so a long run
// of changing versions does not grow the table; in the steady state it
// reuses the slots of versions gone and allocates nothing.
type versionTable struct {
	ids  map[string]uint32
	strs []string // the version of id i+1
	refs []uint32 // the typeStates naming id i+1
	free []uint32 // ids whose slot is free
}

// set makes *id name v, releasing the version it named.
func (vt *versionTable) set(id *uint32, v string) {
	old := *id
	*id = vt.acquire(v)
	vt.release(old)
}

// acquire returns the id of v, counting one more reference to it.
func (vt *versionTable) acquire(v string) uint32 {
	if v == "" {
		return 0
	}
	id, ok := vt.ids[v]
	if !ok {
		if n := len(vt.free); n > 0 {
			id, vt.free = vt.free[n-1], vt.free[:n-1]
			vt.strs[id-1] = v
		} else {
			vt.strs, vt.refs = append(vt.strs, v), append(vt.refs, 0)
			id = uint32(len(vt.strs))
		}
		if vt.ids == nil {
			vt.ids = map[string]uint32{}
		}
		vt.ids[v] = id
	}
	vt.refs[id-1]++
	return id
}

// release drops a reference to id; the last forgets its version.
func (vt *versionTable) release(id uint32) {
	if id == 0 {
		return
	}
	if vt.refs[id-1]--; vt.refs[id-1] == 0 {
		delete(vt.ids, vt.strs[id-1])
		vt.strs[id-1] = ""
		vt.free = append(vt.free, id)
	}
}

// version returns the version id names.
func (vt *versionTable) version(id uint32) string {
	if id == 0 {
		return ""
	}
	return vt.strs[id-1]
}
