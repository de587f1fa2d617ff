package xdsclient

import "testing"

// The transcripts under testdata/fidelity/ pin what the fidelity audit
// (notes/fidelity-audit.md) found a profile doing that its client does
// not, now fixed, each in the profiles it concerns; each ends with the
// real client's file and function it reproduces.

// TestFidelity_SpecRestartsAfterTheInitialBackoff: the spec profile resets
// the backoff after a good stream and waits INITIAL_BACKOFF. Reference: gRFC
// A57 "Handling ADS Stream Termination"; C-core RetryableCall::OnCallFinishedLocked.
func TestFidelity_SpecRestartsAfterTheInitialBackoff(t *testing.T) {
	runTranscript(t, "fidelity/spec_restart_after_response.txt")
}

// TestFidelity_JavaFirstFailureGetsTheFullBackoff. Reference: grpc-java
// ControlPlaneClient.handleRpcStreamClosed.
func TestFidelity_JavaFirstFailureGetsTheFullBackoff(t *testing.T) {
	runTranscript(t, "fidelity/java_first_failure.txt")
}

// TestFidelity_OnlyTheActiveChannelsFailuresCount. Reference: grpc-java
// XdsClientImpl.handleStreamClosed; C-core SetChannelStatusLocked.
func TestFidelity_OnlyTheActiveChannelsFailuresCount(t *testing.T) {
	runTranscript(t, "fidelity/failure_of_a_non_active_channel.txt")
}

// TestFidelity_WatchTimeFallback. Reference: C-core XdsClient::WatchResource;
// grpc-java XdsClientImpl.getOrCreateControlPlaneClient.
func TestFidelity_WatchTimeFallback(t *testing.T) {
	runTranscript(t, "fidelity/watch_time_fallback.txt")
}

// TestFidelity_RevertReRequestsTheAuthority. Reference: grpc-java
// XdsClientImpl.getSubscribedResources; gRFC A71.
func TestFidelity_RevertReRequestsTheAuthority(t *testing.T) {
	runTranscript(t, "fidelity/revert_rerequests_the_authority.txt")
}

// TestFidelity_StatefulSessionFilterOnlyInCore: grpc-go and grpc-java NACK
// a Listener with a non-optional A55 filter and skip an optional one;
// C-core accepts both. Reference: grpc-go processHTTPFilters; grpc-java
// XdsListenerResource.parseHttpFilter; C-core XdsHttpFilterRegistry.
func TestFidelity_StatefulSessionFilterOnlyInCore(t *testing.T) {
	runTranscript(t, "fidelity/stateful_session_filter.txt")
}

// TestFidelity_LegacyIgnoredDeletion: without A88, grpc-java and C-core
// tell watchers of a deletion that ignore_resource_deletion keeps; grpc-go
// only logs. Reference: grpc-java ResourceSubscriber.onAbsent; C-core
// AdsCall::OnRecvMessage.
func TestFidelity_LegacyIgnoredDeletion(t *testing.T) {
	runTranscript(t, "fidelity/legacy_ignore_deletion.txt")
}

// TestFidelity_JavaHasNoTP3: grpc-java ignores resource_errors even with
// A88 on. Reference: grpc-java XdsClientImpl.handleResourceUpdate; C-core
// HandleServerReportedResourceError.
func TestFidelity_JavaHasNoTP3(t *testing.T) {
	runTranscript(t, "fidelity/java_no_tp3.txt")
}

// TestFidelity_RBACIsNotAClientFilter. Reference: grpc-go
// processHTTPFilters; gRFC A41.
func TestFidelity_RBACIsNotAClientFilter(t *testing.T) {
	runTranscript(t, "fidelity/client_rbac_filter.txt")
}
