package controlplane_test

// Each test here pins down one rule of go-control-plane's SotW ADS server
// (pkg/server/sotw/v3) and cache (pkg/cache/v3) as the simulated server
// applies it, and names where the rule comes from.

import (
	"errors"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"

	cp "github.com/xdssim/xdssim/model/controlplane"
	"github.com/xdssim/xdssim/model/xdsclient"
)

func twoServices() []cp.Service { return []cp.Service{svc("a", 2), svc("b", 2)} }

// TestFirstRequestIsAnswered: a request without a version gets the
// subscribed resources at once, sorted by name, with the type's version
// and the stream's first nonce.
// Mirrors go-control-plane linear.go CreateWatch (replyEvenIfEmpty).
func TestFirstRequestIsAnswered(t *testing.T) {
	for _, k := range cacheKinds {
		t.Run(k.String(), func(t *testing.T) {
			s := mustNew(t, cp.Config{Name: "primary", Cache: k, Services: twoServices()})
			c := newClient(t, s, 7)
			r := only(t, c.subscribe(cp.CDS, "b-cluster", "a-cluster"))
			if got := names(t, r); !slices.Equal(got, []string{"a-cluster", "b-cluster"}) {
				t.Errorf("names = %v", got)
			}
			m := r.Message
			if r.Stream != 7 || r.Type != cp.CDS || m.GetNonce() != "1" || m.GetVersionInfo() != s.Version(cp.CDS) ||
				m.GetTypeUrl() != cp.CDS.TypeURL() || m.GetControlPlane().GetIdentifier() != "primary" {
				t.Errorf("response = %v", summarize([]cp.Response{r}))
			}
			if v := s.Version(cp.CDS); v != "primary/1" {
				t.Errorf("version = %q, want primary/1", v)
			}
			// An empty subscription on a fresh type is answered too
			// (linear.go: always reply when version_info is empty): with
			// nothing by a LinearCache, with every resource of the type by a
			// SnapshotCache (simple.go createResponse: no names, no filter).
			r = only(t, c.subscribe(cp.EDS))
			want := 0
			if k.Snapshot() {
				want = 2
			}
			if len(r.Message.GetResources()) != want || r.Message.GetNonce() != "2" {
				t.Errorf("empty subscription: %v", summarize([]cp.Response{r}))
			}
		})
	}
}

// TestACKGetsNoResponse: once a client ACKs, nothing is sent until the
// version or the subscription changes.
// Mirrors go-control-plane sotw/v3 (a watch with nothing new stays open).
func TestACKGetsNoResponse(t *testing.T) {
	for _, k := range cacheKinds {
		t.Run(k.String(), func(t *testing.T) {
			s := mustNew(t, cp.Config{Name: "p", Cache: k, Services: twoServices()})
			c := newClient(t, s, 1)
			rs := c.subscribe(cp.LDS, "a", "b")
			if more := c.ackAll(rs); len(more) != 0 {
				t.Fatalf("ACK answered: %v", summarize(more))
			}
			// Sending the same request again (same nonce, already ACKed)
			// changes nothing and is not a second ACK.
			if more := c.send(c.request(cp.LDS, nil)); len(more) != 0 {
				t.Fatalf("repeat answered: %v", summarize(more))
			}
			tot := s.Totals()
			if tot.ACKs != 1 || tot.NACKs != 0 || tot.Requests != 3 || tot.Responses != 1 {
				t.Errorf("totals = %+v", tot)
			}
			st, _ := s.StreamState(1, cp.LDS)
			if st.ACKs != 1 || st.Version != s.Version(cp.LDS) || st.NACKed || !slices.Equal(st.Subscribed, []string{"a", "b"}) {
				t.Errorf("stream state = %+v", st)
			}
		})
	}
}

// TestStaleNonceIsIgnored: a request quoting an older nonce than the last
// response of its type is dropped: no response, no subscription change.
// Mirrors go-control-plane sotw/v3 xds.go ("Skipping request as nonce is
// stale"); xDS protocol, "Resource updates".
func TestStaleNonceIsIgnored(t *testing.T) {
	for _, k := range cacheKinds {
		t.Run(k.String(), func(t *testing.T) {
			s := mustNew(t, cp.Config{Name: "p", Cache: k, Services: twoServices()})
			c := newClient(t, s, 1)
			c.ackAll(c.subscribe(cp.EDS, "a-cluster"))
			// A push with nonce 2 is in flight when the client, still at
			// nonce 1, asks for b-cluster.
			push, err := s.ScaleEndpoints(0, "a", "", 5)
			if err != nil {
				t.Fatal(err)
			}
			only(t, push)
			c.names[cp.EDS] = []string{"a-cluster", "b-cluster"}
			if rs := c.send(c.request(cp.EDS, nil)); len(rs) != 0 {
				t.Fatalf("stale request answered: %v", summarize(rs))
			}
			if st, _ := s.StreamState(1, cp.EDS); !slices.Equal(st.Subscribed, []string{"a-cluster"}) {
				t.Errorf("stale request changed the subscription to %v", st.Subscribed)
			}
			if s.Totals().StaleRequests != 1 {
				t.Errorf("stale requests = %d", s.Totals().StaleRequests)
			}
			// With the push's nonce, the same request is applied: it ACKs the
			// push and gets b-cluster (only the new name, as EDS is not full
			// state in a LinearCache).
			c.receive(push[0])
			r := only(t, c.send(c.request(cp.EDS, nil)))
			want := []string{"b-cluster"}
			if k.Snapshot() {
				want = []string{"a-cluster", "b-cluster"} // a snapshot resends the type
			}
			if got := names(t, r); !slices.Equal(got, want) {
				t.Errorf("names = %v, want %v", got, want)
			}
		})
	}
}

// TestNACKIsHeldOrResent: a request quoting the last nonce with
// error_detail is a NACK; the server records it and follows its policy,
// whatever the cache. Holding, it sends nothing until the config changes;
// resending, it answers at once with the same rejected resources, which
// the client NACKs again: a loop, one round trip per NACK, until the
// config is fixed (what a raw SnapshotCache does with a NACK carrying the
// previous version, simple.go CreateWatch). Either way the fix reaches the
// client.
// Mirrors grpc-go TestADS_ACK_NACK_Simple from the server side; istiod
// pkg/xds/server.go ShouldRespond (hold).
func TestNACKIsHeldOrResent(t *testing.T) {
	for _, p := range []cp.NACKPolicy{cp.HoldNACKs, cp.ResendNACKs} {
		for _, k := range cacheKinds {
			t.Run(p.String()+"/"+k.String(), func(t *testing.T) { testNACK(t, p, k) })
		}
	}
}

func testNACK(t *testing.T, p cp.NACKPolicy, k cp.CacheKind) {
	resend := p == cp.ResendNACKs
	s := mustNew(t, cp.Config{Name: "p", Cache: k, OnNACK: p, Services: twoServices()})
	c := newClient(t, s, 1)
	c.ackAll(c.subscribe(cp.CDS, "a-cluster", "b-cluster"))
	good := c.ver[cp.CDS]
	push, err := s.PublishInvalid(0, "a", "", cp.DefectClusterLBPolicy)
	if err != nil {
		t.Fatal(err)
	}
	nack := c.receive(only(t, push))
	if nack.GetErrorDetail() == nil || nack.GetVersionInfo() != good {
		t.Fatalf("client did not NACK: %v", nack)
	}
	rs := c.send(nack)
	if resend {
		// The loop: the same bad version again, NACKed again.
		r := only(t, rs)
		if r.Message.GetVersionInfo() != push[0].Message.GetVersionInfo() || len(r.Message.GetResources()) != 2 {
			t.Fatalf("resent %v", summarize(rs))
		}
		rs = c.send(c.receive(r))
		if len(rs) != 1 {
			t.Fatalf("loop stopped: %v", summarize(rs))
		}
		push = rs
	} else if len(rs) != 0 {
		t.Fatalf("NACK answered: %v", summarize(rs))
	}
	st, _ := s.StreamState(1, cp.CDS)
	if !st.NACKed || int64(st.NACKs) != 1+boolInt(resend) || st.ACKs != 1 || st.Version != good ||
		st.ErrorDetail.Code != codes.InvalidArgument || st.Nonce != push[0].Message.GetNonce() {
		t.Errorf("stream state = %+v", st)
	}
	if tot := s.Totals(); tot.NACKs != 1+int64(boolInt(resend)) || tot.ACKs != 1 {
		t.Errorf("totals = %+v", tot)
	}
	// The fix is pushed and ACKed.
	fix, err := s.PublishInvalid(0, "a", "", cp.NoDefect)
	if err != nil {
		t.Fatal(err)
	}
	if resend {
		// The third bad response was in flight, so no watch was open:
		// the client's NACK of it fetches the fix.
		if len(fix) != 0 {
			t.Fatalf("pushed without a watch: %v", summarize(fix))
		}
		fix = c.send(c.receive(push[0]))
	}
	if more := c.ackAll(fix); len(more) != 0 {
		t.Fatal(summarize(more))
	}
	if st, _ := s.StreamState(1, cp.CDS); st.NACKed || st.ACKs != 2 || st.Version != s.Version(cp.CDS) {
		t.Errorf("after the fix: %+v", st)
	}
}

// TestNACKOfFirstResponse: a client that NACKs its first response has no
// accepted version and sends version_info "". Raw go-control-plane answers
// an empty version every time (linear.go and simple.go CreateWatch), so
// resending loops until the config is fixed; holding sends nothing more,
// and the fix, when it comes, is pushed.
func TestNACKOfFirstResponse(t *testing.T) {
	for _, p := range []cp.NACKPolicy{cp.HoldNACKs, cp.ResendNACKs} {
		for _, k := range cacheKinds {
			t.Run(p.String()+"/"+k.String(), func(t *testing.T) {
				bad := svc("a", 2)
				bad.Defect = cp.DefectClusterLBPolicy
				s := mustNew(t, cp.Config{Name: "p", Cache: k, OnNACK: p, Services: []cp.Service{bad}})
				c := newClient(t, s, 1)
				nack := c.receive(only(t, c.subscribe(cp.CDS, "a-cluster")))
				if nack.GetVersionInfo() != "" || nack.GetErrorDetail() == nil {
					t.Fatalf("not a first NACK: %v", nack)
				}
				rs := c.send(nack)
				if p == cp.HoldNACKs {
					if len(rs) != 0 {
						t.Fatalf("held NACK answered: %v", summarize(rs))
					}
					fix, err := s.PublishInvalid(0, "a", "", cp.NoDefect)
					if err != nil {
						t.Fatal(err)
					}
					rs = onType(fix, cp.CDS)
				}
				again := only(t, rs)
				if got := names(t, again); !slices.Equal(got, []string{"a-cluster"}) {
					t.Errorf("resent %v", got)
				}
			})
		}
	}
}

// TestSubscriptionChangeIsAnswered: adding a name to an ACKed
// subscription sends it at once, with the unchanged version; removing one
// sends nothing; adding it back sends it again.
// Mirrors go-control-plane stream/v3 subscription.go SetResourceSubscription
// and linear.go computeResourceChange.
func TestSubscriptionChangeIsAnswered(t *testing.T) {
	s := mustNew(t, cp.Config{Name: "p", Services: twoServices()})
	c := newClient(t, s, 1)
	c.ackAll(c.subscribe(cp.CDS, "a-cluster"))
	c.names[cp.CDS] = []string{"a-cluster", "b-cluster"}
	r := only(t, c.send(c.request(cp.CDS, nil)))
	if got := names(t, r); !slices.Equal(got, []string{"a-cluster", "b-cluster"}) {
		t.Errorf("CDS is full state: got %v", got)
	}
	c.ackAll([]cp.Response{r})
	c.names[cp.CDS] = []string{"b-cluster"}
	if rs := c.send(c.request(cp.CDS, nil)); len(rs) != 0 {
		t.Errorf("removal answered: %v", summarize(rs))
	}
	c.names[cp.CDS] = []string{"a-cluster", "b-cluster"}
	if r := only(t, c.send(c.request(cp.CDS, nil))); len(r.Message.GetResources()) != 2 {
		t.Errorf("re-adding: %v", summarize([]cp.Response{r}))
	}
}

// TestUnchangedConfigSendsNothing: republishing identical resources bumps
// no version and pushes nothing; a real change pushes the changed resource
// to its subscribers only with a LinearCache, and the whole type to every
// watch of the type with a SnapshotCache (simple.go respondSOTWWatches).
func TestUnchangedConfigSendsNothing(t *testing.T) {
	for _, k := range cacheKinds {
		t.Run(k.String(), func(t *testing.T) {
			s := mustNew(t, cp.Config{Name: "p", Cache: k, Services: twoServices()})
			ca, cb := newClient(t, s, 1), newClient(t, s, 2)
			ca.ackAll(ca.subscribe(cp.EDS, "a-cluster"))
			cb.ackAll(cb.subscribe(cp.EDS, "b-cluster"))
			v := s.Version(cp.EDS)
			if rs, err := s.SetService(0, svc("a", 2)); err != nil || len(rs) != 0 || s.Version(cp.EDS) != v {
				t.Fatalf("republish: %v %v version %s", summarize(rs), err, s.Version(cp.EDS))
			}
			rs, err := s.ScaleEndpoints(0, "a", "", 3)
			if err != nil {
				t.Fatal(err)
			}
			want := 1
			if k.Snapshot() {
				want = 2
			}
			if len(rs) != want || rs[0].Stream != 1 || s.Version(cp.EDS) == v {
				t.Errorf("push %v, version %s", summarize(rs), s.Version(cp.EDS))
			}
		})
	}
}

// TestClosedStreamGetsNothing: closing a stream cancels its watches.
func TestClosedStreamGetsNothing(t *testing.T) {
	for _, k := range cacheKinds {
		t.Run(k.String(), func(t *testing.T) {
			s := mustNew(t, cp.Config{Name: "p", Cache: k, Services: twoServices()})
			c := newClient(t, s, 1)
			c.ackAll(c.subscribe(cp.EDS, "a-cluster"))
			s.CloseStream(0, 1)
			if rs, _ := s.ScaleEndpoints(0, "a", "", 1); len(rs) != 0 {
				t.Errorf("closed stream pushed: %v", summarize(rs))
			}
			if _, err := s.Handle(0, 1, cp.RequestOf(c.request(cp.EDS, nil))); err == nil {
				t.Error("request on a closed stream accepted")
			}
			if s.OpenStreams() != 0 {
				t.Errorf("open streams = %d", s.OpenStreams())
			}
		})
	}
}

// TestUnknownTypeEndsStream: a request for a type no cache serves ends
// the stream, as go-control-plane's MuxCache error does.
func TestUnknownTypeEndsStream(t *testing.T) {
	s := mustNew(t, cp.Config{Name: "p"})
	c := newClient(t, s, 1)
	req := c.request(cp.LDS, nil)
	req.TypeUrl = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"
	_, err := s.Handle(0, 1, cp.RequestOf(req))
	var se *cp.StreamError
	if !errors.As(err, &se) || se.Status.Code != codes.Unknown || s.OpenStreams() != 0 {
		t.Errorf("err = %v, open = %d", err, s.OpenStreams())
	}
}

// TestTP3NotFound: with ResourceErrors, a subscribed name the server does
// not have gets a NOT_FOUND resource error, once; a deleted EDS resource,
// which SotW cannot otherwise signal, gets one too; serving the name
// clears it.
// Reference: xRFC TP3, "Protocol Behavior"; gRFC A88, "Support for Errors
// Provided by the xDS server".
func TestTP3NotFound(t *testing.T) {
	for _, k := range cacheKinds {
		t.Run(k.String(), func(t *testing.T) {
			s := mustNew(t, cp.Config{Name: "p", Cache: k, ResourceErrors: true, Services: twoServices()})
			c := newClient(t, s, 1)
			r := only(t, c.subscribe(cp.EDS, "a-cluster", "nope"))
			if got := errNames(r); !slices.Equal(got, []string{"nope=NotFound"}) || !slices.Equal(names(t, r), []string{"a-cluster"}) {
				t.Fatalf("errors %v names %v", got, names(t, r))
			}
			if more := c.ackAll([]cp.Response{r}); len(more) != 0 {
				t.Fatalf("error repeated: %v", summarize(more))
			}
			// Subscribing to another unknown name with a version: the cache
			// has nothing to send, the server still reports the error.
			c.names[cp.EDS] = []string{"a-cluster", "nope", "nope2"}
			r = only(t, c.send(c.request(cp.EDS, nil)))
			if got := errNames(r); !slices.Equal(got, []string{"nope2=NotFound"}) || len(r.Message.GetResources()) != 0 {
				t.Fatalf("errors %v, %d resources", got, len(r.Message.GetResources()))
			}
			c.ackAll([]cp.Response{r})
			// Deleting a-cluster's endpoints tells the client.
			rs, err := s.DeleteResource(0, cp.EDS, "a-cluster")
			if err != nil {
				t.Fatal(err)
			}
			r = only(t, rs)
			if got := errNames(r); !slices.Equal(got, []string{"a-cluster=NotFound"}) {
				t.Fatalf("deletion errors %v", got)
			}
			c.ackAll(rs)
			// Serving "nope" sends it, without error.
			rs, err = s.SetService(0, cp.Service{Name: "nope", ClusterName: "nope", EndpointCount: 1})
			if err != nil {
				t.Fatal(err)
			}
			r = only(t, rs)
			if !slices.Contains(names(t, r), "nope") || len(errNames(r)) != 0 {
				t.Errorf("serving nope: %v %v", names(t, r), errNames(r))
			}
			if s.Totals().ResourceErrors != 3 {
				t.Errorf("resource errors = %d", s.Totals().ResourceErrors)
			}
		})
	}
}

// TestTP3PermissionDenied: a withheld CDS resource disappears from the
// full-state response and its error is sent in the same response; the
// other clusters stay, so the client deletes nothing. Clearing the error
// serves the cluster again.
// Reference: xRFC TP3, "Protocol Behavior" (LDS and CDS responses still
// carry every resource the server can return).
func TestTP3PermissionDenied(t *testing.T) {
	for _, k := range cacheKinds {
		t.Run(k.String(), func(t *testing.T) {
			s := mustNew(t, cp.Config{Name: "p", Cache: k, ResourceErrors: true, Services: twoServices()})
			c := newClient(t, s, 1)
			c.ackAll(c.subscribe(cp.CDS, "a-cluster", "b-cluster"))
			rs, err := s.SetResourceError(0, cp.CDS, "a-cluster", cp.Status{Code: codes.PermissionDenied, Message: "denied"})
			if err != nil {
				t.Fatal(err)
			}
			r := only(t, rs)
			if !slices.Equal(names(t, r), []string{"b-cluster"}) || !slices.Equal(errNames(r), []string{"a-cluster=PermissionDenied"}) {
				t.Fatalf("names %v errors %v", names(t, r), errNames(r))
			}
			if _, ok := s.Lookup(cp.CDS, "a-cluster"); ok {
				t.Error("withheld cluster still served")
			}
			c.ackAll(rs)
			// An UNAVAILABLE error on an EDS name nobody has cached: sent
			// without any cache response.
			e := newClient(t, s, 2)
			e.ackAll(e.subscribe(cp.EDS, "b-cluster"))
			rs, _ = s.SetResourceError(0, cp.EDS, "b-cluster", cp.Status{Code: codes.Unavailable, Message: "busy"})
			if k == cp.SnapshotCache {
				// One version per snapshot: stream 1's CDS is re-sent too.
				if r := only(t, onStream(rs, 1)); r.Type != cp.CDS || len(errNames(r)) != 0 {
					t.Errorf("EDS error re-sent %v", summarize(rs))
				}
				c.ackAll(rs)
				rs = onStream(rs, 2)
			}
			if r := only(t, rs); r.Stream != 2 || !slices.Equal(errNames(r), []string{"b-cluster=Unavailable"}) {
				t.Errorf("EDS error: %v %v", summarize(rs), errNames(r))
			}
			rs, err = s.ClearResourceError(0, cp.CDS, "a-cluster")
			if err != nil {
				t.Fatal(err)
			}
			if r := only(t, onStream(rs, 1)); !slices.Equal(names(t, r), []string{"a-cluster", "b-cluster"}) || len(errNames(r)) != 0 {
				t.Errorf("cleared: %v %v", names(t, r), errNames(r))
			}
		})
	}
}

// TestTP3Off: without ResourceErrors no response carries errors, and an
// unknown EDS name subscribed with a version is simply not answered (the
// client's resource timer decides, gRFC A57).
func TestTP3Off(t *testing.T) {
	s := mustNew(t, cp.Config{Name: "p", Services: twoServices()})
	c := newClient(t, s, 1)
	c.ackAll(c.subscribe(cp.EDS, "a-cluster"))
	c.names[cp.EDS] = []string{"a-cluster", "nope"}
	if rs := c.send(c.request(cp.EDS, nil)); len(rs) != 0 {
		t.Errorf("answered: %v", summarize(rs))
	}
	rs, _ := s.SetResourceError(0, cp.EDS, "a-cluster", cp.Status{Code: codes.PermissionDenied})
	if len(rs) != 0 {
		t.Errorf("error pushed without TP3: %v", summarize(rs))
	}
	if _, ok := s.Lookup(cp.EDS, "a-cluster"); ok {
		t.Error("withheld resource served")
	}
}

// TestVersionsArePerTypeAndPerServer: each type has its own version,
// prefixed by the server name.
func TestVersionsArePerTypeAndPerServer(t *testing.T) {
	s := mustNew(t, cp.Config{Name: "fallback", Services: twoServices()})
	if _, err := s.ScaleEndpoints(0, "a", "", 4); err != nil {
		t.Fatal(err)
	}
	want := map[cp.ResourceType]string{cp.LDS: "fallback/1", cp.RDS: "fallback/1", cp.CDS: "fallback/1", cp.EDS: "fallback/2"}
	for typ, v := range want {
		if got := s.Version(typ); got != v {
			t.Errorf("%v version = %q, want %q", typ, got, v)
		}
	}
}

// TestDecodedResponsesValidate: the client model accepts a whole fetch of
// every type from a fresh stream.
func TestDecodedResponsesValidate(t *testing.T) {
	s := mustNew(t, cp.Config{Name: "p", Services: twoServices()})
	c := newClient(t, s, 1)
	for typ := cp.LDS; typ < cp.NumTypes; typ++ {
		for _, r := range c.subscribe(typ, s.ResourceNames(typ)...) {
			d := xdsclient.DecodeResponse(r.Message)
			if len(d.Resources) != 2 {
				t.Errorf("%v: %d resources", typ, len(d.Resources))
			}
			for _, x := range d.Resources {
				if x.Err != nil {
					t.Error(x.Err)
				}
			}
		}
	}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// TestWildcardSubscriptionGetsEveryResource: with a LinearCache the
// explicit wildcard "*" subscribes to every resource of the type (stream/v3
// Subscription SetResourceSubscription; linear.go answers a wildcard watch
// with all of them), and a stream that asks by name beside it gets only its
// names; dropping the wildcard leaves only the names. (go-control-plane
// v0.14's snapshot caches answer a request for "*" with nothing: simple.go
// createResponse keeps the resources a non-empty resource_names list names,
// and no resource is named "*".)
func TestWildcardSubscriptionGetsEveryResource(t *testing.T) {
	s := mustNew(t, cp.Config{Name: "p", Cache: cp.LinearCaches, Services: twoServices()})
	wild, named := newClient(t, s, 1), newClient(t, s, 2)
	r := only(t, wild.subscribe(cp.CDS, "*"))
	if got := names(t, r); !slices.Equal(got, []string{"a-cluster", "b-cluster"}) {
		t.Errorf("wildcard: got %v, want both clusters", got)
	}
	wild.ackAll([]cp.Response{r})
	if got := names(t, only(t, named.subscribe(cp.CDS, "a-cluster"))); !slices.Equal(got, []string{"a-cluster"}) {
		t.Errorf("by name beside a wildcard: got %v, want a-cluster", got)
	}
	wild.names[cp.CDS] = []string{"a-cluster"}
	if rs := wild.send(wild.request(cp.CDS, nil)); len(rs) != 0 {
		t.Errorf("dropping the wildcard for a name already sent: %v", summarize(rs))
	}
	wild.names[cp.CDS] = []string{"*"}
	if rs := wild.send(wild.request(cp.CDS, nil)); len(rs) != 1 || !slices.Equal(names(t, rs[0]), []string{"a-cluster", "b-cluster"}) {
		t.Errorf("wildcard again: %v, want both clusters", summarize(rs))
	}
}
