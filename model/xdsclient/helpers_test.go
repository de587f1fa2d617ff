package xdsclient

import (
	matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
)

func matcherRegexValue() *matcherpb.RegexMatcher { return &matcherpb.RegexMatcher{Regex: "(["} }

func statusProto(c codes.Code, msg string) *statuspb.Status {
	return &statuspb.Status{Code: int32(c), Message: msg}
}
