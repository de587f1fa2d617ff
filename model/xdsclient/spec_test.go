package xdsclient

import "testing"

// Tests that pin gRFC text, in the style of go.etcd.io/raft's
// raft_paper_test.go: each test checks a few sentences of a gRFC and ends
// with its Reference. The transcripts quote the sentences.

// TestA88_TransientFailureUncached checks the first row of gRFC A88's
// table. Reference: gRFC A88, Summary of Behavior Changes, row 1.
func TestA88_TransientFailureUncached(t *testing.T) { runTranscript(t, "a88/tf_uncached.txt") }

// Reference: gRFC A88, Summary of Behavior Changes, row 2.
func TestA88_TransientFailureCached(t *testing.T) { runTranscript(t, "a88/tf_cached.txt") }

// Reference: gRFC A88, Summary of Behavior Changes, row 3.
func TestA88_StreamFailedUncached(t *testing.T) { runTranscript(t, "a88/stream_failed_uncached.txt") }

// Reference: gRFC A88, Summary of Behavior Changes, row 4; gRFC A57,
// Handling ADS Stream Termination.
func TestA88_StreamFailedCached(t *testing.T) { runTranscript(t, "a88/stream_failed_cached.txt") }

// Reference: gRFC A88, Summary of Behavior Changes, row 5.
func TestA88_NACKUncached(t *testing.T) { runTranscript(t, "a88/nack_uncached.txt") }

// Reference: gRFC A88, Summary of Behavior Changes, row 6.
func TestA88_NACKCached(t *testing.T) { runTranscript(t, "a88/nack_cached.txt") }

// Reference: gRFC A88, Summary of Behavior Changes, row 7; Handling Data Errors.
func TestA88_NACKCachedFailOnDataErrors(t *testing.T) {
	runTranscript(t, "a88/nack_cached_fail_on_data_errors.txt")
}

// Reference: gRFC A88, Summary of Behavior Changes, row 8; Changes to
// Resource Timer Behavior.
func TestA88_ResourceTimeout(t *testing.T) { runTranscript(t, "a88/resource_timeout.txt") }

// Reference: gRFC A88, Summary of Behavior Changes, row 9; Deprecating
// "ignore_resource_deletion" Server Feature.
func TestA88_DeletionCached(t *testing.T) { runTranscript(t, "a88/deletion_cached.txt") }

// Reference: gRFC A88, Summary of Behavior Changes, row 10.
func TestA88_DeletionCachedFailOnDataErrors(t *testing.T) {
	runTranscript(t, "a88/deletion_cached_fail_on_data_errors.txt")
}

// Reference: gRFC A88, Summary of Behavior Changes, row 11; Support for
// Errors Provided by the xDS server.
func TestA88_TP3DataErrorUncached(t *testing.T) { runTranscript(t, "a88/tp3_data_error_uncached.txt") }

// Reference: gRFC A88, Summary of Behavior Changes, row 12.
func TestA88_TP3DataErrorCached(t *testing.T) { runTranscript(t, "a88/tp3_data_error_cached.txt") }

// Reference: gRFC A88, Summary of Behavior Changes, row 13.
func TestA88_TP3DataErrorCachedFailOnDataErrors(t *testing.T) {
	runTranscript(t, "a88/tp3_data_error_cached_fail_on_data_errors.txt")
}

// Reference: gRFC A88, Summary of Behavior Changes, row 14.
func TestA88_TP3TransientUncached(t *testing.T) { runTranscript(t, "a88/tp3_transient_uncached.txt") }

// Reference: gRFC A88, Summary of Behavior Changes, row 15.
func TestA88_TP3TransientCached(t *testing.T) { runTranscript(t, "a88/tp3_transient_cached.txt") }

// Reference: gRFC A57, Handling Resources That Do Not Exist.
func TestA57_TimerNotStartedWhileConnecting(t *testing.T) {
	runTranscript(t, "a57/timer_not_started_while_connecting.txt")
}

// Reference: gRFC A57, Handling Resources That Do Not Exist.
func TestA57_TimerStartedAtReady(t *testing.T) { runTranscript(t, "a57/timer_started_at_ready.txt") }

// Reference: gRFC A57, Handling Resources That Do Not Exist (20 s minimum
// connect timeout versus the 15 s timer).
func TestA57_TimerNotFiredDuringConnectAttempt(t *testing.T) {
	runTranscript(t, "a57/timer_not_fired_during_connect_attempt.txt")
}

// Reference: gRFC A57, Handling Resources That Do Not Exist; grpc-go
// ads_stream.go onError.
func TestA57_TimerRearmedAfterRestartOnlyForUnsentOrUnanswered(t *testing.T) {
	runTranscript(t, "a57/timer_rearmed_after_restart.txt")
}
