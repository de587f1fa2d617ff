// Package xdsclient is a deterministic model of one gRPC XdsClient instance:
// the resource cache and watchers, the ADS stream to each management
// server, the does-not-exist timers, fallback between servers and error
// handling, as specified by gRFC A57, A71 and A88 and as implemented by
// grpc-go, grpc-java and C-core (selected by a Profile).
//
// Like go.etcd.io/raft, the Client is a pure state machine: it has no clock,
// no goroutines and no I/O. The caller feeds it inputs (a watch, a channel
// connectivity change, a stream opened or failed, a response, a send
// completed, a timer fired), each stamped with the virtual time, and gets
// back the effects it must carry out: open or close a stream, send a
// DiscoveryRequest, arm or cancel a timer, call a watcher. The slice of
// effects an input returns is valid until the next input.
//
// Resources are decoded and validated once, outside any client (Decode,
// DecodeResponse); the resulting *Decoded values are immutable and may be
// shared by every client that receives the same bytes.
//
// # ADS flow control
//
// Real clients read the next response of an ADS stream only once every
// watcher callback of the previous one has finished (grpc-go adsFlowControl,
// grpc-java ProcessingTracker, C-core ReadDelayHandle; Profile.ADSFlowControl).
// The machine models it with one input and two effects:
//
//   - WatcherDone(Done) answers each Notify whose Notification.Done.Waits(),
//     once the watcher has processed it.
//   - PauseRead{Server} ends the step that processed a response whose
//     callbacks are outstanding. The caller then delivers nothing more from
//     that stream, neither its next response nor its end.
//   - ResumeRead{Server} comes out of the WatcherDone that completes the
//     last of those callbacks. The caller then delivers what it held, in
//     order.
//
// A response with no interested watcher resumes at once, so no effect is
// emitted. Delivering a response while reads are paused panics; a
// StreamFailed delivered while paused is kept and applied when reads resume
// (grpc-go sees the error only from the Recv after fc.wait returns).
// ReadPaused reports the state, so a discrete-event caller never polls: it
// queues per stream between PauseRead and ResumeRead. A caller that does not
// model watcher latency sets Config.AutoDone: every callback then counts as
// done when it is emitted, no Done handle waits and PauseRead comes only from
// grpc-go's unknown-type stall (Profile.UnknownTypeStallsReads).
package xdsclient

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strings"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/xdssim/xdssim/internal/prefetch"
)

// Rand is the jitter source; math/rand/v2's *rand.Rand satisfies it.
type Rand interface{ Float64() float64 }

// Config configures one XdsClient instance.
type Config struct {
	// Target is the instance's pool key: the data-plane target, or
	// ServerTarget for xDS-enabled servers (gRFC A71, "Change global
	// XdsClient from a single instance to per-target instances"). It is the
	// CSDS client_scope.
	Target    string
	Bootstrap Bootstrap
	Profile   Profile
	// SharedProfile, if set, is used instead of Profile and by reference:
	// a caller that builds many clients of one profile validates it once
	// (Profile.Validate) and must not change it while the clients live.
	// New neither copies nor validates it, which saves a Profile per client.
	SharedProfile *Profile
	// Rand supplies backoff jitter. Nil means no jitter (factor 1).
	Rand Rand
	// AutoDone treats every watcher callback as done the moment it is
	// emitted, as if watchers completed synchronously: notifications carry
	// no-op Done handles and no response pauses reads, so the caller needs
	// no WatcherDone inputs. See the package doc, "ADS flow control".
	AutoDone bool
	// Effects, if set, is scratch space the client shares with every
	// other client given the same Effects, instead of keeping its own:
	// the slice an input returns is then valid only until the next input
	// to any of them. A caller that runs many clients one input at a
	// time, and copies the effects out before the next, saves a buffer
	// per client.
	Effects *Effects
	// Metrics, if set, is where the client records its gRFC A78 metrics
	// as they change, summed with those of every other client given the
	// same sink (see MetricsSink).
	Metrics *MetricsSink
}

// Effects is scratch space for the effects of inputs, which Clients can
// share (Config.Effects). The zero Effects is ready to use.
type Effects struct {
	buf  []Effect
	warm uint64 // what begin read ahead of the input
}

// Client is one XdsClient instance. It is not safe for concurrent use.
type Client struct {
	target string
	node   *corepb.Node // the bootstrap's node, for CSDS
	prof   *Profile     // shared with the caller's other clients (Config.SharedProfile)
	rand   Rand

	servers []server    // unique servers; an Effect's Server indexes this
	auths   []authority // auths[0] is the default (old-style names)

	now  time.Duration
	fx   *Effects // where an input's effects go: Config.Effects, or the client's own
	sink *MetricsSink

	// done is the handle attached to notifications while a response is
	// being processed under flow control; doneCount counts them (grpc-go
	// authority.go watcherCnt summed over channelState authorityCnt).
	done DoneHandle

	// statuses counts the cache entries by CSDS status, kept up to date
	// by setStatus so that a fleet can sample them without a scan.
	statuses [NumStatuses]int32
	// The small fields last, together (a fleet holds a million clients:
	// 184 bytes, its block pointer included).
	doneCount int32
	// gen is the response generation, which marks the names present in a
	// response and numbers flow control's handles; it skips 0, which a
	// handle takes for no-op, when it wraps.
	gen      uint32
	autoDone bool
	filters  FilterSet // the profile's HTTPFilters, looked up once
	// taken says which rooms of the client's block are taken (bit i:
	// states[i]; roomNames+t: names[t]; roomChannel: ch), here, in the
	// padding before b.
	taken uint16
	b     *clientBlock // the allocation the client is part of
}

// The bits of Client.taken after the states'.
const (
	roomNames   = 4
	roomChannel = roomNames + numTypes
)

// clientBlock is a Client allocated together with the state nearly every
// client of a fleet has: its default authority, two servers, the channel
// to the first it uses, four cache entries with their states and watcher
// lists, the requests in flight and each type's first names snapshot. A
// response reads a dozen pieces of this state, which a fleet of thousands
// of clients no longer holds in the processor's caches: in one allocation
// they lie in a few pages, next to each other, rather than in a dozen
// places of the heap, and begin fetches them at once (package prefetch)
// (docs/performance.md, "What changed": "A response's state laid out by
// what it reads"). A client that needs more (more authorities, servers,
// channels or entries) allocates the rest as before. The block must stay
// within its size class (TestAClientBlockFitsItsSizeClass).
type clientBlock struct {
	c        Client
	auths    [1]authority
	servers  [2]server
	authSrv  [2]int
	entries  [4]cacheEntry
	ch       channel
	watch    [4]watchState
	inflight [1]inflight
	// names holds the block's channel's first snapshot of each type's
	// names, when it has one name; a snapshot is never changed once
	// made (a Request may hold it), so each is used once.
	names   [numTypes][1]string
	states  [4]resourceState
	watched [4][1]WatcherID // the states' watcher lists
}

// newChannel returns a new channel to server idx: the block's, with the
// block's rooms for its timer states and requests in flight, the first
// time.
func (b *clientBlock) newChannel(idx int, feat ServerFeatures) *channel {
	if b.c.taken&(1<<roomChannel) != 0 {
		return &channel{idx: idx, feat: feat}
	}
	b.c.taken |= 1 << roomChannel
	b.ch = channel{idx: idx, feat: feat, watch: b.watch[:0], inflight: b.inflight[:0]}
	return &b.ch
}

// namesWith returns ch's new snapshot of type t's names: names with name
// added (insertSorted). The first one-name snapshot of each type of the
// block's channel is the block's room for it, which is used once, since
// a Request may hold a snapshot.
func (b *clientBlock) namesWith(ch *channel, t ResourceType, names []string, name string) []string {
	if len(names) > 0 || ch != &b.ch || b.c.taken&(1<<(roomNames+t)) != 0 {
		return insertSorted(names, name)
	}
	b.c.taken |= 1 << (roomNames + t)
	b.names[t][0] = name
	return b.names[t][:1:1]
}

// newState returns room for a cache entry's state: one of the block's
// while it has one free.
func (b *clientBlock) newState() *resourceState {
	i := bits.TrailingZeros8(^uint8(b.c.taken))
	if i >= len(b.states) {
		return new(resourceState)
	}
	b.c.taken |= 1 << i
	st := &b.states[i]
	st.watchers = b.watched[i][:0]
	return st
}

// freeState takes back st, a state newState returned.
func (b *clientBlock) freeState(st *resourceState) {
	for i := range b.states {
		if st == &b.states[i] {
			*st = resourceState{}
			b.c.taken &^= 1 << i
			return
		}
	}
}

// New builds a client. It returns an error for an empty server list or an
// invalid profile.
func New(cfg Config) (*Client, error) {
	prof := cfg.SharedProfile
	if prof == nil {
		if err := cfg.Profile.Validate(); err != nil {
			return nil, err
		}
		prof = new(Profile)
		*prof = cfg.Profile
	}
	if len(cfg.Bootstrap.Servers) == 0 {
		return nil, fmt.Errorf("xdsclient: target %q: bootstrap has no xds_servers", cfg.Target)
	}
	if n := len(cfg.Bootstrap.Servers); n > MaxServers {
		return nil, fmt.Errorf("xdsclient: target %q: bootstrap has %d xds_servers, at most %d are modelled", cfg.Target, n, MaxServers)
	}
	for _, a := range cfg.Bootstrap.Authorities {
		if n := len(a.Servers); n > MaxServers {
			return nil, fmt.Errorf("xdsclient: target %q: authority %q has %d xds_servers, at most %d are modelled", cfg.Target, a.Name, n, MaxServers)
		}
	}
	fx := cfg.Effects
	if fx == nil {
		fx = new(Effects)
	}
	b := new(clientBlock)
	c := &b.c
	*c = Client{target: cfg.Target, node: cfg.Bootstrap.Node, prof: prof, rand: cfg.Rand, autoDone: cfg.AutoDone, fx: fx,
		sink: cfg.Metrics, filters: prof.FilterSet(), b: b}
	c.servers, c.auths = b.servers[:0], b.auths[:0]
	c.auths = append(c.auths, c.newAuthority("", cfg.Bootstrap.Servers))
	for _, a := range cfg.Bootstrap.Authorities {
		srv := a.Servers
		if len(srv) == 0 {
			srv = cfg.Bootstrap.Servers
		}
		c.auths = append(c.auths, c.newAuthority(a.Name, srv))
	}
	return c, nil
}

// MaxServers is the most servers an authority may list: an authority keeps
// the positions of its servers it holds a channel to, and those each
// resource is subscribed on, as 64-bit sets. Real clients have no such
// bound, and no known bootstrap comes near it.
const MaxServers = 64

// server is one of a client's unique servers and its channel, nil until
// first used (see Client.channel).
type server struct {
	cfg ServerConfig
	ch  *channel
}

// serverIndex returns the index of s, adding it. Channels are shared by
// authorities whose servers are equal (grpc-go xdsclient.go: one xdsChannel
// per ServerConfig).
func (c *Client) serverIndex(s ServerConfig) int {
	for i := range c.servers {
		if c.servers[i].cfg == s {
			return i
		}
	}
	c.servers = append(c.servers, server{cfg: s})
	return len(c.servers) - 1
}

// channel returns the channel to server i, creating its state on first
// use: a fallback server that a client never needs costs it no channel.
func (c *Client) channel(i int) *channel {
	srv := &c.servers[i]
	if srv.ch == nil {
		srv.ch = c.b.newChannel(i, srv.cfg.Features)
	}
	return srv.ch
}

// Servers returns the unique server list, a new slice; Effect.Server
// indexes it.
func (c *Client) Servers() []ServerConfig {
	out := make([]ServerConfig, len(c.servers))
	for i := range c.servers {
		out[i] = c.servers[i].cfg
	}
	return out
}

// Profile returns the profile the client runs.
func (c *Client) Profile() Profile { return *c.prof }

// Target returns the instance's pool key.
func (c *Client) Target() string { return c.target }

// Hint asks the processor to bring the client's state into its caches
// (package prefetch), for an input to come soon.
func (c *Client) Hint() { prefetch.HintAs[clientBlock](c) } // c is its block's first field

func (c *Client) begin(now time.Duration) {
	// The input reads a dozen lines of the block: they are fetched
	// together (package prefetch), kept so that the reads are made.
	c.fx.warm += prefetch.Of(c.b)
	// Invariant: an event never runs in the past.
	if now < c.now {
		panic(fmt.Sprintf("xdsclient: input at %v is before the previous input at %v", now, c.now))
	}
	c.now = now
	c.fx.buf = c.fx.buf[:0]
}

// end returns the input's effects, which stay in the client's Effects,
// shared or its own, until its next input (or, shared, any client's).
func (c *Client) end() []Effect {
	if c.sink != nil {
		c.recordGauges()
	}
	return c.fx.buf
}

func (c *Client) emit(e Effect) { c.fx.buf = append(c.fx.buf, e) }

// Watch registers watcher w for (typ, name). A name of the form
// xdstp://<authority>/... uses that authority's servers; any other name uses
// the top-level servers.
func (c *Client) Watch(now time.Duration, typ ResourceType, name string, w WatcherID) []Effect {
	c.begin(now)
	a := c.authorityFor(name)
	if a == nil {
		// grpc-go clientimpl_watchers.go: a name whose authority is not in
		// the bootstrap fails the watch at once.
		c.notify(w, ResourceChanged, typ, name, nil, "", invalidAuthority(name), CauseNone)
		return c.end()
	}
	a.watch(typ, name, w)
	return c.end()
}

// Unwatch removes watcher w from (typ, name).
func (c *Client) Unwatch(now time.Duration, typ ResourceType, name string, w WatcherID) []Effect {
	c.begin(now)
	if a := c.authorityFor(name); a != nil {
		a.unwatch(typ, name, w)
	}
	return c.end()
}

// ConnectivityChanged reports the xDS channel to server's new state.
func (c *Client) ConnectivityChanged(now time.Duration, server int, s ConnectivityState) []Effect {
	c.begin(now)
	c.channel(server).connectivityChanged(c, s)
	return c.end()
}

// StreamOpened reports that the ADS stream asked for by OpenStream started.
func (c *Client) StreamOpened(now time.Duration, server int) []Effect {
	c.begin(now)
	c.channel(server).streamOpened(c)
	return c.end()
}

// StreamFailed reports that server's ADS stream (or its creation) ended with
// st.
func (c *Client) StreamFailed(now time.Duration, server int, st Status) []Effect {
	c.begin(now)
	c.channel(server).streamFailed(c, st)
	return c.end()
}

// SendDone reports that the oldest unfinished Send on server's current
// stream was written (grpc-go: Send returned; C-core: send_message
// completed).
func (c *Client) SendDone(now time.Duration, server int) []Effect {
	c.begin(now)
	c.channel(server).sendDone(c)
	return c.end()
}

// ResponseReceived delivers a raw DiscoveryResponse from server. It decodes
// it first; use DecodedResponseReceived to share decoding across clients.
func (c *Client) ResponseReceived(now time.Duration, server int, resp *discoverypb.DiscoveryResponse) []Effect {
	return c.DecodedResponseReceived(now, server, DecodeResponse(resp))
}

// DecodedResponseReceived delivers a pre-decoded response from server. It
// panics if server's reads are paused (see PauseRead). The client keeps
// nothing of resp past the call but its strings and Decoded resources,
// which are immutable: the caller may reuse resp's slices
// (DecodeResponseInto).
func (c *Client) DecodedResponseReceived(now time.Duration, server int, resp *DecodedResponse) []Effect {
	c.begin(now)
	c.channel(server).handleResponse(c, resp)
	return c.end()
}

// WatcherDone reports that a watcher finished processing the notification
// that carried h (grpc-go: the watcher called done). The call that completes
// the last outstanding callback of a response returns ResumeRead, then the
// effects of a stream failure held meanwhile. A no-op handle, or one whose
// stream or channel has since gone, is ignored.
func (c *Client) WatcherDone(now time.Duration, h DoneHandle) []Effect {
	c.begin(now)
	if h.Waits() && h.Server >= 0 && h.Server < len(c.servers) {
		c.channel(h.Server).watcherDone(c, h.Update)
	}
	return c.end()
}

// ReadPaused reports whether server's ADS stream is waiting for watchers
// (or is stalled) and must not be read.
func (c *Client) ReadPaused(server int) bool {
	ch := c.servers[server].ch
	return ch != nil && ch.readPaused
}

// Connected reports the gRFC A78 grpc.xds_client.connected gauge of server:
// its channel exists and its ADS stream is connected. It is
// Metrics(server).Connected without the copy.
func (c *Client) Connected(server int) bool {
	ch := c.servers[server].ch
	return ch != nil && ch.refs > 0 && ch.connected
}

// Active reports whether the client holds a channel to server: some
// authority uses it (gRFC A71: the primary, or a fallback server in use).
// It is Metrics(server).Active without the copy. Asking creates no state:
// a server the client never used has none.
func (c *Client) Active(server int) bool {
	ch := c.servers[server].ch
	return ch != nil && ch.refs > 0
}

// Metrics returns the gRFC A78 metrics of server.
func (c *Client) Metrics(server int) ServerMetrics {
	ch := c.servers[server].ch
	if ch == nil {
		return ServerMetrics{} // never used: nothing counted, not active
	}
	m := ServerMetrics{Active: ch.refs > 0, ServerFailures: int(ch.counts.failures)}
	m.Connected = m.Active && ch.connected
	for t := range numTypes {
		m.ResourceUpdatesValid[t] = int(ch.counts.valid[t])
		m.ResourceUpdatesInvalid[t] = int(ch.counts.invalid[t])
	}
	return m
}

// TimerFired reports that a timer armed by ArmTimer expired. A timer that
// was cancelled or re-armed since is the caller's to drop; the machine also
// ignores ids it no longer expects.
func (c *Client) TimerFired(now time.Duration, id TimerID) []Effect {
	c.begin(now)
	ch := c.channel(id.Server)
	switch id.Kind {
	case RetryTimer:
		ch.retryFired(c)
	case ResourceTimer:
		ch.resourceTimerFired(c, id.Type, id.Name)
	}
	return c.end()
}

// authorityFor parses the authority of an xdstp:// name (gRFC A47).
func (c *Client) authorityFor(name string) *authority {
	rest, ok := strings.CutPrefix(name, "xdstp://")
	if !ok {
		return &c.auths[0]
	}
	an, _, _ := strings.Cut(rest, "/")
	for i := 1; i < len(c.auths); i++ {
		if c.auths[i].name == an {
			return &c.auths[i]
		}
	}
	return nil
}

func invalidAuthority(name string) Status {
	return Status{Code: 3, Message: fmt.Sprintf("xds: resource %q names an authority missing from the bootstrap", name)}
}

// notify emits a watcher callback. While a response is processed under flow
// control it carries the response's done handle and is counted (grpc-go
// handleADSResourceUpdate: watcherCnt.Add(1) per scheduled callback); every
// other callback gets a no-op handle (grpc-go func() {}).
func (c *Client) notify(w WatcherID, k NotificationKind, typ ResourceType, name string, r *Decoded, version string, st Status, cause ErrorCause) {
	if c.done.Waits() {
		c.doneCount++
	}
	c.emit(Effect{Kind: Notify, Notification: Notification{
		Watcher: w, Kind: k, Type: typ, Name: name, Resource: r, Version: version, Status: st, Cause: cause, Done: c.done,
	}})
}

func (c *Client) armTimer(id TimerID, d time.Duration) {
	c.emit(Effect{Kind: ArmTimer, Server: id.Server, Timer: id, Delay: d})
}

func (c *Client) cancelTimer(id TimerID) {
	c.emit(Effect{Kind: CancelTimer, Server: id.Server, Timer: id})
}

// backoff returns the delay before retry attempt n (0-based): min(initial ×
// multiplier^n, max), then jittered by ±jitter (the cap applies before the
// jitter, so a delay can reach max × (1+jitter)). grpc-go's Backoff(0) is
// exactly the initial delay (internal/xds/clients/internal/backoff); grpc-java
// ExponentialBackoffPolicy and C-core BackOff (src/core/util/backoff.cc
// NextAttemptDelay) jitter every delay.
func (c *Client) backoff(n int) time.Duration {
	p := c.prof
	d := float64(p.BackoffInitial) * math.Pow(p.BackoffMultiplier, float64(n))
	if d > float64(p.BackoffMax) {
		d = float64(p.BackoffMax)
	}
	if n == 0 && p.BackoffFirstUnjittered {
		return time.Duration(d)
	}
	return c.jitter(d)
}

func (c *Client) jitter(d float64) time.Duration {
	if c.rand == nil || c.prof.BackoffJitter == 0 {
		return time.Duration(d)
	}
	return time.Duration(d * (1 + c.prof.BackoffJitter*(2*c.rand.Float64()-1)))
}

// insertSorted returns a new sorted slice with s added (names snapshots are
// immutable: a Request may still refer to the old one).
func insertSorted(names []string, s string) []string {
	i := sort.SearchStrings(names, s)
	out := make([]string, 0, len(names)+1)
	out = append(out, names[:i]...)
	out = append(out, s)
	return append(out, names[i:]...)
}

// removeSorted returns a new slice without s.
func removeSorted(names []string, s string) []string {
	i := sort.SearchStrings(names, s)
	if i == len(names) || names[i] != s {
		return names
	}
	out := make([]string, 0, len(names)-1)
	out = append(out, names[:i]...)
	return append(out, names[i+1:]...)
}
