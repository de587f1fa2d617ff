package fleet

import (
	"fmt"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/xdssim/xdssim/model/controlplane"
	"github.com/xdssim/xdssim/model/dataplane"
	"github.com/xdssim/xdssim/model/xdsclient"
)

// TraceKind says what a [TraceEvent] records.
type TraceKind uint8

// Trace event kinds.
const (
	// TraceStreamOpen: an instance's ADS stream reached a server.
	TraceStreamOpen TraceKind = iota + 1
	// TraceStreamClose: the stream ended, on both sides.
	TraceStreamClose
	// TraceRequest: a server received a DiscoveryRequest (Type, Version,
	// Nonce, Names; NACK when it carries error_detail).
	TraceRequest
	// TraceResponse: a server sent a DiscoveryResponse (Type, Version,
	// Nonce).
	TraceResponse
	// TraceResourceTimer: a resource timer fired (gRFC A57) for Type and
	// Names[0]; Spurious when a bootstrap server held the resource.
	TraceResourceTimer
	// TraceFallback: the instance's active channel moved to a
	// lower-priority server, Server (gRFC A71).
	TraceFallback
	// TraceRevert: the active channel moved back to the first server.
	TraceRevert
	// TraceRPC: an RPC ended with Code; a failure carries its Cause.
	TraceRPC
	// TraceConnect: the instance's channel to Server started a connect
	// attempt.
	TraceConnect
	// TraceConnectTimeout: a connect attempt to Server reached its
	// deadline: the client gives the connection up.
	TraceConnectTimeout
	// TraceKeepalive: keepalive (or TCP_USER_TIMEOUT) closed the
	// instance's transport to Server.
	TraceKeepalive
	// TraceSteadyRPCs: Count RPCs that began in [Since, At) on a steady
	// channel were accounted in bulk (steady.go): each went at once to a
	// READY backend that answered OK. Options.ExactRPCs traces each one
	// as a TraceRPC instead.
	TraceSteadyRPCs
)

var traceKindNames = [...]string{"", "stream_open", "stream_close", "request", "response", "resource_timer", "fallback", "revert", "rpc",
	"connect", "connect_timeout", "keepalive", "steady_rpcs"}

// String names the kind as trace outputs spell it ("request").
func (k TraceKind) String() string {
	if int(k) < len(traceKindNames) && k > 0 {
		return traceKindNames[k]
	}
	return fmt.Sprintf("TraceKind(%d)", k)
}

// TraceEvent is one thing that happened to one XdsClient instance, as
// [Options].Trace sees it. Fields a kind does not use are zero.
type TraceEvent struct {
	At   time.Duration
	Kind TraceKind
	// Client names the client ("group/index"); Target is the instance's
	// data-plane target.
	Client string
	Target string
	// Server names the control plane of a stream, request, response or
	// fallback.
	Server   string
	Type     xdsclient.ResourceType
	Version  string
	Nonce    string
	Names    []string // shared with the simulation: read-only
	NACK     bool
	Spurious bool
	Code     codes.Code
	Cause    dataplane.Cause
	// Count and Since are a TraceSteadyRPCs' number of RPCs and the start
	// of their interval.
	Count int
	Since time.Duration
}

// trace reports e, filled in with the time and the instance's client and
// target, to Options.Trace. Callers check w.tracer != nil first, so that a
// run without a tracer builds no event.
func (w *world) trace(ii uint32, e TraceEvent) { w.traceAt(ii, w.now(), e) }

// traceAt is trace for an event at a time other than now.
func (w *world) traceAt(ii uint32, at time.Duration, e TraceEvent) {
	inst := &w.insts[ii]
	c := &w.clients[inst.client]
	e.At = at
	e.Client = w.clientName(inst.client)
	e.Target = w.cfg.Groups[c.group].Targets[inst.target]
	w.tracer(&e)
}

// traceConn reports an event of conn ci's stream.
func (w *world) traceConn(ci uint32, e TraceEvent) {
	c := &w.conns[ci]
	e.Server = w.servers[c.cp].Name()
	w.trace(c.inst, e)
}

// traceRequest reports a request a server received on conn ci.
func (w *world) traceRequest(ci uint32, req *xdsclient.Request) {
	w.traceConn(ci, TraceEvent{Kind: TraceRequest, Type: req.Type, Version: req.Version,
		Nonce: req.Nonce, Names: req.Names, NACK: req.ErrorDetail != nil})
}

// traceResponse reports a response a server sent on conn ci.
func (w *world) traceResponse(ci uint32, r *controlplane.Response) {
	t, _ := xdsclient.ParseResourceType(r.Message.GetTypeUrl())
	w.traceConn(ci, TraceEvent{Kind: TraceResponse, Type: t, Version: r.Message.GetVersionInfo(), Nonce: r.Message.GetNonce()})
}
