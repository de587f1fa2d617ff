package network

import (
	"fmt"
	"time"

	"github.com/xdssim/xdssim/sim"
)

// Direction is the way a message travels on a stream.
type Direction uint8

const (
	// ClientToServer: a request.
	ClientToServer Direction = iota
	// ServerToClient: a response, or the status that closes the stream.
	ServerToClient
)

// String names the direction.
func (d Direction) String() string {
	switch d {
	case ClientToServer:
		return "client->server"
	case ServerToClient:
		return "server->client"
	}
	return fmt.Sprintf("Direction(%d)", d)
}

// StreamID names one generation of a [Stream]: the slot the caller keeps
// the Stream in, and the generation that [Stream.Begin] gave it. Events for
// a stream carry its StreamID, so an event for an earlier generation, such
// as a late message for a stream that failed and was restarted, is told
// apart and dropped.
type StreamID struct {
	Slot uint32
	Gen  uint32
}

// Arg packs id into a sim.Event's Arg.
func (id StreamID) Arg() uint64 { return uint64(id.Slot)<<32 | uint64(id.Gen) }

// StreamIDFromArg unpacks a StreamID packed by [StreamID.Arg].
func StreamIDFromArg(a uint64) StreamID { return StreamID{Slot: uint32(a >> 32), Gen: uint32(a)} }

// String formats id as "slot/gen".
func (id StreamID) String() string { return fmt.Sprintf("%d/%d", id.Slot, id.Gen) }

// StreamState is where a stream is in its life.
type StreamState uint8

const (
	// StreamNone: never begun.
	StreamNone StreamState = iota
	// StreamWaiting: begun, queued on its channel's pick.
	StreamWaiting
	// StreamOpen: started on a READY transport; messages flow.
	StreamOpen
	// StreamClosed: ended with a status, by either side or the network.
	StreamClosed
)

var streamStateNames = [...]string{"none", "waiting", "open", "closed"}

// String names the state.
func (s StreamState) String() string {
	if int(s) < len(streamStateNames) {
		return streamStateNames[s]
	}
	return fmt.Sprintf("StreamState(%d)", s)
}

// SendResult says what the caller does with a message after [Stream.Send].
type SendResult uint8

const (
	// SendScheduled: schedule its delivery at the returned time, then call
	// [Stream.Deliver].
	SendScheduled SendResult = iota
	// SendHeld: it is stalled behind a blackhole that never clears; it
	// will not arrive. Schedule nothing.
	SendHeld
	// SendLost: the network lost it; at the returned time the stream fails
	// with [StatusMessageLost] on both sides ([Stream.Close]).
	SendLost
	// SendDropped: the stream is not open or the id is stale; the message
	// goes nowhere.
	SendDropped
)

var sendNames = [...]string{"scheduled", "held", "lost", "dropped"}

// String names the result.
func (r SendResult) String() string {
	if int(r) < len(sendNames) {
		return sendNames[r]
	}
	return fmt.Sprintf("SendResult(%d)", r)
}

const (
	flagWaitForReady uint8 = 1 << iota
	flagReceived
	flagDraining
)

// Stream is the network's bookkeeping for one bidirectional gRPC stream
// between a client and a server, such as an ADS stream. The caller owns
// it, keeps it wherever it likes (one per client per server is typical)
// and reuses it: each [Stream.Begin] starts a new generation.
//
// Messages are delivered in the order they were sent, each way, as on the
// HTTP/2 stream over one TCP connection that carries them: a message never
// arrives before one sent earlier the same way, whatever latencies the
// link draws. A caller can therefore keep the payloads in flight in a FIFO
// per direction and pop one on each delivery (events with equal times run
// in the order they were scheduled).
//
// A Stream is the client's view. It closes for both sides at once, when
// the caller calls [Stream.Close]; a status the server sends travels as a
// last ServerToClient message and the caller closes the stream when it
// arrives. A Stream is 40 bytes; the zero Stream has never begun.
type Stream struct {
	// lastArrival is, per direction, the arrival time of the last message
	// sent, or Never once a message is held for good.
	lastArrival [2]sim.Time
	lastRead    sim.Time
	slot        uint32
	gen         uint32
	state       StreamState
	flags       uint8
}

// Begin starts a new generation of the stream in slot slot, at now, as a
// stream queued on its channel's pick; it returns its id. The previous
// generation, if any, is dead from then on: events that name it are
// dropped. Pick the channel ([Channel.Pick]) and call [Stream.Start] when
// it proceeds, or [Stream.Close] when it fails.
func (s *Stream) Begin(now sim.Time, slot uint32, waitForReady bool) StreamID {
	*s = Stream{lastRead: now, slot: slot, gen: s.gen + 1, state: StreamWaiting}
	if waitForReady {
		s.flags = flagWaitForReady
	}
	return s.ID()
}

// Start opens the waiting stream id on a READY transport at now. It
// returns false, and does nothing, if id is stale or the stream is not
// waiting.
func (s *Stream) Start(now sim.Time, id StreamID) bool {
	if !s.Live(id) || s.state != StreamWaiting {
		return false
	}
	s.state = StreamOpen
	s.lastRead = now
	return true
}

// Send sends a message on stream id the way dir at now. latency is the
// one-way latency the link drew for it and d what the fault plan says of
// it ([Faults.Delivery] at now). Send returns when the message arrives (or
// the stream fails, for SendLost) and what the caller does:
//
//   - Delivered: it arrives at now + latency + d.Added.
//   - Stalled: it arrives at d.Until + latency + d.Added, when the
//     blackhole clears (TCP retransmits it; the retransmission timer's
//     own back-off is not modelled); SendHeld if it never clears.
//   - Lost: the stream fails at now + latency + d.Added.
//
// and never before a message sent earlier the same way.
func (s *Stream) Send(now sim.Time, id StreamID, dir Direction, latency time.Duration, d Delivery) (sim.Time, SendResult) {
	if !s.Live(id) || s.state != StreamOpen {
		return 0, SendDropped
	}
	last := &s.lastArrival[dir&1]
	if *last == Never {
		return Never, SendHeld
	}
	from, res := now, SendScheduled
	switch d.Verdict {
	case Stalled:
		if d.Until == Never {
			*last = Never
			return Never, SendHeld
		}
		from = max(now, d.Until)
	case Lost:
		res = SendLost
	}
	at := max(from.Add(latency+d.Added), *last)
	*last = at
	return at, res
}

// Deliver reports that a message sent on stream id the way dir arrives now.
// It returns whether the message is for the live, open stream; a message
// for an earlier generation or a closed stream returns false and is
// dropped. A ServerToClient message counts as a response received
// ([Stream.Received]) and as a read for keepalive ([Stream.LastRead]).
func (s *Stream) Deliver(now sim.Time, id StreamID, dir Direction) bool {
	if !s.Live(id) || s.state != StreamOpen {
		return false
	}
	if dir == ServerToClient {
		s.flags |= flagReceived
		s.lastRead = now
	}
	return true
}

// Close ends stream id, waiting or open, for both sides. It returns false,
// and does nothing, if id is stale or the stream already ended: the first
// close of a generation wins, later ones (a lost message after a reset,
// say) are dropped.
func (s *Stream) Close(id StreamID) bool {
	if !s.Live(id) || (s.state != StreamWaiting && s.state != StreamOpen) {
		return false
	}
	s.state = StreamClosed
	return true
}

// Drain marks the open stream id as running on a connection that got
// GOAWAY: it goes on until the server closes the connection
// ([ActionCloseDrained]). It returns whether the stream was marked.
func (s *Stream) Drain(id StreamID) bool {
	if !s.Live(id) || s.state != StreamOpen {
		return false
	}
	s.flags |= flagDraining
	return true
}

// Live reports whether id names the stream's current generation.
func (s *Stream) Live(id StreamID) bool {
	return s.state != StreamNone && id.Slot == s.slot && id.Gen == s.gen
}

// ID returns the id of the stream's current generation.
func (s *Stream) ID() StreamID { return StreamID{Slot: s.slot, Gen: s.gen} }

// State returns the state of the current generation.
func (s *Stream) State() StreamState { return s.state }

// WaitForReady reports whether the current generation was begun
// wait_for_ready.
func (s *Stream) WaitForReady() bool { return s.flags&flagWaitForReady != 0 }

// Received reports whether the current generation delivered at least one
// ServerToClient message. gRFC A57 does not count the close of such a
// stream as an error (Handling ADS Stream Termination).
func (s *Stream) Received() bool { return s.flags&flagReceived != 0 }

// Draining reports whether the current generation runs on a connection
// that got GOAWAY.
func (s *Stream) Draining() bool { return s.flags&flagDraining != 0 }

// LastRead returns when the client last read a message on the current
// generation (its start, if none yet): the lastRead of
// [Keepalive.DeadAt].
func (s *Stream) LastRead() sim.Time { return s.lastRead }
