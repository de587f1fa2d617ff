package xdsclient

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
)

// The transcripts under testdata/fidelity/ pin what a reading of the real
// clients' source (issue 14) found a profile doing that its client does
// not, now fixed, each in the profiles it concerns; each ends with the
// real client's file and function it reproduces.

// TestFidelity_SpecRestartsAtOnceAfterAGoodStream: the spec profile resets
// the backoff after a good stream, and a reset backoff tries at once and
// waits an unjittered INITIAL_BACKOFF after the next failure; C-core waits
// a jittered 1 s, then 1.6 s. Reference: gRFC A57 "Handling ADS Stream
// Termination"; grpc doc/connection-backoff.md "Reset Backoff"; C-core
// RetryableCall::OnCallFinishedLocked.
func TestFidelity_SpecRestartsAtOnceAfterAGoodStream(t *testing.T) {
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

// TestFidelity_WatchTimeFallbackToASharedChannel: when the fallback server's
// channel already runs an ADS call for another authority, C-core's
// XdsClient::WatchResource only subscribes the new name on it
// (XdsChannel::SubscribeLocked hands it to the live call); only a channel
// without a call asks for the whole authority, from the AdsCall
// constructor. grpc-java's addCpcToAuthority sends every resource of every
// authority the ControlPlaneClient serves (getSubscribedResources).
// Reference: C-core xds_client.cc XdsClient::WatchResource,
// XdsChannel::SubscribeLocked; grpc-java XdsClientImpl.addCpcToAuthority.
func TestFidelity_WatchTimeFallbackToASharedChannel(t *testing.T) {
	const other = "xdstp://other.example/envoy.config.listener.v3.Listener/X"
	for _, tc := range []struct {
		profile string
		want    []string // the requests the new watch sends to the fallback
	}{
		{ProfileGRPCCore, []string{"RDS [R1]"}},
		{ProfileGRPCJava, []string{"LDS [L1 " + other + "]", "RDS [R1]"}},
	} {
		t.Run(tc.profile, func(t *testing.T) {
			prof, _ := ProfileByName(tc.profile)
			primary, fallback := ServerConfig{URI: "primary"}, ServerConfig{URI: "fallback"}
			c, err := New(Config{Profile: prof, AutoDone: true, Bootstrap: Bootstrap{
				Servers:     []ServerConfig{primary, fallback},
				Authorities: []Authority{{Name: "other.example", Servers: []ServerConfig{fallback}}},
			}})
			if err != nil {
				t.Fatal(err)
			}
			connect := func(s int) {
				c.ConnectivityChanged(0, s, Ready)
				c.StreamOpened(0, s)
				c.SendDone(0, s)
			}
			// L1 is cached from the primary; the other authority's watch
			// runs an ADS call on the fallback server.
			c.Watch(0, LDS, "L1", 1)
			connect(0)
			c.DecodedResponseReceived(0, 0, listenerResponse("1", "L1"))
			c.Watch(0, LDS, other, 2)
			connect(1)
			// The primary's stream ends after its response; its retry fails
			// before any response: a connectivity error, and L1 is cached,
			// so no fallback yet.
			c.StreamFailed(0, 0, Status{Code: codes.Unavailable, Message: "max connection age"})
			c.TimerFired(2*time.Second, TimerID{Kind: RetryTimer, Server: 0})
			c.StreamFailed(2*time.Second, 0, Status{Code: codes.Unavailable, Message: "connection refused"})
			var got []string
			for _, e := range c.Watch(2*time.Second, RDS, "R1", 3) {
				if e.Kind == Send && e.Server == 1 {
					got = append(got, fmt.Sprintf("%v [%s]", e.Request.Type, strings.Join(e.Request.Names, " ")))
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("the new watch sent %q to the fallback, want %q", got, tc.want)
			}
		})
	}
}

// TestFidelity_JavaTimerStateIsPerResource: grpc-java never times a name
// again once it has data or was found absent, on any channel; a name
// NACKed while uncached is timed again on the next stream. C-core times a
// does-not-exist name again on every new ADS call. Reference: grpc-java
// XdsClientImpl.ResourceSubscriber.restartTimer; C-core
// AdsCall::ResourceTimer::MaybeStartTimer.
func TestFidelity_JavaTimerStateIsPerResource(t *testing.T) {
	runTranscript(t, "fidelity/java_timer_state_per_resource.txt")
}
