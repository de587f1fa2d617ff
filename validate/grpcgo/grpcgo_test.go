package grpcgo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	router "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestMain(m *testing.M) {
	MaybeRunClient()
	os.Exit(m.Run())
}

// echoServer is a TCP server echoing everything back, counting connections.
type echoServer struct {
	ln       net.Listener
	accepted atomic.Int64
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn
}

func startEcho(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &echoServer{ln: ln}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			e.accepted.Add(1)
			e.mu.Lock()
			e.conns = append(e.conns, c)
			e.mu.Unlock()
			e.wg.Add(1)
			go func() {
				defer e.wg.Done()
				io.Copy(c, c)
				c.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		e.mu.Lock()
		for _, c := range e.conns {
			c.Close()
		}
		e.mu.Unlock()
		e.wg.Wait()
	})
	return e
}

func newProxy(t *testing.T, upstream string) *Proxy {
	t.Helper()
	p, err := NewProxy(upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip writes msg on c and expects it echoed within a second.
func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatalf("write: %v", err)
	}
	expectRead(t, c, msg)
}

// expectRead expects to read exactly want from c within a second.
func expectRead(t *testing.T, c net.Conn, want string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(time.Second))
	defer c.SetReadDeadline(time.Time{})
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("read: %v (got %q so far)", err, got)
	}
	if string(got) != want {
		t.Fatalf("read %q, want %q", got, want)
	}
}

// expectSilence expects nothing to arrive on c for d.
func expectSilence(t *testing.T, c net.Conn, d time.Duration) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	defer c.SetReadDeadline(time.Time{})
	var b [1]byte
	n, err := c.Read(b[:])
	var ne net.Error
	if n != 0 || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read %d bytes, err %v; want a timeout", n, err)
	}
}

func TestProxyForward(t *testing.T) {
	e := startEcho(t)
	p := newProxy(t, e.ln.Addr().String())
	if !strings.HasPrefix(p.Addr(), "127.0.0.1:") {
		t.Errorf("Addr() = %q, want 127.0.0.1:PORT", p.Addr())
	}
	var conns []net.Conn
	for i := 0; i < 3; i++ {
		conns = append(conns, dial(t, p.Addr()))
	}
	for i, c := range conns {
		roundTrip(t, c, strings.Repeat("x", 1+i*100000))
	}
	if got := e.accepted.Load(); got != 3 {
		t.Errorf("upstream accepted %d connections, want 3", got)
	}
}

func TestProxyRefuse(t *testing.T) {
	tests := []struct {
		name  string
		after func(*Proxy) error // how the proxy comes back up
	}{
		{"forward", (*Proxy).Forward},
		{"blackhole then forward", func(p *Proxy) error {
			if err := p.Blackhole(); err != nil {
				return err
			}
			return p.Forward()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startEcho(t)
			p := newProxy(t, e.ln.Addr().String())
			addr := p.Addr()
			c := dial(t, addr)
			roundTrip(t, c, "hello")

			p.Refuse()
			c.SetReadDeadline(time.Now().Add(time.Second))
			if _, err := c.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("read on an open connection after Refuse: %v, want ECONNRESET", err)
			}
			if c2, err := net.DialTimeout("tcp", addr, time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
				if c2 != nil {
					c2.Close()
				}
				t.Fatalf("dial after Refuse: %v, want ECONNREFUSED", err)
			}
			if got := p.Mode(); got != "refuse" {
				t.Errorf("Mode() = %q, want refuse", got)
			}

			if err := tt.after(p); err != nil {
				t.Fatal(err)
			}
			if p.Addr() != addr {
				t.Errorf("Addr() changed from %s to %s", addr, p.Addr())
			}
			roundTrip(t, dial(t, addr), "again")
		})
	}
}

func TestProxyBlackhole(t *testing.T) {
	e := startEcho(t)
	p := newProxy(t, e.ln.Addr().String())
	old := dial(t, p.Addr())
	roundTrip(t, old, "before")

	if err := p.Blackhole(); err != nil {
		t.Fatal(err)
	}
	// Several writes, to check that they are delivered in order.
	for _, s := range []string{"one,", "two,", "three"} {
		if _, err := old.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	fresh := dial(t, p.Addr()) // accepted, but held
	if _, err := fresh.Write([]byte("fresh")); err != nil {
		t.Fatal(err)
	}
	expectSilence(t, old, 200*time.Millisecond)
	expectSilence(t, fresh, 10*time.Millisecond)
	if got := e.accepted.Load(); got != 1 {
		t.Errorf("upstream accepted %d connections while blackholed, want 1", got)
	}

	if err := p.Forward(); err != nil {
		t.Fatal(err)
	}
	expectRead(t, old, "one,two,three")
	expectRead(t, fresh, "fresh")
	roundTrip(t, old, "after")
	if got := e.accepted.Load(); got != 2 {
		t.Errorf("upstream accepted %d connections, want 2", got)
	}
}

// TestProxyRecordsWhatClientsDoToTheirConnections checks ConnEvents: a
// connection accepted while blackholed, then given up by its client, and
// an established one closed by its client during the blackhole, are both
// seen at once, though nothing reaches the upstream until the end.
func TestProxyRecordsWhatClientsDoToTheirConnections(t *testing.T) {
	e := startEcho(t)
	p := newProxy(t, e.ln.Addr().String())
	old := dial(t, p.Addr())
	roundTrip(t, old, "before")
	if err := p.Blackhole(); err != nil {
		t.Fatal(err)
	}
	held := dial(t, p.Addr())
	held.Write([]byte("preface"))
	time.Sleep(20 * time.Millisecond)
	held.Close() // a connect attempt that timed out
	time.Sleep(20 * time.Millisecond)
	old.Close() // keepalive gave up
	deadline := time.Now().Add(2 * time.Second)
	var got []bool
	for time.Now().Before(deadline) {
		got = got[:0]
		for _, ev := range p.ConnEvents() {
			got = append(got, ev.Opened)
		}
		if len(got) == 4 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if want := []bool{true, true, false, false}; !slices.Equal(got, want) {
		t.Errorf("events opened = %v, want %v (open, open, the held one ends, the old one ends)", got, want)
	}
	if n := e.accepted.Load(); n != 1 {
		t.Errorf("upstream accepted %d connections during the blackhole, want 1", n)
	}
}

func TestProxyClosed(t *testing.T) {
	e := startEcho(t)
	p, err := NewProxy(e.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, p.Addr())
	roundTrip(t, c, "x")
	if err := p.Blackhole(); err != nil {
		t.Fatal(err)
	}
	held := dial(t, p.Addr())
	held.Write([]byte("y"))
	// Close must release the connections held by the blackhole.
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Forward(); err == nil {
		t.Error("Forward on a closed proxy succeeded")
	}
	p.Refuse()                        // must not panic
	if err := p.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
}

func TestCodeName(t *testing.T) {
	tests := []struct {
		code codes.Code
		want string
	}{
		{codes.OK, "OK"},
		{codes.Canceled, "CANCELLED"},
		{codes.DeadlineExceeded, "DEADLINE_EXCEEDED"},
		{codes.Unavailable, "UNAVAILABLE"},
		{codes.Unauthenticated, "UNAUTHENTICATED"},
		{codes.Code(99), "CODE(99)"},
	}
	for _, tt := range tests {
		if got := CodeName(tt.code); got != tt.want {
			t.Errorf("CodeName(%v) = %q, want %q", tt.code, got, tt.want)
		}
	}
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"short", 200, "short"},
		{"abcdef", 3, "abc"},
		{"aé", 2, "a"}, // é is two bytes
		{"", 0, ""},
	}
	for _, tt := range tests {
		if got := truncate(tt.s, tt.n); got != tt.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

func TestCSDSDiff(t *testing.T) {
	lds := csdsKey{"s", resource.ListenerType, "echo"}
	cds := csdsKey{"s", resource.ClusterType, "c"}
	requested := csdsState{status: "REQUESTED"}
	acked := csdsState{status: "ACKED", version: "1"}
	nacked := csdsState{status: "NACKED", version: "1", hasError: true, errorDetail: "bad", errVer: "2"}
	tests := []struct {
		name      string
		prev, cur map[csdsKey]csdsState
		want      []ClientEvent
	}{
		{"nothing", nil, nil, []ClientEvent{}},
		{"new", nil, map[csdsKey]csdsState{lds: requested},
			[]ClientEvent{{Kind: EventCSDS, TypeURL: lds.typeURL, Name: "echo", Status: "REQUESTED"}}},
		{"same", map[csdsKey]csdsState{lds: acked}, map[csdsKey]csdsState{lds: acked}, []ClientEvent{}},
		{"acked", map[csdsKey]csdsState{lds: requested}, map[csdsKey]csdsState{lds: acked},
			[]ClientEvent{{Kind: EventCSDS, TypeURL: lds.typeURL, Name: "echo", Status: "ACKED", Version: "1"}}},
		{"nacked", map[csdsKey]csdsState{lds: acked}, map[csdsKey]csdsState{lds: nacked},
			[]ClientEvent{{Kind: EventCSDS, TypeURL: lds.typeURL, Name: "echo", Status: "NACKED", Version: "1", Error: "bad", ErrorVersion: "2"}}},
		{"gone and sorted", map[csdsKey]csdsState{lds: acked, cds: acked}, map[csdsKey]csdsState{lds: nacked},
			[]ClientEvent{
				{Kind: EventCSDS, TypeURL: cds.typeURL, Name: "c", Status: StatusGone},
				{Kind: EventCSDS, TypeURL: lds.typeURL, Name: "echo", Status: "NACKED", Version: "1", Error: "bad", ErrorVersion: "2"},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := csdsDiff(tt.prev, tt.cur)
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(tt.want)
			if !bytes.Equal(gj, wj) {
				t.Errorf("csdsDiff =\n%s\nwant\n%s", gj, wj)
			}
		})
	}
}

func TestBootstrap(t *testing.T) {
	b := Bootstrap("node-1", []string{"127.0.0.1:1", "127.0.0.1:2"}, []string{"ignore_resource_deletion"})
	var got struct {
		XDSServers []struct {
			ServerURI    string `json:"server_uri"`
			ChannelCreds []struct {
				Type string `json:"type"`
			} `json:"channel_creds"`
			ServerFeatures []string `json:"server_features"`
		} `json:"xds_servers"`
		Node struct {
			ID string `json:"id"`
		} `json:"node"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Node.ID != "node-1" || len(got.XDSServers) != 2 ||
		got.XDSServers[0].ServerURI != "127.0.0.1:1" || got.XDSServers[1].ServerURI != "127.0.0.1:2" ||
		got.XDSServers[0].ChannelCreds[0].Type != "insecure" ||
		len(got.XDSServers[1].ServerFeatures) != 1 {
		t.Errorf("Bootstrap = %s", b)
	}
}

func TestStartClientBadSpec(t *testing.T) {
	good := ClientSpec{Name: "c", Target: "xds:///echo", Bootstrap: Bootstrap("c", nil, nil), Run: time.Second}
	tests := []struct {
		name   string
		change func(*ClientSpec)
	}{
		{"no target", func(s *ClientSpec) { s.Target = "" }},
		{"no bootstrap", func(s *ClientSpec) { s.Bootstrap = nil }},
		{"bad bootstrap", func(s *ClientSpec) { s.Bootstrap = []byte("{") }},
		{"negative rate", func(s *ClientSpec) { s.Rate = -1 }},
		{"rate without method", func(s *ClientSpec) { s.Rate = 1 }},
		{"negative run", func(s *ClientSpec) { s.Run = -1 }},
		{"bad env", func(s *ClientSpec) { s.Env = []string{"NOEQUALS"} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := good
			tt.change(&s)
			if c, err := StartClient(s); err == nil {
				c.Kill()
				c.Wait()
				t.Fatal("StartClient succeeded")
			}
		})
	}
}

// echoResources returns the xDS resources routing "echo" to the backends at
// ports.
func echoResources(t *testing.T, ports []uint32) map[resource.Type][]types.Resource {
	t.Helper()
	mustAny := func(m proto.Message) *anypb.Any {
		a, err := anypb.New(m)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	ads := &core.ConfigSource{
		ResourceApiVersion:    core.ApiVersion_V3,
		ConfigSourceSpecifier: &core.ConfigSource_Ads{Ads: &core.AggregatedConfigSource{}},
	}
	manager := &hcm.HttpConnectionManager{
		RouteSpecifier: &hcm.HttpConnectionManager_Rds{Rds: &hcm.Rds{
			ConfigSource:    ads,
			RouteConfigName: "echo-route",
		}},
		HttpFilters: []*hcm.HttpFilter{{
			Name:       "router",
			ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: mustAny(&router.Router{})},
		}},
	}
	lis := &listener.Listener{
		Name:        "echo",
		ApiListener: &listener.ApiListener{ApiListener: mustAny(manager)},
	}
	rc := &route.RouteConfiguration{
		Name: "echo-route",
		VirtualHosts: []*route.VirtualHost{{
			Name:    "echo",
			Domains: []string{"*"},
			Routes: []*route.Route{{
				Match:  &route.RouteMatch{PathSpecifier: &route.RouteMatch_Prefix{Prefix: ""}},
				Action: &route.Route_Route{Route: &route.RouteAction{ClusterSpecifier: &route.RouteAction_Cluster{Cluster: "echo-cluster"}}},
			}},
		}},
	}
	cl := &cluster.Cluster{
		Name:                 "echo-cluster",
		ClusterDiscoveryType: &cluster.Cluster_Type{Type: cluster.Cluster_EDS},
		EdsClusterConfig:     &cluster.Cluster_EdsClusterConfig{EdsConfig: ads},
		LbPolicy:             cluster.Cluster_ROUND_ROBIN,
	}
	var lbs []*endpoint.LbEndpoint
	for _, port := range ports {
		lbs = append(lbs, &endpoint.LbEndpoint{HostIdentifier: &endpoint.LbEndpoint_Endpoint{Endpoint: &endpoint.Endpoint{
			Address: &core.Address{Address: &core.Address_SocketAddress{SocketAddress: &core.SocketAddress{
				Address:       "127.0.0.1",
				PortSpecifier: &core.SocketAddress_PortValue{PortValue: port},
			}}},
		}}})
	}
	cla := &endpoint.ClusterLoadAssignment{
		ClusterName: "echo-cluster",
		Endpoints: []*endpoint.LocalityLbEndpoints{{
			Locality:            &core.Locality{Region: "region", Zone: "zone"},
			LoadBalancingWeight: wrapperspb.UInt32(1),
			LbEndpoints:         lbs,
		}},
	}
	return map[resource.Type][]types.Resource{
		resource.ListenerType: {lis},
		resource.RouteType:    {rc},
		resource.ClusterType:  {cl},
		resource.EndpointType: {cla},
	}
}

var allTypes = []string{resource.ListenerType, resource.RouteType, resource.ClusterType, resource.EndpointType}

func TestEndToEnd(t *testing.T) {
	t.Parallel()
	backends, err := StartBackends(2)
	if err != nil {
		t.Fatal(err)
	}
	defer backends.Close()

	const node = "client-1"
	snap, err := cachev3.NewSnapshot("1", echoResources(t, backends.Ports()))
	if err != nil {
		t.Fatal(err)
	}
	cache := cachev3.NewSnapshotCache(true, cachev3.IDHash{}, nil)
	if err := cache.SetSnapshot(context.Background(), node, snap); err != nil {
		t.Fatal(err)
	}
	rec := NewRecorder()
	ms, err := StartManagementServer("primary", cache, rec)
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()

	spec := ClientSpec{
		Name:      node,
		Target:    "xds:///echo",
		Bootstrap: Bootstrap(node, []string{ms.Addr()}, nil),
		Rate:      20,
		Deadline:  time.Second,
		Method:    "/xdssim.Echo/Call",
		Run:       3 * time.Second,
	}
	start := time.Now()
	c, err := StartClient(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Kill()
	events, err := c.Wait()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("client ran for %v, %d events", time.Since(start), len(events))

	if len(events) < 2 || events[0].Kind != EventStart || events[len(events)-1].Kind != EventExit {
		t.Fatalf("events do not go from start to exit: %+v", events)
	}
	if n := events[len(events)-1].InFlight; n != 0 {
		t.Errorf("%d RPCs in flight at exit, want 0", n)
	}
	var states []string
	for _, ev := range events {
		if ev.Kind == EventState {
			states = append(states, ev.State)
		}
	}
	if len(states) < 2 || states[0] != "IDLE" || states[len(states)-1] != "READY" {
		t.Errorf("connectivity states %v, want IDLE first and READY last", states)
	}

	// CSDS: every resource reaches ACKED at version 1.
	acked := make(map[string]int64) // type URL -> when it was ACKED
	for _, ev := range events {
		if ev.Kind != EventCSDS {
			continue
		}
		t.Logf("csds +%v %s %s %s %q %q", time.Duration(ev.At-events[0].At), short(ev.TypeURL), ev.Name, ev.Status, ev.Version, ev.Error)
		if ev.Status == "ACKED" && ev.Version == "1" {
			if _, ok := acked[ev.TypeURL]; !ok {
				acked[ev.TypeURL] = ev.At
			}
		}
	}
	var configured int64
	for _, typ := range allTypes {
		at, ok := acked[typ]
		if !ok {
			t.Errorf("CSDS never showed %s ACKED at version 1", short(typ))
		}
		configured = max(configured, at)
	}

	// RPCs: about Rate*Run of them, all OK once configured.
	var rpcs, ok, okAfter, after int
	var firstOK int64
	for _, ev := range events {
		if ev.Kind == EventState {
			t.Logf("state +%v %s", time.Duration(ev.At-events[0].At), ev.State)
		}
		if ev.Kind != EventRPC {
			continue
		}
		rpcs++
		if ev.Code == "OK" {
			ok++
			if firstOK == 0 {
				firstOK = ev.At
			}
		} else {
			t.Logf("rpc started +%v: %s %s", time.Duration(ev.Start-events[0].At), ev.Code, ev.Message)
		}
		if configured != 0 && ev.Start > configured {
			after++
			if ev.Code == "OK" {
				okAfter++
			}
		}
	}
	t.Logf("%d RPCs, %d OK; %d started after configuration, %d of them OK; first OK at +%v, configured (CSDS) at +%v",
		rpcs, ok, after, okAfter, time.Duration(firstOK-events[0].At), time.Duration(configured-events[0].At))
	if want := int(spec.Rate * spec.Run.Seconds()); rpcs < want-2 || rpcs > want+1 {
		t.Errorf("%d RPCs, want about %d", rpcs, want)
	}
	if after < 20 || okAfter < after*9/10 {
		t.Errorf("%d of %d RPCs started after configuration were OK", okAfter, after)
	}
	for i, n := range backends.Calls() {
		if n == 0 {
			t.Errorf("backend %d got no calls (calls: %v)", i, backends.Calls())
		}
	}

	// The server saw the client ask for every type, ACK it and get it. The
	// stream's close may be recorded a moment after the client exited.
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		recs := rec.Records()
		if recs[len(recs)-1].Kind == KindClose {
			break
		}
	}
	requested := make(map[string]bool)
	ackedByServer := make(map[string]bool)
	responded := make(map[string]bool)
	var opened, closed bool
	for _, r := range rec.Records() {
		t.Logf("server %s stream %d node %q %-8s %-4s v=%q nonce=%q names=%v nack=%v",
			r.Server, r.Stream, r.Node, r.Kind, short(r.TypeURL), r.Version, r.Nonce, r.Names, r.NACK)
		if r.Server != "primary" || r.Node != node {
			t.Errorf("record from server %q node %q, want primary and %q", r.Server, r.Node, node)
		}
		switch r.Kind {
		case KindOpen:
			opened = true
		case KindClose:
			closed = true
		case KindRequest:
			requested[r.TypeURL] = true
			if r.NACK {
				t.Errorf("unexpected NACK: %+v", r)
			}
			if r.Nonce != "" && r.Version == "1" {
				ackedByServer[r.TypeURL] = true
			}
		case KindResponse:
			if r.Version == "1" && len(r.Names) == 1 {
				responded[r.TypeURL] = true
			}
		}
	}
	if !opened {
		t.Error("no stream open recorded")
	}
	if !closed {
		t.Error("no stream close recorded after the client exited")
	}
	for _, typ := range allTypes {
		if !requested[typ] || !ackedByServer[typ] || !responded[typ] {
			t.Errorf("%s: requested %v, ACKed %v, responded %v", short(typ), requested[typ], ackedByServer[typ], responded[typ])
		}
	}
}

// short returns the last element of a type URL.
func short(typeURL string) string {
	return typeURL[strings.LastIndex(typeURL, ".")+1:]
}

// echoSetup is a management server serving the echo resources at version 1
// to node, and backends.
type echoSetup struct {
	backends *Backends
	cache    cachev3.SnapshotCache
	rec      *Recorder
	ms       *ManagementServer
}

func startEchoSetup(t *testing.T, node string) *echoSetup {
	t.Helper()
	s := &echoSetup{rec: NewRecorder()}
	var err error
	if s.backends, err = StartBackends(2); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.backends.Close)
	s.cache = cachev3.NewSnapshotCache(true, cachev3.IDHash{}, nil)
	s.setVersion(t, node, "1")
	if s.ms, err = StartManagementServer("primary", s.cache, s.rec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.ms.Close)
	return s
}

func (s *echoSetup) setVersion(t *testing.T, node, version string) {
	t.Helper()
	snap, err := cachev3.NewSnapshot(version, echoResources(t, s.backends.Ports()))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cache.SetSnapshot(context.Background(), node, snap); err != nil {
		t.Fatal(err)
	}
}

// waitAcked waits until the client's CSDS shows every type ACKED at version.
func waitAcked(t *testing.T, c *Client, version string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, typ := range allTypes {
		if _, err := c.WaitEvent(ctx, func(ev ClientEvent) bool {
			return ev.Kind == EventCSDS && ev.TypeURL == typ && ev.Status == "ACKED" && ev.Version == version
		}); err != nil {
			t.Fatalf("%s ACKED at version %s: %v", short(typ), version, err)
		}
	}
}

func TestManagementServerOutage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		fault       func(*Proxy) error
		wantStreams int64
	}{
		{"refuse", func(p *Proxy) error { p.Refuse(); return nil }, 2},
		{"blackhole", (*Proxy).Blackhole, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			node := "client-outage-" + tt.name
			s := startEchoSetup(t, node)
			c, err := StartClient(ClientSpec{
				Name:      node,
				Target:    "xds:///echo",
				Bootstrap: Bootstrap(node, []string{s.ms.Addr()}, nil),
				Rate:      20,
				Deadline:  time.Second,
				Method:    "/xdssim.Echo/Call",
				// Long enough for the reconnection backoff after Refuse.
				Run: 6 * time.Second,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Kill()
			waitAcked(t, c, "1")

			faultAt := time.Now()
			if err := tt.fault(s.ms.Proxy()); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond)
			s.setVersion(t, node, "2")
			time.Sleep(300 * time.Millisecond)
			forwardAt := time.Now()
			if err := s.ms.Proxy().Forward(); err != nil {
				t.Fatal(err)
			}
			waitAcked(t, c, "2")
			t.Logf("version 2 ACKED (CSDS) %v after Forward", time.Since(forwardAt))

			events, err := c.Wait()
			if err != nil {
				t.Fatal(err)
			}
			var failed int
			for _, ev := range events {
				if ev.Kind == EventRPC && ev.Code != "OK" {
					failed++
					t.Logf("rpc +%v %s %s", time.Duration(ev.Start-faultAt.UnixNano()), ev.Code, ev.Message)
				}
				if ev.Kind == EventState || ev.Kind == EventCSDS {
					t.Logf("%s +%v %s %s %s %s %q", ev.Kind, time.Duration(ev.At-faultAt.UnixNano()), ev.State, short(ev.TypeURL), ev.Status, ev.Version, ev.Error)
				}
			}
			if failed > 0 {
				t.Errorf("%d RPCs failed; the client should have kept its cached configuration", failed)
			}
			var streams int64
			for _, r := range s.rec.Records() {
				t.Logf("+%-12v stream %d %-8s %-4s v=%q nonce=%q names=%v", r.At.Sub(faultAt).Round(time.Microsecond), r.Stream, r.Kind, short(r.TypeURL), r.Version, r.Nonce, r.Names)
				if r.Kind == KindOpen {
					streams++
					if r.Node != node {
						t.Errorf("stream %d opened with node %q, want %q", r.Stream, r.Node, node)
					}
				}
			}
			if streams != tt.wantStreams {
				t.Errorf("%d streams opened, want %d", streams, tt.wantStreams)
			}
		})
	}
}

func TestClientUnconfigured(t *testing.T) {
	t.Parallel()
	// The server has nothing for this node: the client never gets a
	// listener, and RPCs without a deadline wait for it until the exit.
	rec := NewRecorder()
	ms, err := StartManagementServer("empty", cachev3.NewSnapshotCache(true, cachev3.IDHash{}, nil), rec)
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	const node = "client-unconfigured"
	c, err := StartClient(ClientSpec{
		Name:      node,
		Target:    "xds:///echo",
		Bootstrap: Bootstrap(node, []string{ms.Addr()}, nil),
		Rate:      10,
		Method:    "/xdssim.Echo/Call",
		Run:       time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Kill()
	events, err := c.Wait()
	if err != nil {
		t.Fatal(err)
	}
	last := events[len(events)-1]
	if last.Kind != EventExit || last.InFlight != 10 {
		t.Errorf("last event %+v, want exit with 10 RPCs in flight", last)
	}
	var statuses []string
	for _, ev := range events {
		switch ev.Kind {
		case EventRPC:
			t.Errorf("unexpected RPC event %+v", ev)
		case EventCSDS:
			statuses = append(statuses, short(ev.TypeURL)+" "+ev.Name+" "+ev.Status)
		}
	}
	if want := []string{"Listener echo REQUESTED"}; strings.Join(statuses, ",") != strings.Join(want, ",") {
		t.Errorf("CSDS statuses %q, want %q", statuses, want)
	}
	// One request for the listener, then possibly, if the stream outlives
	// the channel's Close for a moment, one unsubscribing from it.
	var requests []string
	for _, r := range rec.Records() {
		if r.Kind == KindRequest {
			if r.TypeURL != resource.ListenerType || r.Node != node {
				t.Errorf("unexpected request %+v", r)
			}
			requests = append(requests, "["+strings.Join(r.Names, ",")+"]")
		}
	}
	if got := strings.Join(requests, " "); got != "[echo]" && got != "[echo] []" {
		t.Errorf("requests for names %s, want [echo], maybe followed by []", got)
	}
}

func TestClientKill(t *testing.T) {
	c, err := StartClient(ClientSpec{
		Name:      "client-killed",
		Target:    "xds:///echo",
		Bootstrap: Bootstrap("client-killed", []string{"127.0.0.1:1"}, nil),
		Run:       time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.WaitEvent(ctx, func(ev ClientEvent) bool { return ev.Kind == EventStart }); err != nil {
		t.Fatal(err)
	}
	c.Kill()
	events, err := c.Wait()
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Wait after Kill: %v, want an error saying the client was killed", err)
	}
	if len(events) == 0 || events[0].Kind != EventStart {
		t.Errorf("events %+v, want a start event first", events)
	}
	if _, err := c.WaitEvent(ctx, func(ev ClientEvent) bool { return ev.Kind == EventExit }); err == nil {
		t.Error("WaitEvent for an exit event of a killed client succeeded")
	}
	c.Kill() // harmless once reaped
}
