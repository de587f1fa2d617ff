package dataplane

import (
	"testing"

	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typepb "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TestRouteMatching: a route matches an RPC by its path matcher (prefix,
// exact path, safe_regex; case-insensitive when case_sensitive is false)
// and all its header matchers, as gRPC matches them. A missing header
// fails every matcher but present, invert_match or not.
// References: gRFC A28 "Route Matching"; grpc-go
// internal/xds/matcher/matcher_header.go, internal/xds/resolver.
func TestRouteMatching(t *testing.T) {
	exact := func(name, v string, invert bool) *routepb.HeaderMatcher {
		return &routepb.HeaderMatcher{Name: name, InvertMatch: invert, HeaderMatchSpecifier: &routepb.HeaderMatcher_StringMatch{
			StringMatch: &matcherpb.StringMatcher{MatchPattern: &matcherpb.StringMatcher_Exact{Exact: v}}}}
	}
	prefix := func(p string) *routepb.RouteMatch {
		return &routepb.RouteMatch{PathSpecifier: &routepb.RouteMatch_Prefix{Prefix: p}}
	}
	regex := &routepb.RouteMatch{PathSpecifier: &routepb.RouteMatch_SafeRegex{SafeRegex: &matcherpb.RegexMatcher{Regex: `/shop\.Checkout/(PlaceOrder|Quote)`}}}
	canary := prefix("/")
	canary.Headers = []*routepb.HeaderMatcher{exact("x-canary", "true", false)}
	notCanary := prefix("/")
	notCanary.Headers = []*routepb.HeaderMatcher{exact("X-Canary", "true", true)}
	present := prefix("/")
	present.Headers = []*routepb.HeaderMatcher{{Name: "x-user", HeaderMatchSpecifier: &routepb.HeaderMatcher_PresentMatch{PresentMatch: true}}}
	rng := prefix("/")
	rng.Headers = []*routepb.HeaderMatcher{{Name: "x-n", HeaderMatchSpecifier: &routepb.HeaderMatcher_RangeMatch{RangeMatch: &typepb.Int64Range{Start: 1, End: 10}}}}
	fold := prefix("/SHOP.")
	fold.CaseSensitive = wrapperspb.Bool(false)
	canaryHdr := []Header{{"x-canary", "true"}}
	cases := []struct {
		name   string
		match  *routepb.RouteMatch
		method string
		hdrs   []Header
		want   bool
	}{
		{"prefix", prefix("/shop."), "/shop.Cart/Get", nil, true},
		{"prefix mismatch", prefix("/shop.Cart/"), "/shop.Catalog/Get", nil, false},
		{"prefix is case-sensitive", prefix("/SHOP."), "/shop.Cart/Get", nil, false},
		{"case_sensitive false", fold, "/shop.Cart/Get", nil, true},
		{"regex", regex, "/shop.Checkout/Quote", nil, true},
		{"regex is anchored", regex, "/shop.Checkout/QuoteAll", nil, false},
		{"header exact", canary, "/shop.Cart/Get", canaryHdr, true},
		{"header absent", canary, "/shop.Cart/Get", nil, false},
		{"header other value", canary, "/shop.Cart/Get", []Header{{"x-canary", "false"}}, false},
		{"inverted", notCanary, "/shop.Cart/Get", []Header{{"x-canary", "false"}}, true},
		{"inverted, header absent", notCanary, "/shop.Cart/Get", nil, false},
		{"present", present, "/a/b", []Header{{"x-user", "u1"}}, true},
		{"present, absent", present, "/a/b", nil, false},
		{"range in", rng, "/a/b", []Header{{"x-n", "9"}}, true},
		{"range end is open", rng, "/a/b", []Header{{"x-n", "10"}}, false},
	}
	for _, tc := range cases {
		var r Route
		if !routeMatch(tc.match, &r) {
			t.Fatalf("%s: the match did not convert", tc.name)
		}
		if got := r.Matches(tc.method, tc.hdrs); got != tc.want {
			t.Errorf("%s: Matches(%q, %v) = %v, want %v", tc.name, tc.method, tc.hdrs, got, tc.want)
		}
	}
}

// TestRequestHash: a header hash policy gives RPCs with the same value the
// same hash, and a missing header leaves the RPC to a random hash; a
// terminal policy that yields a value ends the walk.
// Reference: gRFC A42 "Hash Policy".
func TestRequestHash(t *testing.T) {
	r := Route{HashPolicies: []HashPolicy{{Header: "x-user-id", Terminal: true}, {ChannelID: true}}}
	a, okA := r.RequestHash([]Header{{"x-user-id", "alice"}}, 1)
	a2, _ := r.RequestHash([]Header{{"x-user-id", "alice"}}, 2)
	b, _ := r.RequestHash([]Header{{"x-user-id", "bob"}}, 1)
	if !okA || a != a2 || a == b {
		t.Errorf("header hashes: alice %x/%x (terminal: the channel must not count), bob %x", a, a2, b)
	}
	c1, ok1 := r.RequestHash(nil, 1)
	c2, _ := r.RequestHash(nil, 2)
	if !ok1 || c1 == c2 {
		t.Errorf("channel id hashes: %x, %x, want distinct", c1, c2)
	}
	if _, ok := (&Route{HashPolicies: []HashPolicy{{Header: "x"}}}).RequestHash(nil, 1); ok {
		t.Errorf("a policy that yields nothing gave a hash")
	}
}

// TestRouteMatchingAllocatesNothing: matching an RPC against routes with
// a regex and header matchers, and hashing it, allocates nothing (the
// per-RPC path of the fleet).
func TestRouteMatchingAllocatesNothing(t *testing.T) {
	m := &routepb.RouteMatch{PathSpecifier: &routepb.RouteMatch_SafeRegex{SafeRegex: &matcherpb.RegexMatcher{Regex: `/shop\.Checkout/(PlaceOrder|Quote)`}},
		Headers: []*routepb.HeaderMatcher{{Name: "x-user-id", HeaderMatchSpecifier: &routepb.HeaderMatcher_PresentMatch{PresentMatch: true}}}}
	var r Route
	if !routeMatch(m, &r) {
		t.Fatal("the match did not convert")
	}
	r.HashPolicies = []HashPolicy{{Header: "x-user-id"}}
	hdrs := []Header{{"x-user-id", "u-17"}}
	allocs := testing.AllocsPerRun(100, func() {
		if !r.Matches("/shop.Checkout/Quote", hdrs) {
			t.Fatal("no match")
		}
		r.RequestHash(hdrs, 1)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per RPC, want 0", allocs)
	}
}
