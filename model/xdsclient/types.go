package xdsclient

import (
	"fmt"
	"strings"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
)

// ResourceType is one of the four xDS resource types gRPC clients watch.
// Its numeric order is the fixed order in which a new stream re-sends
// subscriptions (grpc-go ads_stream.go sendExisting ranges over a map here;
// the simulator fixes LDS, RDS, CDS, EDS).
type ResourceType uint8

// The resource types, in re-send order.
const (
	LDS ResourceType = iota
	RDS
	CDS
	EDS
	numTypes
)

// Type URLs of the four resource types (go-control-plane pkg/resource/v3).
const (
	ListenerTypeURL = "type.googleapis.com/envoy.config.listener.v3.Listener"
	RouteTypeURL    = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
	ClusterTypeURL  = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	EndpointTypeURL = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
)

var typeURLs = [numTypes]string{ListenerTypeURL, RouteTypeURL, ClusterTypeURL, EndpointTypeURL}
var typeNames = [numTypes]string{"LDS", "RDS", "CDS", "EDS"}

// TypeURL returns the type URL of t.
func (t ResourceType) TypeURL() string { return typeURLs[t] }

// String returns "LDS", "RDS", "CDS" or "EDS".
func (t ResourceType) String() string {
	if t < numTypes {
		return typeNames[t]
	}
	return fmt.Sprintf("ResourceType(%d)", t)
}

// allResourcesRequiredInSotW reports whether a SotW response that omits a
// cached name deletes it: true for LDS and CDS (xDS protocol; grpc-go
// ResourceType.AllResourcesRequiredInSotW).
func (t ResourceType) allResourcesRequiredInSotW() bool { return t == LDS || t == CDS }

// ParseResourceType parses "LDS".."EDS" or a type URL.
func ParseResourceType(s string) (ResourceType, error) {
	for i := ResourceType(0); i < numTypes; i++ {
		if strings.EqualFold(s, typeNames[i]) || s == typeURLs[i] {
			return i, nil
		}
	}
	return 0, fmt.Errorf("xdsclient: unknown resource type %q (want LDS, RDS, CDS, EDS or a type URL)", s)
}

func typeFromURL(url string) (ResourceType, bool) {
	for i := ResourceType(0); i < numTypes; i++ {
		if url == typeURLs[i] {
			return i, true
		}
	}
	return 0, false
}

// ServerFeatures are the bootstrap server_features the client honours.
type ServerFeatures struct {
	// IgnoreResourceDeletion is gRFC A53's "ignore_resource_deletion";
	// ignored when A88 is on (gRFC A88, "Deprecating ignore_resource_deletion").
	IgnoreResourceDeletion bool
	// FailOnDataErrors is gRFC A88's "fail_on_data_errors".
	FailOnDataErrors bool
	// ResourceTimerIsTransientError is gRFC A88's
	// "resource_timer_is_transient_error" (grpc-java spelling,
	// BootstrapperImpl.java:66).
	ResourceTimerIsTransientError bool
}

// serverFeatures are the server_features the client understands, as a
// bootstrap spells them, with the field each sets.
var serverFeatures = [...]struct {
	name  string
	field func(*ServerFeatures) *bool
}{
	{"ignore_resource_deletion", func(f *ServerFeatures) *bool { return &f.IgnoreResourceDeletion }},
	{"fail_on_data_errors", func(f *ServerFeatures) *bool { return &f.FailOnDataErrors }},
	{"resource_timer_is_transient_error", func(f *ServerFeatures) *bool { return &f.ResourceTimerIsTransientError }},
}

// ServerFeatureNames returns the server_features the client understands,
// as a bootstrap spells them.
func ServerFeatureNames() []string {
	out := make([]string, len(serverFeatures))
	for i, sf := range serverFeatures {
		out[i] = sf.name
	}
	return out
}

// Set turns on the feature a bootstrap names name, and reports whether
// the client understands it.
func (f *ServerFeatures) Set(name string) bool {
	for _, sf := range serverFeatures {
		if sf.name == name {
			*sf.field(f) = true
			return true
		}
	}
	return false
}

// Names returns the features that are on, as a bootstrap's
// server_features spells them, in a fixed order.
func (f ServerFeatures) Names() []string {
	var out []string
	for _, sf := range serverFeatures {
		if *sf.field(&f) {
			out = append(out, sf.name)
		}
	}
	return out
}

// ServerConfig is one xds_servers entry of the bootstrap.
type ServerConfig struct {
	// URI is the server_uri.
	URI string
	// Features are its server_features.
	Features ServerFeatures
}

// Authority is a bootstrap authority: a name and its ordered server list,
// highest priority first (gRFC A71, "Change xDS Bootstrap to handle multiple
// xDS configuration servers"). An empty Servers list means the top-level
// servers.
type Authority struct {
	Name    string
	Servers []ServerConfig
}

// Bootstrap is the part of the xDS bootstrap an XdsClient instance uses.
type Bootstrap struct {
	// Servers is the top-level xds_servers list, used for old-style resource
	// names and for authorities without servers of their own.
	Servers []ServerConfig
	// Authorities are the named authorities, for xdstp:// names.
	Authorities []Authority
	// Node is sent on ADS requests.
	Node *corepb.Node
}

// ServerTarget is the A71 pool key of the XdsClient instance used by
// xDS-enabled gRPC servers; clients use their data-plane target.
const ServerTarget = "#server"

// ConnectivityState is the xDS channel's connectivity state, an input to the
// machine.
type ConnectivityState uint8

// Channel connectivity states.
const (
	Idle ConnectivityState = iota
	Connecting
	Ready
	TransientFailure
)

var connNames = [...]string{"IDLE", "CONNECTING", "READY", "TRANSIENT_FAILURE"}

// String returns the gRPC name of the state.
func (s ConnectivityState) String() string {
	if int(s) < len(connNames) {
		return connNames[s]
	}
	return fmt.Sprintf("ConnectivityState(%d)", s)
}

// ParseConnectivityState parses a gRPC connectivity state name.
func ParseConnectivityState(s string) (ConnectivityState, error) {
	for i, n := range connNames {
		if strings.EqualFold(s, n) {
			return ConnectivityState(i), nil
		}
	}
	return 0, fmt.Errorf("xdsclient: unknown connectivity state %q", s)
}

// Status is a gRPC status: a code and a message. The zero value is OK.
type Status struct {
	Code    codes.Code
	Message string
}

// String formats the status as "CODE: message".
func (s Status) String() string {
	if s.Message == "" {
		return s.Code.String()
	}
	return s.Code.String() + ": " + s.Message
}

// ErrorCause says which of gRFC A88's cases produced an error notification.
type ErrorCause uint8

// Error causes.
const (
	CauseNone         ErrorCause = iota
	CauseConnectivity            // A57 stream failure before a response, or TRANSIENT_FAILURE
	CauseNACK                    // the resource failed validation
	CauseDeleted                 // LDS/CDS name missing from a SotW response
	CauseTimeout                 // the does-not-exist timer fired
	CauseServerError             // xRFC TP3 resource_errors entry
	CauseRecovered               // C-core AmbientError(OK)
)

var causeNames = [...]string{"none", "connectivity", "nack", "deleted", "timeout", "server-error", "recovered"}

// String names the cause.
func (c ErrorCause) String() string { return causeNames[c] }

// NotificationKind is the watcher callback being invoked (gRFC A88, "Changes
// to XdsClient Watcher APIs").
type NotificationKind uint8

// Notification kinds.
const (
	// ResourceChanged carries either a resource or an error; an error means
	// the watcher must stop using any resource it had.
	ResourceChanged NotificationKind = iota
	// AmbientError carries an error the watcher notes but that does not
	// invalidate its resource.
	AmbientError
)

// LegacyCallback is the pre-A88 watcher method a notification maps to
// (grpc-go #7977 diff; gRFC A88 "Changes to XdsClient Watcher APIs").
type LegacyCallback uint8

// Legacy callbacks.
const (
	OnUpdate LegacyCallback = iota
	OnError
	OnResourceDoesNotExist
)

var legacyNames = [...]string{"OnUpdate", "OnError", "OnResourceDoesNotExist"}

// String names the callback.
func (l LegacyCallback) String() string { return legacyNames[l] }

// WatcherID identifies a watcher; the caller chooses it.
type WatcherID int

// Notification is one watcher callback.
type Notification struct {
	Watcher WatcherID
	Kind    NotificationKind
	Type    ResourceType
	Name    string
	// Resource is set for ResourceChanged with data. It is shared and
	// immutable.
	Resource *Decoded
	// Version is the version_info the resource came with.
	Version string
	// Status is the error for ResourceChanged without data and for
	// AmbientError; Cause says where it came from.
	Status Status
	Cause  ErrorCause
	// Done is the flow-control handle of the response that caused the
	// callback. When Done.Waits(), the caller must answer with
	// Client.WatcherDone(Done) once the watcher has processed the callback;
	// the stream reads no further response until every callback of that
	// response has done so (grpc-go ads_stream.go adsFlowControl, the done
	// argument of ResourceWatcher). Replays to a new watcher, timer expiry and
	// connectivity errors carry a no-op handle, as in grpc-go (func() {}) and
	// C-core (ReadDelayHandle::NoWait).
	Done DoneHandle
}

// DoneHandle identifies the response whose processing holds a server's ADS
// read (grpc-go: the onDone passed to adsResourceUpdate; C-core: the
// AdsReadDelayHandle). The zero value is a no-op handle.
type DoneHandle struct {
	// Server is the channel whose read waits.
	Server int
	// Update numbers the response within the client; 0 means no-op.
	Update uint64
}

// Waits reports whether the handle holds a read, i.e. whether the caller
// must call Client.WatcherDone with it.
func (h DoneHandle) Waits() bool { return h.Update != 0 }

// String formats the handle as "s0/u3", or "-" for a no-op handle.
func (h DoneHandle) String() string {
	if !h.Waits() {
		return "-"
	}
	return fmt.Sprintf("s%d/u%d", h.Server, h.Update)
}

// Legacy maps the notification onto the pre-A88 API: ResourceChanged with
// data is OnUpdate, ResourceChanged with a not-found error (deletion, or the
// timer as DOES_NOT_EXIST) is OnResourceDoesNotExist, every other error is
// OnError.
func (n *Notification) Legacy() LegacyCallback {
	switch {
	case n.Kind == ResourceChanged && n.Resource != nil:
		return OnUpdate
	case n.Kind == ResourceChanged && n.Status.Code == codes.NotFound && (n.Cause == CauseDeleted || n.Cause == CauseTimeout):
		return OnResourceDoesNotExist
	}
	return OnError
}

// TimerKind says what a timer is for.
type TimerKind uint8

// Timer kinds.
const (
	// ResourceTimer is a does-not-exist timer (gRFC A57).
	ResourceTimer TimerKind = iota
	// RetryTimer delays the next ADS stream attempt (gRFC A57 backoff).
	RetryTimer
)

// TimerID names a timer stably: the same resource on the same server always
// has the same id, so a generation-counter kernel timer can back it.
type TimerID struct {
	Kind   TimerKind
	Server int
	Type   ResourceType // ResourceTimer only
	Name   string       // ResourceTimer only
}

// String formats the id as "resource/s0/LDS/L1" or "retry/s0".
func (id TimerID) String() string {
	if id.Kind == RetryTimer {
		return fmt.Sprintf("retry/s%d", id.Server)
	}
	return fmt.Sprintf("resource/s%d/%v/%s", id.Server, id.Type, id.Name)
}

// Request is a DiscoveryRequest the machine wants sent. It holds what the
// envoy proto holds, without allocating one; Proto builds the real message.
type Request struct {
	Type    ResourceType
	Version string
	Nonce   string
	// Names is the full subscribed set for Type on this channel, sorted. It
	// is an immutable snapshot: the machine never writes to it again.
	Names []string
	// Node is set when the request carries the node.
	Node bool
	// ErrorDetail is set on a NACK: code INVALID_ARGUMENT and the
	// validation errors (grpc-go ads_stream.go sendMessageLocked).
	ErrorDetail *Status
}

// Proto builds the envoy DiscoveryRequest for r; node is attached when
// r.Node is set. The message shares r.Names, which nobody writes to (a
// server keeps the request of each watch it holds, so a copy would cost
// every stream a list per type).
func (r *Request) Proto(node *corepb.Node) *discoverypb.DiscoveryRequest {
	req := &discoverypb.DiscoveryRequest{
		VersionInfo:   r.Version,
		ResourceNames: r.Names,
		TypeUrl:       r.Type.TypeURL(),
		ResponseNonce: r.Nonce,
	}
	if r.Node {
		req.Node = node
	}
	if r.ErrorDetail != nil {
		req.ErrorDetail = &statuspb.Status{Code: int32(r.ErrorDetail.Code), Message: r.ErrorDetail.Message}
	}
	return req
}

// EffectKind says what an Effect asks of the caller.
type EffectKind uint8

// Effect kinds.
const (
	// OpenStream: start an ADS stream to Server (with WaitForReady). The
	// caller answers with StreamOpened or StreamFailed.
	OpenStream EffectKind = iota
	// CloseStream: cancel the ADS stream to Server and release the channel.
	CloseStream
	// Send: write Request on Server's stream; the caller answers SendDone
	// once it is written, in order.
	Send
	// ArmTimer: fire TimerFired(Timer) after Delay, replacing any armed
	// timer with the same id.
	ArmTimer
	// CancelTimer: forget Timer.
	CancelTimer
	// Notify: invoke a watcher callback. If Notification.Done.Waits(), answer
	// with WatcherDone once the watcher has processed it.
	Notify
	// PauseRead: do not deliver anything more from Server's stream (its next
	// response, nor its end) until ResumeRead. grpc-go's recv blocks in
	// fc.wait() before the next Recv while callbacks of the last response
	// are outstanding (ads_stream.go). CloseStream also ends the pause.
	PauseRead
	// ResumeRead: Server's stream may be read again; deliver what was held,
	// in order.
	ResumeRead
)

var effectNames = [...]string{"open-stream", "close-stream", "send", "arm-timer", "cancel-timer", "notify", "pause-read", "resume-read"}

// String names the kind.
func (k EffectKind) String() string { return effectNames[k] }

// Effect is one thing the machine wants done. Only the fields of its Kind
// are set. Effects are plain values: producing them allocates nothing.
type Effect struct {
	Kind         EffectKind
	Server       int
	WaitForReady bool
	Request      Request
	Timer        TimerID
	Delay        time.Duration
	Notification Notification
}

// ServerMetrics are the gRFC A78 XdsClient metrics of one server, as the
// profile's client computes them ("A78-grpc-metrics-wrr-pf-xds.md",
// section "XdsClient").
type ServerMetrics struct {
	// Active reports whether the client has a channel to the server; grpc-go
	// reports the connected gauge only for those (xdsclient.go
	// reportConnectedState iterates xdsActiveChannels).
	Active bool
	// Connected is grpc.xds_client.connected: whether the client has a
	// working ADS stream to the server. It drops to false on a connectivity
	// failure (a stream, or its creation, failing before any response; with
	// transient_failure_is_connectivity_error also TRANSIENT_FAILURE) and
	// is true again on the next response. Profile.ConnectedMetricInitial
	// says what it is before the first stream.
	Connected bool
	// ServerFailures is grpc.xds_client.server_failure, counted as
	// Profile.ServerFailureMetric says. A failure after a response is never
	// counted (gRFC A57; grpc-go ErrTypeStreamFailedAfterRecv).
	ServerFailures int
	// ResourceUpdatesValid and ResourceUpdatesInvalid are
	// grpc.xds_client.resource_updates_valid / _invalid, by resource type:
	// each subscribed resource a response carries, changed or not (grpc-go
	// authority.go handleADSResourceUpdate reports ResourceUpdateValid /
	// ResourceUpdateInvalid per resource it has state for).
	ResourceUpdatesValid   [numTypes]int
	ResourceUpdatesInvalid [numTypes]int
}
