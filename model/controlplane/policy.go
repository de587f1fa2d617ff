package controlplane

import (
	"fmt"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
)

// NACKPolicy is what a server does when a client rejects (NACKs) the
// latest response of a type on a stream.
//
// go-control-plane itself has no policy: its caches compare the NACK's
// version_info with their own, and whether the NACK is answered follows
// from that. A SnapshotCache answers every NACK that carries the
// previously accepted version (grpc-go's, gRFC A46's), since it differs
// from the snapshot's (simple.go CreateWatch): a NACK storm, one round
// trip per NACK, until the config is fixed. A LinearCache answers only a
// NACK of a client that has accepted nothing (version_info "", linear.go
// CreateWatch replyEvenIfEmpty). Production control planes decide on
// purpose: istiod answers no NACK (pkg/xds/server.go ShouldRespond: "If
// there is an error in request that means previous response is
// erroneous. We do not have to respond in that case") and sends the next
// push when the config changes. A policy makes the choice explicit and the
// same for every cache.
type NACKPolicy uint8

// NACK policies.
const (
	// HoldNACKs answers no NACK: the stream gets the type again only when
	// its resources change (a new version). What production control
	// planes do, and the default.
	HoldNACKs NACKPolicy = iota
	// ResendNACKs answers every NACK at once with the type's current
	// resources, as a raw go-control-plane SnapshotCache does with a NACK
	// carrying the previous version: the client NACKs them again, one
	// round trip after the other, until the config is fixed.
	ResendNACKs
)

var nackNames = [...]string{"hold", "resend"}

// String returns "hold" or "resend".
func (p NACKPolicy) String() string {
	if int(p) < len(nackNames) {
		return nackNames[p]
	}
	return fmt.Sprintf("NACKPolicy(%d)", p)
}

// ParseNACKPolicy parses "hold" or "resend".
func ParseNACKPolicy(s string) (NACKPolicy, error) {
	for i, n := range nackNames {
		if n == s {
			return NACKPolicy(i), nil
		}
	}
	return 0, fmt.Errorf("controlplane: unknown NACK policy %q (want hold or resend)", s)
}

// CacheVersion returns the version_info go-control-plane's cache must see
// in req for the server to follow the policy; sent is the version of the
// response req answers (the last one of its type on its stream). A
// request without error_detail keeps its own version.
//
// Holding tells the cache the client has sent, the NACKed version: a
// SnapshotCache then waits for a snapshot of another version, and a
// LinearCache finds every returned resource up to date. Resending tells it
// the client has nothing, so that both answer at once (with
// [CacheSubscription] for a LinearCache). A real server does the same from
// its request callback (go-control-plane server Callbacks
// OnStreamRequest), which validate/ does.
func (p NACKPolicy) CacheVersion(req *discoverypb.DiscoveryRequest, sent string) string {
	return p.version(req.GetErrorDetail() != nil, req.GetVersionInfo(), sent)
}

// version is CacheVersion of a request with version_info version, a NACK
// when nack.
func (p NACKPolicy) version(nack bool, version, sent string) string {
	if !nack {
		return version
	}
	if p == ResendNACKs {
		return ""
	}
	return sent
}

// CacheSubscription returns the subscription go-control-plane's cache must
// see with req: under ResendNACKs, a NACK's subscription with nothing
// returned, so that a LinearCache sends every subscribed resource again
// (linear.go computeResourceChange); otherwise sub itself.
func (p NACKPolicy) CacheSubscription(req *discoverypb.DiscoveryRequest, sub cachev3.Subscription) cachev3.Subscription {
	if p != ResendNACKs || req.GetErrorDetail() == nil {
		return sub
	}
	return nothingReturned{sub}
}

// nothingReturned is a subscription whose client has no resource.
type nothingReturned struct{ cachev3.Subscription }

// ReturnedResources returns nothing: the client is to be sent everything.
func (nothingReturned) ReturnedResources() map[string]string { return map[string]string{} }
