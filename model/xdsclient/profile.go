package xdsclient

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"time"
)

// Profile selects how one XdsClient implementation behaves wherever the real
// clients differ (each field names the client code it follows) or where the
// gRFCs leave a choice. Every field has
// a stable snake_case name (its toml tag) so a scenario can override any one
// of them as "profile.<name>"; see Field and Set.
//
// The four named profiles are GRPCGo, GRPCJava, GRPCCore and Spec.
type Profile struct {
	// Name is the profile this one was derived from ("grpc-go", ...).
	Name string `toml:"name"`

	// ADSWaitForReady is passed on OpenStream: C-core creates its ADS call
	// with wait_for_ready, grpc-go and grpc-java do not (gRFC A57, "Handling
	// Connectivity Failure"; C-core xds_transport_grpc.cc GrpcStreamingCall
	// sets GRPC_INITIAL_METADATA_WAIT_FOR_READY; grpc-go grpc_transport.go
	// NewStream and grpc-java GrpcXdsTransportFactory, "TODO(zivy): support
	// waitForReady", do not).
	ADSWaitForReady bool `toml:"ads_wait_for_ready"`

	// TransientFailureIsConnectivityError makes a channel report of
	// TRANSIENT_FAILURE a connectivity error for watchers and a fallback
	// trigger (gRFC A57 "Connectivity Status Information via Connectivity
	// State Notification"; C-core StateWatcher). grpc-go and grpc-java only
	// see the stream failure.
	TransientFailureIsConnectivityError bool `toml:"transient_failure_is_connectivity_error"`

	// RestartDelayAfterResponse is how a stream that received at least one
	// response is restarted: "zero" (grpc-go: backoff.RunF with
	// ErrResetBackoff restarts at once; the spec profile: a reset
	// backoff tries at once, grpc doc/connection-backoff.md "Reset
	// Backoff") or "jittered_initial" (grpc-java ControlPlaneClient,
	// C-core RetryableCall: a fresh initial backoff, ~1 s jittered, which
	// is the reset backoff's first step).
	RestartDelayAfterResponse string `toml:"restart_delay_after_response"`

	// BackoffFirstUnjittered makes the first retry delay after a failed
	// stream exactly BackoffInitial: grpc-go's Backoff(0) returns the base
	// delay with no jitter (internal/xds/clients/internal/backoff), as
	// grpc doc/connection-backoff.md's first deadline is now() +
	// INITIAL_BACKOFF (the spec profile).
	BackoffFirstUnjittered bool `toml:"backoff_first_unjittered"`

	// BackoffSubtractStreamLifetime makes the retry delay
	// max(0, backoff - how long the failed stream lived) (grpc-java
	// ControlPlaneClient.handleRpcStreamClosed, stopwatch), except on the
	// channel's first failure, which gets the full backoff: with no
	// retryBackoffPolicy yet, handleRpcStreamClosed creates one and resets
	// the stopwatch, so the elapsed time is 0.
	BackoffSubtractStreamLifetime bool `toml:"backoff_subtract_stream_lifetime"`

	// BackoffInitial, BackoffMultiplier, BackoffJitter and BackoffMax are the
	// ADS stream retry backoff: 1 s × 1.6, jitter 0.2, max 120 s in all three
	// clients (grpc-go internal/xds/clients/internal/backoff defaultConfig,
	// grpc-java ExponentialBackoffPolicy, C-core xds_client.cc GRPC_XDS_*
	// defines). The cap is applied before the jitter.
	BackoffInitial    time.Duration `toml:"backoff_initial"`
	BackoffMultiplier float64       `toml:"backoff_multiplier"`
	BackoffJitter     float64       `toml:"backoff_jitter"`
	BackoffMax        time.Duration `toml:"backoff_max"`

	// NACKVersion is the version_info of a NACK: "last_acked" (grpc-go,
	// grpc-java) or "response_if_any_valid" (C-core: the response's version
	// when at least one resource in it was valid).
	NACKVersion string `toml:"nack_version"`

	// NodeInEveryRequest sends the node on every DiscoveryRequest
	// (grpc-java); otherwise only on the first request of each stream
	// (grpc-go firstRequest, C-core).
	NodeInEveryRequest bool `toml:"node_in_every_request"`

	// NewWatchChannels is where a new watch is subscribed while more than one
	// channel of its authority exists: "active" (grpc-go
	// authority.xdsChannelToUse: only the active channel ever asks for
	// it), "all" (C-core WatchResource subscribes on every channel at
	// once) or "authority" (grpc-java: the active channel asks for it at
	// once, and every other channel of the authority asks for it with its
	// next request of the type, since ControlPlaneClient builds each
	// request from XdsClientImpl.getSubscribedResources, every resource of
	// the authorities whose activated list holds the channel).
	NewWatchChannels string `toml:"new_watch_channels"`

	// ConnectivityErrorsFromActiveOnly reacts to a connectivity failure
	// (fallback, or watchers told) only when it is the authority's active
	// channel that failed: C-core SetChannelStatusLocked skips an
	// authority whose xds_channels.back() is another channel; grpc-java
	// handleStreamClosed acts only for getActiveAuthorities(cpcClosed).
	// grpc-go's authority.go handleADSStreamFailure does not check, so a
	// failing primary retry during fallback tells every watcher and can
	// move the authority to a third server. gRFC A71 falls back from "the
	// current server".
	ConnectivityErrorsFromActiveOnly bool `toml:"connectivity_errors_from_active_only"`

	// WatchTimeFallback is what a new watch does when it creates an
	// uncached entry while the authority's active channel is failing:
	// "none" (grpc-go watchResource uses the active channel only),
	// "all_resources" (grpc-java getOrCreateControlPlaneClient skips a CPC
	// that isInError and activates the next one, whose requests then
	// carry every resource of the authority; gRFC A71: both of its
	// conditions hold, and the XdsClient "will subscribe to all watched
	// resources on that server") or "all_resources_on_new_call" (C-core
	// XdsClient::WatchResource adds the next servers' channels until one
	// is not failing and subscribes the new name on every channel; a
	// channel with no ADS call starts one, and the AdsCall constructor
	// subscribes every watched resource of the authority, so only a
	// channel whose call already runs for another authority is asked for
	// the new name alone).
	WatchTimeFallback string `toml:"watch_time_fallback"`

	// ResourceTimerScope is the lifetime of a resource's does-not-exist
	// timer state: "channel" (grpc-go ResourceWatchState lives in
	// adsStreamImpl: a name that was received or timed out on the channel
	// is not timed again there), "call" (C-core: one ResourceTimer per
	// AdsCall, so an uncached name, including DOES_NOT_EXIST, is re-timed
	// on each stream) or "resource" (grpc-java: the state is the
	// client-wide ResourceSubscriber's, and restartTimer and
	// startMissingResourceTimers skip a name that has data or is absent
	// (timed out or deleted) on every channel; any other name, one NACKed
	// while uncached included, is timed again when a stream becomes
	// ready).
	ResourceTimerScope string `toml:"resource_timer_scope"`

	// ResourceTimeout is the does-not-exist timer: 15 s (gRFC A57, envoy
	// xDS protocol "Knowing when a requested resource does not exist").
	ResourceTimeout time.Duration `toml:"resource_timeout"`
	// ResourceTimeoutTransient is the timer used when the server has
	// resource_timer_is_transient_error and A88 is on: 30 s (gRFC A88,
	// "Changes to Resource Timer Behavior"; grpc-java
	// EXTENDED_RESOURCE_FETCH_TIMEOUT_SEC).
	ResourceTimeoutTransient time.Duration `toml:"resource_timeout_transient"`

	// ResourceTimerSkipsCached does not start the timer for a name whose
	// resource is cached (grpc-java restartTimer skips a resource with data;
	// C-core MaybeStartTimer checks HasResource). grpc-go starts it anyway,
	// so a fallback or re-subscribed channel can time out a cached resource
	// (ads_stream.go startWatchTimersLocked checks only the watch state, and
	// authority.go handleADSResourceDoesNotExist drops the cache). gRFC A88:
	// the timer fires "only when we do not have a version of the resource
	// cached".
	ResourceTimerSkipsCached bool `toml:"resource_timer_skips_cached"`

	// PreA57Timer starts the resource timer as soon as the request is handed
	// to the stream, even while the channel is not READY: the behaviour gRFC
	// A57 fixed (grpc/grpc #31446). Opt-in only.
	PreA57Timer bool `toml:"pre_a57_timer"`

	// A88DataErrors enables gRFC A88 error semantics: fail_on_data_errors,
	// resource_timer_is_transient_error, xRFC TP3 resource_errors, and
	// ignoring deletions by default. grpc-go ships without it (its xdsclient
	// reads neither fail_on_data_errors nor resource_errors); grpc-java and
	// C-core hide it behind GRPC_EXPERIMENTAL_XDS_DATA_ERROR_HANDLING, off by
	// default (grpc-java BootstrapperImpl, C-core xds_bootstrap.cc
	// XdsDataErrorHandlingEnabled).
	A88DataErrors bool `toml:"a88_data_errors"`

	// IgnoredDeletion is what a client without A88 does when a server with
	// ignore_resource_deletion (gRFC A53) leaves a cached LDS or CDS
	// resource out of a response: "silent" (grpc-go authority.go
	// handleDeletion: it keeps the resource and only logs), "ambient_error"
	// (grpc-java XdsClientImpl onAbsent: AmbientError(NOT_FOUND) on every
	// such response, CSDS stays ACKED) or "ambient_error_does_not_exist"
	// (C-core AdsCall: SetDoesNotExistOnLdsOrCdsDeletion keeps the
	// resource with CSDS DOES_NOT_EXIST, and NotifyWatchersOnError). The
	// last also records every LDS/CDS deletion, ignored or not, as the
	// entry's CSDS error_state, as C-core's
	// SetDoesNotExistOnLdsOrCdsDeletion does.
	IgnoredDeletion string `toml:"ignored_deletion"`

	// TP3ResourceErrors reads xRFC TP3's DiscoveryResponse.resource_errors
	// when A88DataErrors is on (gRFC A88 "Support for Errors Provided by
	// the xDS server"; C-core HandleServerReportedResourceError).
	// grpc-java has A88's other parts behind its flag but never reads
	// resource_errors; grpc-go has no A88.
	TP3ResourceErrors bool `toml:"tp3_resource_errors"`

	// SuppressDuplicateNACKError drops a NACK notification whose error text
	// equals the resource's current error (grpc-go c841c90b, #9185).
	SuppressDuplicateNACKError bool `toml:"suppress_duplicate_nack_error"`

	// ReplayConnectivityError replays the channel's current connectivity
	// error to a new watcher (C-core XdsClient::WatchResource: cache, failed
	// status, then the channel's status). grpc-go replays only the cache, the
	// NACK error and NotExist (authority.go watchResource). grpc-java's
	// ResourceSubscriber.addWatcher replays the resource's own last error
	// instead: see ReplayLastError.
	ReplayConnectivityError bool `toml:"replay_connectivity_error"`

	// ReplayLastError replays to a new watcher the last error the
	// resource's watchers were told, a NACK or a connectivity error, in
	// place of the resource's status (grpc-java
	// XdsClientImpl.ResourceSubscriber.addWatcher: data, then
	// onAmbientError(lastError); without data onResourceChanged(lastError);
	// else NOT_FOUND when absent). onError sets lastError, for a NACK and
	// for handleStreamClosed's connectivity error; onData and onAbsent
	// clear it.
	ReplayLastError bool `toml:"replay_last_error"`

	// AmbientOKOnRecovery sends AmbientError(OK) when an unchanged resource
	// arrives while the channel's status is an error (C-core xds_client.cc
	// AdsCall::ParseResource).
	AmbientOKOnRecovery bool `toml:"ambient_ok_on_recovery"`

	// ADSFlowControl holds the next read of an ADS stream until every watcher
	// callback of the previous response has called done (grpc-go
	// ads_stream.go: fc.wait() before each Recv, onDone once every
	// ResourceChanged/ResourceError/AmbientError of the update called done,
	// across authorities; grpc-java ControlPlaneClient: ProcessingTracker
	// calls startRecvMessage once every watcher callback has returned;
	// C-core xds_client.cc: StartRecvMessage when the last ref to the
	// AdsReadDelayHandle is dropped). gRFC A57 and A88 are silent; the spec
	// profile does what all three clients do. See Client.WatcherDone.
	ADSFlowControl bool `toml:"ads_flow_control"`

	// UnknownTypeStallsReads makes a response with an unknown type URL stop
	// the stream's reads for good, with ADSFlowControl: grpc-go's recv sets
	// the flow control pending, and channel.go onResponse returns
	// ErrorTypeResourceTypeUnsupported without calling onDone, so the next
	// fc.wait() never returns (inferred from grpc-go's code; no grpc-go test
	// confirms it). Only
	// closing the channel ends it. grpc-java calls startRecvMessage for an
	// unknown type (ControlPlaneClient onRecvMessage). C-core's
	// DecodeAdsResponse returns before it creates the AdsReadDelayHandle, so
	// it too reads no further message on that call (Inference, unverified),
	// but its status batch is separate from reads: the stream's end still
	// arrives and the next call reads again. The model holds a stream's end
	// behind a paused read, so the grpc-core profile leaves this off. The
	// spec profile does not stall.
	UnknownTypeStallsReads bool `toml:"unknown_type_stalls_reads"`

	// ServerFailureMetric is how grpc.xds_client.server_failure counts:
	// "every_failure" (grpc-go adsStreamFailure reports ServerFailure for
	// every stream that failed before a response, so every failed retry;
	// grpc-java handleStreamClosed likewise) or "healthy_to_unhealthy"
	// (gRFC A78: "A counter of xDS servers going from healthy to unhealthy";
	// C-core SetChannelStatusLocked reports only when the status was OK).
	ServerFailureMetric string `toml:"server_failure_metric"`

	// ConnectedMetricInitial is grpc.xds_client.connected before the first
	// connectivity failure: "first_stream" (grpc-go streamEstablished:
	// false until the channel's first stream is created, gRFC A78 "set to 1
	// when the stream is initially created") or "channel_created" (grpc-java
	// !isInError(), C-core channel status OK: true from channel creation).
	ConnectedMetricInitial string `toml:"connected_metric_initial"`

	// HTTPFilters is the set of HTTP filters the client implements, which
	// decides whether it accepts a Listener (gRFC A39): "grpc-go",
	// "grpc-java", "grpc-core" or "spec" (see FilterSet). Only C-core and
	// the gRFCs have gRFC A55's envoy.filters.http.stateful_session:
	// grpc-go and grpc-java NACK a Listener whose filter is not optional
	// (grpc-go processHTTPFilters "no filter implementation found",
	// grpc-java parseHttpFilter "is required but unsupported for client")
	// and skip an optional one.
	HTTPFilters string `toml:"http_filters"`

	// WatcherAPI is the watcher interface the client exposes: "a88"
	// (ResourceChanged/AmbientError) or "legacy" (OnUpdate/OnError/
	// OnResourceDoesNotExist). It changes only how notifications are named
	// in transcripts; Notification.Legacy gives the mapping (grpc-go #7977).
	WatcherAPI string `toml:"watcher_api"`
}

// Profile names.
const (
	ProfileGRPCGo   = "grpc-go"
	ProfileGRPCJava = "grpc-java"
	ProfileGRPCCore = "grpc-core"
	ProfileSpec     = "spec"
)

// Values of the string-valued Profile fields.
const (
	RestartZero            = "zero"
	RestartJitteredInitial = "jittered_initial"
	NACKVersionLastACKed   = "last_acked"
	NACKVersionIfAnyValid  = "response_if_any_valid"
	WatchChannelsActive    = "active"
	WatchChannelsAll       = "all"
	WatchChannelsAuthority = "authority"
	WatchFallbackNone      = "none"
	WatchFallbackAll       = "all_resources"
	WatchFallbackNewCall   = "all_resources_on_new_call"
	TimerScopeChannel      = "channel"
	TimerScopeCall         = "call"
	TimerScopeResource     = "resource"
	WatcherAPIA88          = "a88"
	WatcherAPILegacy       = "legacy"
	DeletionSilent         = "silent"
	DeletionAmbient        = "ambient_error"
	DeletionAmbientDNE     = "ambient_error_does_not_exist"
	FailureMetricEvery     = "every_failure"
	FailureMetricHealthy   = "healthy_to_unhealthy"
	ConnectedFirstStream   = "first_stream"
	ConnectedChannel       = "channel_created"
)

func baseProfile() Profile {
	return Profile{
		RestartDelayAfterResponse: RestartZero,
		BackoffInitial:            time.Second,
		BackoffMultiplier:         1.6,
		BackoffJitter:             0.2,
		BackoffMax:                120 * time.Second,
		NACKVersion:               NACKVersionLastACKed,
		NewWatchChannels:          WatchChannelsActive,
		WatchTimeFallback:         WatchFallbackNone,
		ResourceTimerScope:        TimerScopeChannel,
		ResourceTimeout:           15 * time.Second,
		ResourceTimeoutTransient:  30 * time.Second,
		WatcherAPI:                WatcherAPIA88,
		ADSFlowControl:            true,
		ServerFailureMetric:       FailureMetricEvery,
		ConnectedMetricInitial:    ConnectedFirstStream,
		HTTPFilters:               ProfileGRPCGo,
		IgnoredDeletion:           DeletionSilent,
	}
}

// GRPCGo is grpc-go as shipped (grpc-go 4793ad04,
// internal/xds/clients/xdsclient).
func GRPCGo() Profile {
	p := baseProfile()
	p.Name = ProfileGRPCGo
	p.BackoffFirstUnjittered = true
	p.SuppressDuplicateNACKError = true
	p.UnknownTypeStallsReads = true
	return p
}

// GRPCJava is grpc-java as shipped (grpc-java 5fda0c7c,
// xds/src/main/java/io/grpc/xds/client: XdsClientImpl, ControlPlaneClient).
func GRPCJava() Profile {
	p := baseProfile()
	p.Name = ProfileGRPCJava
	p.HTTPFilters = ProfileGRPCJava
	p.IgnoredDeletion = DeletionAmbient
	p.RestartDelayAfterResponse = RestartJitteredInitial
	p.BackoffSubtractStreamLifetime = true
	p.NodeInEveryRequest = true
	p.NewWatchChannels = WatchChannelsAuthority
	p.ConnectivityErrorsFromActiveOnly = true
	p.WatchTimeFallback = WatchFallbackAll
	p.ResourceTimerScope = TimerScopeResource
	p.ResourceTimerSkipsCached = true
	p.ReplayLastError = true
	p.ConnectedMetricInitial = ConnectedChannel
	return p
}

// GRPCCore is C-core as shipped (grpc src/core/xds/xds_client/xds_client.cc
// f1f57977).
func GRPCCore() Profile {
	p := baseProfile()
	p.Name = ProfileGRPCCore
	p.HTTPFilters = ProfileGRPCCore
	p.IgnoredDeletion = DeletionAmbientDNE
	p.TP3ResourceErrors = true
	p.ADSWaitForReady = true
	p.TransientFailureIsConnectivityError = true
	p.RestartDelayAfterResponse = RestartJitteredInitial
	p.NACKVersion = NACKVersionIfAnyValid
	p.NewWatchChannels = WatchChannelsAll
	p.ConnectivityErrorsFromActiveOnly = true
	p.WatchTimeFallback = WatchFallbackNewCall
	p.ResourceTimerScope = TimerScopeCall
	p.ReplayConnectivityError = true
	p.AmbientOKOnRecovery = true
	p.ResourceTimerSkipsCached = true
	p.ServerFailureMetric = FailureMetricHealthy
	p.ConnectedMetricInitial = ConnectedChannel
	return p
}

// Spec is gRFC A57 + A71 + A88 exactly as written. The ADS stream backoff
// is A57's, "similar to" grpc doc/connection-backoff.md, whose sequence it
// takes: after a stream that had a response the backoff is reset (A57),
// and a reset backoff tries at once, as a newly started connection does
// (connection-backoff.md "Reset Backoff"; A88 "Open issues": "we don't
// impose exponential backoff between stream attempts"); the first delay
// after a failure is INITIAL_BACKOFF without jitter. Where the text leaves
// a choice, docs/model-fidelity.md ("Reading choices") says which reading
// was taken: delays measured from the failure (connection-backoff.md counts
// from the attempt's start; A57 asks only for a similar algorithm);
// channel-state connectivity errors with wait_for_ready (A57 prefers it
// where the state carries a status); per-channel timers; ADS flow control
// (A57 and A88 are silent; all three clients have it) without grpc-go's
// unknown-type stall; fallback from the active channel only, also when a
// new uncached watch meets a failing channel (A71's two conditions); a
// name watched during fallback subscribed on every channel, so that a
// revert "will use the resources from the higher priority servers" (A71);
// and the gRFC A78 metric definitions.
func Spec() Profile {
	p := baseProfile()
	p.Name = ProfileSpec
	p.HTTPFilters = ProfileSpec
	p.IgnoredDeletion = DeletionAmbientDNE
	p.TP3ResourceErrors = true
	p.ADSWaitForReady = true
	p.TransientFailureIsConnectivityError = true
	p.BackoffFirstUnjittered = true
	p.NewWatchChannels = WatchChannelsAll
	p.ConnectivityErrorsFromActiveOnly = true
	p.WatchTimeFallback = WatchFallbackAll
	p.A88DataErrors = true
	p.ResourceTimerSkipsCached = true
	p.ServerFailureMetric = FailureMetricHealthy
	return p
}

// ProfileByName returns the named profile.
func ProfileByName(name string) (Profile, error) {
	switch name {
	case ProfileGRPCGo:
		return GRPCGo(), nil
	case ProfileGRPCJava:
		return GRPCJava(), nil
	case ProfileGRPCCore:
		return GRPCCore(), nil
	case ProfileSpec:
		return Spec(), nil
	}
	return Profile{}, fmt.Errorf("xdsclient: unknown profile %q (want grpc-go, grpc-java, grpc-core or spec)", name)
}

// FilterSet is the FilterSet HTTPFilters names (grpc-go's if none).
func (p *Profile) FilterSet() FilterSet {
	s, _ := filterSetByName(p.HTTPFilters)
	return s
}

// FieldNames lists every overridable field name, sorted.
func FieldNames() []string {
	t := reflect.TypeOf(Profile{})
	var names []string
	for i := 0; i < t.NumField(); i++ {
		if n := t.Field(i).Tag.Get("toml"); n != "" && n != "name" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

func (p *Profile) field(name string) (reflect.Value, bool) {
	v := reflect.ValueOf(p).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if t.Field(i).Tag.Get("toml") == name && name != "name" {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// DurationField returns the value of the named field when it is a
// duration (backoff_initial, resource_timeout, ...); ok is false for any
// other field.
func (p *Profile) DurationField(name string) (d time.Duration, ok bool) {
	f, found := p.field(name)
	if !found {
		return 0, false
	}
	d, ok = f.Interface().(time.Duration)
	return d, ok
}

// Field returns the value of the named field formatted as Set accepts it.
func (p *Profile) Field(name string) (string, error) {
	f, ok := p.field(name)
	if !ok {
		return "", fmt.Errorf("xdsclient: profile has no field %q", name)
	}
	if d, ok := f.Interface().(time.Duration); ok {
		return d.String(), nil
	}
	return fmt.Sprint(f.Interface()), nil
}

var enumValues = map[string][]string{
	"restart_delay_after_response": {RestartZero, RestartJitteredInitial},
	"nack_version":                 {NACKVersionLastACKed, NACKVersionIfAnyValid},
	"new_watch_channels":           {WatchChannelsActive, WatchChannelsAll, WatchChannelsAuthority},
	"watch_time_fallback":          {WatchFallbackNone, WatchFallbackAll, WatchFallbackNewCall},
	"resource_timer_scope":         {TimerScopeChannel, TimerScopeCall, TimerScopeResource},
	"watcher_api":                  {WatcherAPIA88, WatcherAPILegacy},
	"server_failure_metric":        {FailureMetricEvery, FailureMetricHealthy},
	"connected_metric_initial":     {ConnectedFirstStream, ConnectedChannel},
	"http_filters":                 {ProfileGRPCGo, ProfileGRPCJava, ProfileGRPCCore, ProfileSpec},
	"ignored_deletion":             {DeletionSilent, DeletionAmbient, DeletionAmbientDNE},
}

// Set overrides the named field from its text form: "true"/"false",
// a Go duration ("30s"), a float, or one of the field's enum values.
func (p *Profile) Set(name, value string) error {
	f, ok := p.field(name)
	if !ok {
		return fmt.Errorf("xdsclient: profile has no field %q (fields: %v)", name, FieldNames())
	}
	switch f.Interface().(type) {
	case bool:
		b, err := strconv.ParseBool(value)
		if err != nil {
			return fmt.Errorf("xdsclient: profile.%s: want true or false, got %q", name, value)
		}
		f.SetBool(b)
	case time.Duration:
		d, err := time.ParseDuration(value)
		if err != nil || d < 0 {
			return fmt.Errorf("xdsclient: profile.%s: want a non-negative duration such as \"15s\", got %q", name, value)
		}
		f.SetInt(int64(d))
	case float64:
		x, err := strconv.ParseFloat(value, 64)
		if err != nil || !(x >= 0) || math.IsInf(x, 0) {
			return fmt.Errorf("xdsclient: profile.%s: want a finite non-negative number, got %q", name, value)
		}
		f.SetFloat(x)
	case string:
		allowed := enumValues[name]
		for _, a := range allowed {
			if a == value {
				f.SetString(value)
				return nil
			}
		}
		return fmt.Errorf("xdsclient: profile.%s: want one of %v, got %q", name, allowed, value)
	}
	return nil
}

// Validate reports the first field whose value is out of range.
func (p *Profile) Validate() error {
	// The enum fields, read directly: Validate runs for every client a
	// fleet starts, and reading them by reflection was a tenth of a
	// reconnect storm's CPU.
	for _, f := range [...]struct{ name, v string }{
		{"restart_delay_after_response", p.RestartDelayAfterResponse},
		{"nack_version", p.NACKVersion},
		{"new_watch_channels", p.NewWatchChannels},
		{"watch_time_fallback", p.WatchTimeFallback},
		{"resource_timer_scope", p.ResourceTimerScope},
		{"watcher_api", p.WatcherAPI},
		{"server_failure_metric", p.ServerFailureMetric},
		{"connected_metric_initial", p.ConnectedMetricInitial},
		{"http_filters", p.HTTPFilters},
		{"ignored_deletion", p.IgnoredDeletion},
	} {
		name, v, allowed := f.name, f.v, enumValues[f.name]
		ok := false
		for _, a := range allowed {
			ok = ok || a == v
		}
		if !ok {
			return fmt.Errorf("xdsclient: profile.%s: want one of %v, got %q", name, allowed, v)
		}
	}
	// !(x >= 1) and !(x < 1) are also true of NaN.
	if p.BackoffInitial <= 0 || !(p.BackoffMultiplier >= 1) || math.IsInf(p.BackoffMultiplier, 0) ||
		!(p.BackoffJitter >= 0) || !(p.BackoffJitter < 1) || p.BackoffMax < p.BackoffInitial {
		return fmt.Errorf("xdsclient: profile backoff: want backoff_initial > 0, finite backoff_multiplier >= 1, 0 <= backoff_jitter < 1, backoff_max >= backoff_initial; got %v × %v, jitter %v, max %v",
			p.BackoffInitial, p.BackoffMultiplier, p.BackoffJitter, p.BackoffMax)
	}
	if p.ResourceTimeout <= 0 || p.ResourceTimeoutTransient <= 0 {
		return fmt.Errorf("xdsclient: profile resource timeouts: want resource_timeout and resource_timeout_transient > 0, got %v and %v", p.ResourceTimeout, p.ResourceTimeoutTransient)
	}
	return nil
}
