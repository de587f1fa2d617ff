package xdsclient

import (
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
)

// subscribe adds name to the channel's subscription and, on an open
// stream, sends the new full list at once: requests are not batched since
// grpc-go #8627, so watches A, B, C send [A], [A B], [A B C] (grpc-go
// ads_stream.go subscribe: one pending request per call).
// Without an open stream the name goes out when the next stream opens
// (grpc-go sendNew: "If there's no stream yet, skip the request").
func (ch *channel) subscribe(c *Client, t ResourceType, name string) {
	if ch.find(t, name) != nil {
		return
	}
	ch.subscribeLater(c, t, name)
	if ch.phase == streamOpen {
		ch.send(c, t, ch.types[t].version, nil)
	}
}

// subscribeLater adds name to the channel's subscription without a request
// of its own: the next request of the type, or the next stream, carries it
// (grpc-java: ControlPlaneClient sends getSubscribedResources with every
// request, and a new watch calls adjustResourceSubscription on the active
// channel only).
func (ch *channel) subscribeLater(c *Client, t ResourceType, name string) {
	ts := &ch.types[t]
	i, ok := slices.BinarySearch(ts.names, name)
	if ok {
		return
	}
	at := ch.watchStart(t) + i
	ts.names = c.b.namesWith(ch, t, ts.names, name)
	ch.watch = slices.Insert(ch.watch, at, watchState{})
}

// unsubscribe removes name, stops its timer and sends the smaller list;
// removing the last name sends an empty list (grpc-go Unsubscribe).
func (ch *channel) unsubscribe(c *Client, t ResourceType, name string) {
	ts := &ch.types[t]
	i, ok := slices.BinarySearch(ts.names, name)
	if !ok {
		return
	}
	at := ch.watchStart(t) + i
	if ch.watch[at].phase == watchRequested {
		c.cancelTimer(TimerID{Kind: ResourceTimer, Server: ch.idx, Type: t, Name: name})
	}
	ts.names = removeSorted(ts.names, name)
	ch.watch = slices.Delete(ch.watch, at, at+1)
	if ch.phase == streamOpen {
		ch.send(c, t, ts.version, nil)
	}
}

// send emits one DiscoveryRequest for t carrying every subscribed name, the
// given version, the stream's nonce for t, and the node on the stream's
// first request (grpc-go sendMessageLocked, commit b9e6d59a) or on every
// request (grpc-java).
func (ch *channel) send(c *Client, t ResourceType, version string, nack *Status) {
	ts := &ch.types[t]
	req := Request{
		Type:        t,
		Version:     version,
		Nonce:       ts.nonce,
		Names:       ts.names,
		Node:        !ch.nodeSent || c.prof.NodeInEveryRequest,
		ErrorDetail: nack,
	}
	ch.nodeSent = true
	c.emit(Effect{Kind: Send, Server: ch.idx, Request: req})
	ch.inflight = append(ch.inflight, inflight{typ: t, names: ts.names})
	if c.prof.PreA57Timer {
		// Before A57 the timer started on send, READY or not (grpc/grpc
		// #31446 moved C-core off this).
		ws := ch.watches(t)
		for i, name := range ts.names {
			if ws := &ws[i]; ws.phase == watchStarted {
				ch.startTimer(c, t, name, ws)
			}
		}
	}
}

// sendDone starts the timers of names the written request carried that are
// still Started (grpc-go startWatchTimersLocked after Send; C-core
// OnRequestSent), or defers them to READY (gRFC A57).
func (ch *channel) sendDone(c *Client) {
	if ch.phase != streamOpen || len(ch.inflight) == 0 {
		return
	}
	f := ch.inflight[0]
	n := copy(ch.inflight, ch.inflight[1:])
	ch.inflight = ch.inflight[:n]
	if c.prof.PreA57Timer {
		return
	}
	for _, name := range f.names {
		ws := ch.find(f.typ, name) // f.names may be an older list than the subscription
		if ws == nil || ws.phase != watchStarted {
			continue
		}
		if ch.skipsTimer(c, f.typ, name) {
			// grpc-java restartTimer skips a resource with data or found
			// absent; C-core MaybeStartTimer checks HasResource.
			continue
		}
		if ch.conn == Ready {
			ch.startTimer(c, f.typ, name, ws)
		} else {
			ws.awaitingReady = true
		}
	}
}

// startTimer arms the does-not-exist timer: 15 s, or 30 s when A88 is on
// and the server has resource_timer_is_transient_error (gRFC A88).
func (ch *channel) startTimer(c *Client, t ResourceType, name string, ws *watchState) {
	ws.phase = watchRequested
	ws.awaitingReady = false
	d := c.prof.ResourceTimeout
	if c.prof.A88DataErrors && ch.feat.ResourceTimerIsTransientError {
		d = c.prof.ResourceTimeoutTransient
	}
	c.armTimer(TimerID{Kind: ResourceTimer, Server: ch.idx, Type: t, Name: name}, d)
}

// resourceTimerFired moves the name to Timeout and tells every authority
// holding the channel (grpc-go onWatchExpiry → handleADSResourceDoesNotExist).
func (ch *channel) resourceTimerFired(c *Client, t ResourceType, name string) {
	ws := ch.find(t, name)
	if ws == nil || ws.phase != watchRequested {
		return // cancelled or superseded: a stale kernel timer
	}
	ws.phase = watchTimeout
	if ch.skipsTimer(c, t, name) {
		// The resource arrived (or, in grpc-java, was found absent)
		// through another channel while this timer ran; a profile that
		// never times such a resource ignores it (grpc-java onAbsent acts
		// only if !absent).
		return
	}
	feat := ch.feat
	ch.authorities(c, func(a *authority, _ int) { a.resourceTimeout(t, name, feat) })
}

// handleResponse processes one DiscoveryResponse: it resets the backoff
// (gRFC A57), records the nonce, stops the timers of the names it carries,
// sends the ACK or NACK before any watcher runs (grpc-go onRecv), then
// hands the resources to the authorities.
//
// Under flow control the notifications carry the response's done handle;
// if any were emitted, reads pause until each is answered with WatcherDone
// (grpc-go recv: fc.setPending(true) before onResponse, onDone once every
// callback called done; with no interested watcher onDone runs at once).
func (ch *channel) handleResponse(c *Client, resp *DecodedResponse) {
	if ch.readPaused {
		// Invariant: nothing is read while watchers hold the stream.
		panic(fmt.Sprintf("xdsclient: response on server %d while its reads are paused (deliver it after ResumeRead)", ch.idx))
	}
	if ch.phase != streamOpen {
		return
	}
	hadConnErr := ch.connErr() != nil
	if r := ch.rare; r != nil {
		r.connErr, r.attempt = nil, 0
	}
	ch.gotResponse = true
	// grpc-go recv: streamEstablished.Store(true) for every message, before
	// it is processed (gRFC A78 connected: "reset to 1 when we receive the
	// first response on an ADS stream").
	ch.connected = true
	t, ok := typeFromURL(resp.TypeURL)
	if !ok {
		// An unknown type URL is neither ACKed nor NACKed (grpc-go recv,
		// ErrorTypeResourceTypeUnsupported).
		if c.prof.ADSFlowControl && c.prof.UnknownTypeStallsReads {
			// grpc-go channel.go onResponse returns the error without
			// calling onDone, so the pending flag set before it is never
			// cleared and the next fc.wait() blocks until the channel
			// closes (inferred from grpc-go's code; no grpc-go test
			// confirms it).
			ch.stalled = true
			ch.pauseRead(c)
		}
		return
	}
	if c.gen++; c.gen == 0 {
		c.gen = 1
	}
	if c.prof.ADSFlowControl && !c.autoDone {
		c.done, c.doneCount = DoneHandle{Server: ch.idx, Update: uint64(c.gen)}, 0
	}
	ts := &ch.types[t]
	ts.nonce = resp.Nonce
	nErr, anyValid := 0, false
	fs := c.filters
	for _, d := range resp.Resources {
		if d.ErrIn(fs) != nil {
			nErr++
		} else {
			anyValid = true
		}
		if d.Name != "" {
			ch.received(c, t, d.Name)
		}
	}
	if c.prof.A88DataErrors && c.prof.TP3ResourceErrors {
		// gRFC A88: a TP3 error cancels the resource timer.
		for i := range resp.ResourceErrors {
			ch.received(c, t, resp.ResourceErrors[i].Name)
		}
	}
	if nErr > 0 {
		version := ts.version
		if c.prof.NACKVersion == NACKVersionIfAnyValid && anyValid {
			// C-core: the version advances when any resource was valid.
			ts.version = resp.Version
			version = resp.Version
		}
		ch.send(c, t, version, &Status{Code: codes.InvalidArgument, Message: nackDetail(t, resp, fs)})
	} else {
		ts.version = resp.Version
		ch.send(c, t, ts.version, nil)
	}
	ch.authorities(c, func(a *authority, pos int) { a.handleUpdate(pos, t, resp, hadConnErr) })
	if c.done.Waits() {
		n := c.doneCount
		c.done, c.doneCount = DoneHandle{}, 0
		if n > 0 && ch.refs > 0 {
			r := ch.more()
			r.doneUpdate, r.pendingDone = uint64(c.gen), n
			ch.pauseRead(c)
		}
	}
}

// pauseRead holds the stream's next read (grpc-go: recv blocks in fc.wait()).
func (ch *channel) pauseRead(c *Client) {
	ch.readPaused = true
	c.emit(Effect{Kind: PauseRead, Server: ch.idx})
}

// watcherDone counts one callback of response update as done; the last one
// resumes reads (grpc-go handleADSResourceUpdate done: watcherCnt reaches 0,
// then channelState's authorityCnt, then onDone → fc.setPending(false)). A
// handle of an earlier response, or one for a channel that closed since,
// matches nothing and is ignored.
func (ch *channel) watcherDone(c *Client, update uint64) {
	r := ch.rare
	if !ch.readPaused || ch.stalled || r == nil || r.doneUpdate != update || r.pendingDone == 0 {
		return
	}
	r.pendingDone--
	if r.pendingDone > 0 {
		return
	}
	ch.readPaused, r.doneUpdate = false, 0
	c.emit(Effect{Kind: ResumeRead, Server: ch.idx})
	if st := r.held; st != nil {
		// The Recv after fc.wait() returns the stream's error.
		r.held = nil
		ch.streamFailed(c, *st)
	}
}

// received marks a name named by a response: its timer stops (grpc-go
// onRecv: Started/Requested → Received).
func (ch *channel) received(c *Client, t ResourceType, name string) {
	ws := ch.find(t, name)
	if ws == nil {
		return
	}
	switch ws.phase {
	case watchRequested:
		c.cancelTimer(TimerID{Kind: ResourceTimer, Server: ch.idx, Type: t, Name: name})
		ws.phase = watchReceived
	case watchStarted:
		ws.phase = watchReceived
	}
	ws.awaitingReady = false
}

// nackDetail is the error_detail message of a NACK: every invalid resource
// with the rule it broke.
func nackDetail(t ResourceType, resp *DecodedResponse, fs FilterSet) string {
	var b strings.Builder
	n := 0
	for _, d := range resp.Resources {
		err := d.ErrIn(fs)
		if err == nil {
			continue
		}
		if n > 0 {
			b.WriteString("; ")
		}
		n++
		name := d.Name
		if name == "" {
			name = "<unnamed>"
		}
		fmt.Fprintf(&b, "%s: %v", name, err)
	}
	return fmt.Sprintf("xds: %d invalid %v resource(s) in version %q: %s", n, t, resp.Version, b.String())
}
