package network

import (
	"fmt"
	"time"

	"github.com/xdssim/xdssim/sim"
)

// DefaultHandshakeRTTs is the number of round trips from a client's SYN to
// the server's HTTP/2 SETTINGS on a plaintext connection: one for TCP, one
// for the SETTINGS the server sends once it accepts. TLS 1.3 adds one.
const DefaultHandshakeRTTs = 2

// DefaultSYNTimeout is the initial retransmission timeout of a TCP SYN
// (RFC 6298 §2 and Linux TCP_TIMEOUT_INIT: 1 s, doubled on each retry).
const DefaultSYNTimeout = time.Second

// LinkConfig is the network path between a client and a server. The caller
// decides which LinkConfig applies to a (client group, server) pair, so a
// scenario can set one per server, per group, or both. All draws come from
// the client's stream, whichever way a message travels.
type LinkConfig struct {
	// Latency is the one-way latency: sim.Constant, sim.UniformDist or
	// sim.LogNormal(median, p99).
	Latency sim.Dist
	// HandshakeRTTs is the number of round trips a successful connect
	// takes; 0 means [DefaultHandshakeRTTs].
	HandshakeRTTs int
	// SYNTimeout is the initial SYN retransmission timeout, which doubles
	// on each retry; 0 means [DefaultSYNTimeout], negative means the SYN is
	// never retransmitted.
	SYNTimeout time.Duration
}

// Validate reports a parameter of l that is out of range.
func (l *LinkConfig) Validate() error {
	if l.HandshakeRTTs < 0 {
		return fmt.Errorf("network: link: handshake round trips must not be negative, got %d", l.HandshakeRTTs)
	}
	return nil
}

// OneWay draws the one-way latency of one message from r.
func (l *LinkConfig) OneWay(r *sim.Rand) time.Duration { return l.Latency.Sample(r) }

// RoundTrip draws a round trip from r: two one-way latencies, there and
// back.
func (l *LinkConfig) RoundTrip(r *sim.Rand) time.Duration {
	return l.Latency.Sample(r) + l.Latency.Sample(r)
}

// Handshake draws from r the time a successful connect takes:
// HandshakeRTTs round trips.
func (l *LinkConfig) Handshake(r *sim.Rand) time.Duration {
	n := l.HandshakeRTTs
	if n == 0 {
		n = DefaultHandshakeRTTs
	}
	var d time.Duration
	for range n {
		d += l.RoundTrip(r)
	}
	return d
}

// AttemptResult is how a connect attempt ends.
type AttemptResult uint8

const (
	// AttemptConnected: the transport is up before the deadline.
	AttemptConnected AttemptResult = iota
	// AttemptRefused: the server refused the connection.
	AttemptRefused
	// AttemptTimedOut: the attempt reached its deadline.
	AttemptTimedOut
)

var attemptNames = [...]string{"connected", "refused", "timed-out"}

// String names the result.
func (a AttemptResult) String() string {
	if int(a) < len(attemptNames) {
		return attemptNames[a]
	}
	return fmt.Sprintf("AttemptResult(%d)", a)
}

// ResolveAttempt says when and how a connect attempt from client c to
// server, started at start with deadline deadline and TCP deadline
// tcpDeadline (either may be [Never]: the Effect's At and TCPAt), ends,
// given the fault plan f (nil for none) and the link l, drawing latencies
// from r:
//
//   - OK at start: connected after l.Handshake, plus two Added per round
//     trip.
//   - Refused at start: refused after one round trip (SYN, RST).
//   - Blackholed at start: the SYN is retransmitted at start + t,
//     start + 3t, start + 7t, ... (t = SYNTimeout); at the first
//     retransmission that is no longer blackholed, the attempt goes on as
//     if it had started then. If none is, it times out at the earlier of
//     its deadlines.
//   - Held at start ([BlackholeHold]): TCP connects after one round trip;
//     the rest of the handshake (the server's preface) waits for the hold
//     to clear and then completes at once: connected at the later of the
//     two, plus HandshakeRTTs-1 round trips. The TCP deadline is met.
//
// Whatever the path, an attempt that would end at or after its deadline
// times out at the deadline; the TCP deadline bounds only the SYN phase.
// The verdict is taken when the SYN leaves; a fault that begins during the
// handshake does not change it (the caller may re-check at the result
// time).
//
// Reference: grpc doc/connection-backoff.md (the deadline); RFC 6298 (SYN
// retransmission); grpc-java NettyClientTransport.start (Netty's
// CONNECT_TIMEOUT_MILLIS bounds the TCP connect only).
func ResolveAttempt(f *Faults, l *LinkConfig, r *sim.Rand, c ClientRef, server int, start, deadline, tcpDeadline sim.Time) (sim.Time, AttemptResult) {
	t := start
	o := f.ConnectOutcome(t, c, server)
	if o.Verdict == ConnectBlackholed {
		giveUp := min(deadline, tcpDeadline)
		rto := l.SYNTimeout
		if rto == 0 {
			rto = DefaultSYNTimeout
		}
		if rto < 0 {
			return giveUp, AttemptTimedOut
		}
		for o.Verdict == ConnectBlackholed {
			t = t.Add(rto)
			rto *= 2
			if t >= giveUp {
				return giveUp, AttemptTimedOut
			}
			o = f.ConnectOutcome(t, c, server)
		}
	}
	var at sim.Time
	res := AttemptConnected
	if o.Verdict == ConnectHeld {
		n := l.HandshakeRTTs
		if n == 0 {
			n = DefaultHandshakeRTTs
		}
		at = t.Add(l.RoundTrip(r) + 2*o.Added)
		if end := f.StallEnd(t, c, server); end > at {
			at = end
		}
		if at >= deadline {
			return deadline, AttemptTimedOut
		}
		for range n - 1 {
			at = at.Add(l.RoundTrip(r) + 2*o.Added)
		}
	} else if o.Verdict == ConnectRefused {
		at, res = t.Add(l.RoundTrip(r)+2*o.Added), AttemptRefused
	} else {
		n := l.HandshakeRTTs
		if n == 0 {
			n = DefaultHandshakeRTTs
		}
		at = t.Add(l.Handshake(r) + time.Duration(2*n)*o.Added)
	}
	if at >= deadline {
		return deadline, AttemptTimedOut
	}
	return at, res
}

// EndAttempt ends connect attempt attempt with res, as [ResolveAttempt]
// reported it: [Channel.ConnectResult] for AttemptConnected and
// AttemptRefused, [Channel.ConnectDeadline] for AttemptTimedOut.
func (c *Channel) EndAttempt(now sim.Time, attempt uint32, res AttemptResult, dst []Effect) []Effect {
	if res == AttemptTimedOut {
		return c.ConnectDeadline(now, attempt, dst)
	}
	return c.ConnectResult(now, attempt, res == AttemptConnected, dst)
}

// Keepalive is a client transport's keepalive: after Time without reading
// anything from the server, it pings; if nothing is read within Timeout of
// the ping, it closes the transport. A zero Time disables it.
type Keepalive struct {
	Time    time.Duration
	Timeout time.Duration
}

// XDSKeepalive returns the keepalive every implementation sets on its xDS
// channels: 5 min and 20 s (grpc-go
// internal/xds/clients/grpctransport/grpc_transport.go, "common across
// gRPC language implementations"; grpc-java GrpcXdsTransportFactory
// keepAliveTime(5, MINUTES) with the default 20 s timeout; C-core
// xds_transport_grpc.cc GRPC_ARG_KEEPALIVE_TIME_MS). All three ping only
// while a stream is open (keepalive without calls is off).
func XDSKeepalive() Keepalive { return Keepalive{Time: 5 * time.Minute, Timeout: 20 * time.Second} }

// UnackedAt returns when a transport whose peer stops acknowledging at
// stallStart until stallEnd ([Never] if it never resumes) closes because
// bytes it wrote at sent are not acknowledged within Timeout: the
// TCP_USER_TIMEOUT that gRPC sets to the keepalive timeout when keepalive
// is on (gRFC A18; grpc-go http2_client.go, grpc-java
// NettyClientTransport, C-core). It reports false when the bytes are
// acknowledged in time (the stall ends, and the acknowledgement is back,
// rtt after the later of sent and stallEnd, before the timeout) or when
// keepalive is off.
func (k Keepalive) UnackedAt(sent, stallEnd sim.Time, rtt time.Duration) (sim.Time, bool) {
	if k.Time <= 0 {
		return Never, false
	}
	closeAt := sent.Add(k.Timeout)
	return closeAt, stallEnd == Never || max(sent, stallEnd).Add(rtt) > closeAt
}

// DeadAt returns when keepalive closes a transport whose reads stop at
// stallStart (a blackhole begins) and resume at stallEnd ([Never] if they
// do not), and whether it does. lastRead is the last time the client read
// a message before the stall; rtt is the round trip.
//
// Between lastRead and the stall, an otherwise idle transport pings every
// Time and reads each ack one rtt later, so its last read before the stall
// is lastRead + n·(Time+rtt), the latest such time before stallStart. The
// next ping leaves Time after that; the transport closes Timeout after the
// ping unless the stall ends early enough for the ack to come back by then.
//
// Reference: grpc-go internal/transport/http2_client.go keepalive.
func (k Keepalive) DeadAt(lastRead, stallStart, stallEnd sim.Time, rtt time.Duration) (sim.Time, bool) {
	if k.Time <= 0 {
		return Never, false
	}
	last := lastRead
	if d, p := stallStart.Sub(lastRead), k.Time+rtt; d > 0 {
		last = lastRead.Add((d - 1) / p * p)
	}
	ping := last.Add(k.Time)
	closeAt := ping.Add(k.Timeout)
	dies := stallEnd > ping && (stallEnd == Never || stallEnd.Add(rtt) > closeAt)
	return closeAt, dies
}

// MaxConnectionAge is a server's MaxConnectionAge and MaxConnectionAgeGrace
// (gRFC A9): it sends GOAWAY on each connection after about Age, and closes
// the connection Grace later. A zero Age disables it.
type MaxConnectionAge struct {
	Age   time.Duration
	Grace time.Duration
}

// GoAwayAt draws from r when the server sends GOAWAY on a connection
// established at established: Age later, jittered by ±10 %, as grpc-go's
// server does (internal/transport/http2_server.go getJitter). It returns
// [Never] when Age is 0. The connection closes Grace after that.
func (m MaxConnectionAge) GoAwayAt(established sim.Time, r *sim.Rand) sim.Time {
	if m.Age <= 0 {
		return Never
	}
	return established.Add(r.Jitter(m.Age, 0.1))
}
