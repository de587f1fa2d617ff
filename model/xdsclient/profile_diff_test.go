package xdsclient

import "testing"

// Each test runs the same inputs under two profiles; the transcript shows
// where they diverge. Reference: the client source each transcript's
// header names, and the profile table in docs/model-fidelity.md.

func TestProfile_WaitForReady(t *testing.T) { runTranscript(t, "profiles/wait_for_ready.txt") }

func TestProfile_TransientFailureSignal(t *testing.T) {
	runTranscript(t, "profiles/transient_failure_signal.txt")
}

func TestProfile_RestartDelayAfterResponse(t *testing.T) {
	runTranscript(t, "profiles/restart_delay_after_response.txt")
}

func TestProfile_NACKVersion(t *testing.T) { runTranscript(t, "profiles/nack_version.txt") }

func TestProfile_NodeInRequests(t *testing.T) { runTranscript(t, "profiles/node_in_requests.txt") }

func TestProfile_NewWatchDuringFallback(t *testing.T) {
	runTranscript(t, "profiles/new_watch_during_fallback.txt")
}

func TestProfile_ReplayConnectivityError(t *testing.T) {
	runTranscript(t, "profiles/replay_connectivity_error.txt")
}

func TestProfile_A88Support(t *testing.T) { runTranscript(t, "profiles/a88_support.txt") }

func TestProfile_TimerScope(t *testing.T) { runTranscript(t, "profiles/timer_scope.txt") }

func TestProfile_BackoffFirstDelay(t *testing.T) {
	runTranscript(t, "profiles/backoff_first_delay.txt")
}

func TestProfile_BackoffStreamLifetime(t *testing.T) {
	runTranscript(t, "profiles/backoff_stream_lifetime.txt")
}

func TestProfile_TimerSkipsCached(t *testing.T) { runTranscript(t, "profiles/timer_skips_cached.txt") }

func TestProfile_DuplicateNACKSuppression(t *testing.T) {
	runTranscript(t, "profiles/duplicate_nack_suppression.txt")
}

func TestProfile_AmbientOKOnRecovery(t *testing.T) {
	runTranscript(t, "profiles/ambient_ok_on_recovery.txt")
}

func TestProfile_LegacyWatcherAPI(t *testing.T) { runTranscript(t, "profiles/legacy_watcher_api.txt") }

// TestProfile_ADSFlowControl: reads wait for done, or not. Reference: grpc-go
// ads_stream.go adsFlowControl.
func TestProfile_ADSFlowControl(t *testing.T) { runTranscript(t, "profiles/ads_flow_control.txt") }

// TestProfile_UnknownTypeStall: grpc-go stops reading after a response with
// an unknown type URL; the spec profile does not. Reference: grpc-go
// ads_stream.go recv and channel.go onResponse (inferred from the code; no
// grpc-go test confirms it).
func TestProfile_UnknownTypeStall(t *testing.T) { runTranscript(t, "profiles/unknown_type_stall.txt") }

// TestProfile_ServerFailureMetric: every failure (grpc-go, grpc-java) or
// healthy to unhealthy (C-core). Reference: gRFC A78, XdsClient.
func TestProfile_ServerFailureMetric(t *testing.T) {
	runTranscript(t, "profiles/server_failure_metric.txt")
}

// TestProfile_ConnectedMetricInitial: connected from the first stream
// (grpc-go) or from the channel's creation (grpc-java, C-core). Reference:
// gRFC A78, XdsClient.
func TestProfile_ConnectedMetricInitial(t *testing.T) {
	runTranscript(t, "profiles/connected_metric_initial.txt")
}

func TestProfile_ReplayLastError(t *testing.T) {
	runTranscript(t, "profiles/replay_last_error.txt")
}
