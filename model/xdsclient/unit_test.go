package xdsclient

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TestProfileFieldsRoundTrip checks that every field can be read and set by
// its snake_case name, as the scenario layer's profile.<field> keys need.
func TestProfileFieldsRoundTrip(t *testing.T) {
	names := FieldNames()
	if len(names) < 20 {
		t.Fatalf("FieldNames() = %v: too few", names)
	}
	for _, name := range []string{"grpc-go", "grpc-java", "grpc-core", "spec"} {
		p, err := ProfileByName(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		for _, f := range names {
			v, err := p.Field(f)
			if err != nil {
				t.Fatalf("%s.Field(%q): %v", name, f, err)
			}
			q := p
			if err := q.Set(f, v); err != nil {
				t.Errorf("%s.Set(%q, %q): %v", name, f, v, err)
			}
			if q != p {
				t.Errorf("%s: Set(%q, Field(%q)) changed the profile", name, f, f)
			}
		}
	}
	p := GRPCGo()
	for _, bad := range [][2]string{{"no_such_field", "1"}, {"a88_data_errors", "maybe"}, {"resource_timeout", "-1s"}, {"nack_version", "newest"}} {
		if err := p.Set(bad[0], bad[1]); err == nil {
			t.Errorf("Set(%q, %q) succeeded", bad[0], bad[1])
		}
	}
	if err := p.Set("resource_timeout", "30s"); err != nil || p.ResourceTimeout != 30*time.Second {
		t.Errorf("Set(resource_timeout, 30s) = %v, timeout %v", err, p.ResourceTimeout)
	}
}

// TestProfilesDifferAsDocumented pins the profile table of
// docs/model-fidelity.md.
func TestProfilesDifferAsDocumented(t *testing.T) {
	g, j, c := GRPCGo(), GRPCJava(), GRPCCore()
	checks := []struct {
		what string
		ok   bool
	}{
		{"wait_for_ready: go no, java no, core yes", !g.ADSWaitForReady && !j.ADSWaitForReady && c.ADSWaitForReady},
		{"restart delay: go zero, java/core jittered", g.RestartDelayAfterResponse == RestartZero && j.RestartDelayAfterResponse == RestartJitteredInitial && c.RestartDelayAfterResponse == RestartJitteredInitial},
		{"NACK version: core new version", g.NACKVersion == NACKVersionLastACKed && j.NACKVersion == NACKVersionLastACKed && c.NACKVersion == NACKVersionIfAnyValid},
		{"node: java every request", !g.NodeInEveryRequest && j.NodeInEveryRequest && !c.NodeInEveryRequest},
		{"restart after a good stream: spec at once, first backoff exactly 1 s (A57 reset, connection-backoff.md)", Spec().RestartDelayAfterResponse == RestartZero && Spec().BackoffFirstUnjittered},
		{"new watch: go active, java authority, core and spec all channels", g.NewWatchChannels == WatchChannelsActive && j.NewWatchChannels == WatchChannelsAuthority && c.NewWatchChannels == WatchChannelsAll && Spec().NewWatchChannels == WatchChannelsAll},
		{"connectivity errors: go any channel, java/core/spec the active one", !g.ConnectivityErrorsFromActiveOnly && j.ConnectivityErrorsFromActiveOnly && c.ConnectivityErrorsFromActiveOnly && Spec().ConnectivityErrorsFromActiveOnly},
		{"watch-time fallback: go none, java/spec all resources, core all resources where a new ADS call starts", g.WatchTimeFallback == WatchFallbackNone && j.WatchTimeFallback == WatchFallbackAll && c.WatchTimeFallback == WatchFallbackNewCall && Spec().WatchTimeFallback == WatchFallbackAll},
		{"timer scope: go per channel, java per resource, core per call", g.ResourceTimerScope == TimerScopeChannel && j.ResourceTimerScope == TimerScopeResource && c.ResourceTimerScope == TimerScopeCall && Spec().ResourceTimerScope == TimerScopeChannel},
		{"A88: none of the shipped clients", !g.A88DataErrors && !j.A88DataErrors && !c.A88DataErrors && Spec().A88DataErrors},
		{"ADS flow control: all four", g.ADSFlowControl && j.ADSFlowControl && c.ADSFlowControl && Spec().ADSFlowControl},
		{"unknown-type stall: go only (grpc-go channel.go onResponse)", g.UnknownTypeStallsReads && !j.UnknownTypeStallsReads && !c.UnknownTypeStallsReads && !Spec().UnknownTypeStallsReads},
		{"server_failure: go/java every failure, core/spec healthy to unhealthy", g.ServerFailureMetric == FailureMetricEvery && j.ServerFailureMetric == FailureMetricEvery && c.ServerFailureMetric == FailureMetricHealthy && Spec().ServerFailureMetric == FailureMetricHealthy},
		{"connected: go/spec from the first stream, java/core from the channel", g.ConnectedMetricInitial == ConnectedFirstStream && j.ConnectedMetricInitial == ConnectedChannel && c.ConnectedMetricInitial == ConnectedChannel && Spec().ConnectedMetricInitial == ConnectedFirstStream},
		{"defaults: 15 s / 30 s, 1 s × 1.6, 0.2, 120 s", g.ResourceTimeout == 15*time.Second && g.ResourceTimeoutTransient == 30*time.Second && g.BackoffInitial == time.Second && g.BackoffMultiplier == 1.6 && g.BackoffJitter == 0.2 && g.BackoffMax == 120*time.Second},
	}
	for _, ch := range checks {
		if !ch.ok {
			t.Errorf("profile table: %s", ch.what)
		}
	}
}

// TestBackoffSequence checks min(1 s × 1.6^n, 120 s) with the cap before
// the jitter (grpc-go internal/xds/clients/internal/backoff
// exponential.Backoff).
func TestBackoffSequence(t *testing.T) {
	c, _ := New(Config{Bootstrap: Bootstrap{Servers: []ServerConfig{{URI: "a"}}}, Profile: GRPCGo(), Rand: constRand(0.999999)})
	if d := c.backoff(0); d != time.Second {
		t.Errorf("grpc-go Backoff(0) = %v, want exactly 1s", d)
	}
	if d := c.backoff(1); d < 1919*time.Millisecond || d > 1920*time.Millisecond {
		t.Errorf("Backoff(1) at jitter +0.2 = %v, want ~1.92s", d)
	}
	if d := c.backoff(30); d < 143*time.Second || d > 144*time.Second {
		t.Errorf("Backoff(30) = %v, want ~144s (cap 120 s, then +20%%)", d)
	}
}

func anyOf(t *testing.T, m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestValidationRules checks that each named rule fires on the resource it
// describes and that valid resources pass (grpc-go xdsresource unmarshal_*).
func TestValidationRules(t *testing.T) {
	valid := []struct {
		typ ResourceType
		m   proto.Message
	}{
		{LDS, testListener("L", "R", "", false, false)},
		{LDS, testListener("L", "", "C", false, false)},
		{RDS, testRoute("R", "C", false, false)},
		{RDS, testRoute("R", "C", false, true)}, // no virtual hosts: valid in grpc-go
		{CDS, testCluster("C", "", "", "")},
		{CDS, testCluster("C", "", "", "RING_HASH")},
		{EDS, testEndpoints("E", []string{"1.1.1.1:1", "1.1.1.2:1"}, false)},
	}
	for _, v := range valid {
		if d := Decode(v.typ, anyOf(t, v.m)); d.Err != nil {
			t.Errorf("%v %v: unexpected %v", v.typ, v.m, d.Err)
		}
	}
	lisNoAddr := &listenerpb.Listener{Name: "L"}
	lisServer := &listenerpb.Listener{Name: "L", Address: &corepb.Address{Address: &corepb.Address_SocketAddress{SocketAddress: &corepb.SocketAddress{Address: "0.0.0.0"}}},
		DefaultFilterChain: &listenerpb.FilterChain{}}
	rtBadRegex := testRoute("R", "C", false, false)
	rtBadRegex.VirtualHosts[0].Routes[0].Match.PathSpecifier = &routepb.RouteMatch_SafeRegex{SafeRegex: matcherRegexValue()}
	rtNoMatch := testRoute("R", "C", false, false)
	rtNoMatch.VirtualHosts[0].Routes[0].Match = nil
	rtRetry := testRoute("R", "C", false, false)
	rtRetry.VirtualHosts[0].RetryPolicy = &routepb.RetryPolicy{NumRetries: wrapperspb.UInt32(0)}
	clLogical := testCluster("C", "", "LOGICAL_DNS", "")
	clNoADS := testCluster("C", "", "", "")
	clNoADS.EdsClusterConfig.EdsConfig = &corepb.ConfigSource{}
	clLRS := testCluster("C", "", "", "")
	clLRS.LrsServer = &corepb.ConfigSource{ConfigSourceSpecifier: &corepb.ConfigSource_Ads{}}
	edsNoLoc := testEndpoints("E", []string{"1.1.1.1:1"}, false)
	edsNoLoc.Endpoints[0].Locality = nil
	edsDupAddr := testEndpoints("E", []string{"1.1.1.1:1", "1.1.1.1:1"}, false)
	edsDupLoc := testEndpoints("E", []string{"1.1.1.1:1"}, false)
	edsDupLoc.Endpoints = append(edsDupLoc.Endpoints, testEndpoints("E", []string{"1.1.1.2:1"}, false).Endpoints...)
	edsGap := testEndpoints("E", []string{"1.1.1.1:1"}, false)
	edsGap.Endpoints[0].Priority = 1
	cases := []struct {
		typ  ResourceType
		m    proto.Message
		rule Rule
	}{
		{LDS, lisNoAddr, RuleLDSNoAPIListenerOrAddress},
		{LDS, testListener("L", "R", "", true, false), RuleLDSNoFilters},
		{LDS, testListener("L", "", "", false, false), RuleLDSEmptyRouteConfigName},
		{RDS, rtBadRegex, RuleRDSInvalidRegex},
		{RDS, rtNoMatch, RuleRDSRouteNoMatch},
		{RDS, testRoute("R", "C", true, false), RuleRDSWeightedClusters},
		{RDS, rtRetry, RuleRDSRetryPolicy},
		{CDS, testCluster("C", "", "STATIC", ""), RuleCDSDiscoveryType},
		{CDS, testCluster("C", "", "", "MAGLEV"), RuleCDSLBPolicy},
		{CDS, clLogical, RuleCDSLogicalDNS},
		{CDS, clNoADS, RuleCDSEDSConfigSource},
		{CDS, clLRS, RuleCDSLRSServer},
		{EDS, testEndpoints("E", []string{"1.1.1.1:1"}, true), RuleEDSEndpointZeroWeight},
		{EDS, edsNoLoc, RuleEDSLocalityMissing},
		{EDS, edsDupAddr, RuleEDSDuplicateAddress},
		{EDS, edsDupLoc, RuleEDSDuplicateLocality},
		{EDS, edsGap, RuleEDSPriorityGap},
	}
	for _, tc := range cases {
		d := Decode(tc.typ, anyOf(t, tc.m))
		if err := d.ErrIn(FiltersGRPCGo); err == nil || err.Rule != tc.rule {
			t.Errorf("%v %s: got %v, want rule %s", tc.typ, d.Name, err, tc.rule)
		}
	}
	if d := Decode(LDS, anyOf(t, lisServer)); d.Err != nil {
		t.Errorf("server-side listener: %v", d.Err)
	}
	// A resource of the wrong type is a top-level error without a name.
	if d := Decode(LDS, anyOf(t, &clusterpb.Cluster{Name: "C"})); d.Err == nil || d.Err.Rule != RuleTopLevel || d.Name != "" {
		t.Errorf("wrong type: %+v", d)
	}
}

// TestDecodeResponseAndProto round-trips real envoy protos: a
// DiscoveryResponse with TP3 resource_errors in, a DiscoveryRequest out.
func TestDecodeResponseAndProto(t *testing.T) {
	resp := &discoverypb.DiscoveryResponse{
		VersionInfo: "3", Nonce: "x", TypeUrl: EndpointTypeURL,
		Resources: []*anypb.Any{anyOf(t, testEndpoints("E1", []string{"1.1.1.1:1"}, false))},
		ResourceErrors: []*discoverypb.ResourceError{{
			ResourceName: &discoverypb.ResourceName{Name: "E2"},
			ErrorDetail:  statusProto(codes.NotFound, "gone"),
		}},
	}
	d := DecodeResponse(resp)
	if d.Version != "3" || d.Nonce != "x" || len(d.Resources) != 1 || d.Resources[0].Name != "E1" || d.Resources[0].Err != nil {
		t.Fatalf("DecodeResponse = %+v", d)
	}
	if len(d.ResourceErrors) != 1 || d.ResourceErrors[0].Name != "E2" || d.ResourceErrors[0].Status.Code != codes.NotFound {
		t.Fatalf("resource errors = %+v", d.ResourceErrors)
	}
	node := &corepb.Node{Id: "n"}
	r := Request{Type: CDS, Version: "1", Nonce: "a", Names: []string{"C1"}, Node: true, ErrorDetail: &Status{Code: codes.InvalidArgument, Message: "bad"}}
	p := r.Proto(node)
	if p.GetTypeUrl() != ClusterTypeURL || p.GetVersionInfo() != "1" || p.GetResponseNonce() != "a" || p.GetNode() != node ||
		len(p.GetResourceNames()) != 1 || p.GetErrorDetail().GetCode() != int32(codes.InvalidArgument) {
		t.Fatalf("Proto = %v", p)
	}
}

// watched is a resource a test's client watches.
type watched struct {
	typ  ResourceType
	name string
}

// streamingClient is a grpc-go client of xds:///svc (node "n") on one
// server, watching ws (watcher i+1 for ws[i]), its channel READY and its
// stream open at time 0.
func streamingClient(t *testing.T, ws ...watched) *Client {
	t.Helper()
	c, err := New(Config{Target: "xds:///svc", Bootstrap: Bootstrap{Servers: []ServerConfig{{URI: "a"}}, Node: &corepb.Node{Id: "n"}}, Profile: GRPCGo()})
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range ws {
		c.Watch(0, w.typ, w.name, WatcherID(i+1))
	}
	c.ConnectivityChanged(0, 0, Ready)
	c.StreamOpened(0, 0)
	return c
}

// TestAClientKeepsNothingOfADecodedResponse: a caller may decode every
// response into one DecodedResponse (DecodeResponseInto), as the fleet
// does; what a client took from one response stays when the next is
// decoded over it.
func TestAClientKeepsNothingOfADecodedResponse(t *testing.T) {
	c := streamingClient(t, watched{EDS, "E1"}, watched{EDS, "E2"})
	var buf DecodedResponse
	DecodeResponseInto(&buf, &discoverypb.DiscoveryResponse{VersionInfo: "v1", Nonce: "1", TypeUrl: EndpointTypeURL,
		Resources: []*anypb.Any{anyOf(t, testEndpoints("E1", []string{"1.1.1.1:1"}, false))}}, Decode)
	c.DecodedResponseReceived(time.Second, 0, &buf)
	DecodeResponseInto(&buf, &discoverypb.DiscoveryResponse{VersionInfo: "v2", Nonce: "2", TypeUrl: EndpointTypeURL,
		Resources: []*anypb.Any{anyOf(t, testEndpoints("E2", []string{"2.2.2.2:2"}, false))}}, Decode)
	if buf.Resources[0].Name != "E2" {
		t.Fatalf("the buffer was not reused: %+v", buf)
	}
	for _, rs := range c.Resources() {
		if rs.Name == "E1" && (rs.Version != "v1" || rs.Resource == nil || rs.Resource.Name != "E1") {
			t.Errorf("E1 after the buffer was decoded over: version %q, resource %+v", rs.Version, rs.Resource)
		}
	}
}

// TestCSDSDump checks the envoy service/status/v3 dump (gRFC A40, A71
// client_scope).
func TestCSDSDump(t *testing.T) {
	c := streamingClient(t, watched{LDS, "L1"}, watched{CDS, "C1"})
	c.ResponseReceived(2*time.Second, 0, &discoverypb.DiscoveryResponse{VersionInfo: "v1", Nonce: "1", TypeUrl: ListenerTypeURL,
		Resources: []*anypb.Any{anyOf(t, testListener("L1", "R1", "", false, false))}})
	cc := c.CSDS()
	if cc.GetClientScope() != "xds:///svc" || cc.GetNode().GetId() != "n" || len(cc.GetGenericXdsConfigs()) != 2 {
		t.Fatalf("CSDS = %v", cc)
	}
	l, cl := cc.GetGenericXdsConfigs()[0], cc.GetGenericXdsConfigs()[1]
	if l.GetName() != "L1" || l.GetClientStatus() != adminpb.ClientResourceStatus_ACKED || l.GetVersionInfo() != "v1" ||
		l.GetXdsConfig() == nil || l.GetLastUpdated().AsTime().Sub(time.Unix(0, 0)) != 2*time.Second {
		t.Errorf("L1 = %v", l)
	}
	if cl.GetName() != "C1" || cl.GetClientStatus() != adminpb.ClientResourceStatus_REQUESTED {
		t.Errorf("C1 = %v", cl)
	}
}

// TestLegacyMapping pins the grpc-go #7977 mapping of A88 callbacks onto
// OnUpdate / OnError / OnResourceDoesNotExist.
func TestLegacyMapping(t *testing.T) {
	d := MustDecoded(EDS, &endpointpb.ClusterLoadAssignment{ClusterName: "E"})
	for _, tc := range []struct {
		n    Notification
		want LegacyCallback
	}{
		{Notification{Kind: ResourceChanged, Resource: d}, OnUpdate},
		{Notification{Kind: ResourceChanged, Status: Status{Code: codes.NotFound}, Cause: CauseDeleted}, OnResourceDoesNotExist},
		{Notification{Kind: ResourceChanged, Status: Status{Code: codes.NotFound}, Cause: CauseTimeout}, OnResourceDoesNotExist},
		{Notification{Kind: ResourceChanged, Status: Status{Code: codes.Unavailable}, Cause: CauseTimeout}, OnError},
		{Notification{Kind: ResourceChanged, Status: Status{Code: codes.Unavailable}, Cause: CauseConnectivity}, OnError},
		{Notification{Kind: AmbientError, Status: Status{Code: codes.NotFound}, Cause: CauseDeleted}, OnError},
	} {
		if got := tc.n.Legacy(); got != tc.want {
			t.Errorf("%+v.Legacy() = %v, want %v", tc.n, got, tc.want)
		}
	}
}

// TestInputInThePastPanics asserts the invariant that an event never runs
// in the past (docs/architecture.md, "Style").
func TestInputInThePastPanics(t *testing.T) {
	c, _ := New(Config{Bootstrap: Bootstrap{Servers: []ServerConfig{{URI: "a"}}}, Profile: GRPCGo()})
	c.Watch(time.Second, LDS, "L1", 1)
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "before the previous input") {
			t.Errorf("recover() = %v", r)
		}
	}()
	c.Watch(0, LDS, "L2", 2)
}

// TestXdstpAuthorities checks that xdstp:// names use their authority's
// servers (gRFC A47) and that a name with an unknown authority fails.
func TestXdstpAuthorities(t *testing.T) {
	c, err := New(Config{Bootstrap: Bootstrap{
		Servers:     []ServerConfig{{URI: "default"}},
		Authorities: []Authority{{Name: "auth.example", Servers: []ServerConfig{{URI: "auth-server"}}}},
	}, Profile: GRPCGo()})
	if err != nil {
		t.Fatal(err)
	}
	effs := c.Watch(0, LDS, "xdstp://auth.example/envoy.config.listener.v3.Listener/L1", 1)
	if len(effs) != 1 || effs[0].Kind != OpenStream || c.Servers()[effs[0].Server].URI != "auth-server" {
		t.Fatalf("effects = %+v", effs)
	}
	effs = c.Watch(0, LDS, "xdstp://other/envoy.config.listener.v3.Listener/L1", 2)
	if len(effs) != 1 || effs[0].Kind != Notify || effs[0].Notification.Status.Code != codes.InvalidArgument {
		t.Fatalf("unknown authority effects = %+v", effs)
	}
}

// TestUnknownTypeURLNeitherACKedNorNACKed mirrors grpc-go ads_stream.go
// recv (ErrorTypeResourceTypeUnsupported): no request goes out, but the
// response still counts as one for gRFC A57 (a later failure is not an
// error). With unknown_type_stalls_reads (grpc-go channel.go onResponse)
// the stream also stops reading: the failure is never seen until the
// channel closes.
func TestUnknownTypeURLNeitherACKedNorNACKed(t *testing.T) {
	for _, tc := range []struct {
		stall bool
	}{{false}, {true}} {
		p := GRPCGo()
		p.UnknownTypeStallsReads = tc.stall
		c, _ := New(Config{Bootstrap: Bootstrap{Servers: []ServerConfig{{URI: "a"}}}, Profile: p})
		c.Watch(0, LDS, "L1", 1)
		c.ConnectivityChanged(0, 0, Ready)
		c.StreamOpened(0, 0)
		effs := c.ResponseReceived(0, 0, &discoverypb.DiscoveryResponse{TypeUrl: "type.googleapis.com/envoy.config.Unknown", VersionInfo: "1", Nonce: "a"})
		if !tc.stall {
			if len(effs) != 0 {
				t.Fatalf("unknown type URL: effects %+v", effs)
			}
			effs = c.StreamFailed(0, 0, Status{Code: codes.Unavailable})
			if len(effs) != 1 || effs[0].Kind != OpenStream {
				t.Fatalf("failure after an unknown-type response: %+v, want an immediate restart and no watcher error", effs)
			}
			continue
		}
		if len(effs) != 1 || effs[0].Kind != PauseRead || !c.ReadPaused(0) {
			t.Fatalf("stall: unknown type URL: effects %+v, want PauseRead", effs)
		}
		if effs := c.StreamFailed(0, 0, Status{Code: codes.Unavailable}); len(effs) != 0 {
			t.Fatalf("stall: a stream failure while stalled: %+v, want nothing (recv never returns from fc.wait)", effs)
		}
		if effs := c.Unwatch(0, LDS, "L1", 1); len(effs) == 0 || effs[len(effs)-1].Kind != CloseStream || c.ReadPaused(0) {
			t.Fatalf("stall: last unwatch: %+v, paused %v; want CloseStream ending the stall", effs, c.ReadPaused(0))
		}
	}
}

// The bootstrap spellings of server_features (gRFC A53, A88; grpc-java
// BootstrapperImpl.java:66 for resource_timer_is_transient_error) go both
// ways: each name sets its feature and comes back from Names.
func TestServerFeatureNamesRoundTrip(t *testing.T) {
	for _, name := range ServerFeatureNames() {
		var f ServerFeatures
		if !f.Set(name) {
			t.Errorf("Set(%q) = false", name)
		}
		if got := f.Names(); len(got) != 1 || got[0] != name {
			t.Errorf("after Set(%q), Names() = %v", name, got)
		}
	}
	var f ServerFeatures
	if f.Set("ignore_resource_deletions") || len(f.Names()) != 0 {
		t.Error("an unknown feature name was accepted")
	}
	if got := (ServerFeatures{IgnoreResourceDeletion: true, ResourceTimerIsTransientError: true}).Names(); len(got) != 2 {
		t.Errorf("Names() = %v, want two features", got)
	}
}

// TestSharedEffectsAreTheClientsOwn checks Config.Effects: clients that
// share one buffer return the same effects as clients with their own, and
// write them into that buffer, not one of their own.
func TestSharedEffectsAreTheClientsOwn(t *testing.T) {
	boot := Bootstrap{Servers: []ServerConfig{{URI: "a"}, {URI: "b"}}}
	var shared Effects
	own := []*Client{}
	share := []*Client{}
	for i := range 2 {
		a, err := New(Config{Target: fmt.Sprint(i), Bootstrap: boot, Profile: GRPCGo(), AutoDone: true})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := New(Config{Target: fmt.Sprint(i), Bootstrap: boot, Profile: GRPCGo(), AutoDone: true, Effects: &shared})
		own, share = append(own, a), append(share, b)
	}
	steps := []func(c *Client) []Effect{
		func(c *Client) []Effect { return c.Watch(0, LDS, "L1", 1) },
		func(c *Client) []Effect { return c.StreamFailed(time.Second, 0, Status{Code: 14, Message: "down"}) },
		func(c *Client) []Effect { return c.Watch(2*time.Second, RDS, "R1", 1) },
	}
	for si, step := range steps {
		for ci := range own {
			want := slices.Clone(step(own[ci]))
			got := step(share[ci])
			if !reflect.DeepEqual(got, want) {
				t.Errorf("step %d, client %d: shared effects %v, own %v", si, ci, got, want)
			}
			if share[ci].fx != &shared || own[ci].fx == own[1-ci].fx {
				t.Errorf("step %d, client %d keeps a buffer of its own, or shares one it was not given", si, ci)
			}
		}
	}
	// Reference: issue 18 ("one shared effect buffer").
}

// TestValidateChecksEveryEnumField keeps Validate's list of enum fields,
// read directly rather than by reflection, in step with enumValues.
func TestValidateChecksEveryEnumField(t *testing.T) {
	for name := range enumValues {
		p := GRPCGo()
		f, _ := p.field(name)
		f.SetString("bogus")
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("Validate with %s = bogus: %v", name, err)
		}
	}
}

// TestHTTPFiltersByImplementation: which client Listeners each
// implementation accepts depends on the HTTP filters it registers (gRFC
// A39). Only C-core (and the gRFCs) have A55's stateful_session; nobody
// runs rbac on a client; an optional filter a client lacks is skipped.
// References: grpc-go unmarshal_lds.go processHTTPFilters; grpc-java
// XdsListenerResource.parseHttpFilter and FilterRegistry.getDefaultRegistry;
// C-core xds_listener_parser.cc HttpConnectionManagerParse and
// XdsHttpFilterRegistry.
func TestHTTPFiltersByImplementation(t *testing.T) {
	sets := []FilterSet{FiltersGRPCGo, FiltersGRPCJava, FiltersGRPCCore, FiltersSpec}
	const ok, nack = "", RuleLDSUnknownFilter
	cases := []struct {
		filters string
		want    [4]Rule // by set, in the order of sets
	}{
		{"", [4]Rule{ok, ok, ok, ok}},
		{"session", [4]Rule{nack, nack, ok, ok}},
		{"session?", [4]Rule{ok, ok, ok, ok}},
		{"rbac", [4]Rule{nack, nack, nack, nack}},
		{"rbac?", [4]Rule{ok, ok, ok, ok}},
		{"fault", [4]Rule{ok, ok, ok, ok}},
		{"gcp_authn", [4]Rule{nack, ok, ok, ok}},
		{"gcp_authn?,session?", [4]Rule{ok, ok, ok, ok}},
	}
	for _, tc := range cases {
		lis := testListener("L", "R", "", false, false)
		if tc.filters != "" {
			for _, f := range strings.Split(tc.filters, ",") {
				kind, optional := strings.CutSuffix(f, "?")
				if err := addTestFilter(lis, kind, optional); err != nil {
					t.Fatal(err)
				}
			}
		}
		d := Decode(LDS, anyOf(t, lis))
		// Err is set exactly when every implementation rejects.
		if all := !slices.Contains(tc.want[:], ok); (d.Err != nil) != all {
			t.Errorf("%q: Err = %v, want it set only when every implementation rejects", tc.filters, d.Err)
		}
		for i, fs := range sets {
			var got Rule
			if err := d.ErrIn(fs); err != nil {
				got = err.Rule
			}
			if got != tc.want[i] {
				t.Errorf("filters %q in %v: got rule %q (%v), want %q", tc.filters, fs, got, d.ErrIn(fs), tc.want[i])
			}
		}
	}
}

// TestNewRefusesMoreServersThanAnAuthorityHolds checks that a bootstrap
// whose top-level list or an authority's names more than MaxServers
// servers is refused rather than run with servers past the 64th never
// held (an authority keeps its held servers as a 64-bit set).
func TestNewRefusesMoreServersThanAnAuthorityHolds(t *testing.T) {
	servers := func(n int) []ServerConfig {
		s := make([]ServerConfig, n)
		for i := range s {
			s[i] = ServerConfig{URI: fmt.Sprintf("cp%d", i)}
		}
		return s
	}
	for _, tc := range []struct {
		name string
		boot Bootstrap
		want string // "" for no error
	}{
		{"64 servers", Bootstrap{Servers: servers(64)}, ""},
		{"65 servers", Bootstrap{Servers: servers(65)}, `xdsclient: target "t": bootstrap has 65 xds_servers, at most 64 are modelled`},
		{"an authority of 65", Bootstrap{Servers: servers(1), Authorities: []Authority{{Name: "a", Servers: servers(65)}}},
			`xdsclient: target "t": authority "a" has 65 xds_servers, at most 64 are modelled`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Config{Target: "t", Bootstrap: tc.boot, Profile: GRPCGo()})
			if got := fmt.Sprint(err); (tc.want == "" && err != nil) || (tc.want != "" && got != tc.want) {
				t.Errorf("New: %v, want %q", err, tc.want)
			}
		})
	}
}

// TestAnEntryInTheRoomOfARemovedOneStartsAfresh: a client keeps its first
// cache entries' states in the allocation it is made in, and an entry
// removed leaves its room to the next; nothing of the old entry (its
// resource, version, watchers) may show through. Six names go past the
// four states the allocation holds.
func TestAnEntryInTheRoomOfARemovedOneStartsAfresh(t *testing.T) {
	names := []string{"E1", "E2", "E3", "E4", "E5", "E6"}
	var ws []watched
	for _, n := range names {
		ws = append(ws, watched{EDS, n})
	}
	c := streamingClient(t, ws...)
	var res []*anypb.Any
	for _, n := range names {
		res = append(res, anyOf(t, testEndpoints(n, []string{"1.1.1.1:1"}, false)))
	}
	c.ResponseReceived(time.Second, 0, &discoverypb.DiscoveryResponse{VersionInfo: "v1", Nonce: "1", TypeUrl: EndpointTypeURL, Resources: res})
	for i, n := range names {
		c.Unwatch(2*time.Second, EDS, n, WatcherID(i+1))
	}
	for i, n := range []string{"F1", "F2", "F3", "F4", "F5"} {
		effs := c.Watch(3*time.Second, EDS, n, WatcherID(10+i))
		for _, e := range effs {
			if e.Kind == Notify {
				t.Errorf("watching %s notified %+v: the entry took something of a removed one", n, e.Notification)
			}
		}
	}
	got := c.Resources()
	if len(got) != 5 {
		t.Fatalf("%d entries, want the 5 new ones: %+v", len(got), got)
	}
	for _, rs := range got {
		if rs.Status != adminpb.ClientResourceStatus_REQUESTED || rs.Version != "" || rs.Resource != nil || rs.Updated || rs.Error != nil {
			t.Errorf("%s: %+v, want a new entry, only requested", rs.Name, rs)
		}
	}
	// Each new entry has its one watcher: unwatching it removes the entry.
	for i, n := range []string{"F1", "F2", "F3", "F4", "F5"} {
		c.Unwatch(4*time.Second, EDS, n, WatcherID(10+i))
	}
	if got := c.Resources(); len(got) != 0 {
		t.Errorf("after unwatching every name: %+v", got)
	}
}

// TestARequestsNamesStayAsSent: the names a Request carries are a
// snapshot the client never changes, the first one (which lies in the
// client's own allocation) included: subscribing and unsubscribing names
// afterwards leaves every request already sent as it was.
func TestARequestsNamesStayAsSent(t *testing.T) {
	c := streamingClient(t, watched{LDS, "L1"})
	var sent [][]string
	var want [][]string
	record := func(effs []Effect) {
		for _, e := range effs {
			if e.Kind == Send && e.Request.Type == EDS {
				sent = append(sent, e.Request.Names)
				want = append(want, slices.Clone(e.Request.Names))
				c.SendDone(time.Second, e.Server)
			}
		}
	}
	record(c.Watch(time.Second, EDS, "E1", 1))
	record(c.Watch(time.Second, EDS, "E2", 2))
	record(c.Unwatch(time.Second, EDS, "E1", 1))
	record(c.Unwatch(time.Second, EDS, "E2", 2))
	record(c.Watch(time.Second, EDS, "E3", 3))
	if len(sent) != 5 {
		t.Fatalf("%d EDS requests sent, want 5: %v", len(sent), sent)
	}
	for i := range sent {
		if !slices.Equal(sent[i], want[i]) {
			t.Errorf("request %d names %v, sent as %v", i, sent[i], want[i])
		}
	}
	if !slices.Equal(want[0], []string{"E1"}) || !slices.Equal(want[4], []string{"E3"}) {
		t.Errorf("requests sent %v", want)
	}
}

// TestAClientBlockFitsItsSizeClass: a fleet holds a million clients'
// blocks; one byte more than 1 272 (the 1 280-byte size class less the
// allocation header of an object with pointers) would put each in the
// next class, 128 bytes more a client.
func TestAClientBlockFitsItsSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(clientBlock{}); n > 1272 {
		t.Errorf("clientBlock is %d bytes, more than the 1 272 its size class holds", n)
	}
}

// TestAClientIsItsBlocksFirstField: Client.Hint asks for the block from
// the client's own address, which holds only if every client is the first
// field of the block New allocates.
func TestAClientIsItsBlocksFirstField(t *testing.T) {
	if off := unsafe.Offsetof(clientBlock{}.c); off != 0 {
		t.Errorf("the Client is at byte %d of its block, not 0", off)
	}
	c, err := New(Config{Bootstrap: Bootstrap{Servers: []ServerConfig{{URI: "a"}}}, Profile: GRPCGo()})
	if err != nil {
		t.Fatal(err)
	}
	if unsafe.Pointer(c) != unsafe.Pointer(c.b) {
		t.Error("New's client is not at the start of its block")
	}
}
