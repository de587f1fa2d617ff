package xdsclient

import "testing"

// The conformance suite. Each test replays one transcript under testdata/
// (run with -rewrite to regenerate) and checks the exact effects: requests
// (version, nonce, names, node, NACK detail), watcher notifications, and
// timers armed, cancelled and fired. Each test ends with what it mirrors
// or the gRFC section it pins down, as go.etcd.io/raft's paper tests do.

// The grpc-go generic-client tests (internal/xds/clients/xdsclient/test/),
// each with the grpc-go file it mirrors (paths at grpc-go 4793ad04).

// Mirrors grpc-go TestADS_ACK_NACK_Simple
// (internal/xds/clients/xdsclient/test/ads_stream_ack_nack_test.go).
func TestADS_ACK_NACK_Simple(t *testing.T) { runTranscript(t, "grpc-go/ads_ack_nack_simple.txt") }

// Mirrors grpc-go TestADS_NACK_InvalidFirstResponse
// (internal/xds/clients/xdsclient/test/ads_stream_ack_nack_test.go).
func TestADS_NACK_InvalidFirstResponse(t *testing.T) {
	runTranscript(t, "grpc-go/ads_nack_invalid_first_response.txt")
}

// Mirrors grpc-go TestADS_ACK_NACK_ResourceIsNotRequestedAnymore
// (internal/xds/clients/xdsclient/test/ads_stream_ack_nack_test.go).
func TestADS_ACK_NACK_ResourceIsNotRequestedAnymore(t *testing.T) {
	runTranscript(t, "grpc-go/ads_ack_nack_resource_not_requested_anymore.txt")
}

// Mirrors grpc-go TestADS_NACKError_DuplicateSuppression
// (internal/xds/clients/xdsclient/test/ads_stream_ack_nack_test.go).
func TestADS_NACKError_DuplicateSuppression(t *testing.T) {
	runTranscript(t, "grpc-go/ads_nack_error_duplicate_suppression.txt")
}

// Mirrors grpc-go TestADS_NACKError_DuplicateSuppression_MultipleResources
// (internal/xds/clients/xdsclient/test/ads_stream_ack_nack_test.go).
func TestADS_NACKError_DuplicateSuppression_MultipleResources(t *testing.T) {
	runTranscript(t, "grpc-go/ads_nack_error_duplicate_suppression_multiple.txt")
}

// Mirrors grpc-go TestADS_BackoffAfterStreamFailure
// (internal/xds/clients/xdsclient/test/ads_stream_backoff_test.go).
func TestADS_BackoffAfterStreamFailure(t *testing.T) {
	runTranscript(t, "grpc-go/ads_backoff_after_stream_failure.txt")
}

// Mirrors grpc-go TestADS_RetriesAfterBrokenStream
// (internal/xds/clients/xdsclient/test/ads_stream_backoff_test.go).
func TestADS_RetriesAfterBrokenStream(t *testing.T) {
	runTranscript(t, "grpc-go/ads_retries_after_broken_stream.txt")
}

// Mirrors grpc-go TestADS_ResourceRequestedBeforeStreamCreation
// (internal/xds/clients/xdsclient/test/ads_stream_backoff_test.go).
func TestADS_ResourceRequestedBeforeStreamCreation(t *testing.T) {
	runTranscript(t, "grpc-go/ads_resource_requested_before_stream_creation.txt")
}

// Mirrors grpc-go TestADS_ResourcesAreRequestedAfterStreamRestart
// (internal/xds/clients/xdsclient/test/ads_stream_restart_test.go).
func TestADS_ResourcesAreRequestedAfterStreamRestart(t *testing.T) {
	runTranscript(t, "grpc-go/ads_resources_requested_after_stream_restart.txt")
}

// Mirrors grpc-go TestADS_WatchState_StreamBreaks
// (internal/xds/clients/xdsclient/test/ads_stream_watch_test.go).
func TestADS_WatchState_StreamBreaks(t *testing.T) {
	runTranscript(t, "grpc-go/ads_watchstate_stream_breaks.txt")
}

// Mirrors grpc-go TestADS_WatchState_TimerFires
// (internal/xds/clients/xdsclient/test/ads_stream_watch_test.go).
func TestADS_WatchState_TimerFires(t *testing.T) {
	runTranscript(t, "grpc-go/ads_watchstate_timer_fires.txt")
}

// Mirrors grpc-go TestADSFlowControl_ResourceUpdates_SingleResource
// (internal/xds/clients/xdsclient/test/ads_stream_flow_control_test.go).
func TestADSFlowControl_ResourceUpdates_SingleResource(t *testing.T) {
	runTranscript(t, "grpc-go/ads_flow_control_single_resource.txt")
}

// Mirrors grpc-go TestADSFlowControl_ResourceUpdates_MultipleResources
// (internal/xds/clients/xdsclient/test/ads_stream_flow_control_test.go).
func TestADSFlowControl_ResourceUpdates_MultipleResources(t *testing.T) {
	runTranscript(t, "grpc-go/ads_flow_control_multiple_resources.txt")
}

// Mirrors grpc-go TestADSFlowControl_ResourceErrors
// (internal/xds/clients/xdsclient/test/ads_stream_flow_control_test.go).
func TestADSFlowControl_ResourceErrors(t *testing.T) {
	runTranscript(t, "grpc-go/ads_flow_control_resource_errors.txt")
}

// Mirrors grpc-go TestADSFlowControl_ResourceDoesNotExist
// (internal/xds/clients/xdsclient/test/ads_stream_flow_control_test.go).
func TestADSFlowControl_ResourceDoesNotExist(t *testing.T) {
	runTranscript(t, "grpc-go/ads_flow_control_resource_does_not_exist.txt")
}

// Mirrors grpc-go TestLDSWatch_ExpiryTimerFiresBeforeResponse
// (internal/xds/clients/xdsclient/test/lds_watchers_test.go).
func TestLDSWatch_ExpiryTimerFiresBeforeResponse(t *testing.T) {
	runTranscript(t, "grpc-go/lds_expiry_timer_fires_before_response.txt")
}

// Mirrors grpc-go TestLDSWatch_ValidResponseCancelsExpiryTimerBehavior
// (internal/xds/clients/xdsclient/test/lds_watchers_test.go).
func TestLDSWatch_ValidResponseCancelsExpiryTimerBehavior(t *testing.T) {
	runTranscript(t, "grpc-go/lds_valid_response_cancels_expiry_timer.txt")
}

// Mirrors grpc-go TestLDSWatch_ResourceRemoved
// (internal/xds/clients/xdsclient/test/lds_watchers_test.go).
func TestLDSWatch_ResourceRemoved(t *testing.T) {
	runTranscript(t, "grpc-go/lds_resource_removed.txt")
}

// Mirrors grpc-go TestLDSWatch_NewWatcherForRemovedResource
// (internal/xds/clients/xdsclient/test/lds_watchers_test.go).
func TestLDSWatch_NewWatcherForRemovedResource(t *testing.T) {
	runTranscript(t, "grpc-go/lds_new_watcher_for_removed_resource.txt")
}

// Mirrors grpc-go TestLDSWatch_NACKError
// (internal/xds/clients/xdsclient/test/lds_watchers_test.go).
func TestLDSWatch_NACKError(t *testing.T) { runTranscript(t, "grpc-go/lds_nack_error.txt") }

// Mirrors grpc-go TestLDSWatch_ResourceCaching_NACKError
// (internal/xds/clients/xdsclient/test/lds_watchers_test.go).
func TestLDSWatch_ResourceCaching_NACKError(t *testing.T) {
	runTranscript(t, "grpc-go/lds_resource_caching_nack_error.txt")
}

// Mirrors grpc-go TestLDSWatch_PartialValid
// (internal/xds/clients/xdsclient/test/lds_watchers_test.go).
func TestLDSWatch_PartialValid(t *testing.T) { runTranscript(t, "grpc-go/lds_partial_valid.txt") }

// Mirrors grpc-go TestLDSWatch_PartialResponse
// (internal/xds/clients/xdsclient/test/lds_watchers_test.go).
func TestLDSWatch_PartialResponse(t *testing.T) {
	runTranscript(t, "grpc-go/lds_partial_response.txt")
}

// Mirrors grpc-go TestLDSWatch_ResourceCaching
// (internal/xds/clients/xdsclient/test/lds_watchers_test.go).
func TestLDSWatch_ResourceCaching(t *testing.T) {
	runTranscript(t, "grpc-go/lds_resource_caching.txt")
}

// Mirrors grpc-go TestAuthority_Fallback
// (internal/xds/clients/xdsclient/test/authority_test.go).
func TestAuthority_Fallback(t *testing.T) { runTranscript(t, "grpc-go/authority_fallback.txt") }

// Mirrors grpc-go TestFallback_OnStartup
// (internal/xds/xdsclient/tests/fallback/fallback_test.go).
func TestFallback_OnStartup(t *testing.T) { runTranscript(t, "grpc-go/fallback_on_startup.txt") }

// Mirrors grpc-go TestFallback_MidUpdate
// (internal/xds/xdsclient/tests/fallback/fallback_test.go).
func TestFallback_MidUpdate(t *testing.T) { runTranscript(t, "grpc-go/fallback_mid_update.txt") }

// Mirrors grpc-go TestFallback_MidStartup and TestFallback_ThreeServerPromotion
// (internal/xds/xdsclient/tests/fallback/fallback_test.go).
func TestFallback_ThreeServerPromotion(t *testing.T) {
	runTranscript(t, "grpc-go/fallback_three_server_promotion.txt")
}

// Mirrors grpc-go TestServerFailureMetrics_AfterResponseRecv
// (internal/xds/clients/xdsclient/test/metrics_test.go).
func TestServerFailureMetrics_AfterResponseRecv(t *testing.T) {
	runTranscript(t, "grpc-go/server_failure_metrics_after_response_recv.txt")
}

// Mirrors grpc-go TestConnectedMetric_Reconnection
// (internal/xds/clients/xdsclient/test/metrics_test.go).
func TestConnectedMetric_Reconnection(t *testing.T) {
	runTranscript(t, "grpc-go/connected_metric_reconnection.txt")
}

// TestServerFailure_AfterResponseRecv pins the gRFC A57 behaviour behind the
// two metric tests above, with a fallback server configured: a failure after
// a response is no error (no watcher call, no fallback, no backoff); one
// before any response is. Reference: gRFC A57, Handling ADS Stream
// Termination; grpc-go authority.go handleADSStreamFailure.
func TestServerFailure_AfterResponseRecv(t *testing.T) {
	runTranscript(t, "grpc-go/server_failure_after_response_recv.txt")
}

// Mirrors grpc-go TestIgnoreResourceDeletionOnClient
// (test/xds/xds_client_ignore_resource_deletion_test.go).
func TestIgnoreResourceDeletionOnClient(t *testing.T) {
	runTranscript(t, "grpc-go/ignore_resource_deletion.txt")
}
