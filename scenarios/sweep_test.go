package scenarios

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestSweepRangeExpandsToEvenlySpacedValues(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
		err  string
	}{
		{in: "1s..30s:3", want: []string{"1s", "15.5s", "30s"}},
		{in: "100..1000:4", want: []string{"100", "400", "700", "1000"}},
		{in: "0.1..0.3:3", want: []string{"0.1", "0.2", "0.3"}},
		{in: "1..2:2", want: []string{"1", "2"}},
		{in: "1.0..2:3", want: []string{"1.0", "1.5", "2.0"}},
		{in: "5s..5s:1", want: []string{"5s"}},
		{in: "1..3:5", err: "two are equal"},
		{in: "30s..1s:3", err: "0 <= lo <= hi"},
		{in: "1s..3:3", err: "durations"},
		{in: "1..3", err: "no :steps"},
		{in: "1-3:3", err: "no .."},
		{in: "1..3:0", err: "steps must be"},
	} {
		got, err := ParseRange(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseRange(%q) = %v, %v; want an error saying %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ParseRange(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestSweepObjectivesAndConstraintsParse(t *testing.T) {
	if o, err := ParseObjective("minimize failure_windows.client_seconds"); err != nil || o.Maximize || o.Metric != "failure_windows.client_seconds" {
		t.Errorf("minimize: %+v %v", o, err)
	}
	if o, err := ParseObjective("maximize rpc.success_ratio"); err != nil || !o.Maximize || !o.Better(2, 1) {
		t.Errorf("maximize: %+v %v", o, err)
	}
	for _, bad := range []string{"", "lower x", "minimize", "minimize a b"} {
		if _, err := ParseObjective(bad); err == nil {
			t.Errorf("ParseObjective(%q): no error", bad)
		}
	}
	for _, tt := range []struct {
		in      string
		v       float64
		holds   bool
		metric  string
		display string
	}{
		{"control_plane.cp.peak_queue_depth <= 1000", 1000, true, "control_plane.cp.peak_queue_depth", "control_plane.cp.peak_queue_depth <= 1000"},
		{"x<1000", 1000, false, "x", "x < 1000"},
		{"x >= 0.5", 0.5, true, "x", "x >= 0.5"},
		{"x > 0.5", 0.5, false, "x", "x > 0.5"},
		{"mean x <= 2", 2, true, "x", "mean x <= 2"},
	} {
		c, err := ParseConstraint(tt.in)
		if err != nil || c.Metric != tt.metric || c.Holds(tt.v) != tt.holds || c.String() != tt.display {
			t.Errorf("ParseConstraint(%q) = %+v, %v; Holds(%v) = %v, want %v", tt.in, c, err, tt.v, c.Holds(tt.v), tt.holds)
		}
	}
	for _, bad := range []string{"x", "x <= y", "<= 3", "x == 3", "x <= NaN"} {
		if _, err := ParseConstraint(bad); err == nil {
			t.Errorf("ParseConstraint(%q): no error", bad)
		}
	}
}

func TestSweepTableIsValidatedWithPositions(t *testing.T) {
	const base = "[[fleet.group]]\nclients = 2\n"
	for _, tt := range []struct {
		name, doc string
		want      []string
	}{
		{"metric unknown", base + "[sweep]\nmetrics = [\"fleet.start\"]\n",
			[]string{`s.toml:4:12: sweep.metrics[0]: no metric "fleet.start" in summary.json; did you mean "fleet.starts"?`}},
		{"bad constraint and objective", base + "[sweep]\nconstraints = [\"x == 3\"]\nobjectives = [\"lower x\"]\n",
			[]string{
				`s.toml:4:16: sweep.constraints[0]: expected "PATH <= N" on every run or "mean PATH <= N" on the mean (or <, >=, >; PATH a summary.json metric, N a finite number), found "x == 3"`,
				`s.toml:5:15: sweep.objectives[0]: expected "minimize PATH" or "maximize PATH" (PATH a summary.json metric), found "lower x"`,
			}},
		{"param without values", base + "[[sweep.param]]\nkey = \"duration\"\n",
			[]string{`s.toml:3:1: sweep.param[0].values: expected at least one value, or a range = "lo..hi:steps"`}},
		{"param twice, spelled two ways, bad range", base + "[[sweep.param]]\nkey = \"duration\"\nvalues = [\"1m\"]\n[[sweep.param]]\nkey = '\"duration\"'\nrange = \"1..2\"\n",
			[]string{
				`s.toml:7:7: sweep.param[1].key: "duration" is already varied by sweep.param[0]`,
				`s.toml:8:9: sweep.param[1].range: expected lo..hi:steps such as 1s..30s:5 or 100..1000:4, found "1..2": no :steps`,
			}},
		{"the seed, a value twice, a bad role", base + "[[sweep.param]]\nkey = \"seed\"\nvalues = [1, 1]\nrole = \"dial\"\n",
			[]string{
				`s.toml:4:7: sweep.param[0].key: the seed is not a param: a sweep runs every point on its own seeds (--seeds, sweep.seeds)`,
				`s.toml:5:14: sweep.param[0].values[1]: 1 is given twice (values[0] and values[1])`,
				`s.toml:6:8: sweep.param[0].role: expected "knob" (a setting the sweep may recommend) or "condition" (the world it must hold under), found "dial"`,
			}},
		{"risk, max seeds, indifference", base + "[sweep]\nseeds = 5\nrisk = 0.6\nmax_seeds = 3\nindifference = \"0%\"\n",
			[]string{
				`s.toml:5:8: sweep.risk: expected an accepted share of runs breaching a constraint, above 0 and at most 0.5 (0.05 is 5 %), found 0.6`,
				`s.toml:6:13: sweep.max_seeds: expected 0 (as many as deciding the risk takes) or a number of seeds from sweep.seeds (5) to 10000, found 3`,
				`s.toml:7:16: sweep.indifference: expected an indifference zone: a number above 0 in the objective's unit (12.5), or a share of the largest mean above 0 and under 100 % (5%), found "0%"`,
			}},
		{"seeds out of range", base + "[sweep]\nseeds = 0\n", []string{`s.toml:4:9: sweep.seeds: expected a number of seeds from 1 to 10000, found 0`}},
		{"valid", base + "[sweep]\nseeds = 3\nmetrics = [\"fleet.starts\", \"events\"]\nobjectives = [\"minimize rpc.failed\"]\n" +
			"constraints = [\"rpc.failed <= 3\"]\n[[sweep.param]]\nkey = \"fleet.group[0].clients\"\nrange = \"1..3:3\"\n", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(&Source{File: "s.toml", Name: "s", Data: []byte(tt.doc)}, nil)
			var got []string
			if list, ok := err.(ErrorList); ok {
				for _, e := range list {
					got = append(got, e.Error())
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("errors:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestSweepValuesTakeAnyScalar: a param's values may be numbers or
// booleans as well as strings; each is kept as the text --set takes. A
// table is refused at its position.
func TestSweepValuesTakeAnyScalar(t *testing.T) {
	for _, tt := range []struct {
		name, key, values string
		want              []string
		wantErr           string
	}{
		{"integers", "fleet.group[0].clients", "[1, 2]", []string{"1", "2"}, ""},
		{"floats and strings mixed", "fleet.group[0].rpc.rate", "[0.5, \"2\"]", []string{"0.5", "2"}, ""},
		{"booleans", "what_if", "[true, false]", []string{"true", "false"}, ""},
		{"a table", "fleet.group[0].clients", "[{a = 1}]", nil, "s.toml:5:11: sweep.param[0].values[0]: expected a string, found a table"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc := "[[fleet.group]]\nclients = 2\n[[sweep.param]]\nkey = \"" + tt.key + "\"\nvalues = " + tt.values + "\n"
			s, err := Parse(&Source{File: "s.toml", Name: "s", Data: []byte(doc)}, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(s.Sweep.Params[0].Values, tt.want) {
				t.Errorf("values = %q, want %q", s.Sweep.Params[0].Values, tt.want)
			}
		})
	}
}

// TestPolicyKeysAreKnobsAndTheRestConditions: a swept key is a knob when
// it is a policy key of docs/scenario-reference.md (or a key below one),
// else a condition: the world a setting must hold under.
func TestPolicyKeysAreKnobsAndTheRestConditions(t *testing.T) {
	for _, tt := range []struct{ key, role string }{
		{"control_plane[0].workers", Knob},
		{"control_plane[1].service[2].retry.num_retries", Knob},
		{"fleet.group[3].xds_channel.jitter", Knob},
		{"fleet.group[0].profile_fields.resource_timeout", Knob},
		{"fleet.group[0].servers", Knob},
		{"fleet.group[0].clients", Condition},
		{"fleet.group[0].profile", Condition},
		{"fleet.group[0].profile_fields.watch_time_fallback", Condition},
		{"fleet.group[0].rpc.rate", Condition},
		{"fault[0].duration", Condition},
		{"fleet.restart[0].fraction", Condition},
		{"control_plane[0].workersx", Condition},
	} {
		if got := KeyRole(tt.key); got != tt.role {
			t.Errorf("KeyRole(%s) = %s, want %s", tt.key, got, tt.role)
		}
	}
	doc, err := os.ReadFile("../docs/scenario-reference.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := policyRow.FindAllStringSubmatch(string(doc), -1)
	if len(rows) < 25 {
		t.Fatalf("found %d rows of policy keys", len(rows))
	}
	for _, r := range rows {
		if key := strings.ReplaceAll(r[2], "[]", "[0]"); KeyRole(key) != Knob {
			t.Errorf("%s is in the table of policy keys but is not a knob", key)
		}
	}
}

func TestKeysNormalize(t *testing.T) {
	for _, tt := range []struct{ in, want, err string }{
		{"fleet.group[0].clients", "fleet.group[0].clients", ""},
		{`fleet."group"[0]."clients"`, "fleet.group[0].clients", ""},
		{`fleet.group[0].profile_fields."a b"`, `fleet.group[0].profile_fields."a b"`, ""},
		{"seed", "", "the seed is not a param"},
		{"sweep.seeds", "", "part of the sweep itself"},
		{"fleet..x", "", "malformed key"},
	} {
		got, err := NormalizeKey(tt.in)
		if got != tt.want || (tt.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("NormalizeKey(%q) = %q, %v; want %q, %q", tt.in, got, err, tt.want, tt.err)
		}
	}
}

// TestAMisspelledValueGetsItsNearestName: a key that takes one of a few
// names says which one a misspelled value was probably meant to be; a
// duration written without quotes is explained.
func TestAMisspelledValueGetsItsNearestName(t *testing.T) {
	for _, tt := range []struct{ doc, want string }{
		{"[[fleet.group]]\nclients = 2\nprofile = \"grpc-goo\"\n",
			`s.toml:3:11: fleet.group[0].profile: expected grpc-go, grpc-java, grpc-core or spec, found "grpc-goo"; did you mean "grpc-go"?`},
		{"[[fleet.group]]\nclients = 2\n[[fault]]\nkind = \"server-dwn\"\nat = \"1s\"\nduration = \"1s\"\n",
			`did you mean "server-down"?`},
		{"duration = 5m\n[[fleet.group]]\nclients = 2\n",
			`s.toml:1:13: malformed TOML: expected a top-level item to end with a newline, comment, or EOF, but got 'm' instead; a duration is a string in quotes: duration = "5m"`},
	} {
		_, err := Parse(&Source{File: "s.toml", Name: "s", Data: []byte(tt.doc)}, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %q", tt.doc, err, tt.want)
		}
	}
	if got := didYouMean(`expected one of: a-long-name, another-name, found "zzz"`); strings.Contains(got, "did you mean") {
		t.Errorf("a value far from every name got a suggestion: %s", got)
	}
}

// TestAnAdditionAppendsAnElementValidatedLikeTheFile: --add key={...}
// (an override "key+={...}") appends a table to an array of tables,
// creating the array when the file has none; its problems name the
// addition.
func TestAnAdditionAppendsAnElementValidatedLikeTheFile(t *testing.T) {
	src := &Source{File: "s.toml", Name: "s", Data: []byte("duration = \"3m\"\n[[fleet.group]]\nclients = 2\n")}
	s, err := Parse(src, []string{`fault+={kind = "server-down", at = "1m", duration = "30s"}`, `fault+={kind = "server-restart", at = "2m", duration = "5s"}`})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Faults) != 2 || s.Faults[1].Kind != "server-restart" {
		t.Errorf("faults %+v", s.Faults)
	}
	for _, tt := range []struct{ add, want string }{
		{`fault+={kind = "server-dwn", at = "1m"}`, `--add fault={kind = "server-dwn", at = "1m"}: fault[0].kind: expected one of:`},
		{`fault[0]+={kind = "x"}`, "--add appends to an array of tables: name the array"},
		{`duration+={a = 1}`, "duration is not an array of tables"},
		{`fault+=3`, "expected an inline table to append to fault"},
	} {
		if _, err := Parse(src, []string{tt.add}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.add, err, tt.want)
		}
	}
}
