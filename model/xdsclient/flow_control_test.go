package xdsclient

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
)

// Unit tests of ADS flow control that the transcripts cannot express: the
// machine's own guarantees, whatever the caller does. Reference: grpc-go
// ads_stream.go adsFlowControl, authority.go handleADSResourceUpdate,
// xdsclient.go channelState.adsResourceUpdate.

// flowClient is a connected client with the given bootstrap whose watches
// are all subscribed and whose first requests are written.
func flowClient(t *testing.T, boot Bootstrap, autoDone bool, watches ...string) *Client {
	t.Helper()
	c, err := New(Config{Bootstrap: boot, Profile: GRPCGo(), AutoDone: autoDone})
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range watches {
		c.Watch(0, LDS, name, WatcherID(i+1))
	}
	c.ConnectivityChanged(0, 0, Ready)
	c.StreamOpened(0, 0)
	return c
}

func listenerResponse(version string, names ...string) *DecodedResponse {
	resp := &DecodedResponse{TypeURL: ListenerTypeURL, Version: version, Nonce: "n" + version}
	for _, n := range names {
		resp.Resources = append(resp.Resources, MustDecoded(LDS, testListener(n, "R-"+version, "", false, false)))
	}
	return resp
}

func kinds(effs []Effect) (ks []EffectKind, dones []DoneHandle) {
	for _, e := range effs {
		ks = append(ks, e.Kind)
		if e.Kind == Notify && e.Notification.Done.Waits() {
			dones = append(dones, e.Notification.Done)
		}
	}
	return ks, dones
}

func last(effs []Effect) EffectKind {
	if len(effs) == 0 {
		return EffectKind(255)
	}
	return effs[len(effs)-1].Kind
}

// TestFlowControlCountsEveryInterestedAuthority: a channel shared by two
// authorities (same server config) delivers one response naming a resource
// of each; the read resumes only once both callbacks are done (grpc-go
// channelState.adsResourceUpdate authorityCnt, authority watcherCnt).
func TestFlowControlCountsEveryInterestedAuthority(t *testing.T) {
	srv := []ServerConfig{{URI: "cp"}}
	boot := Bootstrap{Servers: srv, Authorities: []Authority{{Name: "auth.example", Servers: srv}}}
	l2 := "xdstp://auth.example/envoy.config.listener.v3.Listener/L2"
	c := flowClient(t, boot, false, "L1", l2)
	if len(c.Servers()) != 1 {
		t.Fatalf("servers = %v, want one shared channel", c.Servers())
	}
	effs := c.DecodedResponseReceived(time.Second, 0, listenerResponse("1", "L1", l2))
	_, dones := kinds(effs)
	if len(dones) != 2 || dones[0] != dones[1] || last(effs) != PauseRead || !c.ReadPaused(0) {
		t.Fatalf("shared response: effects %+v; want two notifications with one handle, then PauseRead", effs)
	}
	if effs := c.WatcherDone(time.Second, dones[0]); len(effs) != 0 || !c.ReadPaused(0) {
		t.Fatalf("first done: %+v, paused %v; want still paused", effs, c.ReadPaused(0))
	}
	if effs := c.WatcherDone(time.Second, dones[1]); len(effs) != 1 || effs[0].Kind != ResumeRead || c.ReadPaused(0) {
		t.Fatalf("second done: %+v; want ResumeRead", effs)
	}
}

// TestFlowControlHandles checks the done handles a caller may misuse: a
// no-op handle, a repeated one after the read resumed, and one from before
// the channel closed and reopened are all ignored.
func TestFlowControlHandles(t *testing.T) {
	c := flowClient(t, Bootstrap{Servers: []ServerConfig{{URI: "cp"}}}, false, "L1")
	_, dones := kinds(c.DecodedResponseReceived(0, 0, listenerResponse("1", "L1")))
	if len(dones) != 1 {
		t.Fatalf("dones = %v", dones)
	}
	old := dones[0]
	for _, tc := range []struct {
		name string
		h    DoneHandle
		want []EffectKind
	}{
		{"no-op handle", DoneHandle{}, nil},
		{"wrong update", DoneHandle{Server: 0, Update: old.Update + 7}, nil},
		{"the handle", old, []EffectKind{ResumeRead}},
		{"the handle again", old, nil},
	} {
		ks, _ := kinds(c.WatcherDone(0, tc.h))
		if len(ks) != len(tc.want) || (len(ks) > 0 && ks[0] != tc.want[0]) {
			t.Errorf("%s: effects %v, want %v", tc.name, ks, tc.want)
		}
	}
	// Pause again, close the channel, reopen it: the old handle is stale.
	_, dones = kinds(c.DecodedResponseReceived(0, 0, listenerResponse("2", "L1")))
	c.Unwatch(0, LDS, "L1", 1)
	if c.ReadPaused(0) {
		t.Fatal("closing the channel did not end the pause")
	}
	c.Watch(0, LDS, "L1", 1)
	c.StreamOpened(0, 0)
	if effs := c.WatcherDone(0, dones[0]); len(effs) != 0 {
		t.Fatalf("handle from a closed channel: %+v", effs)
	}
}

// TestStreamFailureWhileReadPausedIsHeld: a caller that delivers a stream's
// end while reads are paused gets it applied when they resume, as grpc-go's
// recv sees the error only from the Recv after fc.wait() returns.
func TestStreamFailureWhileReadPausedIsHeld(t *testing.T) {
	c := flowClient(t, Bootstrap{Servers: []ServerConfig{{URI: "cp"}}}, false, "L1")
	_, dones := kinds(c.DecodedResponseReceived(0, 0, listenerResponse("1", "L1")))
	if effs := c.StreamFailed(time.Second, 0, Status{Code: codes.Unavailable, Message: "reset"}); len(effs) != 0 {
		t.Fatalf("failure while paused: %+v, want nothing yet", effs)
	}
	effs := c.WatcherDone(2*time.Second, dones[0])
	ks, _ := kinds(effs)
	// After a response, grpc-go restarts the stream at once (backoff.RunF
	// on ErrResetBackoff).
	if len(ks) != 2 || ks[0] != ResumeRead || ks[1] != OpenStream {
		t.Fatalf("done: effects %v, want [ResumeRead OpenStream]", ks)
	}
	if m := c.Metrics(0); m.ServerFailures != 0 || !m.Connected {
		t.Fatalf("metrics after a held failure after a response: %+v", m)
	}
}

// TestResponseWhileReadPausedPanics asserts the invariant that nothing is
// read while watchers hold the stream.
func TestResponseWhileReadPausedPanics(t *testing.T) {
	c := flowClient(t, Bootstrap{Servers: []ServerConfig{{URI: "cp"}}}, false, "L1")
	c.DecodedResponseReceived(0, 0, listenerResponse("1", "L1"))
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "while its reads are paused") {
			t.Errorf("recover() = %v", r)
		}
	}()
	c.DecodedResponseReceived(0, 0, listenerResponse("2", "L1"))
}

// TestAutoDoneNeverPausesReads: with Config.AutoDone every callback is done
// when emitted: no handle waits and no response pauses reads, so a caller
// needs no WatcherDone inputs.
func TestAutoDoneNeverPausesReads(t *testing.T) {
	c := flowClient(t, Bootstrap{Servers: []ServerConfig{{URI: "cp"}}}, true, "L1", "L2")
	for i, resp := range []*DecodedResponse{
		listenerResponse("1", "L1", "L2"),
		listenerResponse("2", "L1", "L2"),
		listenerResponse("3", "L1"), // deletes L2
	} {
		effs := c.DecodedResponseReceived(time.Duration(i)*time.Second, 0, resp)
		ks, dones := kinds(effs)
		for _, k := range ks {
			if k == PauseRead {
				t.Fatalf("response %d: PauseRead under AutoDone: %v", i, ks)
			}
		}
		if len(dones) != 0 || c.ReadPaused(0) {
			t.Fatalf("response %d: waiting handles %v, paused %v", i, dones, c.ReadPaused(0))
		}
	}
}
