package controlplane

import (
	"context"
	"fmt"
	"maps"
	"strconv"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
)

// CacheKind selects which of go-control-plane's caches holds a server's
// state of the world.
type CacheKind uint8

// Cache kinds.
const (
	// LinearCaches is one cache.LinearCache per resource type behind a
	// cache.MuxCache that routes on the type URL: a version per resource.
	// A change notifies only the watches of the changed names, and an
	// RDS/EDS response carries only the changed resources. The default;
	// see the package doc for the measurements behind the choice.
	LinearCaches CacheKind = iota
	// SnapshotCache is one cache.SnapshotCache (ads=false) holding a single
	// snapshot for the whole fleet (every node hashes to one group), made
	// with cache.NewSnapshot: one version for the whole snapshot. Every
	// change makes a new snapshot whose every type has the new version, so
	// every open watch of every type is answered with all the resources it
	// subscribes to, and the clients ACK the unchanged types too.
	SnapshotCache
	// SnapshotPerType is a SnapshotCache whose snapshot carries a version
	// per type, bumped only for the types a change touches: a change
	// re-sends every subscribed resource of the changed types to every
	// watch of those types, and nothing of the others.
	SnapshotPerType
)

var cacheNames = [...]string{"linear", "snapshot", "snapshot-per-type"}

// String returns "linear", "snapshot" or "snapshot-per-type".
func (k CacheKind) String() string {
	if int(k) < len(cacheNames) {
		return cacheNames[k]
	}
	return fmt.Sprintf("CacheKind(%d)", k)
}

// ParseCacheKind parses "linear", "snapshot" or "snapshot-per-type".
func ParseCacheKind(s string) (CacheKind, error) {
	for i, n := range cacheNames {
		if n == s {
			return CacheKind(i), nil
		}
	}
	return 0, fmt.Errorf("controlplane: unknown cache %q (want linear, snapshot or snapshot-per-type)", s)
}

// Snapshot reports whether k is one of the SnapshotCache kinds.
func (k CacheKind) Snapshot() bool { return k == SnapshotCache || k == SnapshotPerType }

// typeChange is what one commit changes in one resource type's cache.
type typeChange struct {
	update map[string]types.Resource
	remove []string
}

func (c *typeChange) empty() bool { return len(c.update) == 0 && len(c.remove) == 0 }

// backend is the real go-control-plane cache behind a server, with the
// version it currently serves per type. Every call runs synchronously:
// responses land in the watches' buffered channels before it returns.
type backend interface {
	cachev3.Cache
	// apply commits one change per type, in type order; a type without
	// change keeps its version.
	apply(batch *[NumTypes]typeChange)
	// version returns the version the cache serves for t.
	version(t ResourceType) string
}

func newBackend(k CacheKind, prefix string, unanswered bool) backend {
	if k.Snapshot() {
		return newSnapshotBackend(prefix, k == SnapshotPerType, unanswered)
	}
	return newLinearBackend(prefix)
}

// linearBackend routes on the type URL to one LinearCache per type through
// go-control-plane's own MuxCache.
type linearBackend struct {
	*cachev3.MuxCache
	caches [NumTypes]*cachev3.LinearCache
	// versions mirrors each LinearCache's private counter: it starts at 0
	// and every UpdateResources call adds one (linear.go). The server
	// checks the mirror against every response.
	versions [NumTypes]uint64
	// named holds each version as the string the server sends, made once
	// per version rather than for every response.
	named  [NumTypes]string
	prefix string
}

func newLinearBackend(prefix string) *linearBackend {
	b := &linearBackend{prefix: prefix, MuxCache: &cachev3.MuxCache{
		Classify: func(r *cachev3.Request) string { return r.GetTypeUrl() },
		Caches:   make(map[string]cachev3.Cache, NumTypes),
	}}
	for t := LDS; t < NumTypes; t++ {
		b.caches[t] = cachev3.NewLinearCache(t.TypeURL(), cachev3.WithVersionPrefix(prefix))
		b.Caches[t.TypeURL()] = b.caches[t]
		b.named[t] = prefix + "0"
	}
	return b
}

func (b *linearBackend) apply(batch *[NumTypes]typeChange) {
	for t := LDS; t < NumTypes; t++ {
		c := &batch[t]
		if c.empty() {
			continue
		}
		b.versions[t]++
		b.named[t] = b.prefix + strconv.FormatUint(b.versions[t], 10)
		// UpdateResources fails only when a resource's version cannot be
		// computed, which needs a resource that does not marshal: a bug.
		if err := b.caches[t].UpdateResources(c.update, c.remove); err != nil {
			panic(fmt.Sprintf("controlplane: LinearCache %v: %v", t, err))
		}
	}
}

func (b *linearBackend) version(t ResourceType) string {
	return b.named[t]
}

// fleetNode is the single node group of a SnapshotCache: every client of
// a server sees the same state of the world.
const fleetNode = "xdssim-fleet"

// fleetHash is a cache.NodeHash putting every node in one group.
type fleetHash struct{}

// ID returns the fleet's single node group.
func (fleetHash) ID(*corepb.Node) string { return fleetNode }

// snapshotBackend keeps one snapshot for the fleet; each commit builds the
// next snapshot, re-indexing only the types that changed.
type snapshotBackend struct {
	cachev3.SnapshotCache
	snap cachev3.Snapshot
	// versions counts the snapshots per type (perType) or in all
	// (versions[0]).
	versions [NumTypes]uint64
	perType  bool
	// unanswered leaves a type without resources out of the snapshot, as
	// cache.NewSnapshot does for a type missing from its map: its version
	// is "" and go-control-plane answers no request of it.
	unanswered bool
	prefix     string
}

func newSnapshotBackend(prefix string, perType, unanswered bool) *snapshotBackend {
	b := &snapshotBackend{prefix: prefix, perType: perType, unanswered: unanswered,
		SnapshotCache: cachev3.NewSnapshotCache(false, fleetHash{}, nil)}
	for t := LDS; t < NumTypes; t++ {
		b.snap.Resources[cachev3.GetResponseType(t.TypeURL())] = b.resources(t, map[string]types.ResourceWithTTL{})
	}
	// A first snapshot, so that a request before any change is answered
	// (with nothing) as a LinearCache answers it, unless empty types are
	// left out.
	snap := b.snap
	if err := b.SetSnapshot(context.Background(), fleetNode, &snap); err != nil {
		panic(fmt.Sprintf("controlplane: SetSnapshot: %v", err))
	}
	return b
}

// resources is the snapshot entry of type t holding items.
func (b *snapshotBackend) resources(t ResourceType, items map[string]types.ResourceWithTTL) cachev3.Resources {
	if b.unanswered && len(items) == 0 {
		return cachev3.Resources{}
	}
	return cachev3.Resources{Version: b.counter(t), Items: items}
}

func (b *snapshotBackend) apply(batch *[NumTypes]typeChange) {
	next := cachev3.Snapshot{Resources: b.snap.Resources}
	changed := false
	for t := LDS; t < NumTypes; t++ {
		changed = changed || !batch[t].empty()
	}
	if !changed {
		return
	}
	if !b.perType {
		b.versions[0]++
	}
	for t := LDS; t < NumTypes; t++ {
		c := &batch[t]
		i := cachev3.GetResponseType(t.TypeURL())
		if c.empty() {
			if !b.perType {
				// One version for the snapshot: the type is re-versioned
				// with its unchanged items (cache.NewSnapshot).
				next.Resources[i] = b.resources(t, b.snap.Resources[i].Items)
			}
			continue
		}
		if b.perType {
			b.versions[t]++
		}
		// A snapshot is immutable once set: copy the type's items.
		items := maps.Clone(b.snap.Resources[i].Items)
		if items == nil {
			items = map[string]types.ResourceWithTTL{}
		}
		for name, r := range c.update {
			items[name] = types.ResourceWithTTL{Resource: r}
		}
		for _, name := range c.remove {
			delete(items, name)
		}
		next.Resources[i] = b.resources(t, items)
	}
	b.snap = next
	snap := next // SetSnapshot keeps the pointer
	if err := b.SetSnapshot(context.Background(), fleetNode, &snap); err != nil {
		panic(fmt.Sprintf("controlplane: SetSnapshot: %v", err))
	}
}

// counter returns the version of type t in the snapshot being built.
func (b *snapshotBackend) counter(t ResourceType) string {
	n := b.versions[0]
	if b.perType {
		n = b.versions[t]
	}
	return b.prefix + strconv.FormatUint(n, 10)
}

// version returns the version the cache serves for t: "" when t is left
// out of the snapshot.
func (b *snapshotBackend) version(t ResourceType) string {
	return b.snap.Resources[cachev3.GetResponseType(t.TypeURL())].Version
}

// responseQueue is the set of buffered channels the cache answers watches
// on. The caches send with a plain (LinearCache) or context-guarded but
// background (SnapshotCache) channel send, so a full channel would block
// the single simulation goroutine forever. Every open watch therefore
// holds a slot: a channel generation never has more open watches than its
// capacity, and when the newest generation is full a new one twice its
// size takes new watches. Old generations are dropped once their last
// watch fires or is cancelled. Responses wait in the channels only within
// one server call: the server drains every generation before returning.
type responseQueue struct {
	gens []*chanGen // oldest first; the last takes new watches
}

type chanGen struct {
	ch      chan cachev3.Response
	watches int // open watches answering on ch
}

const firstGenCap = 1024

// reserve returns the generation a new watch answers on, with a slot
// taken for it.
func (q *responseQueue) reserve() *chanGen {
	n := len(q.gens)
	if n == 0 || q.gens[n-1].watches == cap(q.gens[n-1].ch) {
		c := firstGenCap
		if n > 0 {
			c = 2 * cap(q.gens[n-1].ch)
		}
		q.gens = append(q.gens, &chanGen{ch: make(chan cachev3.Response, c)})
		n++
	}
	g := q.gens[n-1]
	g.watches++
	return g
}

// drain takes every response waiting in any generation, calls f on each
// in channel order, and drops emptied old generations. f must release the
// watch's slot (g.watches--).
func (q *responseQueue) drain(f func(g *chanGen, r cachev3.Response)) {
	for _, g := range q.gens {
		for len(g.ch) > 0 {
			f(g, <-g.ch)
		}
	}
	q.compact()
}

// compact drops old generations without open watches.
func (q *responseQueue) compact() {
	keep := q.gens[:0]
	for i, g := range q.gens {
		if g.watches > 0 || i == len(q.gens)-1 {
			keep = append(keep, g)
		}
	}
	clear(q.gens[len(keep):])
	q.gens = keep
}

// capacity returns the total channel capacity, for tests.
func (q *responseQueue) capacity() int {
	n := 0
	for _, g := range q.gens {
		n += cap(g.ch)
	}
	return n
}
