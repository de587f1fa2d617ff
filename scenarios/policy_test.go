package scenarios

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/xdssim/xdssim/model/xdsclient"
)

// time2 writes a duration as Profile.Field does ("2m" as "2m0s"); other
// values as they are.
func time2(s string) string {
	if d, err := time.ParseDuration(s); err == nil {
		return d.String()
	}
	return s
}

// policySkeleton is a minimal scenario with one grpc-go group, a control
// plane whose service has a retry policy, and a second control plane to
// fall back to.
const policySkeleton = `
[[control_plane]]
name = "cp"
[[control_plane.service]]
name = "echo"
retry = { num_retries = 1 }
[[control_plane]]
name = "fallback"
[[control_plane.service]]
name = "echo"
[[fleet.group]]
clients = 1
servers = ["cp"]
`

var policyRow = regexp.MustCompile("(?m)^\\| ([^|`]+) \\| `([^`]+)` \\| `([^`]+)` \\| `([^`]+)` \\| \\*\\*(what-if|deployable)\\*\\*")

// TestPolicyKeysAreLabelledAsTheLoaderTreatsThem: every row of the
// scenario reference's table of policy keys names a key whose default is
// the one given, and whose value to try is accepted without what_if
// exactly when the row says it is deployable. So the table's "deployable
// today?" cannot drift from what validation (whatif.go) enforces.
// Reference: docs/architecture.md, "Faithful by default, what-if by name".
func TestPolicyKeysAreLabelledAsTheLoaderTreatsThem(t *testing.T) {
	doc, err := os.ReadFile("../docs/scenario-reference.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := policyRow.FindAllStringSubmatch(string(doc), -1)
	if len(rows) < 25 {
		t.Fatalf("found %d rows of policy keys, want the whole table", len(rows))
	}
	src := &Source{File: "policy.toml", Name: "policy", Data: []byte(policySkeleton)}
	base, err := Parse(src, nil)
	if err != nil {
		t.Fatal(err)
	}
	resolved := base.TOML()
	for _, r := range rows {
		name, key, def, try, label := r[1], strings.ReplaceAll(r[2], "[]", "[0]"), r[3], r[4], r[5]
		t.Run(name, func(t *testing.T) {
			s, err := Parse(src, []string{key + "=" + def})
			if err != nil {
				t.Fatalf("%s=%s (the default): %v", key, def, err)
			}
			if field, ok := strings.CutPrefix(key, "fleet.group[0].profile_fields."); ok {
				// A profile field set lands in the table; the default is
				// what the profile ships.
				p, _ := xdsclient.ProfileByName(base.Fleet.Groups[0].Profile)
				if got, err := p.Field(field); err != nil || got != time2(strings.Trim(def, `"`)) {
					t.Errorf("%s: grpc-go ships %q (%v), the table says %s", key, got, err, def)
				}
			} else if got := s.TOML(); got != resolved {
				// Setting the default changes nothing.
				t.Errorf("%s=%s is not the default: the resolved scenario changes", key, def)
			}
			_, err = Parse(src, []string{key + "=" + try})
			switch {
			case label == "deployable" && err != nil:
				t.Errorf("%s=%s is labelled deployable, but the loader refuses it: %v", key, try, err)
			case label == "what-if" && (err == nil || !strings.Contains(err.Error(), "is a what-if")):
				t.Errorf("%s=%s is labelled what-if, but the loader says: %v", key, try, err)
			}
			if label == "what-if" {
				if _, err := Parse(src, []string{key + "=" + try, "what_if=true"}); err != nil {
					t.Errorf("%s=%s with what_if = true: %v", key, try, err)
				}
			}
		})
	}
}
