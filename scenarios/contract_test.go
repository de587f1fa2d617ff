package scenarios

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The reproducers of issue 16: values the validator used to accept that
// made a run panic or exhaust memory. Each is now refused with the key and
// where it stands (the file position, or the --set that gave it).

const withServer = `name = "t"
duration = "1m"

[[control_plane]]
name = "cp"
workers = 2

[[control_plane.service]]
name = "svc"

[[fleet.group]]
name = "web"
clients = 3
`

func TestValuesThatWouldCrashARunAreRefusedWithTheirKey(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		sets []string
		want string // the one error, in full
	}{
		{"endpoints at 2^63-1 (makeslice)", withServer, []string{"control_plane[0].service[0].endpoints=9223372036854775807"},
			"--set control_plane[0].service[0].endpoints=9223372036854775807: control_plane[0].service[0].endpoints: expected a number from 0 to 100000, found 9223372036854775807"},
		{"workers at 2^63-1 (makeslice)", withServer, []string{"control_plane[0].workers=9223372036854775807"},
			"--set control_plane[0].workers=9223372036854775807: control_plane[0].workers: expected a number from 0 (no limit) to 1000000, found 9223372036854775807"},
		{"a billion workers (8 GB at once)", strings.Replace(withServer, "workers = 2", "workers = 1000000000", 1), nil,
			"s.toml:6:11: control_plane[0].workers: expected a number from 0 (no limit) to 1000000, found 1000000000"},
		{"a latency that overflows virtual time", withServer, []string{`network.latency.value="1000000h"`},
			`--set network.latency.value="1000000h": network.latency.value: expected a duration of at most 720h0m0s (30 days), found "1000000h"`},
		{"a duration key past 30 days", withServer + "rpc.deadline = \"800h\"\n", nil,
			`s.toml:14:16: fleet.group[0].rpc.deadline: expected a duration of at most 720h0m0s (30 days), found "800h"`},
		{"num_retries = 0, which gRPC NACKs and the server bent to 1", withServer, []string{"control_plane[0].service[0].retry={num_retries=0}"},
			`--set control_plane[0].service[0].retry={num_retries=0}: control_plane[0].service[0].retry.num_retries: expected a number from 1 to 4294967295 (a uint32 in the RetryPolicy), found 0: grpc-go and C-core clients NACK a route whose num_retries is 0 (grpc-java makes it one attempt). For no retries leave out retry; to publish such a route on purpose, use defect = "route-retry"`},
		{"session_rpcs that wraps at 2^32", withServer, []string{"fleet.group[0].rpc.session_rpcs=4294967296"},
			"--set fleet.group[0].rpc.session_rpcs=4294967296: fleet.group[0].rpc.session_rpcs: expected a number from 0 (no limit) to 4294967295, found 4294967296"},
		{"profile_fields backoff_jitter = 1.5", "what_if = true\n" + withServer + "profile_fields = { backoff_jitter = 1.5 }\n", nil,
			"s.toml:15:18: fleet.group[0].profile_fields: profile backoff: want backoff_initial > 0, finite backoff_multiplier >= 1, 0 <= backoff_jitter < 1, backoff_max >= backoff_initial; got 1s × 1.6, jitter 1.5, max 2m0s"},
		{"profile_fields backoff_jitter = inf", withServer + "profile_fields = { backoff_jitter = inf }\n", []string{"what_if=true"},
			`s.toml:14:37: fleet.group[0].profile_fields.backoff_jitter: profile.backoff_jitter: want a finite non-negative number, got "+Inf"`},
		{"profile_fields backoff_jitter = nan", withServer + "profile_fields = { backoff_jitter = nan }\n", []string{"what_if=true"},
			`s.toml:14:37: fleet.group[0].profile_fields.backoff_jitter: profile.backoff_jitter: want a finite non-negative number, got "NaN"`},
		{"a profile_fields duration past 30 days", withServer, []string{"what_if=true", `fleet.group[0].profile_fields={backoff_max="800h"}`},
			`--set fleet.group[0].profile_fields={backoff_max="800h"}: fleet.group[0].profile_fields.backoff_max: expected a duration of at most 720h0m0s (30 days), found 800h0m0s`},
		{"profile_fields resource_timeout = 0s", withServer, []string{"what_if=true", `fleet.group[0].profile_fields={resource_timeout="0s"}`},
			`--set fleet.group[0].profile_fields={resource_timeout="0s"}: fleet.group[0].profile_fields: profile resource timeouts: want resource_timeout and resource_timeout_transient > 0, got 0s and 30s`},
		{"profile_fields backoff_max below backoff_initial, by --set", withServer, []string{"what_if=true", `fleet.group[0].profile_fields.backoff_max="1ms"`},
			`--set fleet.group[0].profile_fields.backoff_max="1ms": fleet.group[0].profile_fields: profile backoff: want backoff_initial > 0, finite backoff_multiplier >= 1, 0 <= backoff_jitter < 1, backoff_max >= backoff_initial; got 1s × 1.6, jitter 0.2, max 1ms`},
		{"a whole-table error an override caused points at the override", withServer + "[[fleet.group]]\nclients = 5\n", []string{"fleet.group[0].clients=10000000"},
			"--set fleet.group[0].clients=10000000: fleet.group: expected at most 10000000 clients in all, found 10000005"},
		{"a seed above 2^63-1, by --set", withServer, []string{"seed=18446744073709551615"},
			"--set seed=18446744073709551615: seed: expected an integer from 0 to 9223372036854775807, found 18446744073709551615"},
		{"arrays nested 40 deep", "a = " + strings.Repeat("[", 40) + strings.Repeat("]", 40) + "\n", nil,
			"s.toml:1:37: malformed TOML: arrays and inline tables nested more than 32 deep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, tt.doc, tt.sets...)
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("want an ErrorList, got %v", err)
			}
			if got := list.Error(); got != tt.want {
				t.Errorf("errors:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestDeeplyNestedInlineTablesAreRefusedCheaply(t *testing.T) {
	// 40 KB of nested inline tables exhausted memory in validate: the
	// parser's memory grows with the square of the depth.
	doc := "a = " + strings.Repeat("{b = ", 8000) + "1" + strings.Repeat("}", 8000) + "\n"
	_, err := parse(t, doc)
	if err == nil || !strings.Contains(err.Error(), "s.toml:1:") || !strings.Contains(err.Error(), "nested more than 32 deep") {
		t.Errorf("got %v, want a positioned nesting error", err)
	}
}

func TestNestingCountsNoBracketInStringsOrComments(t *testing.T) {
	deep := strings.Repeat("[", 40)
	doc := `description = "` + deep + `\"]"
name = '''` + "t" + `'''
[data_plane]
error_code = '''` + deep + `'''
# ` + deep + `
[[fleet.group]]
clients = 1
`
	// The document is otherwise wrong (error_code): only nesting matters.
	if _, err := parse(t, doc); err == nil || strings.Contains(err.Error(), "nested") {
		t.Errorf("brackets in strings and comments were counted: %v", err)
	}
}

func TestOpenReadsANamedPipeWithoutWaitingForAWriter(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pipe.toml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	// It used to block forever; with no writer it reads as empty.
	src, err := Open(fifo)
	if err != nil || len(src.Data) != 0 {
		t.Fatalf("Open(fifo) = %v, %v; want an empty document", src, err)
	}
	if _, err := Parse(src, nil); err == nil || !strings.Contains(err.Error(), "expected at least one client group") {
		t.Errorf("Parse of an empty pipe = %v", err)
	}
}

func TestOpenRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.toml")
	if err := os.WriteFile(big, make([]byte, MaxFileSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ ref, want string }{
		{"/dev/zero", "expected a regular file, found a device"}, // used to exhaust memory
		{dir + "/", "expected a regular file, found a directory"},
		{big, "expected a scenario of at most 16 MiB"},
	}
	for _, tt := range tests {
		_, err := Open(tt.ref)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), tt.ref+":") {
			t.Errorf("Open(%s) = %v, want an error naming it and %q", tt.ref, err, tt.want)
		}
	}
}

func TestASetValueIsOneValue(t *testing.T) {
	tests := []struct {
		name, set, want string
	}{
		{"a second key after a newline", "fleet.group[0].clients=5\nno_such_key=1",
			"--set fleet.group[0].clients=5\nno_such_key=1: expected one value after '=', found more on the lines after it (give each key its own --set)"},
		{"a bare word with a newline", "name=web\nserver",
			"--set name=web\nserver: expected one value after '=', found a line break in \"web\\nserver\" (a multi-line string is written \"\"\"...\"\"\")"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, minimal, tt.set)
			if err == nil || err.Error() != tt.want {
				t.Errorf("got %v\nwant %s", err, tt.want)
			}
		})
	}
	s, err := parse(t, minimal, "description=\"\"\"two\nlines\"\"\"")
	if err != nil || s.Description != "two\nlines" {
		t.Errorf("a multi-line string: %v, %q", err, s.Description)
	}
}

func TestASetTableValueGivesTheKeysItHolds(t *testing.T) {
	s, err := parse(t, minimal, `network.latency={dist="exponential",mean="5ms"}`)
	if err != nil {
		t.Fatal(err)
	}
	if l := s.Network.Latency; l.Dist != "exponential" || l.Mean != 5*time.Millisecond {
		t.Errorf("latency = %+v", l)
	}
}

func TestAnEmptyOverrideHostStatusStaysEmpty(t *testing.T) {
	doc := strings.Replace(withServer, "name = \"svc\"\n", "name = \"svc\"\noverride_host_status = []\n", 1)
	s, err := parse(t, doc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.FleetConfig()
	if got := cfg.ControlPlanes[0].Server.Services[0].OverrideHostStatus; got == nil || len(got) != 0 {
		t.Errorf("override_host_status = [] became %v, want an empty set (nil is the default)", got)
	}
	if !strings.Contains(s.TOML(), "override_host_status = []") {
		t.Errorf("the resolved scenario drops override_host_status = []:\n%s", s.TOML())
	}
}

func TestNamesWhoseMetricPathsCollideAreRefused(t *testing.T) {
	doc := withServer + "[[fleet.group]]\nname = \"web.rpc.failed\"\nclients = 2\n"
	_, err := parse(t, doc)
	want := `s.toml:15:8: fleet.group[1].name: the name "web.rpc.failed" makes summary.json report "groups.web.rpc.failed.failure_windows.client_seconds", which collides with "groups.web.rpc.failed": figures nest by the dots of their paths; rename it (a name without dots cannot collide)`
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	if _, err := parse(t, strings.Replace(doc, "web.rpc.failed", "web.canary", 1)); err != nil {
		t.Errorf("a dotted name that collides with nothing: %v", err)
	}
	// A group with two targets reports each target's latency under
	// groups.<group>.targets.<target>: a target's name can collide too.
	doc = strings.Replace(withServer, "name = \"svc\"\n", "name = \"svc\"\n\n[[control_plane.service]]\nname = \"svc.rpc.latency_seconds.p50\"\n", 1)
	_, err = parse(t, doc)
	want = `fleet.group[0].targets[1]: the name "svc.rpc.latency_seconds.p50" makes summary.json report`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

// TestAQuotedNumberIsAStringWhateverItsDigits: a quoted integer in range is
// a string where a number is expected, not an integer out of range, which
// only an unquoted one beyond 64 bits is.
func TestAQuotedNumberIsAStringWhateverItsDigits(t *testing.T) {
	_, err := Parse(&Source{File: "s.toml", Name: "s", Data: []byte("[[fleet.group]]\nclients = \"1234567890123456789\"\n")}, nil)
	want := `s.toml:2:11: fleet.group[0].clients: expected an integer, found the string "1234567890123456789"`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
}
