package dataplane

import (
	"math/bits"
	"regexp"
	"strconv"
	"strings"

	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherpb "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
)

// Header is one request header of an RPC: what route header matchers and
// hash policies read.
type Header struct {
	Name, Value string
}

// HeaderMatcher is one of a route's header matchers, as gRPC applies them
// (gRFC A28, "Route Header Matching"; grpc-go
// internal/xds/resolver/matcher.go).
type HeaderMatcher struct {
	Name string
	kind headerKind
	// Value is the exact, prefix, suffix or contains string.
	Value string
	re    *regexp.Regexp
	// Range is [Start, End) for a range match.
	Start, End int64
	// Present is what a present match wants.
	Present bool
	Invert  bool
	// IgnoreCase is a string_match's ignore_case.
	IgnoreCase bool
}

type headerKind uint8

const (
	hExact headerKind = iota
	hPrefix
	hSuffix
	hContains
	hRegex
	hRange
	hPresent
)

// headerMatcher converts an envoy HeaderMatcher; ok is false for a kind
// the XdsClient would have NACKed.
func headerMatcher(h *routepb.HeaderMatcher) (HeaderMatcher, bool) {
	m := HeaderMatcher{Name: strings.ToLower(h.GetName()), Invert: h.GetInvertMatch()}
	switch s := h.GetHeaderMatchSpecifier().(type) {
	case *routepb.HeaderMatcher_ExactMatch:
		m.kind, m.Value = hExact, s.ExactMatch
	case *routepb.HeaderMatcher_PrefixMatch:
		m.kind, m.Value = hPrefix, s.PrefixMatch
	case *routepb.HeaderMatcher_SuffixMatch:
		m.kind, m.Value = hSuffix, s.SuffixMatch
	case *routepb.HeaderMatcher_SafeRegexMatch:
		if m.re = anchored(s.SafeRegexMatch.GetRegex()); m.re == nil {
			return m, false
		}
		m.kind = hRegex
	case *routepb.HeaderMatcher_RangeMatch:
		m.kind, m.Start, m.End = hRange, s.RangeMatch.GetStart(), s.RangeMatch.GetEnd()
	case *routepb.HeaderMatcher_PresentMatch:
		m.kind, m.Present = hPresent, s.PresentMatch
	case *routepb.HeaderMatcher_StringMatch:
		sm := s.StringMatch
		m.IgnoreCase = sm.GetIgnoreCase()
		switch p := sm.GetMatchPattern().(type) {
		case *matcherpb.StringMatcher_Exact:
			m.kind, m.Value = hExact, p.Exact
		case *matcherpb.StringMatcher_Prefix:
			m.kind, m.Value = hPrefix, p.Prefix
		case *matcherpb.StringMatcher_Suffix:
			m.kind, m.Value = hSuffix, p.Suffix
		case *matcherpb.StringMatcher_Contains:
			m.kind, m.Value = hContains, p.Contains
		case *matcherpb.StringMatcher_SafeRegex:
			if m.re = anchored(p.SafeRegex.GetRegex()); m.re == nil {
				return m, false
			}
			m.kind = hRegex
		default:
			return m, false
		}
	default:
		return m, false
	}
	if m.IgnoreCase {
		m.Value = strings.ToLower(m.Value)
	}
	return m, true
}

// anchored compiles a safe_regex as gRPC matches it, against the whole
// value (RE2 full match); nil if it does not compile (the XdsClient
// NACKed such a route).
func anchored(expr string) *regexp.Regexp {
	re, err := regexp.Compile("^(?:" + expr + ")$")
	if err != nil {
		return nil
	}
	return re
}

// Matches reports whether the RPC's headers match, as grpc-go's header
// matchers do (internal/xds/matcher/matcher_header.go): the value is the
// header's entries joined with ","; a header the RPC lacks fails every
// kind but present, whatever invert_match says; present compares presence
// with present_match XOR invert_match.
func (m *HeaderMatcher) Matches(hdrs []Header) bool {
	v, found := headerValue(hdrs, m.Name)
	var ok bool
	switch {
	case m.kind == hPresent:
		return found == (m.Present != m.Invert)
	case !found:
		return false
	default:
		if m.IgnoreCase {
			v = strings.ToLower(v)
		}
		switch m.kind {
		case hExact:
			ok = v == m.Value
		case hPrefix:
			ok = strings.HasPrefix(v, m.Value)
		case hSuffix:
			ok = strings.HasSuffix(v, m.Value)
		case hContains:
			ok = strings.Contains(v, m.Value)
		case hRegex:
			ok = m.re.MatchString(v)
		case hRange:
			n, err := strconv.ParseInt(v, 10, 64)
			ok = err == nil && n >= m.Start && n < m.End
		}
	}
	return ok != m.Invert
}

// headerValue returns the RPC's value of header name (lowercase): its
// entries joined with ",". Binary headers ("-bin") are never matched, and
// content-type is "application/grpc" (gRFC A28).
func headerValue(hdrs []Header, name string) (string, bool) {
	if strings.HasSuffix(name, "-bin") {
		return "", false
	}
	if name == "content-type" {
		return "application/grpc", true
	}
	var v string
	found := false
	for _, h := range hdrs {
		if h.Name != name {
			continue
		}
		if found {
			v += "," + h.Value
		} else {
			v, found = h.Value, true
		}
	}
	return v, found
}

// HashPolicy is one of a route's hash policies for ring_hash (gRFC A42):
// a header's value, or the channel's identity (filter_state
// io.grpc.channel_id).
type HashPolicy struct {
	Header    string
	ChannelID bool
	Terminal  bool
}

// RequestHash computes an RPC's hash from the route's hash policies, as
// gRFC A42 does: each policy that yields a value folds it in (the
// accumulated hash rotated left by one, XORed with it), and a terminal
// policy that yielded one ends the walk. ok is false when none yields a
// value: the RPC then hashes at random. The hash of a value is FNV-64a,
// not XXH64: the simulated ring places endpoints by weight, not by their
// real hashes, so only equality of hashes matters.
func (r *Route) RequestHash(hdrs []Header, channel uint64) (h uint64, ok bool) {
	for _, p := range r.HashPolicies {
		var v uint64
		got := false
		switch {
		case p.ChannelID:
			v, got = channel, true
		case p.Header != "":
			if s, found := headerValue(hdrs, p.Header); found {
				v, got = fnv64a(s), true
			}
		}
		if !got {
			continue
		}
		h = bits.RotateLeft64(h, 1) ^ v
		ok = true
		if p.Terminal {
			break
		}
	}
	return h, ok
}

// Matches reports whether an RPC to method with headers takes route r: its
// path matcher (prefix, exact path or safe_regex, case-insensitive when
// case_sensitive is false) and every header matcher (gRFC A28).
func (r *Route) Matches(method string, hdrs []Header) bool {
	path := method
	switch {
	case r.regex != nil:
		if !r.regex.MatchString(path) {
			return false
		}
	case r.ignoreCase:
		if r.exact && !strings.EqualFold(path, r.Path) || !r.exact && !hasPrefixFold(path, r.Prefix) {
			return false
		}
	case r.exact:
		if path != r.Path {
			return false
		}
	default:
		if !strings.HasPrefix(path, r.Prefix) {
			return false
		}
	}
	for i := range r.Headers {
		if !r.Headers[i].Matches(hdrs) {
			return false
		}
	}
	return true
}

// fnv64a is the 64-bit FNV-1a hash of s (hash/fnv's, without the
// allocation of a hash.Hash per RPC).
func fnv64a(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
