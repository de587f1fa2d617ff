package controlplane

import (
	"maps"
	"testing"

	streamv3 "github.com/envoyproxy/go-control-plane/pkg/server/stream/v3"
)

// TestSubscriptionIsGoControlPlanes checks the interned subscription
// against go-control-plane's own, step by step: the same names
// subscribed, the same versions returned, the same wildcard, whatever the
// requests and responses; and that two streams that agree share maps.
// Mirrors go-control-plane stream/v3 subscription_test.go (sotw).
func TestSubscriptionIsGoControlPlanes(t *testing.T) {
	type step struct {
		names    []string          // a request's resource_names, when set
		returned map[string]string // a response's returned versions, when set
	}
	for _, tt := range []struct {
		name  string
		steps []step
	}{
		{"subscribe, respond, ACK", []step{
			{names: []string{"a", "b"}}, {returned: map[string]string{"a": "1", "b": "1"}}, {names: []string{"b", "a"}},
		}},
		{"unsubscribing forgets what was returned", []step{
			{names: []string{"a", "b"}}, {returned: map[string]string{"a": "1", "b": "1"}}, {names: []string{"a"}},
			{names: []string{"a", "b"}},
		}},
		{"explicit wildcard keeps what was returned", []step{
			{names: []string{"a"}}, {returned: map[string]string{"a": "1"}}, {names: []string{"*"}}, {names: []string{"*", "b"}},
		}},
		{"empty list is not a wildcard", []step{{names: nil}, {returned: map[string]string{}}, {names: []string{"a"}}}},
		{"duplicate names", []step{{names: []string{"a", "a", "b"}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var in interner
			var mine subscription
			var theirs streamv3.Subscription
			started := false
			for i, st := range tt.steps {
				if st.returned != nil {
					mine.setReturned(maps.Clone(st.returned), &in)
					theirs.SetReturnedResources(maps.Clone(st.returned))
				} else {
					mine.set(st.names, &in)
					if !started {
						theirs = streamv3.NewSotwSubscription(st.names, false)
						started = true
					} else {
						theirs.SetResourceSubscription(st.names)
					}
				}
				if !maps.Equal(mine.SubscribedResources(), theirs.SubscribedResources()) ||
					!maps.Equal(mine.ReturnedResources(), theirs.ReturnedResources()) ||
					mine.IsWildcard() != theirs.IsWildcard() {
					t.Fatalf("step %d: mine %v %v %v, go-control-plane's %v %v %v", i,
						mine.SubscribedResources(), mine.ReturnedResources(), mine.IsWildcard(),
						theirs.SubscribedResources(), theirs.ReturnedResources(), theirs.IsWildcard())
				}
			}
		})
	}

	var in interner
	var a, b subscription
	a.set([]string{"x", "y"}, &in)
	b.set([]string{"y", "x"}, &in)
	a.setReturned(map[string]string{"x": "1"}, &in)
	b.setReturned(map[string]string{"x": "1"}, &in)
	// Maps are shared when the same pointer comes back (reflect-free
	// check: adding to one shows in the other).
	a.subscribed["probe"] = struct{}{}
	_, shared := b.subscribed["probe"]
	delete(a.subscribed, "probe")
	a.returned["probe"] = ""
	_, sharedV := b.returned["probe"]
	delete(a.returned, "probe")
	if !shared || !sharedV {
		t.Errorf("two streams with the same names and versions do not share their maps (names %v, versions %v)", shared, sharedV)
	}
}
