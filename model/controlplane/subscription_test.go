package controlplane

import (
	"fmt"
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
		resend   bool              // a request with the last request's names, the same slice
		first    int               // when > 0, a request with the first names of that slice
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
		{"ACKs from the same snapshot", []step{
			{names: []string{"a", "b"}}, {returned: map[string]string{"a": "1", "b": "1"}}, {resend: true},
			{returned: map[string]string{"a": "2", "b": "2"}}, {resend: true}, {names: []string{"a"}}, {resend: true},
		}},
		{"duplicate names resent", []step{{names: []string{"a", "a", "b"}}, {returned: map[string]string{"a": "1"}}, {resend: true}}},
		{"wildcard resent", []step{{names: []string{"*", "a"}}, {returned: map[string]string{"a": "1", "c": "1"}}, {resend: true}}},
		{"empty list resent", []step{{names: []string{}}, {resend: true}, {names: []string{"a"}}, {resend: true}}},
		{"fewer names of the same slice", []step{
			{names: []string{"a", "b"}}, {returned: map[string]string{"a": "1", "b": "1"}}, {resend: true, first: 1},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var in interner
			var mine cacheSub
			var theirs streamv3.Subscription
			started := false
			var last []string
			for i, st := range tt.steps {
				if st.resend {
					st.names = last
					if st.first > 0 {
						st.names = last[:st.first]
					}
				}
				if st.returned == nil {
					last = st.names
				}
				if st.returned != nil {
					mine.setReturned(maps.Clone(st.returned), &in)
					theirs.SetReturnedResources(maps.Clone(st.returned))
				} else {
					mine.wildcard = mine.set(st.names, &in)
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

// TestVersionTableNamesWhatIsHeldAndForgetsTheRest checks the version ids
// that typeStates keep: each id names the version it was set to, ids are
// shared by equal versions, and a version no id names is forgotten, its
// slot reused, so a run of changing versions keeps the table small.
func TestVersionTableNamesWhatIsHeldAndForgetsTheRest(t *testing.T) {
	for _, tt := range []struct {
		name     string
		sets     [][2]string // a typeState ("a" or "b") set to a version
		want     map[string]string
		maxSlots int // the table's slots after the steps: those named, and one being replaced
	}{
		{"empty is id 0 and takes no slot", [][2]string{{"a", ""}, {"b", ""}}, map[string]string{"a": "", "b": ""}, 0},
		{"equal versions share a slot", [][2]string{{"a", "v1"}, {"b", "v1"}}, map[string]string{"a": "v1", "b": "v1"}, 1},
		{"a version set again keeps its slot", [][2]string{{"a", "v1"}, {"a", "v1"}}, map[string]string{"a": "v1", "b": ""}, 1},
		{"versions that follow each other reuse one slot", [][2]string{
			{"a", "v1"}, {"a", "v2"}, {"a", "v3"}, {"a", "v4"}, {"a", "v5"},
		}, map[string]string{"a": "v5", "b": ""}, 2},
		// The new version is taken before the old is let go: v1, v2, v3.
		{"a version still named is kept", [][2]string{
			{"a", "v1"}, {"b", "v1"}, {"a", "v2"}, {"a", "v3"}, {"a", "v4"},
		}, map[string]string{"a": "v4", "b": "v1"}, 3},
		{"back to empty forgets", [][2]string{{"a", "v1"}, {"a", ""}, {"b", "v2"}}, map[string]string{"a": "", "b": "v2"}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var vt versionTable
			ids := map[string]*uint32{"a": new(uint32), "b": new(uint32)}
			for _, s := range tt.sets {
				vt.set(ids[s[0]], s[1])
			}
			for k, v := range tt.want {
				if got := vt.version(*ids[k]); got != v {
					t.Errorf("%s names %q, want %q", k, got, v)
				}
			}
			if len(vt.strs) > tt.maxSlots {
				t.Errorf("the table has %d slots, want at most %d", len(vt.strs), tt.maxSlots)
			}
			vt.release(*ids["a"])
			vt.release(*ids["b"])
			if len(vt.ids) != 0 {
				t.Errorf("with every id released the table still holds %v", vt.ids)
			}
		})
	}
}

// TestASnapshotResentAfterTheInternerForgotGetsTheSharedSet: once the
// interner forgets its name sets, a stream that resends the names it
// sent before gets the set a newcomer with those names gets, as it did
// before the interner forgot: streams that agree still share their set
// (and so their watch group).
func TestASnapshotResentAfterTheInternerForgotGetsTheSharedSet(t *testing.T) {
	var in interner
	var old, newcomer subscription
	names := []string{"x"}
	old.set(names, &in)
	for i := range maxInterned {
		var other subscription
		other.set([]string{fmt.Sprint("n", i)}, &in)
	}
	if !in.forgot {
		t.Fatal("the interner did not forget after maxInterned sets")
	}
	newcomer.set([]string{"x"}, &in)
	old.set(names, &in)
	if mapID(old.subscribed) != mapID(newcomer.subscribed) {
		t.Error("a snapshot resent after the interner forgot has a set of its own, not the newcomer's")
	}
}
