package controlplane

import (
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
)

// The tests build their requests as the messages a client sends; the
// server takes what it reads of them.

// RequestOf returns what the server reads of m.
func RequestOf(m *discoverypb.DiscoveryRequest) Request {
	r := Request{TypeURL: m.GetTypeUrl(), Version: m.GetVersionInfo(), Nonce: m.GetResponseNonce(), Names: m.GetResourceNames()}
	if d := m.GetErrorDetail(); d != nil {
		r.ErrorDetail = &Status{Code: codes.Code(d.GetCode()), Message: d.GetMessage()}
	}
	return r
}
