// Package network models the network between xDS clients and xDS servers:
// links with latency, faults over virtual time, the gRPC channel each
// client keeps to each server (connectivity states, pick_first, connection
// backoff), and the bidirectional streams that run on it.
//
// Like every model in xdssim it is made of pure parts with no clock, no
// goroutines and no I/O; the fleet wiring carries out what they ask on the
// sim kernel:
//
//   - [LinkConfig] draws latencies from the client's sim stream.
//   - [Faults] is the run's fault plan (server down, blackhole, partition,
//     added latency, server restart, GOAWAY, message loss, streams
//     ended after a response), queried with
//     [Faults.ConnectOutcome] and [Faults.Delivery]; its [Faults.Edges] are
//     the times at which the wiring acts on open connections.
//   - [Channel] is the connectivity state machine of one client's channel
//     to one server. Its inputs are method calls carrying the virtual time;
//     its outputs are effects ([Effect]): start a connect attempt, arm
//     a timer, state changed.
//   - [Stream] is the bookkeeping of one stream: generation, order and
//     arrival times of messages, and whether a response came back.
//
// The wiring drives a channel from its kernel event handler, with an
// effects buffer it reuses from event to event so that nothing allocates:
//
//	case kindAttemptEnd: // Arg: attempt<<8 | result
//		buf = ch.EndAttempt(now, uint32(ev.Arg>>8), network.AttemptResult(ev.Arg&0xff), buf[:0])
//	case kindBackoffTimer: // Arg: the TimerID
//		buf = ch.TimerFired(now, network.TimerID(ev.Arg), buf[:0])
//
// and then carries out the effects:
//
//	for _, e := range buf {
//		switch e.Kind {
//		case network.StartConnectAttempt:
//			at, res := network.ResolveAttempt(faults, &link, rng, client, server, now, e.At, e.TCPAt)
//			k.Schedule(sim.Event{At: at, Entity: id, Kind: kindAttemptEnd, Arg: uint64(e.Attempt)<<8 | uint64(res)})
//		case network.ArmTimer:
//			k.Schedule(sim.Event{At: e.At, Entity: id, Kind: kindBackoffTimer, Arg: uint64(e.Timer)})
//		case network.StateChanged:
//			// re-pick the streams queued on ch; tell the XdsClient.
//		}
//	}
//
// CancelTimer needs no action: TimerFired ignores stale timers. At each of
// [Faults.Edges] the wiring applies the edge's [EdgeAction] to the open
// connections it covers.
//
// Every behaviour cites its source: grpc doc/connection-backoff.md, grpc-go
// clientconn.go, balancer/pickfirst/pickfirst.go and picker_wrapper.go,
// gRFC A57 and A62. Where the model simplifies (TCP retransmission timing,
// keepalive pings on a busy transport), the doc comment says so.
package network
