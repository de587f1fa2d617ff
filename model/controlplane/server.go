package controlplane

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdssim/xdssim/sim"
)

// Config configures one management server.
type Config struct {
	// Name names the server (the scenario's [[control_plane]] name). It
	// prefixes every version the server sends ("primary/7"), so versions
	// from different servers never compare equal, and it is the
	// DiscoveryResponse control_plane.identifier.
	Name string
	// Services is the state of the world the server starts with.
	Services []Service
	// Resources are served verbatim beside the services' resources: envoy
	// Listeners, RouteConfigurations, Clusters and ClusterLoadAssignments
	// (see Publish). The server keeps them: they must not be modified.
	Resources []proto.Message
	// Cache picks the go-control-plane cache; the zero value is
	// LinearCaches.
	Cache CacheKind
	// OnNACK is what the server does when a client NACKs a response; the
	// zero value, HoldNACKs, is what production control planes do.
	OnNACK NACKPolicy
	// EmptyTypesUnanswered, with a SnapshotCache, leaves a type the server
	// holds no resource of out of the snapshot, as cache.NewSnapshot does
	// for a type missing from its map: go-control-plane then answers no
	// request of the type, not even a first one (simple.go CreateWatch:
	// the request's version "" equals the missing type's), until the type
	// has a resource. Otherwise the type is in the snapshot without
	// resources, and a first request gets an empty response at the
	// snapshot's version. A LinearCache answers every first request, so
	// this needs a SnapshotCache.
	EmptyTypesUnanswered bool
	// ResourceErrors makes the server send xRFC TP3 resource_errors:
	// NOT_FOUND for a subscribed name it does not have, and the status set
	// with SetResourceError for a withheld one. Each error is sent once
	// per stream until it changes or the resource is served (TP3,
	// "Protocol Behavior").
	ResourceErrors bool
	// Capacity models how fast the server serves requests.
	Capacity Capacity
	// Rand draws service times. Nil means the stream "controlplane/<Name>"
	// of seed 0; the wiring passes the run's stream for the server.
	Rand *sim.Rand
}

// Response is one DiscoveryResponse the server sends on a stream.
//
// Message.Resources are shared: the server marshals each resource once per
// version into one *anypb.Any, and every response that carries that
// version of the resource holds the same pointer. The wiring may therefore
// decode and validate a resource once per pointer and hand the result to
// every client. Nothing in Message may be modified; the caller may hand
// it back once read ([Server.Recycle]).
type Response struct {
	Stream  StreamID                       // the stream to send it on
	Type    ResourceType                   // the type of Message
	Message *discoverypb.DiscoveryResponse // shared resources; read-only
}

// Server is one xDS management server: its state of the world in a real
// go-control-plane cache, the SotW ADS streams open to it, a capacity
// model, and metrics. It is a pure state machine: every method takes the
// virtual time and returns what the server sends; it starts no goroutine
// and reads no clock. It is not safe for concurrent use.
type Server struct {
	name   string
	prefix string
	tp3    bool
	maxStr int
	nack   NACKPolicy

	back backend
	// res holds every resource the server knows, served or withheld.
	res      [NumTypes]map[string]*entry
	services map[string]*Service
	owner    [NumTypes]map[string]string // resource name -> service
	// raw are the verbatim resources last published, served or deleted.
	raw [NumTypes]map[string]proto.Message
	cp  *corepb.ControlPlane

	rq      responseQueue
	watches map[*discoverypb.DiscoveryRequest]*watchGroup // open watches by their request
	// answers are the immediate answers of the watches opened since the
	// cache last changed, by what the cache saw. They are kept only for a
	// LinearCache (nil otherwise): its immediate answer is a pure function
	// of its resources and what it sees (linear.go CreateWatch,
	// computeResponse: nothing is tracked when it answers at once).
	answers map[groupKey]answer
	groups  map[groupKey]*watchGroup // open watches by what the cache sees
	streams map[StreamID]*stream
	list    []*stream // open streams, any order (scans only)

	work     *workQueue
	m        metrics
	now      sim.Time
	intern   interner     // the streams' shared subscription maps
	versions versionTable // the versions the streams' typeStates name

	// Per-commit scratch.
	staged  [NumTypes]map[string]proto.Message // nil message: delete
	touched [NumTypes][]string                 // names whose TP3 error may have changed
	pending []pending
	sorted  []pending // sortPending's scratch
	// shared holds the resources of each cache response a member of a
	// watch was answered with in this emit, for the watch's other members.
	shared map[cachev3.Response][]*anypb.Any
	named  []namedResource // respond's scratch

	// spent are response messages handed back (Recycle), for respond to
	// build later responses in.
	spent []*discoverypb.DiscoveryResponse
}

// maxSpent is the number of spent messages a server keeps: enough for a
// push to every stream of a large fleet to find most of its messages
// among those of the push before it, at about 150 bytes each.
const maxSpent = 1 << 16

// Recycle hands back m, the message of a Response of this server, once
// the caller has read it and keeps nothing of it, not even its address:
// the server will build a later response in it. A caller that keeps its
// messages simply does not call Recycle. It spares a push to many
// streams an allocation per stream, most of the bytes a run allocates.
func (s *Server) Recycle(m *discoverypb.DiscoveryResponse) {
	if len(s.spent) < maxSpent {
		m.Reset()
		s.spent = append(s.spent, m)
	}
}

// message returns an empty response message: a spent one, or a new one.
func (s *Server) message() *discoverypb.DiscoveryResponse {
	n := len(s.spent)
	if n == 0 {
		return new(discoverypb.DiscoveryResponse)
	}
	m := s.spent[n-1]
	s.spent[n-1] = nil
	s.spent = s.spent[:n-1]
	return m
}

// entry is one resource name of one type on the server.
type entry struct {
	msg proto.Message // nil when the name only carries an error
	any *anypb.Any    // msg, marshalled once, shared by every response
	err *Status       // set: withheld, and reported as a TP3 error
}

func (e *entry) served() bool { return e != nil && e.msg != nil && e.err == nil }

// stream is one ADS stream's server-side state (go-control-plane
// sotw/v3 streamWrapper).
type stream struct {
	id       StreamID
	idx      int    // in Server.list; -1 once closed
	nonce    uint32 // last nonce sent, any type (see typeState.nonce)
	lastDone sim.Time
	types    [NumTypes]typeState
}

// nextNonce returns the stream's next response nonce (go-control-plane
// sotw/v3 server.go send: atomic.AddInt64(&s.nonce, 1), one counter per
// stream). Nonces are 32-bit here: a stream that sent 2³²−1 responses
// would wrap to 0, which means "no response yet", so it panics instead.
func (st *stream) nextNonce() uint32 {
	if st.nonce == math.MaxUint32 {
		panic(fmt.Sprintf("controlplane: stream %d sent 2^32-1 responses, the most its nonces count", st.id))
	}
	st.nonce++
	return st.nonce
}

// typeState is a stream's state for one type (go-control-plane sotw/v3
// watch plus its subscription).
type typeState struct {
	st       *stream
	t        ResourceType
	active   bool  // a request of this type was accepted
	answered bool  // the client ACKed or NACKed the last response
	queued   bool  // in Server.pending
	slot     int32 // in grp.members
	sub      subscription

	// The open watch, if any: nil once it fired or was cancelled.
	grp *watchGroup

	// nonce is that of the last response of this type, 0 before the
	// first. 32 bits are 4·10⁹ responses on one stream, more than any run
	// sends (nextNonce panics past them); with acks beside it the pair
	// takes one word.
	nonce uint32
	// acks counts the ACKs (the NACKs, which most streams never send,
	// are counted in rare).
	acks uint32
	// sent is the version of the last response, acked that of the last
	// ACK, as ids of Server.versions: a server keeps four of these per
	// stream, so they are kept small (64 bytes), and AckState is built
	// from them on demand.
	sent, acked uint32
	rare        *typeRare // nil until a NACK, a TP3 error or a wildcard
}

// watchGroup is one go-control-plane watch shared by the streams whose
// requests the cache would answer alike: the same type, cache version and
// subscription (see groupKey). go-control-plane opens a watch per stream
// and type (sotw/v3 xds.go process: CreateWatch for each request); its
// caches decide from the request's type and version and the
// subscription's names and returned versions alone (linear.go
// CreateWatch and computeResponse, simple.go CreateWatch and
// respondSOTWWatches), so one watch answers each member as its own would
// have, and each member still gets a response of its own (its nonce, its
// TP3 errors). A fleet of clients asking alike holds one watch per type,
// not one per client and type.
type watchGroup struct {
	key groupKey
	req *discoverypb.DiscoveryRequest // the first member's: the cache's key for the watch
	// sub is a copy of the first member's subscription: a member's own
	// changes once it leaves, and the cache reads the watch's later.
	sub     cacheSub
	cancel  func()
	gen     *chanGen
	members []*typeState
	// immediate: the cache answered the watch as it was created.
	immediate bool
}

// An answer is a LinearCache's immediate answer to a watch, kept for the
// next watch that the cache would see alike while its type's version
// stays (Server.answers).
type answer struct {
	resp    cachev3.Response
	version string
	// The key's maps, held so that their identities in the key stay
	// theirs.
	sub cacheSub
}

// groupKey is what the cache sees of a watch. The subscription's maps are
// compared by identity: streams asking alike share them (interner), and
// equal maps that are not shared only make two groups where one would do.
type groupKey struct {
	t        ResourceType
	wildcard bool
	// resend: the cache sees nothing returned (NACKPolicy
	// CacheSubscription), whatever the returned map is.
	resend     bool
	version    string
	subscribed uintptr
	returned   uintptr
}

// join adds ts to g.
func (g *watchGroup) join(ts *typeState) {
	ts.grp, ts.slot = g, int32(len(g.members))
	g.members = append(g.members, ts)
}

// leave removes ts from g: the last member takes its slot.
func (g *watchGroup) leave(ts *typeState) {
	last := g.members[len(g.members)-1]
	g.members[ts.slot], last.slot = last, ts.slot
	g.members[len(g.members)-1] = nil
	g.members = g.members[:len(g.members)-1]
	ts.grp = nil
}

// mapID is the identity of a map, for groupKey.
func mapID[M ~map[K]V, K comparable, V any](m M) uintptr {
	return reflect.ValueOf(m).Pointer()
}

// typeRare is the part of a typeState that most streams never need.
type typeRare struct {
	nacks    uint32            // the NACKs
	wildcard bool              // the subscription is a wildcard (see cacheSub)
	nacked   bool              // the last answer was a NACK
	nackErr  Status            // its error detail
	reported map[string]Status // TP3 errors sent on this stream
}

// wildcard reports whether the subscription is a wildcard.
func (ts *typeState) wildcard() bool { return ts.rare != nil && ts.rare.wildcard }

// rareState returns ts.rare, created if need be.
func (ts *typeState) rareState() *typeRare {
	if ts.rare == nil {
		ts.rare = &typeRare{}
	}
	return ts.rare
}

type pending struct {
	id   StreamID // sort key, copied from ts
	t    ResourceType
	ts   *typeState
	resp cachev3.Response // nil: TP3 errors only
}

// New builds a server holding cfg.Services.
func New(cfg Config) (*Server, error) {
	if cfg.Name == "" {
		return nil, fmt.Errorf("controlplane: a server needs a name")
	}
	if cfg.Capacity.Workers < 0 || cfg.Capacity.MaxStreams < 0 {
		return nil, fmt.Errorf("controlplane: server %q: workers and max streams must be >= 0, got %d and %d",
			cfg.Name, cfg.Capacity.Workers, cfg.Capacity.MaxStreams)
	}
	if cfg.Cache > SnapshotPerType {
		return nil, fmt.Errorf("controlplane: server %q: unknown cache kind %d", cfg.Name, cfg.Cache)
	}
	if cfg.OnNACK > ResendNACKs {
		return nil, fmt.Errorf("controlplane: server %q: unknown NACK policy %d", cfg.Name, cfg.OnNACK)
	}
	if cfg.EmptyTypesUnanswered && !cfg.Cache.Snapshot() {
		return nil, fmt.Errorf("controlplane: server %q: a %v cache answers every first request; leaving empty types unanswered needs a snapshot cache",
			cfg.Name, cfg.Cache)
	}
	r := cfg.Rand
	if r == nil {
		r = sim.NewStream(0, "controlplane/"+cfg.Name)
	}
	s := &Server{
		name:     cfg.Name,
		prefix:   cfg.Name + "/",
		tp3:      cfg.ResourceErrors,
		maxStr:   cfg.Capacity.MaxStreams,
		nack:     cfg.OnNACK,
		services: map[string]*Service{},
		cp:       &corepb.ControlPlane{Identifier: cfg.Name},
		watches:  map[*discoverypb.DiscoveryRequest]*watchGroup{},
		groups:   map[groupKey]*watchGroup{},
		streams:  map[StreamID]*stream{},
		work:     newWorkQueue(cfg.Capacity, r),
	}
	s.back = newBackend(cfg.Cache, s.prefix, cfg.EmptyTypesUnanswered)
	if _, linear := s.back.(*linearBackend); linear {
		s.answers = map[groupKey]answer{}
	}
	for t := range s.res {
		s.res[t] = map[string]*entry{}
		s.owner[t] = map[string]string{}
	}
	for i := range cfg.Services {
		if err := s.stageService(cfg.Services[i]); err != nil {
			return nil, err
		}
	}
	if err := s.stageRaw(cfg.Resources); err != nil {
		return nil, err
	}
	if out := s.commit(); len(out) != 0 {
		panic("controlplane: responses without streams")
	}
	return s, nil
}

// Name returns the server's name.
func (s *Server) Name() string { return s.name }

// advance moves the server's clock; inputs never go back in time.
func (s *Server) advance(now sim.Time) {
	if now < s.now {
		panic(fmt.Sprintf("controlplane: server %q: input at %v is before the previous input at %v", s.name, now, s.now))
	}
	s.now = now
}

// OpenStream opens ADS stream id. Over Capacity.MaxStreams it refuses the
// stream with RESOURCE_EXHAUSTED.
func (s *Server) OpenStream(now sim.Time, id StreamID) error {
	s.advance(now)
	if _, dup := s.streams[id]; dup {
		return fmt.Errorf("controlplane: server %q: stream %d is already open", s.name, id)
	}
	if s.maxStr > 0 && s.m.open >= s.maxStr {
		s.m.totals.StreamsRejected++
		return &StreamError{Server: s.name, Stream: id, Status: Status{
			Code:    codes.ResourceExhausted,
			Message: fmt.Sprintf("server %q has %d streams open, its maximum", s.name, s.maxStr),
		}}
	}
	st := &stream{id: id, idx: len(s.list)}
	for t := range st.types {
		st.types[t] = typeState{st: st, t: ResourceType(t)}
	}
	s.streams[id] = st
	s.list = append(s.list, st)
	s.m.streamOpened()
	return nil
}

// CloseStream closes stream id, as the client cancelling it or the
// connection failing does: its watches are cancelled and its queued
// requests are dropped. Closing an unknown stream does nothing.
func (s *Server) CloseStream(now sim.Time, id StreamID) {
	s.advance(now)
	st := s.streams[id]
	if st == nil {
		return
	}
	for t := range st.types {
		ts := &st.types[t]
		s.closeWatch(ts)
		s.versions.release(ts.sent)
		s.versions.release(ts.acked)
	}
	delete(s.streams, id)
	last := s.list[len(s.list)-1]
	s.list[st.idx] = last
	last.idx = st.idx
	s.list[len(s.list)-1] = nil
	s.list = s.list[:len(s.list)-1]
	st.idx = -1 // closed: what a queued request of it finds (Complete)
	s.m.streamClosed()
}

// OpenStreams returns the number of open streams.
func (s *Server) OpenStreams() int { return s.m.open }

// Receive queues req, arrived at now on stream id, for the capacity model,
// with the caller's tag (Job.Tag), and returns its Job. The wiring then
// calls NextCompletion. The server keeps req's names: the caller must not
// modify them afterwards.
func (s *Server) Receive(now sim.Time, id StreamID, req Request, tag uint64) (Job, error) {
	s.advance(now)
	st := s.streams[id]
	if st == nil {
		return Job{}, fmt.Errorf("controlplane: server %q: request on stream %d, which is not open", s.name, id)
	}
	j := s.work.enqueue(now, st, req, tag)
	s.m.totals.PeakQueueDepth = max(s.m.totals.PeakQueueDepth, s.work.depth(now))
	return j, nil
}

// NextCompletion returns the job whose completion the wiring must
// schedule now, if there is one, and hands it out: the queued job that
// completes first (earliest Done; of those done at once, the first
// received) of those not yet handed out, if it completes before every job
// handed out and not yet completed. The wiring calls it after every
// Receive and every Complete and schedules an event at the Job's Done,
// at which it calls Complete. So every job is handed out once, in time
// for its completion, and the wiring holds one event per job handed out:
// while the queue is saturated, about one per server, not one per queued
// request (a million reconnecting clients queue millions).
//
// The order is that of the jobs' IDs for jobs done at once. A wiring
// that gives each request's Receive a tag that orders its event among
// the others (the fleet's kernel's sequence number for an event scheduled
// then, sim.Kernel.Reserve) has them run as though each had been
// scheduled at its Receive.
func (s *Server) NextCompletion() (Job, bool) { return s.work.next() }

// Complete processes the request of job id, which must be due (now >=
// Job.Done), and returns the responses the server sends. A request whose
// stream closed meanwhile is dropped. A *StreamError means the server
// ended the stream.
func (s *Server) Complete(now sim.Time, id JobID) ([]Response, error) {
	s.advance(now)
	j, ok := s.work.take(id)
	if !ok {
		return nil, fmt.Errorf("controlplane: server %q: job %d is not queued", s.name, id)
	}
	if now < j.done {
		panic(fmt.Sprintf("controlplane: server %q: job %d completed at %v, before it is done at %v", s.name, id, now, j.done))
	}
	if j.st.idx < 0 {
		return nil, nil // the stream closed meanwhile
	}
	s.m.completed(now.Sub(j.arrived))
	req := j.req.request()
	return s.process(j.st, &req)
}

// Handle processes req on stream id at once, bypassing the capacity
// model, and returns the responses the server sends. The server keeps
// req's names: the caller must not modify them afterwards.
func (s *Server) Handle(now sim.Time, id StreamID, req Request) ([]Response, error) {
	s.advance(now)
	st := s.streams[id]
	if st == nil {
		return nil, fmt.Errorf("controlplane: server %q: request on stream %d, which is not open", s.name, id)
	}
	s.m.completed(0)
	return s.process(st, &req)
}

// process applies one request as go-control-plane's sotw server does
// (pkg/server/sotw/v3 xds.go process): a request whose response_nonce is
// not the last nonce sent for its type is ignored; otherwise the open
// watch is cancelled, the subscription updated and a new watch created,
// which the cache may answer at once.
func (s *Server) process(st *stream, req *Request) ([]Response, error) {
	s.m.totals.Requests++
	url := req.TypeURL
	t, ok := TypeFromURL(url)
	if !ok {
		// The sotw server fails the stream: no type URL is
		// InvalidArgument; a type no cache serves is the MuxCache's error.
		e := &StreamError{Server: s.name, Stream: st.id, Status: Status{Code: codes.InvalidArgument, Message: "type URL is required for ADS"}}
		if url != "" {
			e.Status = Status{Code: codes.Unknown, Message: "no cache defined for key " + url}
		}
		s.CloseStream(s.now, st.id)
		return nil, e
	}
	ts := &st.types[t]
	if ts.nonce != 0 && !req.quotes(ts.nonce) {
		// Stale: the client has not seen the latest response of this type
		// (xDS protocol "Resource updates"; envoy issue 10363).
		s.m.totals.StaleRequests++
		return nil, nil
	}
	if ts.nonce != 0 && !ts.answered {
		// The first request quoting the latest nonce acknowledges it.
		ts.answered = true
		if d := req.ErrorDetail; d != nil {
			s.m.totals.NACKs++
			r := ts.rareState()
			r.nacks++
			r.nacked, r.nackErr = true, *d
		} else {
			s.m.totals.ACKs++
			ts.acks++
			if ts.rare != nil {
				ts.rare.nacked, ts.rare.nackErr = false, Status{}
			}
			s.versions.set(&ts.acked, req.Version)
		}
	}
	if ts.active {
		// Cancel first, so the cache never answers the watch while its
		// subscription changes (sotw/v3 xds.go: w.close() first).
		s.closeWatch(ts)
	}
	// gRPC clients never mean an empty list as a wildcard
	// (go-control-plane DeactivateLegacyWildcard).
	ts.active = true
	if wildcard := ts.sub.set(req.Names, &s.intern); wildcard || ts.rare != nil {
		ts.rareState().wildcard = wildcard
	}
	// A NACK is held or answered as the server's policy says: the cache
	// sees the version (and, to resend, the subscription) that makes it do
	// so (NACKPolicy.CacheVersion).
	s.openWatch(ts, req, s.nack.version(req.ErrorDetail != nil, req.Version, s.versions.version(ts.sent)))
	s.collect()
	if s.tp3 {
		s.enqueue(ts, nil)
	}
	return s.emit(), nil
}

// openWatch asks the cache to watch ts with req at version, the version
// the cache is to see (NACKPolicy.CacheVersion), and ts's subscription: ts
// joins the open watch of what the cache would see alike, or opens one
// with req's message.
func (s *Server) openWatch(ts *typeState, req *Request, version string) {
	nack := req.ErrorDetail != nil
	k := groupKey{t: ts.t, wildcard: ts.wildcard(), version: version, subscribed: mapID(ts.sub.subscribed)}
	if s.nack == ResendNACKs && nack {
		k.resend = true
	} else {
		k.returned = mapID(ts.sub.returned)
	}
	if g := s.groups[k]; g != nil {
		g.join(ts)
		return
	}
	if a, ok := s.answers[k]; ok && a.version == s.back.version(ts.t) {
		// The cache would answer at once, as it did a watch it saw alike:
		// a reconnecting fleet's first requests are answered so.
		s.enqueue(ts, a.resp)
		return
	}
	msg := req.message(version)
	g := &watchGroup{key: k, req: msg, sub: cacheSub{ts.sub, k.wildcard}, gen: s.rq.reserve()}
	g.join(ts)
	s.groups[k] = g
	s.watches[msg] = g
	queued := len(g.gen.ch)
	cancel, err := s.back.CreateWatch(msg, s.nack.CacheSubscription(msg, &g.sub), g.gen.ch)
	if err != nil {
		// The type URL was checked: the cache has a watcher for it.
		panic(fmt.Sprintf("controlplane: server %q: CreateWatch: %v", s.name, err))
	}
	g.cancel = cancel
	g.immediate = s.answers != nil && len(g.gen.ch) > queued
}

// closeWatch takes ts out of its open watch, if that has not fired; the
// watch's last member cancels it.
func (s *Server) closeWatch(ts *typeState) {
	g := ts.grp
	if g == nil {
		return
	}
	g.leave(ts)
	if len(g.members) > 0 {
		return
	}
	if g.cancel != nil {
		g.cancel()
	}
	g.gen.watches--
	delete(s.watches, g.req)
	delete(s.groups, g.key)
}

// collect drains every response the cache sent into s.pending, one for
// each member of the watch that fired.
func (s *Server) collect() {
	s.rq.drain(func(cg *chanGen, r cachev3.Response) {
		g := s.watches[r.GetRequest()]
		if g == nil || g.gen != cg {
			panic(fmt.Sprintf("controlplane: server %q: a response for a watch that is not open", s.name))
		}
		delete(s.watches, g.req)
		delete(s.groups, g.key)
		cg.watches--
		if g.immediate {
			if len(s.answers) >= maxInterned {
				clear(s.answers)
			}
			s.answers[g.key] = answer{resp: r, version: s.back.version(g.key.t), sub: g.sub}
		}
		for _, ts := range g.members {
			ts.grp = nil
			s.enqueue(ts, r)
		}
		g.members = nil
	})
}

// enqueue adds ts to the responses of this call, with the cache's
// response if it has one.
func (s *Server) enqueue(ts *typeState, r cachev3.Response) {
	if ts.queued {
		if r != nil {
			for i := range s.pending {
				if s.pending[i].ts == ts {
					s.pending[i].resp = r
				}
			}
		}
		return
	}
	ts.queued = true
	s.pending = append(s.pending, pending{id: ts.st.id, t: ts.t, ts: ts, resp: r})
}

// emit turns s.pending into responses, sorted by stream and type, and
// resets it. Nonces are assigned in that order, so a run's nonces do not
// depend on the order in which the cache ranged over its maps.
func (s *Server) emit() []Response {
	if len(s.pending) == 0 {
		return nil
	}
	s.sorted = sortPending(s.pending, s.sorted)
	out := make([]Response, 0, len(s.pending))
	for i := range s.pending {
		p := s.pending[i]
		p.ts.queued = false
		if r, ok := s.respond(p); ok {
			out = append(out, r)
		}
	}
	clear(s.pending)
	s.pending = s.pending[:0]
	clear(s.shared)
	return out
}

// comparePending orders pending responses by stream, then type.
func comparePending(a, b pending) int {
	return cmp.Or(cmp.Compare(a.id, b.id), cmp.Compare(a.t, b.t))
}

// sortPending sorts p as comparePending does, with buf as scratch, which
// it returns, grown as need be and cleared. No two of p have the same
// stream and type (enqueue), so any sort gives the one order. A change
// that reaches ten thousand streams queues as many responses: past a few
// dozen, p is sorted by a least-significant-digit radix sort over the
// type's byte and then the stream's eight, a digit that every response
// shares being skipped (a fleet's stream ids differ in three or four), in
// a few passes over p rather than the n log n comparisons and moves of a
// comparison sort (3.5 % of fleet-10k's time).
func sortPending(p, buf []pending) []pending {
	if len(p) < 64 {
		slices.SortFunc(p, comparePending)
		return buf
	}
	digit := func(q *pending, d int) byte {
		if d == 0 {
			return byte(q.t)
		}
		return byte(q.id >> (8 * (d - 1)))
	}
	buf = slices.Grow(buf[:0], len(p))[:len(p)]
	src, dst := p, buf
	for d := range 9 {
		var at [256]int
		for i := range src {
			at[digit(&src[i], d)]++
		}
		if at[digit(&src[0], d)] == len(src) {
			continue // every response has this digit
		}
		pos := 0
		for k, n := range at {
			at[k], pos = pos, pos+n
		}
		for i := range src {
			k := digit(&src[i], d)
			dst[at[k]] = src[i]
			at[k]++
		}
		src, dst = dst, src
	}
	if &src[0] != &p[0] {
		copy(p, src)
	}
	clear(buf) // it would keep the streams' states and responses alive
	return buf[:0]
}

type namedResource struct {
	name string
	res  types.Resource
}

// anysOf returns the shared marshalled forms of rs, sorted by name, and
// keeps rs's array as scratch.
func (s *Server) anysOf(t ResourceType, rs []namedResource) []*anypb.Any {
	slices.SortFunc(rs, func(a, b namedResource) int { return cmp.Compare(a.name, b.name) })
	anys := make([]*anypb.Any, len(rs))
	for i, r := range rs {
		e := s.res[t][r.name]
		if !e.served() || e.msg != r.res {
			panic(fmt.Sprintf("controlplane: server %q: %v cache returned %q, which the server does not serve as such", s.name, t, r.name))
		}
		anys[i] = e.any
	}
	clear(rs)
	s.named = rs[:0]
	return anys
}

// respond builds the DiscoveryResponse for p (go-control-plane sotw/v3
// streamWrapper.send: next nonce, returned resources recorded in the
// subscription), from the shared marshalled resources, sorted by name.
func (s *Server) respond(p pending) (Response, bool) {
	ts := p.ts
	t := ts.t
	errs := s.resourceErrors(ts)
	version := s.back.version(t)
	anys, shared := s.shared[p.resp]
	switch {
	case shared:
		// Another member of the watch: the same resources.
	case p.resp != nil:
		raw, ok := p.resp.(*cachev3.RawResponse)
		if !ok {
			panic(fmt.Sprintf("controlplane: server %q: unexpected cache response %T", s.name, p.resp))
		}
		if v := raw.GetResponseVersion(); v != version {
			panic(fmt.Sprintf("controlplane: server %q: %v cache answered version %q, the server serves %q", s.name, t, v, version))
		}
		rs := s.named[:0]
		for _, r := range raw.GetRawResources() {
			rs = append(rs, namedResource{cachev3.GetResourceName(r.Resource), r.Resource})
		}
		anys = s.anysOf(t, rs)
		if s.shared == nil {
			s.shared = map[cachev3.Response][]*anypb.Any{}
		}
		s.shared[p.resp] = anys
	default:
		if len(errs) == 0 {
			return Response{}, false
		}
		// A TP3-only response. LDS and CDS responses must still hold every
		// subscribed resource, or the client deletes the missing ones (TP3
		// "Protocol Behavior"); the client already has them all, else the
		// cache would have answered.
		rs := s.named[:0]
		if t == LDS || t == CDS {
			for name := range ts.sub.SubscribedResources() {
				if e := s.res[t][name]; e.served() {
					rs = append(rs, namedResource{name, e.msg})
				}
			}
		}
		anys = s.anysOf(t, rs)
	}
	ts.nonce = ts.st.nextNonce()
	s.versions.set(&ts.sent, version)
	ts.answered = false
	if p.resp != nil {
		ts.sub.setReturned(p.resp.GetReturnedResources(), &s.intern)
	}
	s.m.totals.Responses++
	s.m.totals.ResourceErrors += int64(len(errs))
	m := s.message()
	m.VersionInfo = version
	m.Resources = anys
	m.TypeUrl = t.TypeURL()
	m.Nonce = strconv.FormatUint(uint64(ts.nonce), 10)
	m.ControlPlane = s.cp
	m.ResourceErrors = errs
	return Response{Stream: ts.st.id, Type: t, Message: m}, true
}

// marshal is the one marshalling of a resource version. Deterministic
// output is stable within a binary, which is all comparisons need.
func marshal(m proto.Message) []byte {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("controlplane: marshalling %s: %v", proto.MessageName(m), err))
	}
	return b
}

// put stages msg as resource (t, name). Identical bytes change nothing, so
// republishing the same config bumps no version.
func (s *Server) put(t ResourceType, name string, msg proto.Message) {
	b := marshal(msg)
	e := s.res[t][name]
	if e != nil && e.msg != nil && bytes.Equal(e.any.GetValue(), b) {
		return
	}
	if e == nil {
		e = &entry{}
		s.res[t][name] = e
	}
	e.msg = msg
	e.any = &anypb.Any{TypeUrl: t.TypeURL(), Value: b}
	if e.err == nil {
		s.stage(t, name, msg)
	}
}

// remove stages the deletion of resource (t, name); an error set on the
// name stays.
func (s *Server) remove(t ResourceType, name string) {
	e := s.res[t][name]
	if e == nil || e.msg == nil {
		return
	}
	if e.err == nil {
		s.stage(t, name, nil)
		delete(s.res[t], name)
	}
	e.msg, e.any = nil, nil
	s.touch(t, name)
}

func (s *Server) stage(t ResourceType, name string, msg proto.Message) {
	if s.staged[t] == nil {
		s.staged[t] = map[string]proto.Message{}
	}
	s.staged[t][name] = msg
}

// touch records that the TP3 error of (t, name) may have changed.
func (s *Server) touch(t ResourceType, name string) {
	if s.tp3 {
		s.touched[t] = append(s.touched[t], name)
	}
}

// commit applies the staged changes to the cache, one update per type,
// and returns the responses they cause.
func (s *Server) commit() []Response {
	var batch [NumTypes]typeChange
	for t := range s.staged {
		names := make([]string, 0, len(s.staged[t]))
		for name := range s.staged[t] {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			if m := s.staged[t][name]; m != nil {
				if batch[t].update == nil {
					batch[t].update = map[string]types.Resource{}
				}
				batch[t].update[name] = m
			} else {
				batch[t].remove = append(batch[t].remove, name)
			}
		}
		s.staged[t] = nil
	}
	s.back.apply(&batch)
	clear(s.answers) // answers of versions the cache no longer serves
	s.collect()
	if s.tp3 {
		s.scanTouched()
	}
	return s.emit()
}

// scanTouched queues every stream subscribed to a name whose TP3 error may
// have changed, so that it hears of the error even when the cache sends
// nothing (SotW cannot tell an RDS or EDS client of a deletion).
func (s *Server) scanTouched() {
	for t := range s.touched {
		names := s.touched[t]
		if len(names) == 0 {
			continue
		}
		slices.Sort(names)
		names = slices.Compact(names)
		for _, st := range s.list {
			ts := &st.types[t]
			if !ts.active || ts.queued {
				continue
			}
			sub := ts.sub.SubscribedResources()
			for _, n := range names {
				if _, ok := sub[n]; ok {
					s.enqueue(ts, nil)
					break
				}
			}
		}
		s.touched[t] = s.touched[t][:0]
	}
}

// errorOf returns the TP3 error to report for (t, name), or nil.
func (s *Server) errorOf(t ResourceType, name string) *Status {
	e := s.res[t][name]
	switch {
	case e != nil && e.err != nil:
		return e.err
	case e == nil || e.msg == nil:
		return &Status{Code: codes.NotFound, Message: fmt.Sprintf("%v resource %q does not exist on server %q", t, name, s.name)}
	}
	return nil
}

// resourceErrors returns the TP3 errors ts has not yet been told of, in
// name order, and records them as told. An error is sent once; it is sent
// again only if it changes, or after the resource was served in between.
func (s *Server) resourceErrors(ts *typeState) []*discoverypb.ResourceError {
	if !s.tp3 {
		return nil
	}
	sub := ts.sub.SubscribedResources()
	var reported map[string]Status
	if ts.rare != nil {
		reported = ts.rare.reported
	}
	for name := range reported {
		if _, ok := sub[name]; !ok {
			delete(reported, name)
		}
	}
	names := make([]string, 0, len(sub))
	for name := range sub {
		names = append(names, name)
	}
	slices.Sort(names)
	var out []*discoverypb.ResourceError
	for _, name := range names {
		want := s.errorOf(ts.t, name)
		have, told := reported[name]
		if want == nil {
			if told {
				delete(reported, name)
			}
			continue
		}
		if told && have == *want {
			continue
		}
		if reported == nil {
			reported = map[string]Status{}
			ts.rareState().reported = reported
		}
		reported[name] = *want
		out = append(out, resourceError(name, *want))
	}
	return out
}

// nonceIs reports whether the response_nonce s is the nonce n, as the
// decimal the server sent.
func nonceIs(s string, n uint32) bool {
	v, ok := nonceNumber(s)
	return ok && s != "" && v == n
}

// nonceNumber returns the response_nonce s as a number: 0 for none, and
// ok false for a string no nonce the server sends is written as (one
// with a leading zero, "0" itself, anything but 32-bit decimal).
func nonceNumber(s string) (n uint32, ok bool) {
	if s == "" {
		return 0, true
	}
	v, err := strconv.ParseUint(s, 10, 32)
	if err != nil || s[0] == '0' { // ParseUint takes "01" too
		return 0, false
	}
	return uint32(v), true
}
