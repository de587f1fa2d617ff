package fleet

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/xdssim/xdssim/model/controlplane"
	"github.com/xdssim/xdssim/model/dataplane"
	"github.com/xdssim/xdssim/model/network"
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
	// Latency is its time from its start to this final status.
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
	// channel, and had ended by At, were accounted in bulk (steady.go):
	// each went at once to a READY backend that answered OK. Those of the
	// interval still in flight at At are traced one by one from At, from
	// their pick on. Options.ExactRPCs traces each one as a TraceRPC
	// instead.
	TraceSteadyRPCs
	// TraceConnectivity: the instance's channel to Server changed state,
	// From → To; Delay is the reconnect backoff it waits in
	// TRANSIENT_FAILURE.
	TraceConnectivity
	// TraceStreamPending: the XdsClient's wait_for_ready ADS call to
	// Server exists but waits in the channel for a READY transport.
	TraceStreamPending
	// TraceStreamFailed: the ADS stream to Server (or its creation)
	// failed with Status; Received says whether a response had been read
	// on it (gRFC A57).
	TraceStreamFailed
	// TraceSend: the XdsClient wrote a DiscoveryRequest to Server (Type,
	// Version, Nonce, Names); ACK when it answers the response just read,
	// NACK (with Status, its error_detail) when that was rejected.
	TraceSend
	// TraceReceive: the XdsClient read a DiscoveryResponse from Server
	// (Type, Version, Nonce; Names are its resources; Detail lists the
	// invalid ones with their errors).
	TraceReceive
	// TraceTimerArmed: the XdsClient armed Timer for Delay.
	TraceTimerArmed
	// TraceTimerCancelled: the XdsClient cancelled Timer.
	TraceTimerCancelled
	// TraceRetryTimer: the ADS stream retry timer of Server fired.
	TraceRetryTimer
	// TraceNotify: a watcher callback (gRFC A88): Notification is
	// ResourceChanged or AmbientError for Type and Names[0]; Resource says
	// whether it carries a resource; else Status and ErrorCause say what
	// went wrong. Version is the resource's.
	TraceNotify
	// TracePick: the load balancer picked Backend (an address) for attempt
	// Attempt of RPC number RPC; a failed pick carries Code and Cause.
	TracePick
	// TraceAttempt: attempt Attempt of RPC number RPC ended with Code.
	TraceAttempt
	// TraceRetry: RPC number RPC retries after Delay (gRFC A6); Throttled
	// when the retry throttle refused a retry.
	TraceRetry
	// TraceWindowOpen: a failed RPC opened an RPC failure window.
	TraceWindowOpen
	// TraceWindowClose: the failure window that began at Since ended at
	// At, its last failure: Count failures, root cause Cause.
	TraceWindowClose
	// TraceClientStart and TraceClientStop: the client process started, or
	// went down for restart Count of the scenario.
	TraceClientStart
	TraceClientStop
)

var traceKindNames = [...]string{"", "stream_open", "stream_close", "request", "response", "resource_timer", "fallback", "revert", "rpc",
	"connect", "connect_timeout", "keepalive", "steady_rpcs", "connectivity", "stream_pending", "stream_failed", "send", "receive",
	"timer_armed", "timer_cancelled", "retry_timer", "notify", "pick", "attempt", "retry", "window_open", "window_close",
	"client_start", "client_stop"}

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
	// of their interval (a TraceWindowClose's failures and start).
	Count int
	Since time.Duration

	// From and To are a TraceConnectivity's channel states.
	From, To network.State
	// Status is a failed stream's status, a NACK's error_detail, or a
	// watcher notification's error.
	Status   xdsclient.Status
	Received bool
	ACK      bool
	// Timer and Delay are an armed or cancelled timer and how long it
	// runs; Delay is also a retry's backoff and a channel's reconnect
	// backoff.
	Timer xdsclient.TimerID
	Delay time.Duration
	// Notification, Resource and ErrorCause describe a watcher callback.
	Notification xdsclient.NotificationKind
	Resource     bool
	ErrorCause   xdsclient.ErrorCause
	// RPC numbers an RPC within the run; Attempt is its attempt (1 for
	// the first); Backend the address a pick chose.
	RPC       uint64
	Attempt   int
	Backend   string
	Throttled bool
	// Latency is a TraceRPC's time from the RPC's start to its final
	// status: its wait for a first config, every attempt and the retry
	// backoff; the deadline at most.
	Latency time.Duration
	// Detail says more, in words (a response's invalid resources).
	Detail string
	// Rule names what the event follows: the gRFC section or the real
	// client's function that makes it happen.
	Rule string
}

// ClientRef is a client named as Options.TraceClients names it: a group,
// the client's index in it, and optionally one of its targets.
type ClientRef struct {
	Group  string
	Index  int
	Target string // "": every target
}

// ParseClientRef parses "group/index" or "group/index/target".
func ParseClientRef(s string) (ClientRef, error) {
	group, rest, ok := strings.Cut(s, "/")
	if !ok || group == "" {
		return ClientRef{}, fmt.Errorf("client %q: expected GROUP/INDEX or GROUP/INDEX/TARGET, such as web/0", s)
	}
	idx, target, _ := strings.Cut(rest, "/")
	n, err := strconv.Atoi(idx)
	if err != nil || n < 0 || strconv.Itoa(n) != idx {
		// One spelling per client: "00" or "+0" is not client 0.
		return ClientRef{}, fmt.Errorf("client %q: expected a client index (0, 1, …) after %q, found %q", s, group+"/", idx)
	}
	if strings.HasSuffix(rest, "/") && target == "" {
		return ClientRef{}, fmt.Errorf("client %q: expected a target after the index", s)
	}
	return ClientRef{Group: group, Index: n, Target: target}, nil
}

// String formats the reference as ParseClientRef reads it.
func (r ClientRef) String() string {
	s := r.Group + "/" + strconv.Itoa(r.Index)
	if r.Target != "" {
		s += "/" + r.Target
	}
	return s
}

// CheckClient reports whether name ("group/index" or
// "group/index/target") names a client of cfg that has an XdsClient, and
// why not.
func (cfg *Config) CheckClient(name string) error {
	_, _, err := cfg.findClient(name)
	return err
}

// findClient returns the group of the client name names and the target it
// names (-1: every target).
func (cfg *Config) findClient(name string) (ref ClientRef, group int, err error) {
	ref, err = ParseClientRef(name)
	if err != nil {
		return ref, 0, err
	}
	var names []string
	for gi := range cfg.Groups {
		g := &cfg.Groups[gi]
		names = append(names, g.Name)
		if g.Name != ref.Group {
			continue
		}
		switch {
		case ref.Index >= g.Clients:
			return ref, 0, fmt.Errorf("client %q: group %s has %d clients, %s/0 to %s/%d", name, g.Name, g.Clients, g.Name, g.Name, g.Clients-1)
		case len(g.Servers) == 0:
			return ref, 0, fmt.Errorf("client %q: group %s has no xDS servers, so its clients have no XdsClient", name, g.Name)
		case ref.Target != "" && !slices.Contains(g.Targets, ref.Target):
			return ref, 0, fmt.Errorf("client %q: group %s has no target %q (targets: %s)", name, g.Name, ref.Target, strings.Join(g.Targets, ", "))
		}
		return ref, gi, nil
	}
	return ref, 0, fmt.Errorf("client %q: no group is named %q (groups: %s)", name, ref.Group, strings.Join(names, ", "))
}

// selectTraced returns which instances the clients named follow.
func (w *world) selectTraced(names []string) ([]bool, error) {
	traced := make([]bool, len(w.insts))
	for _, name := range names {
		ref, gi, err := w.cfg.findClient(name)
		if err != nil {
			return nil, fmt.Errorf("fleet: %w", err)
		}
		first := 0
		for _, g := range w.cfg.Groups[:gi] {
			first += g.Clients
		}
		c := &w.clients[first+ref.Index]
		for ti, t := range w.cfg.Groups[gi].Targets {
			if ref.Target == "" || ref.Target == t {
				traced[c.firstInst+uint32(ti)] = true
			}
		}
	}
	return traced, nil
}

// tracing reports whether the tracer follows instance ii. Every trace
// call is behind it, so that an instance not traced builds no event.
func (w *world) tracing(ii uint32) bool {
	return w.tracer != nil && (w.traced == nil || w.traced[ii])
}

// tracingConn reports whether the tracer follows conn ci's instance.
func (w *world) tracingConn(ci uint32) bool { return w.tracer != nil && w.tracing(w.conns[ci].inst) }

// trace reports e, filled in with the time and the instance's client and
// target, to Options.Trace. Callers check w.tracing first.
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
		Nonce: req.Nonce, Names: req.Names, NACK: req.ErrorDetail != nil, Rule: ruleServerView})
}

// profile is the XdsClient profile of instance ii's group.
func (w *world) profile(ii uint32) *xdsclient.Profile {
	return &w.cfg.Groups[w.clients[w.insts[ii].client].group].Profile
}

// traceEffect reports an XdsClient effect of instance ii that input in
// (on the instance's server srv, -1 for none) produced.
func (w *world) traceEffect(ii uint32, in input, srv int, e *xdsclient.Effect) {
	inst := &w.insts[ii]
	ci := inst.firstConn + uint32(e.Server)
	p := w.profile(ii)
	switch e.Kind {
	case xdsclient.Send:
		r := &e.Request
		ack := in == inResponse && r.ErrorDetail == nil && e.Server == srv
		ev := TraceEvent{Kind: TraceSend, Type: r.Type, Version: r.Version, Nonce: r.Nonce, Names: r.Names,
			NACK: r.ErrorDetail != nil, ACK: ack, Rule: sendRule(p, in, r, ack)}
		if r.ErrorDetail != nil {
			ev.Status = *r.ErrorDetail
		}
		w.traceConn(ci, ev)
	case xdsclient.ArmTimer:
		w.traceConn(ci, TraceEvent{Kind: TraceTimerArmed, Timer: e.Timer, Delay: e.Delay, Type: e.Timer.Type,
			Rule: armRule(p, in, e.Timer)})
	case xdsclient.CancelTimer:
		w.traceConn(ci, TraceEvent{Kind: TraceTimerCancelled, Timer: e.Timer, Type: e.Timer.Type,
			Rule: cancelRule(in, e.Timer, srv)})
	case xdsclient.Notify:
		n := &e.Notification
		w.trace(ii, TraceEvent{Kind: TraceNotify, Notification: n.Kind, Type: n.Type, Names: []string{n.Name},
			Resource: n.Resource != nil, Version: n.Version, Status: n.Status, ErrorCause: n.Cause,
			Rule: notifyRule(p, in, n)})
	}
}

// traceResponse reports a response a server sent on conn ci.
func (w *world) traceResponse(ci uint32, r *controlplane.Response) {
	t, _ := xdsclient.ParseResourceType(r.Message.GetTypeUrl())
	w.traceConn(ci, TraceEvent{Kind: TraceResponse, Type: t, Version: r.Message.GetVersionInfo(), Nonce: r.Message.GetNonce(),
		Rule: ruleServerView})
}

// traceConnectivity reports conn ci's channel state change e; effs are
// the channel's effects e is among, whose backoff timer says how long a
// TRANSIENT_FAILURE lasts.
func (w *world) traceConnectivity(ci uint32, e network.Effect, effs []network.Effect) {
	ev := TraceEvent{Kind: TraceConnectivity, From: e.From, To: e.To, Rule: connectivityRule(e.To)}
	if e.To == network.TransientFailure {
		for _, t := range effs {
			if t.Kind == network.ArmTimer {
				ev.Delay = t.At.Sub(w.kernel.Now())
			}
		}
	}
	w.traceConn(ci, ev)
}

// traceReceive reports a response conn ci's XdsClient reads: its
// resources, and each invalid one with its error.
func (w *world) traceReceive(ci uint32, r *xdsclient.DecodedResponse) {
	t, _ := xdsclient.ParseResourceType(r.TypeURL)
	ev := TraceEvent{Kind: TraceReceive, Type: t, Version: r.Version, Nonce: r.Nonce, Rule: ruleReceive}
	var bad []string
	fs := w.profile(w.conns[ci].inst).FilterSet()
	for _, d := range r.Resources {
		ev.Names = append(ev.Names, d.Name)
		if err := d.ErrIn(fs); err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", d.Name, err))
		}
	}
	for _, re := range r.ResourceErrors {
		bad = append(bad, fmt.Sprintf("%s: resource_errors %v", re.Name, re.Status))
	}
	ev.Detail = strings.Join(bad, "; ")
	w.traceConn(ci, ev)
}

// traceClient reports e for every traced instance of client id.
func (w *world) traceClient(id uint32, e TraceEvent) {
	c := &w.clients[id]
	for ti := range w.cfg.Groups[c.group].Targets {
		if ii := c.firstInst + uint32(ti); len(w.cfg.Groups[c.group].Servers) > 0 && w.tracing(ii) {
			w.trace(ii, e)
		}
	}
}
