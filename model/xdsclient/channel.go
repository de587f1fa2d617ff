package xdsclient

import (
	"slices"
	"time"

	"google.golang.org/grpc/codes"
)

// streamPhase is where the channel's ADS stream is.
type streamPhase uint8

const (
	streamNone    streamPhase = iota // no channel, or closed
	streamBackoff                    // waiting for the retry timer
	streamOpening                    // OpenStream emitted, no StreamOpened yet
	streamOpen                       // StreamOpened received
)

// watchPhase is a name's does-not-exist timer state on one channel (grpc-go
// xdsresource.ResourceWatchState: Started → Requested → Received | Timeout).
type watchPhase uint8

const (
	watchStarted   watchPhase = iota // subscribed, timer not running
	watchRequested                   // timer running
	watchReceived                    // a response named it
	watchTimeout                     // the timer fired
)

type watchState struct {
	phase watchPhase
	// awaitingReady: the request naming it was written while the channel
	// was not READY; the timer starts at READY (gRFC A57).
	awaitingReady bool
}

// typeState is one resource type's subscription on a channel (grpc-go
// ads_stream.go resourceTypeState). Its names' timer states are in the
// channel's watch (see channel.watches).
type typeState struct {
	names   []string // sorted snapshot of subscribed names; never mutated
	version string   // last ACKed version: kept across streams (xDS protocol)
	nonce   string   // last nonce seen on the current stream
}

// watches returns the timer states of type t's names, in the order of its
// names. The types' states lie one after another in ch.watch, type 0's
// first, each type's as many as it has names: one slice for the four
// types rather than one each, since a client holds a channel per server
// it uses and a fleet a million clients.
func (ch *channel) watches(t ResourceType) []watchState {
	start := ch.watchStart(t)
	return ch.watch[start : start+len(ch.types[t].names)]
}

// watchStart returns where type t's timer states start in ch.watch.
func (ch *channel) watchStart(t ResourceType) int {
	start := 0
	for u := range t {
		start += len(ch.types[u].names)
	}
	return start
}

// find returns the timer state of name of type t, or nil if it is not
// subscribed. It is valid until the subscription changes.
func (ch *channel) find(t ResourceType, name string) *watchState {
	if i, ok := slices.BinarySearch(ch.types[t].names, name); ok {
		return &ch.watch[ch.watchStart(t)+i]
	}
	return nil
}

type inflight struct {
	typ   ResourceType
	names []string
}

// channel is the xDS channel and ADS stream to one server (grpc-go
// channel.go xdsChannel and ads_stream.go adsStreamImpl, one per server per
// client: xdsclient.go getOrCreateChannel keys them by ServerConfig).
type channel struct {
	idx int
	// The small fields together, with no padding between them: a client
	// holds a channel per server it uses, and a fleet a million clients
	// (352 bytes).
	refs int32 // authorities holding the channel

	feat        ServerFeatures // the server's server_features
	conn        ConnectivityState
	phase       streamPhase
	gotResponse bool // a response arrived on the current stream
	nodeSent    bool // the current stream's first request went out
	// backoffStarted: a backoff sequence exists (grpc-java
	// retryBackoffPolicy != null); the channel's first failure starts one.
	backoffStarted bool
	// ADS flow control (grpc-go ads_stream.go adsFlowControl). readPaused:
	// the caller holds the stream's next read. While it is set, either
	// rare.pendingDone callbacks of response rare.doneUpdate are
	// outstanding, or the stream is stalled for good
	// (Profile.UnknownTypeStallsReads). A StreamFailed that arrives
	// meanwhile is kept in rare.held.
	readPaused bool
	stalled    bool
	// gRFC A78 metrics. connected is the grpc.xds_client.connected gauge
	// (grpc-go adsStreamImpl.streamEstablished); streamCreated records that
	// the channel's first stream was created (grpc-go firstStreamCreated);
	// recorded is the connected gauge as the client's MetricsSink last had
	// it. counts holds the counters, which survive the channel's closing.
	connected     bool
	streamCreated bool
	recorded      bool
	counts        serverCounts

	streamStart time.Duration // when the current attempt was started
	types       [numTypes]typeState
	watch       []watchState // the names' timer states (see watches)
	inflight    []inflight   // Sends not yet SendDone, oldest first
	rare        *channelRare // nil until the channel fails or pauses its reads
}

// channelRare is the part of a channel's state that a channel that never
// failed and never paused its reads does not need; most of a fleet's
// channels never do.
type channelRare struct {
	// connErr is the channel's current connectivity error, cleared by a
	// response (C-core channel status).
	connErr     *Status
	held        *Status // the stream's failure, held while reads are paused
	doneUpdate  uint64
	attempt     int32 // backoff attempt
	pendingDone int32
}

// more returns ch.rare, created if need be.
func (ch *channel) more() *channelRare {
	if ch.rare == nil {
		ch.rare = &channelRare{}
	}
	return ch.rare
}

// connErr returns the channel's current connectivity error, nil if none.
func (ch *channel) connErr() *Status {
	if ch.rare == nil {
		return nil
	}
	return ch.rare.connErr
}

// serverCounts are a channel's gRFC A78 counters (ServerMetrics), 32-bit:
// a channel would have to count 4·10⁹ failures or updates of a type to
// wrap one.
type serverCounts struct {
	failures       uint32
	valid, invalid [numTypes]uint32
}

// acquire adds an authority's reference; the first creates the channel and
// starts its first stream attempt at once (grpc-go backoff.RunF makes the
// first attempt immediately).
func (ch *channel) acquire(c *Client, _ *authority) {
	ch.refs++
	if ch.refs > 1 {
		return
	}
	ch.reset()
	// grpc-go: a new adsStreamImpl starts with streamEstablished false;
	// grpc-java (!isInError()) and C-core (status OK) report connected from
	// the channel's creation (Profile.ConnectedMetricInitial).
	ch.connected = c.prof.ConnectedMetricInitial == ConnectedChannel
	ch.openStream(c)
}

// release drops a reference; the last closes the channel and forgets its
// state, versions included (grpc-go: a re-watch after the channel closed
// starts with version "", TestADS_ACK_NACK_ResourceIsNotRequestedAnymore).
func (ch *channel) release(c *Client, _ *authority) {
	ch.refs--
	if ch.refs > 0 {
		return
	}
	switch ch.phase {
	case streamOpen, streamOpening:
		c.emit(Effect{Kind: CloseStream, Server: ch.idx})
	case streamBackoff:
		c.cancelTimer(TimerID{Kind: RetryTimer, Server: ch.idx})
		c.emit(Effect{Kind: CloseStream, Server: ch.idx})
	}
	ch.cancelResourceTimers(c)
	ch.reset()
}

// reset forgets the channel's state, keeping its identity, references,
// connectivity and metric counters. Closing a channel also stops its flow
// control (grpc-go adsStreamImpl.Stop calls fc.stop()), so a pause ends.
func (ch *channel) reset() {
	r := ch.rare // kept, emptied: a channel that failed once may again
	if r != nil {
		*r = channelRare{}
	}
	*ch = channel{idx: ch.idx, feat: ch.feat, refs: ch.refs, conn: ch.conn, counts: ch.counts, recorded: ch.recorded, rare: r}
}

func (ch *channel) openStream(c *Client) {
	ch.phase = streamOpening
	ch.gotResponse = false
	ch.streamStart = c.now
	c.emit(Effect{Kind: OpenStream, Server: ch.idx, WaitForReady: c.prof.ADSWaitForReady})
}

// authorities calls f for every authority holding this channel, in
// bootstrap order, with the channel's position in it.
func (ch *channel) authorities(c *Client, f func(a *authority, pos int)) {
	for i := range c.auths {
		a := &c.auths[i]
		if pos := a.position(ch.idx); pos >= 0 && a.held&(1<<pos) != 0 {
			f(a, pos)
		}
	}
}

// connectivityChanged records the channel state. READY starts the timers
// of names already sent (gRFC A57 "Handling Resources That Do Not Exist":
// the timer starts once the subscription was sent AND the channel is
// READY). TRANSIENT_FAILURE is a connectivity error only where the profile
// watches channel state (gRFC A57 "Connectivity Status Information via
// Connectivity State Notification"; C-core StateWatcher).
func (ch *channel) connectivityChanged(c *Client, s ConnectivityState) {
	prev := ch.conn
	ch.conn = s
	if ch.refs == 0 {
		return
	}
	switch {
	case s == Ready && prev != Ready:
		for t := ResourceType(0); t < numTypes; t++ {
			ws := ch.watches(t)
			for i, name := range ch.types[t].names {
				if ws := &ws[i]; ws.awaitingReady && ws.phase == watchStarted {
					ch.startTimer(c, t, name, ws)
				}
			}
		}
	case s == TransientFailure && prev != TransientFailure && c.prof.TransientFailureIsConnectivityError:
		st := Status{Code: codes.Unavailable, Message: "channel reports TRANSIENT_FAILURE"}
		ch.countConnectivityFailure(c)
		ch.more().connErr = &st
		ch.connectivityFailure(c, st)
	}
}

// connectivityFailure hands a connectivity failure of the channel to the
// authorities holding it: every one in grpc-go (handleADSStreamFailure
// does not check which channel failed), only those whose active channel
// it is in C-core (SetChannelStatusLocked) and grpc-java
// (handleStreamClosed, getActiveAuthorities). The metrics count it either
// way (C-core reports the server failure before the authority loop,
// grpc-java reportServerFailure before it too).
func (ch *channel) connectivityFailure(c *Client, st Status) {
	ch.authorities(c, func(a *authority, pos int) {
		if c.prof.ConnectivityErrorsFromActiveOnly && pos != a.active {
			return
		}
		a.connectivityFailure(pos, st)
	})
}

// streamOpened sends every subscription in the fixed type order, node on
// the first request (grpc-go sendExisting; the order is Go map order there,
// ranging over resourceTypeState, fixed here).
func (ch *channel) streamOpened(c *Client) {
	if ch.phase != streamOpening {
		return
	}
	ch.phase = streamOpen
	ch.gotResponse = false
	ch.nodeSent = false
	if !ch.streamCreated {
		// grpc-go runner: the very first stream of the channel sets
		// streamEstablished at creation (gRFC A78 "set to 1 when the stream
		// is initially created"); later ones only on a response.
		ch.streamCreated = true
		if c.prof.ConnectedMetricInitial == ConnectedFirstStream {
			ch.connected = true
		}
	}
	for t := ResourceType(0); t < numTypes; t++ {
		ts := &ch.types[t]
		ts.nonce = "" // a new stream resets the nonce, keeps the version
		if len(ts.names) > 0 {
			ch.send(c, t, ts.version, nil)
		}
	}
}

// streamFailed handles the end of a stream (gRFC A57 "Handling ADS Stream
// Termination"; grpc-go ads_stream.go onError and runner).
func (ch *channel) streamFailed(c *Client, st Status) {
	if ch.phase != streamOpen && ch.phase != streamOpening {
		return
	}
	if ch.readPaused {
		// grpc-go recv is blocked in fc.wait(): it sees the stream's error
		// only from the Recv after the watchers are done, and never if the
		// read is stalled (Profile.UnknownTypeStallsReads). Keep the first
		// one.
		if r := ch.more(); r.held == nil {
			held := st // allocated only here, not on every failure
			r.held = &held
		}
		return
	}
	ch.phase = streamBackoff
	ch.inflight = ch.inflight[:0]
	// Running timers stop and their names go back to Started (grpc-go
	// onError). C-core's timers belong to the call, so every uncached name
	// is timed afresh on the next call (AdsCall::ResourceTimer). grpc-java
	// times every name without data or an absent verdict again when the
	// next stream is ready (startMissingResourceTimers: respTimer == null
	// && !hasResult()), one NACKed while uncached included.
	for t := ResourceType(0); t < numTypes; t++ {
		ws := ch.watches(t)
		for i, name := range ch.types[t].names {
			ws := &ws[i]
			ws.awaitingReady = false
			switch {
			case ws.phase == watchRequested:
				c.cancelTimer(TimerID{Kind: ResourceTimer, Server: ch.idx, Type: t, Name: name})
				ws.phase = watchStarted
			case c.prof.ResourceTimerScope == TimerScopeCall && !ch.cachedAnywhere(c, t, name),
				c.prof.ResourceTimerScope == TimerScopeResource && !ch.resolvedAnywhere(c, t, name):
				ws.phase = watchStarted
			}
		}
	}
	var delay time.Duration
	if ch.gotResponse {
		// Not an error after a response (gRFC A57). grpc-go restarts at
		// once (backoff.RunF on ErrResetBackoff); grpc-java and C-core reset
		// the backoff and wait a fresh jittered initial delay (grpc-java
		// ControlPlaneClient handleRpcStreamClosed, C-core
		// RetryableCall::OnCallFinishedLocked).
		if ch.rare != nil {
			ch.rare.attempt = 0
		}
		ch.backoffStarted = true
		if c.prof.RestartDelayAfterResponse == RestartJitteredInitial {
			delay = c.jitter(float64(c.prof.BackoffInitial))
			ch.more().attempt = 1
		}
	} else {
		// A connectivity error: watchers and fallback (gRFC A57, A71).
		ch.countConnectivityFailure(c)
		r := ch.more()
		r.connErr = &st
		ch.connectivityFailure(c, st)
		if ch.refs == 0 {
			return // the failure closed the channel (no watchers left)
		}
		delay = c.backoff(int(r.attempt))
		r.attempt++
		if c.prof.BackoffSubtractStreamLifetime && ch.backoffStarted {
			// grpc-java: max(0, backoff - time since the attempt started),
			// but the first failure of a ControlPlaneClient resets the
			// stopwatch with the new policy (handleRpcStreamClosed:
			// retryBackoffPolicy == null).
			delay -= c.now - ch.streamStart
			if delay < 0 {
				delay = 0
			}
		}
		ch.backoffStarted = true
	}
	if delay == 0 {
		ch.openStream(c)
		return
	}
	c.armTimer(TimerID{Kind: RetryTimer, Server: ch.idx}, delay)
}

func (ch *channel) retryFired(c *Client) {
	if ch.phase != streamBackoff || ch.refs == 0 {
		return
	}
	ch.openStream(c)
}

// cachedAnywhere reports whether some authority holding this channel has
// the resource cached (C-core MaybeStartTimer checks HasResource).
func (ch *channel) cachedAnywhere(c *Client, t ResourceType, name string) bool {
	found := false
	ch.authorities(c, func(a *authority, _ int) { found = found || a.cached(t, name) })
	return found
}

// resolvedAnywhere reports whether some authority holding this channel
// has the resource cached or found absent: grpc-java's
// ResourceSubscriber.hasResult (data != null || absent).
func (ch *channel) resolvedAnywhere(c *Client, t ResourceType, name string) bool {
	found := false
	ch.authorities(c, func(a *authority, _ int) { found = found || a.resolved(t, name) })
	return found
}

// skipsTimer reports whether the profile starts no does-not-exist timer
// for the name: grpc-java restartTimer skips a subscriber with data or an
// absent verdict, whichever channel asks (Profile.ResourceTimerScope
// "resource"); C-core MaybeStartTimer and the other profiles with
// ResourceTimerSkipsCached skip a cached resource.
func (ch *channel) skipsTimer(c *Client, t ResourceType, name string) bool {
	if c.prof.ResourceTimerScope == TimerScopeResource {
		return ch.resolvedAnywhere(c, t, name)
	}
	return c.prof.ResourceTimerSkipsCached && ch.cachedAnywhere(c, t, name)
}

func (ch *channel) cancelResourceTimers(c *Client) {
	for t := ResourceType(0); t < numTypes; t++ {
		ws := ch.watches(t)
		for i, name := range ch.types[t].names {
			if ws[i].phase == watchRequested {
				c.cancelTimer(TimerID{Kind: ResourceTimer, Server: ch.idx, Type: t, Name: name})
			}
		}
	}
}

// countConnectivityFailure updates the gRFC A78 metrics for a connectivity
// failure: the connected gauge drops (grpc-go streamEstablished.Store(false)
// after a failed NewStream or a Recv error before any response; grpc-java
// inError; C-core non-OK channel status), and server_failure counts every
// failure (grpc-go channelState.adsStreamFailure, grpc-java
// handleStreamClosed) or only a healthy server turning unhealthy (gRFC A78;
// C-core SetChannelStatusLocked: "If status was previously OK"). It runs
// before connErr is set, so connErr == nil means "was healthy".
func (ch *channel) countConnectivityFailure(c *Client) {
	ch.connected = false
	if c.prof.ServerFailureMetric == FailureMetricEvery || ch.connErr() == nil {
		ch.counts.failures++
		if c.sink != nil {
			c.sink.server(ch.idx).ServerFailures++
		}
	}
}
