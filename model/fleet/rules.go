package fleet

import (
	"github.com/xdssim/xdssim/model/dataplane"
	"github.com/xdssim/xdssim/model/network"
	"github.com/xdssim/xdssim/model/xdsclient"
)

// The rules a trace names. Each TraceEvent says which rule made it
// happen: the gRFC section, or the real client's function, that the model
// follows at that step (docs/architecture.md, "Fidelity rules"). The rule of an
// XdsClient effect depends on the input that produced it and on the
// profile, so the fleet tags each queued effect with its input.

// input is the kind of XdsClient input whose effects are being carried
// out.
type input uint8

const (
	inWatch        input = iota // Watch: a watcher was added
	inUnwatch                   // Unwatch: a watcher went away
	inConnectivity              // ConnectivityChanged
	inStreamOpened              // StreamOpened
	inStreamFailed              // StreamFailed, before any response was read
	inStreamEnded               // StreamFailed after a response was read
	inSendDone                  // SendDone: a request was written
	inResponse                  // a DiscoveryResponse was read
	inTimer                     // TimerFired
)

// streamFailedInput is the input of a stream failure: inStreamEnded when
// a response had been read on the stream (gRFC A57: not a failure).
func streamFailedInput(received bool) input {
	if received {
		return inStreamEnded
	}
	return inStreamFailed
}

// sendRule is the rule of a DiscoveryRequest the XdsClient writes; ack
// says it answers the response being read.
func sendRule(p *xdsclient.Profile, in input, req *xdsclient.Request, ack bool) string {
	switch {
	case req.ErrorDetail != nil && p.NACKVersion == xdsclient.NACKVersionIfAnyValid:
		return "xDS NACK, the new version when any resource was valid: C-core xds_client.cc AdsCall::OnRecvMessage"
	case req.ErrorDetail != nil:
		return "xDS NACK, the last ACKed version: grpc-go ads_stream.go onRecv"
	case ack:
		return "xDS ACK, before any watcher runs: grpc-go ads_stream.go onRecv"
	case in == inResponse:
		return "gRFC A71 revert: grpc-go authority.go handleRevertingToPrimaryOnUpdate"
	case in == inStreamOpened:
		return "gRFC A57 new stream: grpc-go ads_stream.go sendExisting"
	case in == inWatch && p.NewWatchChannels == xdsclient.WatchChannelsAll:
		return "new watch on every channel: C-core xds_client.cc WatchResource"
	case in == inWatch:
		return "new watch, not batched: grpc-go ads_stream.go sendNew (#8627)"
	case in == inUnwatch:
		return "unwatch: grpc-go ads_stream.go Unsubscribe"
	}
	return "grpc-go ads_stream.go sendMessageLocked"
}

// armRule is the rule of an XdsClient timer armed.
func armRule(p *xdsclient.Profile, in input, id xdsclient.TimerID) string {
	if id.Kind == xdsclient.RetryTimer {
		switch {
		case in == inStreamEnded:
			return "restart after a stream that had a response: grpc-java ControlPlaneClient.handleRpcStreamClosed, C-core RetryableCall::OnCallFinishedLocked"
		case p.BackoffSubtractStreamLifetime:
			return "gRFC A57 backoff, less the stream's lifetime: grpc-java ControlPlaneClient.handleRpcStreamClosed"
		}
		return "gRFC A57 backoff (1 s × 1.6^n, jitter 0.2, max 120 s): grpc-go backoff.RunF"
	}
	switch {
	case p.PreA57Timer:
		return "pre-A57 timer, started on send (C-core before grpc/grpc#31446)"
	case in == inConnectivity:
		return "gRFC A57, Handling Resources That Do Not Exist: sent, then READY"
	}
	return "gRFC A57, Handling Resources That Do Not Exist: written on a READY channel (grpc-go startWatchTimersLocked, C-core OnRequestSent)"
}

// cancelRule is the rule of an XdsClient timer cancelled; responder is
// the server whose response is being read (inResponse).
func cancelRule(in input, id xdsclient.TimerID, responder int) string {
	if id.Kind == xdsclient.RetryTimer {
		return "channel released: grpc-go xdsChannel close"
	}
	switch {
	case in == inResponse && id.Server == responder:
		return "resource received: grpc-go ads_stream.go onRecv"
	case in == inResponse:
		return "gRFC A71 revert: grpc-go authority.go handleRevertingToPrimaryOnUpdate"
	case in == inStreamFailed || in == inStreamEnded:
		return "stream ended: grpc-go ads_stream.go onError, C-core OnStatusReceived"
	case in == inUnwatch:
		return "unwatch: grpc-go ads_stream.go Unsubscribe"
	}
	return "timer no longer needed"
}

// notifyRule is the rule of a watcher callback.
func notifyRule(p *xdsclient.Profile, in input, n *xdsclient.Notification) string {
	if in == inWatch {
		return "replay to a new watcher: grpc-go authority.go watchResource"
	}
	if n.Resource != nil {
		return "gRFC A88, Changes to XdsClient Watcher APIs: grpc-go authority.go handleADSResourceUpdate"
	}
	switch n.Cause {
	case xdsclient.CauseConnectivity:
		return "gRFC A88 table, ADS stream failed without reading a response: grpc-go authority.go handleADSStreamFailure"
	case xdsclient.CauseNACK:
		if p.A88DataErrors {
			return "gRFC A88 table, NACK from client"
		}
		return "NACK from client: grpc-go authority.go handleADSResourceUpdate"
	case xdsclient.CauseDeleted:
		if p.A88DataErrors {
			return "gRFC A88 table, LDS or CDS resource deletion from server"
		}
		return "SotW deletion of an LDS or CDS resource: grpc-go authority.go handleADSResourceUpdate"
	case xdsclient.CauseTimeout:
		if p.A88DataErrors {
			return "gRFC A88 table, Resource timeout"
		}
		return "gRFC A57 does-not-exist: grpc-go authority.go handleADSResourceDoesNotExist"
	case xdsclient.CauseServerError:
		return "gRFC A88, Support for Errors Provided by the xDS server (xRFC TP3)"
	case xdsclient.CauseRecovered:
		return "C-core xds_client.cc: AmbientError(OK) after a connectivity error"
	}
	return "gRFC A88 watcher API"
}

// streamFailedRule is the rule of an ADS stream's end.
func streamFailedRule(received bool) string {
	if received {
		return "gRFC A57, Handling ADS Stream Termination: after a response, not a failure"
	}
	return "gRFC A57, Handling ADS Stream Termination: before any response, a connectivity failure"
}

// connectivityRule is the rule of a channel state change.
func connectivityRule(to network.State) string {
	switch to {
	case network.TransientFailure:
		return "grpc doc/connection-backoff.md; grpc-go clientconn.go resetTransport"
	case network.Idle:
		return "transport lost: grpc-go clientconn.go, IDLE until a stream asks"
	}
	return "grpc doc/connectivity-semantics-and-api.md"
}

// pickRule is the rule of a load-balancing pick.
func pickRule(p *dataplane.Pick, lb dataplane.LBPolicy, session bool) string {
	switch {
	case p.Result == dataplane.Failed && p.NoConfig:
		return "no config: the xDS resolver reported an error (gRFC A88)"
	case p.Result == dataplane.Failed && p.ClusterFailed:
		return "gRFC A74: a cluster an error took away fails its RPCs"
	case p.Result == dataplane.Failed && p.NoEndpoint:
		return "no usable endpoint: EDS health, override_host_status (gRFC A55)"
	case session:
		return "gRFC A55 override_host, then " + lb.String()
	}
	switch lb {
	case dataplane.PickFirst:
		return "pick_first (gRFC A62)"
	case dataplane.RingHash:
		return "ring_hash (gRFC A42)"
	case dataplane.LeastRequest:
		return "least_request (gRFC A48)"
	}
	return "round_robin: grpc-go balancer/roundrobin"
}

// Rules of the other events.
const (
	ruleServerView     = "the server's side: go-control-plane's SotW server (pkg/server/sotw)"
	ruleStreamOpen     = "xDS ADS stream: grpc-go ads_stream.go runner"
	ruleStreamPending  = "wait_for_ready ADS call: C-core xds_transport_grpc.cc (gRFC A57)"
	ruleStreamClose    = "stream closed on both sides"
	ruleReceive        = "xDS SotW response, validated: grpc-go xdsresource unmarshal_*.go"
	ruleResourceTimer  = "gRFC A57, Handling Resources That Do Not Exist"
	ruleRetryTimer     = "gRFC A57 backoff expired: a new stream"
	ruleFallback       = "gRFC A71, fallback within each xDS authority: grpc-go authority.go fallbackToServer"
	ruleRevert         = "gRFC A71, revert on a higher-priority update: grpc-go authority.go handleRevertingToPrimaryOnUpdate"
	ruleConnect        = "grpc doc/connection-backoff.md"
	ruleConnectTimeout = "grpc doc/connection-backoff.md: deadline max(min_connect_timeout, backoff)"
	ruleKeepalive      = "gRFC A8 keepalive: grpc-go http2_client.go keepalive"
	ruleAttempt        = "the attempt's outcome, its root cause from ground truth"
	ruleRetry          = "gRFC A6 / GEP-3440 retry"
	ruleThrottled      = "gRFC A6 retry throttling"
	ruleRPC            = "the RPC's final status"
	ruleSteady         = "steady RPCs accounted in bulk: xdssim fleet/steady.go"
	ruleWindow         = "xdssim failure window (data_plane.window_gap): docs/report.md"
	ruleRestart        = "the scenario's [[fleet.restart]]"
	ruleStart          = "the scenario: start_at, start_spread, or the end of a restart"
)
