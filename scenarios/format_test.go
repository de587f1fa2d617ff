package scenarios

import (
	"strings"
	"testing"
)

// formatDoc is a scenario with a snapshot server and a linear one whose
// service is defective from the start; head goes at the top.
func formatDoc(head, snapshotServer string) string {
	return head + `
name = "s"
duration = "1m"

[[control_plane]]
name = "snap"
` + snapshotServer + `
[[control_plane.service]]
name = "echo"

[[control_plane]]
name = "lin"

[[control_plane.service]]
name = "echo"
defect = "cluster-lb-policy"

[[fleet.group]]
clients = 1
servers = ["snap"]
`
}

// TestOlderFormatsWarnAboutEachChangedKeyTheyUse pins the format contract:
// a file without format (format 1) or with an older one runs, with a
// warning at each key it uses whose meaning changed since; the current
// format warns about nothing. Reference: docs/scenario-reference.md,
// "Format versions".
func TestOlderFormatsWarnAboutEachChangedKeyTheyUse(t *testing.T) {
	for _, tt := range []struct {
		name string
		doc  string
		sets []string
		want []string // each warning, as "position: key: start of the message"
	}{
		{
			name: "no format: the snapshot cache and the held NACK of a defect",
			doc:  formatDoc("", `cache = "snapshot"`),
			want: []string{
				`s.toml:7:9: control_plane[0].cache: "snapshot" means something else since format 2 (this file is format 1): one version for the whole snapshot`,
				`s.toml:16:10: control_plane[1].service[0].defect: NACKs are held by default since format 2 (this file is format 1)`,
			},
		},
		{
			name: "format 1 given",
			doc:  formatDoc("format = 1", `cache = "snapshot"`),
			want: []string{
				`s.toml:7:9: control_plane[0].cache: "snapshot" means something else since format 2 (this file is format 1)`,
				`s.toml:16:10: control_plane[1].service[0].defect: NACKs are held by default since format 2`,
			},
		},
		{
			name: "the current format",
			doc:  formatDoc("format = 2", `cache = "snapshot"`),
		},
		{
			name: "no format, on_nack given: only the versions changed",
			doc:  formatDoc("", "cache = \"snapshot\"\non_nack = \"resend\""),
			want: []string{
				`s.toml:7:9: control_plane[0].cache: "snapshot" means something else since format 2 (this file is format 1): one version for the whole snapshot, so that every change re-sends every type and the clients ACK the unchanged ones; format 1's "snapshot" had a version per type. Write cache = "snapshot-per-type" for the old behaviour`,
				`s.toml:17:10: control_plane[1].service[0].defect: NACKs are held by default`,
			},
		},
		{
			name: "no format, no changed key used",
			doc:  formatDoc("", `cache = "snapshot-per-type"`),
			want: []string{`s.toml:16:10: control_plane[1].service[0].defect: NACKs are held by default`},
		},
		{
			name: "a changed key given by --set",
			doc:  formatDoc("", ""),
			sets: []string{`control_plane[0].cache="snapshot"`},
			want: []string{
				`s.toml:16:10: control_plane[1].service[0].defect: NACKs are held by default`,
				`--set control_plane[0].cache="snapshot": control_plane[0].cache: "snapshot" means something else since format 2`,
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := parse(t, tt.doc, tt.sets...)
			if err != nil {
				t.Fatalf("an older format must still run: %v", err)
			}
			got := s.Warnings()
			if len(got) != len(tt.want) {
				t.Fatalf("warnings:\n got %q\nwant %d of them: %q", got.Error(), len(tt.want), tt.want)
			}
			for i, w := range got {
				if !strings.HasPrefix(w.Error(), tt.want[i]) {
					t.Errorf("warning %d:\n got %s\nwant it to start with %s", i, w, tt.want[i])
				}
			}
			if s.Format != CurrentFormat {
				t.Errorf("resolved format = %d, want %d: the resolved scenario spells out today's meaning", s.Format, CurrentFormat)
			}
		})
	}
}

// TestPublishInvalidOnAHoldingLinearServerWarns: a client that starts
// during a publish_invalid NACKs its first response of the type, which a
// format-1 LinearCache answered at once.
func TestPublishInvalidOnAHoldingLinearServerWarns(t *testing.T) {
	doc := `
duration = "1m"
[[control_plane]]
name = "a"
[[control_plane.service]]
name = "echo"
[[control_plane]]
name = "b"
on_nack = "hold"
[[control_plane.service]]
name = "echo"
[[fleet.group]]
clients = 1
[[change]]
at = "10s"
action = "publish_invalid"
service = "echo"
defect = "cluster-lb-policy"
`
	s, err := parse(t, doc)
	if err != nil {
		t.Fatal(err)
	}
	w := s.Warnings()
	if len(w) != 1 || !strings.HasPrefix(w[0].Error(), "s.toml:16:10: change[0].action: NACKs are held by default since format 2") ||
		!strings.Contains(w[0].Error(), `Add on_nack = "resend" to control plane a for the old behaviour`) {
		t.Errorf("warnings = %q, want one at change[0].action naming control plane a only (b gives on_nack)", w.Error())
	}
	s, err = parse(t, "format = 2\n"+doc)
	if err != nil || len(s.Warnings()) != 0 {
		t.Errorf("format 2: warnings %v, error %v; want neither", s.Warnings(), err)
	}
}

// TestFormatsOutsideTheKnownOnesAreRefused: a newer format than this
// xdssim knows is an error that asks for an upgrade, and the only one
// reported (its other keys may be ones this xdssim does not know); a
// format below 1 or not an integer is an error as any bad value is.
func TestFormatsOutsideTheKnownOnesAreRefused(t *testing.T) {
	for _, tt := range []struct {
		name, doc string
		sets      []string
		want      string
	}{
		{"a future format", "format = 3\nnew_key_of_format_3 = true\n[[fleet.group]]\nclients = 1\n", nil,
			"s.toml:1:10: format: this scenario is format 3, and this xdssim reads formats 1 to 2: upgrade xdssim to run it"},
		{"a future format by --set", "[[fleet.group]]\nclients = 1\n", []string{"format=7"},
			"--set format=7: format: this scenario is format 7, and this xdssim reads formats 1 to 2: upgrade xdssim to run it"},
		{"format 0", "format = 0\n[[fleet.group]]\nclients = 1\n", nil,
			"s.toml:1:10: format: expected a format from 1 to 2 (2 is the current one), found 0"},
		{"a string", "format = \"2\"\n[[fleet.group]]\nclients = 1\n", nil,
			`s.toml:1:10: format: expected an integer, the scenario format (2 is the current one), found the string "2"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, tt.doc, tt.sets...)
			list, ok := err.(ErrorList)
			if !ok || len(list) != 1 || list[0].Error() != tt.want {
				t.Errorf("error:\n got %v\nwant %s", err, tt.want)
			}
		})
	}
}

// TestLibraryScenariosAreInTheCurrentFormat: every library scenario says
// it is written in the current format, so none warns.
func TestLibraryScenariosAreInTheCurrentFormat(t *testing.T) {
	for _, e := range Library() {
		src, err := Open(e.Name)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(src.Data), "\nformat = 2\n") {
			t.Errorf("%s: no format = 2 line", e.Name)
		}
		s, err := Parse(src, nil)
		if err != nil {
			t.Fatal(err)
		}
		if w := s.Warnings(); len(w) > 0 {
			t.Errorf("%s warns: %v", e.Name, w)
		}
	}
}
