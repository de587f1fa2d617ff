package fleet

import (
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/xdssim/xdssim/internal/prefetch"
	"github.com/xdssim/xdssim/model/controlplane"
	"github.com/xdssim/xdssim/model/network"
	"github.com/xdssim/xdssim/model/xdsclient"
	"github.com/xdssim/xdssim/sim"
)

// conn is one XdsClient instance's gRPC channel to one management server,
// and the ADS stream on it: network.Channel decides connectivity,
// network.Stream orders and times the messages, and the fifos hold the
// messages in flight (the kernel's events carry only their stream id).
type conn struct {
	inst  uint32
	cp    uint16 // the server, an index into world.servers
	local uint8  // the server's index in the instance's bootstrap
	flags uint8
	epoch uint32 // bumped when the channel is replaced; stale events carry an old one
	// answered counts the responses the server sent on the current
	// stream (network.StreamResetAfterResponse ends it after some).
	answered uint32
	ch       network.Channel
	st       network.Stream
	toServer fifo[outbound]
	toClient fifo[inbound]
}

const (
	// connWantStream: the XdsClient asked for a stream that the channel
	// has not let through yet (its pick was queued).
	connWantStream uint8 = 1 << iota
	// connWaitForReady: that stream is wait_for_ready.
	connWaitForReady
	// connPrimaryState: the conn counts in the fleet's primary-channel
	// state gauges (it is its instance's first server).
	connPrimaryState
	// connServerEnded: the server ended the current stream (its status is
	// on its way to the client); what the client still sends on it is
	// dropped on arrival.
	connServerEnded
	// connProcessing: the client is processing the response at the front
	// of toClient (readResponses); a kindProcessed event ends it.
	connProcessing
	// connReadPaused: the XdsClient paused its reads of this server's
	// stream (xdsclient PauseRead) and has not resumed them: the conn
	// keeps the XdsClient's ReadPaused so that a response's arrival need
	// not read the XdsClient's state. It is exact because the fleet's
	// XdsClients run with AutoDone: a PauseRead then comes only from a
	// stall and no ResumeRead follows, so no response is read while
	// effects are being carried out, before a PauseRead is.
	connReadPaused
)

// outbound is a request in flight to the server, or, while the stream is
// a wait_for_ready call still in its pick (network.StreamWaiting), one
// held until the call starts (startHeld).
type outbound struct {
	req  xdsclient.Request
	lost bool
}

type inbound struct {
	resp    *discoverypb.DiscoveryResponse
	lost    bool
	arrived bool // delivered by the network while the client's reads were paused
	// end: not a response but the status with which the server ended the
	// stream (network.StatusStreamReset).
	end bool
}

// fifo is a first-in, first-out queue that reuses its storage.
type fifo[T any] struct {
	items []T
	head  int
}

// spares keeps the arrays of emptied fifos for the next fifo that needs
// one. A connection's messages come in bursts (a stream's requests, a
// push), and an idle connection holding its last burst's array would cost
// a million clients their largest burst each; handing the arrays back
// and forth instead saves most of the allocations. It keeps at most
// maxSpares arrays (one or two MB), whatever the fleet's size: enough
// for a push to 10 000 streams, whose ACKs are in flight together, to
// find arrays. In fleet-10k the queues then allocate 5 MB over the run,
// against 32 MB with 4 096 spares and 83 MB with none.
type spares[T any] struct{ free [][]T }

const maxSpares = 16384

func (sp *spares[T]) get() []T {
	if n := len(sp.free); n > 0 {
		a := sp.free[n-1]
		// Cleared, so that the list does not keep alive, past its end,
		// an array its new owner lets go of (it grows past it).
		sp.free[n-1] = nil
		sp.free = sp.free[:n-1]
		return a
	}
	return nil
}

func (sp *spares[T]) put(a []T) {
	if cap(a) > 0 && len(sp.free) < maxSpares {
		clear(a[:cap(a)])
		sp.free = append(sp.free, a[:0])
	}
}

func (q *fifo[T]) push(v T, sp *spares[T]) {
	if q.items == nil {
		q.items = sp.get()
	}
	q.items = append(q.items, v)
}

func (q *fifo[T]) len() int  { return len(q.items) - q.head }
func (q *fifo[T]) front() *T { return &q.items[q.head] }

func (q *fifo[T]) pop(sp *spares[T]) T {
	v := q.items[q.head]
	q.head++
	if q.head == len(q.items) {
		q.reset(sp)
	}
	return v
}

// reset empties q and gives its array to sp.
func (q *fifo[T]) reset(sp *spares[T]) {
	sp.put(q.items)
	q.items, q.head = nil, 0
}

// serverStream is the controlplane id of conn ci's current stream.
func serverStream(ci uint32, id network.StreamID) controlplane.StreamID {
	return controlplane.StreamID(uint64(ci)<<32 | uint64(id.Gen))
}

// link is the link of a connection: its group's, else its server's, else
// the network's.
func (w *world) link(c *conn) *network.LinkConfig {
	if l := w.cfg.Groups[w.connClient(c).group].Link; l != nil {
		return l
	}
	if l := w.cfg.ControlPlanes[c.cp].Link; l != nil {
		return l
	}
	return &w.cfg.Link
}

func (w *world) connClient(c *conn) *client { return &w.clients[w.insts[c.inst].client] }

// channelEvent feeds a connect attempt's end or a backoff timer to the
// channel it belongs to, unless the channel has been replaced since.
func (w *world) channelEvent(ev sim.Event) {
	c := &w.conns[ev.Entity]
	now := w.kernel.Now()
	var buf [4]network.Effect
	switch ev.Kind {
	case kindAttemptEnd:
		if uint32(ev.Arg>>40) != c.epoch&epochMask {
			return
		}
		attempt, res := uint32(ev.Arg>>8), network.AttemptResult(ev.Arg&0xff)
		if res == network.AttemptTimedOut && attempt == c.ch.Attempt() && w.tracingConn(ev.Entity) {
			w.traceConn(ev.Entity, TraceEvent{Kind: TraceConnectTimeout, Rule: ruleConnectTimeout})
		}
		w.channelEffects(ev.Entity, c.ch.EndAttempt(now, attempt, res, buf[:0]))
	case kindBackoffTimer:
		if uint32(ev.Arg>>32) != c.epoch {
			return
		}
		w.channelEffects(ev.Entity, c.ch.TimerFired(now, network.TimerID(ev.Arg), buf[:0]))
	}
}

// epochMask keeps the epoch within the 24 bits kindAttemptEnd has for it.
const epochMask = 1<<24 - 1

// channelEffects carries out what a channel asked for. It takes a copy of
// effs: carrying them out may feed the same channel again.
func (w *world) channelEffects(ci uint32, effs []network.Effect) {
	var local [4]network.Effect
	effs = append(local[:0], effs...)
	now := w.kernel.Now()
	for _, e := range effs {
		c := &w.conns[ci]
		switch e.Kind {
		case network.StartConnectAttempt:
			if w.tracingConn(ci) {
				w.traceConn(ci, TraceEvent{Kind: TraceConnect, Rule: ruleConnect})
			}
			cl := w.connClient(c)
			at, res := network.ResolveAttempt(w.faults, w.link(c), cl.rng, cl.ref, int(c.cp), now, e.At, e.TCPAt)
			w.kernel.Schedule(sim.Event{At: at, Entity: ci, Kind: kindAttemptEnd,
				Arg: uint64(c.epoch&epochMask)<<40 | uint64(e.Attempt)<<8 | uint64(res)})
		case network.ArmTimer:
			w.hists[histConnBackoff].observe(e.At.Sub(now).Seconds())
			w.kernel.Schedule(sim.Event{At: e.At, Entity: ci, Kind: kindBackoffTimer, Arg: uint64(c.epoch)<<32 | uint64(e.Timer)})
		case network.CancelTimer:
			// TimerFired ignores a cancelled timer.
		case network.StateChanged:
			if c.flags&connPrimaryState != 0 {
				w.fx.primary[e.From]--
				w.fx.primary[e.To]++
			}
			if w.tracingConn(ci) {
				w.traceConnectivity(ci, e, effs)
			}
			inst := &w.insts[c.inst]
			w.xdsInput(c.inst, inConnectivity, int(c.local), inst.xds.ConnectivityChanged(time.Duration(now), int(c.local), connectivity(e.To)))
			if w.conns[ci].flags&connWantStream != 0 {
				w.openStream(ci)
			}
		}
	}
}

// connectivity maps a channel state to the XdsClient's input.
func connectivity(s network.State) xdsclient.ConnectivityState {
	switch s {
	case network.Connecting:
		return xdsclient.Connecting
	case network.Ready:
		return xdsclient.Ready
	case network.TransientFailure:
		return xdsclient.TransientFailure
	default:
		return xdsclient.Idle
	}
}

// openStream starts the ADS stream the XdsClient asked for, as a gRPC
// NewStream does: the channel's picker lets it through, queues it, or
// fails it (network.Channel.Pick, after grpc-go picker_wrapper.go). It is
// called again on every state change while the pick is queued.
//
// A fail-fast stream whose pick is queued does not exist yet for the
// XdsClient: grpc-go's NewStream blocks in the picker until the channel
// is READY or the pick fails (grpc-go picker_wrapper.go pick;
// internal/xds/clients/grpctransport/grpc_transport.go NewStream, called
// without WaitForReady), and only then does ads_stream.go send its
// requests. A wait_for_ready call (C-core, spec) exists at once: C-core
// creates the ADS call with GRPC_INITIAL_METADATA_WAIT_FOR_READY and
// starts its send_message batch right away (src/core/xds/grpc/
// xds_transport_grpc.cc GrpcStreamingCall; xds_client.cc AdsCall), and
// the call waits in the channel through CONNECTING and TRANSIENT_FAILURE
// until a pick proceeds (grpc doc/wait-for-ready.md; gRFC A57, Handling
// Resources That Do Not Exist: "a single ADS stream may remain pending for
// a long period of time until the channel reports READY"). So the
// XdsClient is told StreamOpened when the wait_for_ready pick is first
// queued; its requests are held (send) and written, each with its
// SendDone (C-core OnRequestSent), when the pick proceeds (startHeld).
// A pre-A57 timer started on send runs from StreamOpened; an A57 one from
// the SendDone on a READY channel.
func (w *world) openStream(ci uint32) {
	c := &w.conns[ci]
	now := w.kernel.Now()
	wfr := c.flags&connWaitForReady != 0
	c.flags &^= connWantStream
	var buf [4]network.Effect
	pick, effs := c.ch.Pick(now, wfr, buf[:0])
	if pick.Result == network.PickQueue {
		c.flags |= connWantStream
	}
	w.channelEffects(ci, effs)
	c = &w.conns[ci]
	inst := &w.insts[c.inst]
	switch pick.Result {
	case network.PickQueue:
		if !wfr || c.flags&connWantStream == 0 || c.st.State() == network.StreamWaiting {
			// Fail-fast: nothing until the pick ends. Or the effects
			// above ended the want, or a re-pick among them began the
			// call already.
			return
		}
		w.beginStream(ci, true)
		if w.tracingConn(ci) {
			w.traceConn(ci, TraceEvent{Kind: TraceStreamPending, Rule: ruleStreamPending})
		}
		w.xdsInput(c.inst, inStreamOpened, int(c.local), inst.xds.StreamOpened(time.Duration(now), int(c.local)))
	case network.PickFail:
		if c.st.State() == network.StreamWaiting {
			// A wait_for_ready call fails only with the channel (SHUTDOWN).
			c.st.Close(c.st.ID())
			c.toServer.reset(&w.outSpares)
		}
		w.fx.streamsFailedBeforeResponse++
		w.streamFailed(ci, xdsclient.Status(pick.Status), false)
	case network.PickProceed:
		switch c.st.State() {
		case network.StreamOpen:
			return // a re-pick among the effects above opened it already
		case network.StreamWaiting:
			w.startHeld(ci)
			return
		}
		if w.startOnServer(ci, w.beginStream(ci, wfr)) {
			w.xdsInput(c.inst, inStreamOpened, int(c.local), inst.xds.StreamOpened(time.Duration(now), int(c.local)))
		}
	}
}

// beginStream begins a new stream on conn ci, which no response has
// answered yet.
func (w *world) beginStream(ci uint32, waitForReady bool) network.StreamID {
	c := &w.conns[ci]
	c.answered = 0
	c.flags &^= connServerEnded
	return c.st.Begin(w.kernel.Now(), ci, waitForReady)
}

// startOnServer starts conn ci's stream id and opens it on its server. A
// server that refuses the stream fails it at once, and the XdsClient hears
// StreamFailed. It reports whether the stream is open.
func (w *world) startOnServer(ci uint32, id network.StreamID) bool {
	c := &w.conns[ci]
	now := w.kernel.Now()
	c.st.Start(now, id)
	if err := w.servers[c.cp].OpenStream(now, serverStream(ci, id)); err != nil {
		c.st.Close(id)
		c.toServer.reset(&w.outSpares)
		w.fx.streamsFailedBeforeResponse++
		w.streamFailed(ci, streamErrorStatus(err), false)
		return false
	}
	if w.tracingConn(ci) {
		w.traceConn(ci, TraceEvent{Kind: TraceStreamOpen, Rule: ruleStreamOpen})
	}
	w.keepaliveStall(ci) // a stream that starts during a blackhole
	return true
}

// transmit times one message on conn ci's stream id in direction dir,
// over the conn's link and through the faults in force.
func (w *world) transmit(ci uint32, id network.StreamID, dir network.Direction) (sim.Time, network.SendResult) {
	c := &w.conns[ci]
	now := w.kernel.Now()
	cl := w.connClient(c)
	return c.st.Send(now, id, dir, w.link(c).OneWay(cl.rng), w.faults.Delivery(now, cl.ref, int(c.cp)))
}

// sendToClient sends m from the server on conn ci's stream id. A message
// the network holds for good (an endless blackhole) or drops (the stream
// is gone) never arrives.
func (w *world) sendToClient(ci uint32, id network.StreamID, m inbound) {
	at, res := w.transmit(ci, id, network.ServerToClient)
	switch res {
	case network.SendScheduled, network.SendLost:
		m.lost = res == network.SendLost
		w.conns[ci].toClient.push(m, &w.inSpares)
		w.kernel.Schedule(sim.Event{At: at, Entity: ci, Kind: kindToClient, Arg: id.Arg()})
	}
}

// startHeld starts the wait_for_ready call of conn ci, which the XdsClient
// has had since its pick was queued, now that the pick proceeds: the
// server sees the stream, and the requests held meanwhile are written in
// order, each completing its send (C-core OnRequestSent: the
// send_message batch completes once the call is on a transport).
func (w *world) startHeld(ci uint32) {
	c := &w.conns[ci]
	id := c.st.ID()
	if !w.startOnServer(ci, id) {
		return
	}
	now := w.kernel.Now()
	inst := &w.insts[c.inst]
	n := c.toServer.len()
	for i := c.toServer.head; i < len(c.toServer.items); i++ {
		m := &c.toServer.items[i]
		at, res := w.transmit(ci, id, network.ClientToServer)
		if res != network.SendScheduled && res != network.SendLost {
			// Held behind an endless blackhole: it and everything after
			// it never arrive, though they count as written (see send).
			clear(c.toServer.items[i:])
			c.toServer.items = c.toServer.items[:i]
			if c.toServer.len() == 0 {
				c.toServer.reset(&w.outSpares)
			}
			break
		}
		m.lost = res == network.SendLost
		w.kernel.Schedule(sim.Event{At: at, Entity: ci, Kind: kindToServer, Arg: id.Arg()})
	}
	for range n {
		w.xdsInput(c.inst, inSendDone, int(c.local), inst.xds.SendDone(time.Duration(now), int(c.local)))
	}
}

func streamErrorStatus(err error) xdsclient.Status {
	if se, ok := err.(*controlplane.StreamError); ok {
		return xdsclient.Status{Code: se.Status.Code, Message: se.Status.Message}
	}
	return xdsclient.Status{Code: network.StatusConnectionReset.Code, Message: err.Error()}
}

// send writes an XdsClient request on conn ci's stream and reports
// whether the write completed, so that the XdsClient gets its SendDone
// now. A request handed to a wait_for_ready call whose pick is queued is
// held until the call starts (startHeld), and completes then.
func (w *world) send(ci uint32, req xdsclient.Request) bool {
	c := &w.conns[ci]
	id := c.st.ID()
	if !c.st.Live(id) {
		return true
	}
	if c.st.State() == network.StreamWaiting {
		c.toServer.push(outbound{req: req}, &w.outSpares)
		return false
	}
	at, res := w.transmit(ci, id, network.ClientToServer)
	switch res {
	case network.SendScheduled, network.SendLost:
		c.toServer.push(outbound{req: req, lost: res == network.SendLost}, &w.outSpares)
		w.kernel.Schedule(sim.Event{At: at, Entity: ci, Kind: kindToServer, Arg: id.Arg()})
	}
	// SendHeld: an endless blackhole keeps it (and everything after it)
	// for good. SendDropped: the stream is gone.
	if res != network.SendDropped {
		w.keepaliveWrite(ci)
	}
	return true
}

// deliverToServer hands the next request of a stream to its server, which
// queues it for a worker (controlplane capacity model).
func (w *world) deliverToServer(ev sim.Event) {
	ci := ev.Entity
	c := &w.conns[ci]
	now := w.kernel.Now()
	id := network.StreamIDFromArg(ev.Arg)
	if !c.st.Deliver(now, id, network.ClientToServer) {
		return
	}
	m := c.toServer.pop(&w.outSpares)
	if m.lost {
		w.failStream(ci, network.StatusMessageLost)
		return
	}
	if c.flags&connServerEnded != 0 {
		return // the server ended the stream: the request finds no handler
	}
	// The request's completion takes the place among the events of its
	// time that an event scheduled now would (see scheduleCompletion).
	s := w.servers[c.cp]
	if _, err := s.Receive(now, serverStream(ci, id), serverRequest(&m.req), w.kernel.Reserve()); err != nil {
		w.failStream(ci, network.Status{Code: network.StatusConnectionReset.Code, Message: err.Error()})
		return
	}
	if w.tracingConn(ci) {
		w.traceRequest(ci, &m.req)
	}
	w.scheduleCompletion(c.cp)
}

// serverRequest is what the server reads of the request r.
func serverRequest(r *xdsclient.Request) controlplane.Request {
	req := controlplane.Request{TypeURL: r.Type.TypeURL(), Version: r.Version, Nonce: r.Nonce, Names: r.Names}
	if d := r.ErrorDetail; d != nil {
		req.ErrorDetail = &controlplane.Status{Code: d.Code, Message: d.Message}
	}
	return req
}

// sendResponses sends what a server answered, each on its stream. Under
// a network.StreamResetAfterResponse fault the server ends a stream right
// after the response that reaches the fault's count (endStream).
func (w *world) sendResponses(resps []controlplane.Response) {
	now := w.kernel.Now()
	for _, r := range resps {
		ci := uint32(uint64(r.Stream) >> 32)
		c := &w.conns[ci]
		id := c.st.ID()
		if serverStream(ci, id) != r.Stream || !c.st.Live(id) || c.flags&connServerEnded != 0 {
			continue
		}
		if w.tracingConn(ci) {
			w.traceResponse(ci, &r)
		}
		w.sendToClient(ci, id, inbound{resp: r.Message})
		c.answered++
		if n := w.faults.StreamResetAfter(now, w.connClient(c).ref, int(c.cp)); n > 0 && c.answered >= uint32(n) {
			w.endStream(ci)
		}
	}
}

// endStream has the server end conn ci's open stream with UNAVAILABLE
// (network.StatusStreamReset), as a stream handler that returns an error
// does: the server forgets the stream at once; its status travels to the
// client behind the responses already sent, and the client's stream fails
// when it arrives (readResponses). The connection stays up. A stream that
// had a response is not in error for the XdsClient (gRFC A57, Handling
// ADS Stream Termination), which restarts it (grpc-go at once, grpc-java
// and C-core after about 1 s: grpc-go backoff.RunF on ErrResetBackoff,
// grpc-java ControlPlaneClient handleRpcStreamClosed, C-core
// RetryableCall::OnCallFinishedLocked).
func (w *world) endStream(ci uint32) {
	c := &w.conns[ci]
	id := c.st.ID()
	if c.st.State() != network.StreamOpen || c.flags&connServerEnded != 0 {
		return
	}
	c.flags |= connServerEnded
	w.servers[c.cp].CloseStream(w.kernel.Now(), serverStream(ci, id))
	w.sendToClient(ci, id, inbound{end: true})
}

// deliverToClient hands the next response of a stream to the XdsClient,
// unless the client's reads are paused (ADS flow control): then it waits
// in order until ResumeRead.
func (w *world) deliverToClient(ev sim.Event) {
	ci := ev.Entity
	c := &w.conns[ci]
	if !c.st.Deliver(w.kernel.Now(), network.StreamIDFromArg(ev.Arg), network.ServerToClient) {
		return
	}
	// The network delivers in order: the message that arrived is the
	// first not yet marked arrived.
	for i := c.toClient.head; i < len(c.toClient.items); i++ {
		if !c.toClient.items[i].arrived {
			c.toClient.items[i].arrived = true
			break
		}
	}
	w.readResponses(ci)
}

// readResponses lets the XdsClient read every arrived response, in order,
// while its reads are not paused and it is not processing one.
//
// A response takes the client its group's ProcessingTime before the
// XdsClient sees it: grpc-go's ADS stream reads one message at a time and
// decodes and validates its resources (ads_stream.go recv, onRecv;
// channel.go onResponse, decodeResponse) before it writes the ACK or NACK
// and notifies the watchers, and reads the next message only after that;
// grpc-java (ControlPlaneClient onRecvMessage, XdsClientImpl
// handleResourceResponse) and C-core (XdsClient::AdsCall
// OnRecvMessage, DecodeAdsResponse) do the same on one read at a time. So
// the ACK or NACK and the notifications leave ProcessingTime after the
// response arrived, and responses that arrive meanwhile wait their turn.
// A stream's end or a lost message is read at once.
func (w *world) readResponses(ci uint32) {
	for {
		c := &w.conns[ci]
		inst := &w.insts[c.inst]
		if c.flags&(connProcessing|connReadPaused) != 0 || c.toClient.len() == 0 || !c.toClient.front().arrived || inst.xds == nil {
			return
		}
		if m := c.toClient.front(); !m.lost && !m.end {
			cl := w.connClient(c)
			if d := w.cfg.Groups[cl.group].ProcessingTime.Sample(cl.rng); d > 0 {
				c.flags |= connProcessing
				w.kernel.Schedule(sim.Event{At: w.kernel.Now().Add(d), Entity: ci, Kind: kindProcessed, Arg: c.st.ID().Arg()})
				return
			}
		}
		m := c.toClient.pop(&w.inSpares)
		if m.lost {
			w.failStream(ci, network.StatusMessageLost)
			return
		}
		if m.end {
			w.failStream(ci, network.StatusStreamReset)
			return
		}
		w.receive(ci, m.resp)
	}
}

// responseProcessed ends the client's processing of the response at the
// front of conn ci's queue: the XdsClient receives it, and the client
// reads on. A stream closed meanwhile took the response with it.
func (w *world) responseProcessed(ev sim.Event) {
	ci := ev.Entity
	c := &w.conns[ci]
	if c.flags&connProcessing == 0 || c.st.ID() != network.StreamIDFromArg(ev.Arg) {
		return
	}
	c.flags &^= connProcessing
	w.receive(ci, c.toClient.pop(&w.inSpares).resp)
	w.readResponses(ci)
}

// receive hands a response the client has read to its XdsClient.
func (w *world) receive(ci uint32, m *discoverypb.DiscoveryResponse) {
	c := &w.conns[ci]
	inst := &w.insts[c.inst]
	// Handling the response reads most lines of the instance: they are
	// fetched together (package prefetch).
	w.warm += prefetch.Of(inst) + prefetch.Of(m)
	inst.ch.Hint() // a change of config reads them
	resp := w.decoded.response(m)
	if w.tracingConn(ci) {
		w.traceReceive(ci, resp)
	}
	w.xdsInput(c.inst, inResponse, int(c.local), inst.xds.DecodedResponseReceived(w.now(), int(c.local), resp))
	// Nothing keeps m past its reading (its decoded form is the cache's,
	// and the client keeps nothing of that): its server builds a later
	// response in it.
	w.servers[c.cp].Recycle(m)
}

// failStream ends conn ci's stream on both sides with st, and tells the
// XdsClient.
func (w *world) failStream(ci uint32, st network.Status) {
	c := &w.conns[ci]
	id := c.st.ID()
	if !c.st.Live(id) {
		return
	}
	received := c.st.Received()
	w.closeStream(ci)
	if !received {
		w.fx.streamsFailedBeforeResponse++
	}
	w.streamFailed(ci, xdsclient.Status(st), received)
}

// streamFailed tells conn ci's XdsClient that its stream failed with st;
// received says whether a response had been read on it.
func (w *world) streamFailed(ci uint32, st xdsclient.Status, received bool) {
	c := &w.conns[ci]
	if w.tracingConn(ci) {
		w.traceConn(ci, TraceEvent{Kind: TraceStreamFailed, Status: st, Received: received, Rule: streamFailedRule(received)})
	}
	w.xdsInput(c.inst, streamFailedInput(received), int(c.local), w.insts[c.inst].xds.StreamFailed(w.now(), int(c.local), st))
}

// closeStream ends conn ci's stream on both sides, silently. A
// wait_for_ready call that never left its pick never reached the server.
func (w *world) closeStream(ci uint32) {
	c := &w.conns[ci]
	id := c.st.ID()
	c.flags &^= connWantStream
	if c.st.State() == network.StreamWaiting {
		c.st.Close(id)
	} else if c.st.Live(id) {
		c.st.Close(id)
		w.servers[c.cp].CloseStream(w.kernel.Now(), serverStream(ci, id))
		if w.tracingConn(ci) {
			w.traceConn(ci, TraceEvent{Kind: TraceStreamClose, Rule: ruleStreamClose})
		}
	}
	c.flags &^= connServerEnded | connProcessing
	c.toServer.reset(&w.outSpares)
	c.toClient.reset(&w.inSpares)
}

// resetChannel replaces conn ci's channel with a new one, in IDLE, as when
// the XdsClient releases a channel or the client process restarts. Events
// of the old channel are recognised by their epoch and dropped.
func (w *world) resetChannel(ci uint32) {
	w.closeStream(ci)
	c := &w.conns[ci]
	if c.flags&connPrimaryState != 0 {
		w.fx.primary[c.ch.State()]--
		w.fx.primary[network.Idle]++
	}
	c.epoch++
	c.ch = network.NewChannel(&w.cfg.Groups[w.connClient(c).group].XDSChannel, w.connClient(c).rng)
}
