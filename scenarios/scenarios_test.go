package scenarios

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

const minimal = `name = "t"
duration = "1m"

[[fleet.group]]
clients = 3
`

func parse(t *testing.T, doc string, sets ...string) (*Scenario, error) {
	t.Helper()
	return Parse(&Source{File: "s.toml", Name: "s", Data: []byte(doc)}, sets)
}

// sameScenario compares two scenarios as documents: where they were read
// from, and the files they name as read, do not count.
func sameScenario(a, b *Scenario) bool {
	x, y := *a, *b
	x.src, y.src = nil, nil
	x.mesh, y.mesh = meshFiles{}, meshFiles{}
	return reflect.DeepEqual(x, y)
}

// reparse parses s's resolved TOML as if it stood where s's file does.
func reparse(s *Scenario) (*Scenario, error) {
	return Parse(&Source{File: s.src.File, Name: s.src.Name, Data: []byte(s.TOML()), embedded: s.src.embedded}, nil)
}

func TestDefaultsAreAppliedToKeysLeftOut(t *testing.T) {
	s, err := parse(t, "[[fleet.group]]\nclients = 3\n[[fleet.restart]]\nat = \"1s\"\n")
	if err != nil {
		t.Fatal(err)
	}
	want := &Scenario{
		Format: CurrentFormat, Name: "s", Seed: DefaultSeed, Duration: 5 * time.Minute, SampleInterval: time.Second,
		Network: Network{Latency: Dist{Dist: "constant", Value: time.Millisecond}},
		Fleet: Fleet{
			Groups: []Group{{Name: "group-0", Clients: 3, Profile: "grpc-go", ProfileFields: map[string]string{},
				ProcessingTime: grpcGoProcessingDefault,
				Servers:        []string{}, ServerFeatures: []string{}, Targets: []string{},
				RPC: RPC{Rate: 1, Arrival: "poisson", Start: "immediate", Deadline: time.Second, Method: "/xdssim.Echo/Call", ThrottleTokenRatio: 0.1},
				// grpc-go's channels (network.GRPCGoBackoffConfig, XDSKeepalive).
				XDSChannel: Channel{BackoffSchedule: "grpc-go", InitialBackoff: time.Second, Multiplier: 1.6, Jitter: 0.2,
					MaxBackoff: 120 * time.Second, MinConnectTimeout: 20 * time.Second},
				XDSKeepalive: Keepalive{Time: 5 * time.Minute, Timeout: 20 * time.Second},
				DataChannel: Channel{BackoffSchedule: "grpc-go", InitialBackoff: time.Second, Multiplier: 1.6, Jitter: 0.2,
					MaxBackoff: 120 * time.Second, MinConnectTimeout: 20 * time.Second},
			}},
			Restarts: []Restart{{At: time.Second, Fraction: 1}},
		},
		DataPlane: DataPlane{WindowGap: 5 * time.Second, ServiceTime: Dist{Dist: "constant", Value: 2 * time.Millisecond},
			ErrorCode: "unavailable"},
	}
	if !sameScenario(s, want) {
		t.Errorf("resolved scenario:\n got %+v\nwant %+v", s, want)
	}
}

func TestResolvedTOMLReadsBackToTheSameScenario(t *testing.T) {
	for _, e := range Library() {
		t.Run(e.Name, func(t *testing.T) {
			s, err := Load(e.Name, nil)
			if err != nil {
				t.Fatal(err)
			}
			again, err := reparse(s)
			if err != nil {
				t.Fatalf("resolved TOML does not parse: %v\n%s", err, s.TOML())
			}
			if !sameScenario(s, again) {
				t.Errorf("round trip changed the scenario:\n got %+v\nwant %+v", again, s)
			}
		})
	}
}

func TestLibraryScenariosHaveADescription(t *testing.T) {
	lib := Library()
	if len(lib) == 0 || lib[0].Name == "" {
		t.Fatal("the embedded library is empty")
	}
	found := false
	for _, e := range lib {
		found = found || e.Name == DefaultName
		if e.Description == "" || strings.Contains(e.Description, "\n") {
			t.Errorf("%s: want a one-line description, got %q", e.Name, e.Description)
		}
		if e.Header == "" {
			t.Errorf("%s: want a header comment saying what it shows", e.Name)
		}
	}
	if !found {
		t.Errorf("no %q scenario in the library", DefaultName)
	}
}

// TestBadInputIsReportedWithPositionKeyAndExpectation pins down the error
// for each kind of bad input: file:line:col, the key path, what was expected
// and what was found.
func TestBadInputIsReportedWithPositionKeyAndExpectation(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		sets []string
		want []string // one line per error, in order
	}{
		{
			name: "unknown top-level key",
			doc:  "name = \"t\"\ntypo_key = 1\n[[fleet.group]]\nclients = 3\n",
			want: []string{`s.toml:2:1: typo_key: unknown key "typo_key" (expected one of: format, name, description, seed, duration, sample_interval, network, control_plane, fleet, fault, change, data_plane, backend, expect, what_if, sweep)`},
		},
		{
			name: "misspelled nested key",
			doc:  "[[fleet.group]]\n  clinets = 3\n",
			want: []string{
				`s.toml:1:1: fleet.group[0].clients: is required: how many clients the group has (clients = N)`,
				`s.toml:2:3: fleet.group[0].clinets: unknown key "clinets" (did you mean "clients"?)`,
			},
		},
		{
			name: "wrong case",
			doc:  "[[fleet.group]]\nCLIENTS = 3\n",
			want: []string{
				`s.toml:1:1: fleet.group[0].clients: is required: how many clients the group has (clients = N)`,
				`s.toml:2:1: fleet.group[0].CLIENTS: unknown key "CLIENTS" (keys are case-sensitive: did you mean "clients"?)`,
			},
		},
		{
			name: "processing times out of range",
			doc: "[[control_plane]]\nname = \"cp\"\nprocessing_time = { dist = \"lognormal\", median = \"90us\", p99 = \"10us\" }\n" +
				"[[fleet.group]]\nclients = 3\nprocessing_time = { dist = \"constant\", value = \"-1ms\" }\n",
			want: []string{
				`s.toml:3:64: control_plane[0].processing_time.p99: expected 0 < median <= p99, found median 90µs, p99 10µs`,
				`s.toml:6:48: fleet.group[0].processing_time.value: expected a duration >= 0, found -1ms`,
			},
		},
		{
			name: "wrong type",
			doc:  "[[fleet.group]]\nclients = \"many\"\n",
			want: []string{`s.toml:2:11: fleet.group[0].clients: expected an integer, found the string "many"`},
		},
		{
			name: "bare integer duration",
			doc:  "duration = 300\n[[fleet.group]]\nclients = 3\n",
			want: []string{`s.toml:1:12: duration: expected a duration string such as "300s" (a bare integer has no unit), found 300`},
		},
		{
			name: "duration without a valid unit",
			doc:  "duration = \"15 sec\"\n[[fleet.group]]\nclients = 3\n",
			want: []string{`s.toml:1:12: duration: expected a duration such as "15s", "500ms" or "2m30s", found "15 sec"`},
		},
		{
			name: "negative count",
			doc:  "[[fleet.group]]\nclients = -5\n",
			want: []string{`s.toml:2:11: fleet.group[0].clients: expected a number of clients from 1 to 10000000, found -5`},
		},
		{
			name: "negative seed",
			doc:  "seed = -1\n[[fleet.group]]\nclients = 3\n",
			want: []string{`s.toml:1:8: seed: expected a non-negative integer, found -1`},
		},
		{
			name: "table where a value is expected",
			doc:  "[fleet]\ngroup = 3\n",
			want: []string{`s.toml:2:9: fleet.group: expected an array, found the integer 3`},
		},
		{
			name: "no client group",
			doc:  "name = \"t\"\n",
			want: []string{`s.toml:1:1: fleet.group: expected at least one client group ([[fleet.group]] with clients = N)`},
		},
		{
			name: "restart of a group that does not exist",
			doc:  minimal + "[[fleet.restart]]\ngroup = \"web\"\nat = \"2m\"\n",
			want: []string{
				`s.toml:7:9: fleet.restart[0].group: no group is named "web" (groups: group-0)`,
				`s.toml:8:6: fleet.restart[0].at: expected a time from 0s to before the end of the run (1m0s), found 2m0s`,
			},
		},
		{
			name: "duplicate group names",
			doc:  "[[fleet.group]]\nname = \"a\"\nclients = 1\n[[fleet.group]]\nname = \"a\"\nclients = 1\n",
			want: []string{`s.toml:5:8: fleet.group[1].name: group name "a" is already used by fleet.group[0]`},
		},
		{
			name: "every error in the file at once, in file order",
			doc:  "duration = 5\nbogus = true\n[[fleet.group]]\nclients = 0\nstart_spread = \"-1s\"\n",
			want: []string{
				`s.toml:1:12: duration: expected a duration string such as "5s" (a bare integer has no unit), found 5`,
				`s.toml:2:1: bogus: unknown key "bogus" (expected one of: format, name, description, seed, duration, sample_interval, network, control_plane, fleet, fault, change, data_plane, backend, expect, what_if, sweep)`,
				`s.toml:4:11: fleet.group[0].clients: expected a number of clients from 1 to 10000000, found 0`,
				`s.toml:5:16: fleet.group[0].start_spread: expected a duration >= 0, found -1s`,
			},
		},
		{
			name: "malformed TOML has a line and column",
			doc:  "name = \"t\"\nduration = = 3\n",
			want: []string{`s.toml:2:12: malformed TOML: expected value but found '=' instead`},
		},
		{
			name: "malformed --set without =",
			doc:  minimal,
			sets: []string{"fleet.group[0].clients"},
			want: []string{`--set fleet.group[0].clients: expected key=value, such as fleet.group[0].clients=500`},
		},
		{
			name: "--set of an unknown key",
			doc:  minimal,
			sets: []string{"fleet.grop[0].clients=5"},
			want: []string{`--set fleet.grop[0].clients=5: fleet.grop is not an array of tables`},
		},
		{
			name: "--set of a misspelled key",
			doc:  minimal,
			sets: []string{"durtion=5m"},
			want: []string{`--set durtion=5m: durtion: unknown key "durtion" (did you mean "duration"?)`},
		},
		{
			name: "--set of a bad value is validated like the file",
			doc:  minimal,
			sets: []string{"fleet.group[0].clients=-2"},
			want: []string{`--set fleet.group[0].clients=-2: fleet.group[0].clients: expected a number of clients from 1 to 10000000, found -2`},
		},
		{
			name: "--set on an array of tables without an index",
			doc:  minimal,
			sets: []string{"fleet.group.clients=2"},
			want: []string{`--set fleet.group.clients=2: fleet.group is an array of tables: name an element, such as fleet.group[0]`},
		},
		{
			name: "--set with an index out of range",
			doc:  minimal,
			sets: []string{"fleet.group[3].clients=2"},
			want: []string{`--set fleet.group[3].clients=2: fleet.group has 1 elements; index 3 is out of range`},
		},
		{
			name: "--set with a malformed key",
			doc:  minimal,
			sets: []string{"fleet..x=1"},
			want: []string{`--set fleet..x=1: malformed key "fleet..x": "" is not a key (letters, digits, '_' and '-', or a quoted key)`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, tt.doc, tt.sets...)
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("want an ErrorList, got %v", err)
			}
			got := strings.Split(list.Error(), "\n")
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("errors:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestOverridesSetAnyKey(t *testing.T) {
	s, err := parse(t, minimal, "fleet.group[0].clients=500", "duration=10m", "seed=42", "description=hello world",
		`fleet.group[0].name="web"`)
	if err != nil {
		t.Fatal(err)
	}
	if g := s.Fleet.Groups[0]; g.Clients != 500 || g.Name != "web" {
		t.Errorf("group = %+v, want 500 clients named web", g)
	}
	if s.Duration != 10*time.Minute || s.Seed != 42 || s.Description != "hello world" {
		t.Errorf("got duration %s seed %d description %q", s.Duration, s.Seed, s.Description)
	}
}

func TestOpenFindsFilesAndLibraryNames(t *testing.T) {
	tests := []struct {
		ref     string
		wantErr string
	}{
		{ref: "default"},
		{ref: "library/nope.toml", wantErr: "library/nope.toml: no such scenario file"},
		{ref: "no-such-scenario", wantErr: `"no-such-scenario" is neither a scenario file nor a library scenario (library: accidental-deletion, bad-cds-rollout, blackholed-primary, cached-outage, canary-cluster-deletion, control-plane-versioning, default, fallback-during-restarts, fallback-flapping, outage-during-starts, own-mesh-rollout, profile-comparison, reconnect-storm, retry-tuning, session-drain, slow-control-plane, timer-race)`},
		{ref: "missing.toml", wantErr: "missing.toml: no such scenario file"},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			_, err := Open(tt.ref)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestParentPath(t *testing.T) {
	tests := map[string]string{
		"a":         "",
		"a.b":       "a",
		"a.b[2]":    "a.b",
		"a.b[2].c":  "a.b[2]",
		`a."x.y".z`: `a."x.y"`,
		`a."x.y"`:   "a",
		`"q\".r".s`: `"q\".r"`,
	}
	for in, want := range tests {
		if got := parentPath(in); got != want {
			t.Errorf("parentPath(%q) = %q, want %q", in, got, want)
		}
	}
}
