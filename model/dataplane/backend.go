package dataplane

import (
	"google.golang.org/grpc/codes"

	"github.com/xdssim/xdssim/sim"
)

// Backend is the ground truth of one server process behind an endpoint
// address: whether it runs, since when, and how it answers. It is set by
// the scenario's backend events and is independent of what any control
// plane publishes about it.
type Backend struct {
	// Up is whether the process runs and accepts connections.
	Up bool
	// Gen counts its incarnations: a crash or restart ends one, and every
	// connection to it with it.
	Gen uint32
	// Since is when it last changed between down and up.
	Since sim.Time
	// ServiceTime is how long it takes to answer one RPC.
	ServiceTime sim.Dist
	// ErrorRate is the chance it answers an RPC with ErrorCode.
	ErrorRate float64
	ErrorCode codes.Code
}

// Backends is the table of every backend the run knows, by identifier;
// [BackendKey] names each.
// Identifiers are dense and stable: a backend is added the first time a
// scenario event or a client's endpoint list names it.
type Backends struct {
	list  []Backend
	byKey map[string]uint32
	// Defaults are what a backend is when first named.
	Defaults Backend
}

// ID returns the identifier of the backend named key, adding it (up, in
// its first incarnation since time 0, with the defaults) if it is new.
func (b *Backends) ID(key string) uint32 {
	if id, ok := b.byKey[key]; ok {
		return id
	}
	if b.byKey == nil {
		b.byKey = make(map[string]uint32)
	}
	be := b.Defaults
	be.Up, be.Gen = true, 1
	b.list = append(b.list, be)
	id := uint32(len(b.list) - 1)
	b.byKey[key] = id
	return id
}

// Get returns the backend with identifier id.
func (b *Backends) Get(id uint32) *Backend { return &b.list[id] }

// Crash takes the backend down at now: its connections reset and it
// refuses new ones.
func (b *Backends) Crash(id uint32, now sim.Time) {
	be := &b.list[id]
	if be.Up {
		be.Up, be.Since = false, now
	}
}

// Start brings the backend up at now as a new incarnation.
func (b *Backends) Start(id uint32, now sim.Time) {
	be := &b.list[id]
	if !be.Up {
		be.Up, be.Since = true, now
		be.Gen++
	}
}

// Answer decides how the backend answers one RPC that reaches it at
// start: when the answer is ready and its status. Whether the connection
// still stands when it is ready is the caller's to check ([Backends.Alive]).
func (b *Backends) Answer(id uint32, start sim.Time, r *sim.Rand) (done sim.Time, code codes.Code) {
	be := &b.list[id]
	done = start.Add(be.ServiceTime.Sample(r))
	if be.ErrorRate > 0 && r.Float64() < be.ErrorRate {
		return done, be.ErrorCode
	}
	return done, codes.OK
}

// Alive reports whether a connection made to incarnation gen of the
// backend still stands.
func (b *Backends) Alive(id, gen uint32) bool {
	be := &b.list[id]
	return be.Up && be.Gen == gen
}

// BackendKey names the backend behind an endpoint: the cluster name of the
// ClusterLoadAssignment that lists it and its "ip:port" address.
func BackendKey(cluster, addr string) string { return cluster + "|" + addr }
