package controlplane

import (
	"strconv"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
)

// A Request is what the server reads of a client's DiscoveryRequest: its
// type_url, version_info, response_nonce, resource_names and
// error_detail. A simulated client hands it over as it is, without
// building the message: the server builds one only for a watch it opens,
// since go-control-plane's cache takes a watch's request as a message and
// keys its response by it. The node is not carried: no cache the server
// runs reads it (a LinearCache ignores it, and a SnapshotCache's node hash,
// fleetHash, puts every client in one node group).
type Request struct {
	TypeURL string
	Version string
	Nonce   string
	// Names are the subscribed resource names; the server keeps them and
	// never writes to them, nor may the caller afterwards.
	Names []string
	// ErrorDetail is set on a NACK.
	ErrorDetail *Status
	// nonce, when not 0, is the response_nonce (Nonce is then empty), as
	// the number the server wrote it from: a queued request keeps it so.
	nonce uint32
}

// quotes reports whether r's response_nonce is n, not 0, as the decimal
// the server sent.
func (r *Request) quotes(n uint32) bool {
	if r.nonce != 0 {
		return r.nonce == n
	}
	return nonceIs(r.Nonce, n)
}

// responseNonce returns r's response_nonce.
func (r *Request) responseNonce() string {
	if r.nonce != 0 {
		return strconv.FormatUint(uint64(r.nonce), 10)
	}
	return r.Nonce
}

// message builds the DiscoveryRequest r stands for, with version_info
// version (what the cache is to see: NACKPolicy.CacheVersion).
func (r *Request) message(version string) *discoverypb.DiscoveryRequest {
	m := &discoverypb.DiscoveryRequest{VersionInfo: version, ResourceNames: r.Names, TypeUrl: r.TypeURL, ResponseNonce: r.responseNonce()}
	if d := r.ErrorDetail; d != nil {
		m.ErrorDetail = &statuspb.Status{Code: int32(d.Code), Message: d.Message}
	}
	return m
}
