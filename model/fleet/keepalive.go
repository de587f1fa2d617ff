package fleet

import (
	"time"

	"github.com/xdssim/xdssim/model/network"
	"github.com/xdssim/xdssim/sim"
)

// Keepalive on the xDS channels. A blackhole drops what crosses a
// connection and tells the client nothing: its channel stays READY and
// its ADS stream open. Only the transport's keepalive notices (gRFC A8:
// a ping after Time without a read, the connection closed Timeout later
// if nothing was read), or TCP_USER_TIMEOUT, which gRPC sets to the
// keepalive timeout, when a request written into the blackhole goes
// unacknowledged (gRFC A18). Every implementation has 5 min and 20 s on
// its xDS channels and pings only while a stream is open (keepalive
// without calls is off). The fault plan is known ahead, so the wiring
// works out when the transport dies as the stall begins (or as a stream
// starts, or a request is written, during one) and schedules it; the
// closing event finds out whether it still applies.

// keepaliveStall works out when keepalive closes conn ci's transport
// while the link stalls from now on, if its stream is open.
func (w *world) keepaliveStall(ci uint32) {
	c := &w.conns[ci]
	ka, cl := w.keepalive(c)
	if ka.Time <= 0 || c.st.State() != network.StreamOpen || c.ch.State() != network.Ready {
		return
	}
	now := w.kernel.Now()
	end := w.faults.StallEnd(now, cl.ref, int(c.cp))
	if end == now {
		return
	}
	if at, dies := ka.DeadAt(c.st.LastRead(), now, end, w.rtt(c)); dies {
		w.scheduleKeepalive(ci, at)
	}
}

// keepaliveWrite works out whether a request written now on conn ci
// into a stalled link closes the transport (TCP_USER_TIMEOUT).
func (w *world) keepaliveWrite(ci uint32) {
	c := &w.conns[ci]
	ka, cl := w.keepalive(c)
	if ka.Time <= 0 {
		return
	}
	now := w.kernel.Now()
	end := w.faults.StallEnd(now, cl.ref, int(c.cp))
	if end == now {
		return
	}
	if at, dies := ka.UnackedAt(now, end, w.rtt(c)); dies {
		w.scheduleKeepalive(ci, at)
	}
}

func (w *world) keepalive(c *conn) (network.Keepalive, *client) {
	cl := w.connClient(c)
	return w.cfg.Groups[cl.group].XDSKeepalive, cl
}

// rtt is the round trip keepalive's acknowledgements take: twice the
// link's mean one-way latency. It draws nothing, so that working out a
// keepalive moves no random stream.
func (w *world) rtt(c *conn) time.Duration { return 2 * w.link(c).Latency.Mean() }

func (w *world) scheduleKeepalive(ci uint32, at sim.Time) {
	c := &w.conns[ci]
	w.kernel.Schedule(sim.Event{At: at, Entity: ci, Kind: kindKeepalive, Arg: uint64(c.epoch)<<32 | uint64(c.st.ID().Gen)})
}

// keepaliveFired closes conn ci's transport for keepalive, unless the
// stream it was worked out for has ended since (or the channel was
// replaced): the channel goes IDLE and the stream fails with UNAVAILABLE
// (grpc-go http2_client.go keepalive: "keepalive ping failed to receive
// ACK within timeout"), which the XdsClient handles as any stream end
// (gRFC A57).
func (w *world) keepaliveFired(ev sim.Event) {
	ci := ev.Entity
	c := &w.conns[ci]
	if uint32(ev.Arg>>32) != c.epoch || c.st.ID().Gen != uint32(ev.Arg) || c.st.State() != network.StreamOpen ||
		c.ch.State() != network.Ready {
		return
	}
	w.fx.keepaliveCloses++
	if w.tracingConn(ci) {
		w.traceConn(ci, TraceEvent{Kind: TraceKeepalive, Rule: ruleKeepalive})
	}
	var buf [4]network.Effect
	w.channelEffects(ci, c.ch.ConnectionLost(w.kernel.Now(), buf[:0]))
	w.failStream(ci, network.StatusKeepaliveTimeout)
}
