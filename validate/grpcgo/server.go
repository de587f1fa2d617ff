package grpcgo

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/anypb"
)

// Kinds of ServerRecord.
const (
	KindOpen     = "open"
	KindClose    = "close"
	KindRequest  = "request"
	KindResponse = "response"
)

// ServerRecord is one event seen by a ManagementServer: an ADS stream opening
// or closing, a DiscoveryRequest received or a DiscoveryResponse sent.
type ServerRecord struct {
	At     time.Time // wall-clock time the event was seen
	Server string    // the name given to StartManagementServer
	Stream int64     // stream id, unique per server, counting from 1
	Node   string    // node id of the client on the stream, if known
	Kind   string    // KindOpen, KindClose, KindRequest or KindResponse

	// The fields below are set for requests and responses only.

	TypeURL string
	Version string   // version_info
	Nonce   string   // response_nonce of a request, nonce of a response
	Names   []string // resource_names of a request as sent, in order; names of the resources in a response
	NACK    bool     // the request carries error_detail
	Detail  string   // error_detail message of a NACK
}

// Recorder collects ServerRecords from any number of management servers. It
// is safe for concurrent use.
type Recorder struct {
	mu      sync.Mutex
	records []ServerRecord
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{} }

// Records returns a copy of the records, in the order they were recorded.
func (r *Recorder) Records() []ServerRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]ServerRecord, len(r.records))
	copy(out, r.records)
	for i := range out {
		out[i].Names = append([]string(nil), out[i].Names...)
	}
	return out
}

// add appends rec and returns its index.
func (r *Recorder) add(rec ServerRecord) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec)
	return len(r.records) - 1
}

// setNode sets the node of the record at index i.
func (r *Recorder) setNode(i int, node string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i >= 0 && i < len(r.records) {
		r.records[i].Node = node
	}
}

// NACKRule is a server's policy for NACKs, as the request and subscription
// its cache must see (model/controlplane NACKPolicy implements it): the
// version_info to give a request, sent being the version of the last
// response of its type on its stream; and the subscription to watch with.
type NACKRule interface {
	CacheVersion(req *discovery.DiscoveryRequest, sent string) string
	CacheSubscription(req *discovery.DiscoveryRequest, sub cachev3.Subscription) cachev3.Subscription
}

// ruledCache is a cache that watches with the subscription a NACKRule
// gives.
type ruledCache struct {
	cachev3.Cache
	rule NACKRule
}

// CreateWatch watches with the rule's subscription.
func (c ruledCache) CreateWatch(req *cachev3.Request, sub cachev3.Subscription, value chan cachev3.Response) (func(), error) {
	return c.Cache.CreateWatch(req, c.rule.CacheSubscription(req, sub), value)
}

// ManagementServer is go-control-plane's state-of-the-world ADS server,
// reachable through a Proxy, that records every stream event into a
// Recorder.
type ManagementServer struct {
	name   string
	rule   NACKRule
	rec    *Recorder
	proxy  *Proxy
	grpc   *grpc.Server
	lis    net.Listener
	cancel context.CancelFunc
	served chan struct{} // closed when Serve returns

	mu      sync.Mutex
	streams map[int64]*streamInfo

	wire *wireLog // every read and write on the clients' connections
}

// streamInfo is what the server remembers about an open stream.
type streamInfo struct {
	node    string
	openRec int               // index of the stream's open record, to attach the node to
	sent    map[string]string // the version of the last response, per type URL
}

// StartManagementServer serves the cache c over ADS on 127.0.0.1:0, behind
// a Proxy, recording into rec. name labels the records.
//
// The node id of a stream arrives only with its first request; it is then
// attached to the stream's open record as well.
func StartManagementServer(name string, c cachev3.Cache, rec *Recorder) (*ManagementServer, error) {
	return StartManagementServerWith(name, c, rec, nil)
}

// StartManagementServerWith is StartManagementServer with a NACK rule: the
// server's request callback gives every request the version rule says
// (after recording it as the client sent it), and its cache watches with
// the rule's subscription. A nil rule leaves go-control-plane as it is.
func StartManagementServerWith(name string, c cachev3.Cache, rec *Recorder, rule NACKRule) (*ManagementServer, error) {
	if c == nil {
		return nil, fmt.Errorf("management server %q: nil cache", name)
	}
	if rec == nil {
		return nil, fmt.Errorf("management server %q: nil recorder", name)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("management server %q: listen: %w", name, err)
	}
	proxy, err := NewProxy(lis.Addr().String())
	if err != nil {
		lis.Close()
		return nil, fmt.Errorf("management server %q: %w", name, err)
	}
	m := &ManagementServer{
		name:    name,
		rule:    rule,
		rec:     rec,
		proxy:   proxy,
		lis:     lis,
		served:  make(chan struct{}),
		streams: make(map[int64]*streamInfo),
		wire:    &wireLog{},
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	cb := serverv3.CallbackFuncs{
		StreamOpenFunc:     m.onOpen,
		StreamClosedFunc:   m.onClosed,
		StreamRequestFunc:  m.onRequest,
		StreamResponseFunc: m.onResponse,
	}
	if rule != nil {
		c = ruledCache{c, rule}
	}
	xds := serverv3.NewServer(ctx, c, cb)
	m.grpc = grpc.NewServer()
	discovery.RegisterAggregatedDiscoveryServiceServer(m.grpc, xds)
	go func() {
		defer close(m.served)
		m.grpc.Serve(timedListener{lis, m.wire})
	}()
	return m, nil
}

// Name returns the name the server labels its records with.
func (m *ManagementServer) Name() string { return m.name }

// Addr returns the address clients must dial: the proxy's.
func (m *ManagementServer) Addr() string { return m.proxy.Addr() }

// Proxy returns the proxy in front of the server, to make the server
// unreachable.
func (m *ManagementServer) Proxy() *Proxy { return m.proxy }

// Wire returns, per connection the server accepted (in the order it
// accepted them), every read and write it made on it so far.
func (m *ManagementServer) Wire() [][]WireEvent { return m.wire.copyConns() }

// Close stops the server and its proxy, ending every stream, and waits for
// their goroutines.
func (m *ManagementServer) Close() {
	m.proxy.Close()
	m.cancel()
	m.grpc.Stop()
	<-m.served
}

func (m *ManagementServer) onOpen(_ context.Context, id int64, typeURL string) error {
	i := m.rec.add(ServerRecord{At: time.Now(), Server: m.name, Stream: id, Kind: KindOpen, TypeURL: typeURL})
	m.mu.Lock()
	m.streams[id] = &streamInfo{openRec: i, sent: map[string]string{}}
	m.mu.Unlock()
	return nil
}

func (m *ManagementServer) onClosed(id int64, node *core.Node) {
	now := time.Now()
	m.mu.Lock()
	s := m.streams[id]
	delete(m.streams, id)
	m.mu.Unlock()
	nodeID := node.GetId()
	if nodeID == "" && s != nil {
		nodeID = s.node
	}
	m.rec.add(ServerRecord{At: now, Server: m.name, Stream: id, Node: nodeID, Kind: KindClose})
}

func (m *ManagementServer) onRequest(id int64, req *discovery.DiscoveryRequest) error {
	now := time.Now()
	nodeID := m.streamNode(id, req.GetNode().GetId())
	r := ServerRecord{
		At:      now,
		Server:  m.name,
		Stream:  id,
		Node:    nodeID,
		Kind:    KindRequest,
		TypeURL: req.GetTypeUrl(),
		Version: req.GetVersionInfo(),
		Nonce:   req.GetResponseNonce(),
		Names:   append([]string(nil), req.GetResourceNames()...),
	}
	if st := req.GetErrorDetail(); st != nil {
		r.NACK = true
		r.Detail = st.GetMessage()
	}
	m.rec.add(r)
	if m.rule != nil {
		// go-control-plane calls this before it looks at the request
		// (sotw/v3 xds.go process): the cache sees the rule's version.
		m.mu.Lock()
		sent := ""
		if s := m.streams[id]; s != nil {
			sent = s.sent[req.GetTypeUrl()]
		}
		m.mu.Unlock()
		req.VersionInfo = m.rule.CacheVersion(req, sent)
	}
	return nil
}

func (m *ManagementServer) onResponse(_ context.Context, id int64, req *discovery.DiscoveryRequest, resp *discovery.DiscoveryResponse) {
	now := time.Now()
	nodeID := m.streamNode(id, req.GetNode().GetId())
	m.mu.Lock()
	if s := m.streams[id]; s != nil {
		s.sent[resp.GetTypeUrl()] = resp.GetVersionInfo()
	}
	m.mu.Unlock()
	names := make([]string, 0, len(resp.GetResources()))
	for _, a := range resp.GetResources() {
		names = append(names, resourceName(a))
	}
	m.rec.add(ServerRecord{
		At:      now,
		Server:  m.name,
		Stream:  id,
		Node:    nodeID,
		Kind:    KindResponse,
		TypeURL: resp.GetTypeUrl(),
		Version: resp.GetVersionInfo(),
		Nonce:   resp.GetNonce(),
		Names:   names,
	})
}

// streamNode returns the node id of stream id, remembering seen if it is the
// first one seen on the stream.
func (m *ManagementServer) streamNode(id int64, seen string) string {
	m.mu.Lock()
	s := m.streams[id]
	if s == nil {
		// A request racing with the stream's close; should not happen.
		m.mu.Unlock()
		return seen
	}
	first := s.node == "" && seen != ""
	if first {
		s.node = seen
	}
	node, openRec := s.node, s.openRec
	m.mu.Unlock()
	if first {
		m.rec.setNode(openRec, node)
	}
	return node
}

// resourceName returns the name of the xDS resource in a, or "" if a cannot
// be decoded.
func resourceName(a *anypb.Any) string {
	msg, err := a.UnmarshalNew()
	if err != nil {
		return ""
	}
	if r, ok := msg.(*discovery.Resource); ok {
		// A resource wrapped for a TTL or a heartbeat.
		return r.GetName()
	}
	return cachev3.GetResourceName(msg)
}
