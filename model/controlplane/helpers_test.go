package controlplane_test

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"

	cp "github.com/xdssim/xdssim/model/controlplane"
	"github.com/xdssim/xdssim/model/xdsclient"
	"github.com/xdssim/xdssim/sim"
)

// svc returns a plain service with n endpoints.
func svc(name string, n int) cp.Service {
	return cp.Service{Name: name, EndpointCount: n}
}

func mustNew(t testing.TB, cfg cp.Config) *cp.Server {
	t.Helper()
	s, err := cp.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// client is the client side of one ADS stream, as little of it as the
// tests need: per type the names, the last accepted version and the last
// nonce seen, as grpc-go keeps them.
type client struct {
	t     testing.TB
	s     *cp.Server
	id    cp.StreamID
	names [cp.NumTypes][]string
	ver   [cp.NumTypes]string
	nonce [cp.NumTypes]string
	now   sim.Time
}

func newClient(t testing.TB, s *cp.Server, id cp.StreamID) *client {
	t.Helper()
	return newClientAt(t, s, id, 0)
}

// newClientAt opens stream id at now; the client's requests go at now.
func newClientAt(t testing.TB, s *cp.Server, id cp.StreamID, now sim.Time) *client {
	t.Helper()
	if err := s.OpenStream(now, id); err != nil {
		t.Fatal(err)
	}
	return &client{t: t, s: s, id: id, now: now}
}

// request builds the DiscoveryRequest the client would send now for typ.
func (c *client) request(typ cp.ResourceType, nack *xdsclient.Status) *discoverypb.DiscoveryRequest {
	r := &discoverypb.DiscoveryRequest{
		VersionInfo:   c.ver[typ],
		ResourceNames: append([]string(nil), c.names[typ]...),
		TypeUrl:       typ.TypeURL(),
		ResponseNonce: c.nonce[typ],
		Node:          &corepb.Node{Id: fmt.Sprintf("client-%d", c.id)},
	}
	if nack != nil {
		r.ErrorDetail = &statuspb.Status{Code: int32(nack.Code), Message: nack.Message}
	}
	return r
}

// send handles req at once and returns the responses.
func (c *client) send(req *discoverypb.DiscoveryRequest) []cp.Response {
	c.t.Helper()
	out, err := c.s.Handle(c.now, c.id, cp.RequestOf(req))
	if err != nil {
		c.t.Fatal(err)
	}
	return out
}

// subscribe sets the names of typ and sends the request.
func (c *client) subscribe(typ cp.ResourceType, names ...string) []cp.Response {
	c.names[typ] = names
	return c.send(c.request(typ, nil))
}

// receive applies r as a client would: it records the nonce, validates
// the resources, and returns the ACK or NACK request (not sent).
func (c *client) receive(r cp.Response) *discoverypb.DiscoveryRequest {
	c.t.Helper()
	if r.Stream != c.id {
		c.t.Fatalf("stream %d got a response for stream %d", c.id, r.Stream)
	}
	typ := r.Type
	d := xdsclient.DecodeResponse(r.Message)
	c.nonce[typ] = d.Nonce
	for _, res := range d.Resources {
		if res.Err != nil {
			return c.request(typ, &xdsclient.Status{Code: codes.InvalidArgument, Message: res.Err.Error()})
		}
	}
	c.ver[typ] = d.Version
	return c.request(typ, nil)
}

// ackAll receives each response of c and sends its ACK/NACK, returning
// the responses those cause.
func (c *client) ackAll(rs []cp.Response) []cp.Response {
	c.t.Helper()
	var more []cp.Response
	for _, r := range rs {
		if r.Stream != c.id {
			continue
		}
		more = append(more, c.send(c.receive(r))...)
	}
	return more
}

// names returns the resource names of a response, in order.
func names(t testing.TB, r cp.Response) []string {
	t.Helper()
	typ := xdsclient.ResourceType(r.Type)
	var out []string
	for _, a := range r.Message.GetResources() {
		d := xdsclient.Decode(typ, a)
		if d.Name == "" {
			t.Fatalf("unnamed resource in %v response: %v", r.Type, d.Err)
		}
		out = append(out, d.Name)
	}
	return out
}

// errNames returns "name=CODE" for each TP3 error of a response.
func errNames(r cp.Response) []string {
	var out []string
	for _, e := range r.Message.GetResourceErrors() {
		out = append(out, fmt.Sprintf("%s=%v", e.GetResourceName().GetName(), codes.Code(e.GetErrorDetail().GetCode())))
	}
	return out
}

// hashResponses hashes everything a client could observe of rs.
func hashResponses(h interface{ Write([]byte) (int, error) }, rs []cp.Response) {
	var b [8]byte
	for _, r := range rs {
		binary.LittleEndian.PutUint64(b[:], uint64(r.Stream))
		h.Write(b[:])
		m := r.Message
		fmt.Fprintf(h, "|%s|%s|%s|%s|", m.GetTypeUrl(), m.GetVersionInfo(), m.GetNonce(), m.GetControlPlane().GetIdentifier())
		for _, a := range m.GetResources() {
			fmt.Fprintf(h, "%s:%x;", a.GetTypeUrl(), sha256.Sum256(a.GetValue()))
		}
		for _, e := range m.GetResourceErrors() {
			fmt.Fprintf(h, "E%s=%d:%s;", e.GetResourceName().GetName(), e.GetErrorDetail().GetCode(), e.GetErrorDetail().GetMessage())
		}
	}
}

func only(t testing.TB, rs []cp.Response) cp.Response {
	t.Helper()
	if len(rs) != 1 {
		t.Fatalf("got %d responses, want 1: %v", len(rs), summarize(rs))
	}
	return rs[0]
}

func summarize(rs []cp.Response) []string {
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("s%d/%v v=%s n=%s res=%d errs=%d", r.Stream, r.Type,
			r.Message.GetVersionInfo(), r.Message.GetNonce(), len(r.Message.GetResources()), len(r.Message.GetResourceErrors())))
	}
	return out
}

var cacheKinds = []cp.CacheKind{cp.LinearCaches, cp.SnapshotCache, cp.SnapshotPerType}

// onType returns the responses of rs of type t.
func onType(rs []cp.Response, t cp.ResourceType) []cp.Response {
	return slices.DeleteFunc(slices.Clone(rs), func(r cp.Response) bool { return r.Type != t })
}

// onStream returns the responses of rs on stream id.
func onStream(rs []cp.Response, id cp.StreamID) []cp.Response {
	return slices.DeleteFunc(slices.Clone(rs), func(r cp.Response) bool { return r.Stream != id })
}
