package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdssim/xdssim/scenarios"
)

func runMain(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

// runOK runs the command and fails the test unless it exits 0.
func runOK(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	code, stdout, stderr := runMain(t, args...)
	if code != exitOK {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	return stdout, stderr
}

func TestRunWritesTheReportAndPrintsWhereItWent(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
	}{
		{"default scenario", []string{"run", "--out", filepath.Join(dir, "a")}},
		{"library name with flags after it", []string{"run", "default", "--seed", "3", "--out", filepath.Join(dir, "b")}},
		{"flags on both sides", []string{"run", "--seed", "3", "default", "--out", filepath.Join(dir, "c"), "--quiet"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runMain(t, tt.args...)
			if code != exitOK {
				t.Fatalf("exit %d, stderr:\n%s", code, stderr)
			}
			out := tt.args[indexOf(tt.args, "--out")+1]
			report := filepath.Join(out, "report.html")
			lines := strings.Split(strings.TrimSpace(stdout), "\n")
			if lines[len(lines)-1] != report {
				t.Errorf("stdout = %q, want it to end with the report path %q", stdout, report)
			}
			for _, f := range []string{"report.html", "summary.json"} {
				if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
					t.Errorf("%s not written: %v", f, err)
				}
			}
			if !strings.Contains(stderr, "seed ") {
				t.Errorf("stderr does not say the seed:\n%s", stderr)
			}
			quiet := indexOf(tt.args, "--quiet") >= 0
			if stats := strings.Contains(stderr, "events/s"); stats == quiet {
				t.Errorf("quiet=%v but events/s printed=%v:\n%s", quiet, stats, stderr)
			}
		})
	}
}

func TestSeedFlagOverridesTheScenarioSeed(t *testing.T) {
	out := t.TempDir()
	code, _, stderr := runMain(t, "run", "default", "--seed", "99", "--out", out)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	sum, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(sum), `"seed": 99`) || !strings.Contains(stderr, "seed 99") {
		t.Errorf("seed 99 not used:\nstderr %s\nsummary %s", stderr, sum)
	}
}

func TestBadInputExitsWithCode2AndAClearMessage(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("[[fleet.group]]\nclients = -5\nCLIENTS = 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	malformed := filepath.Join(dir, "malformed.toml")
	if err := os.WriteFile(malformed, []byte("[fleet\nclients = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"no command", nil, []string{"Usage:"}},
		{"unknown command", []string{"frobnicate"}, []string{`unknown command "frobnicate"`}},
		{"unknown flag", []string{"run", "--sed", "3"}, []string{"flag provided but not defined: -sed"}},
		{"seed not a number", []string{"run", "--seed", "abc"}, []string{`--seed "abc": expected an integer from 0 to 9223372036854775807`}},
		{"missing file", []string{"run", filepath.Join(dir, "nope.toml")}, []string{"nope.toml: no such scenario file"}},
		{"unknown library name", []string{"run", "no-such"}, []string{`"no-such" is neither a scenario file nor a library scenario`}},
		{"every scenario error at once", []string{"validate", bad}, []string{
			"bad.toml:2:11: fleet.group[0].clients: expected a number of clients from 1 to 10000000, found -5",
			`bad.toml:3:1: fleet.group[0].CLIENTS: unknown key "CLIENTS" (keys are case-sensitive: did you mean "clients"?)`,
		}},
		{"seed above 2^63-1", []string{"run", "--seed", "9223372036854775808"}, []string{`--seed "9223372036854775808": expected an integer from 0 to 9223372036854775807`}},
		{"--seed and --set seed", []string{"validate", "default", "--seed", "3", "--set", "seed=4"}, []string{"--seed 3 and --set seed=4 both set the seed: give one"}},
		{"malformed TOML", []string{"run", malformed}, []string{"malformed.toml:", "malformed TOML"}},
		{"malformed --set", []string{"run", "--set", "nonsense"}, []string{"--set nonsense: expected key=value"}},
		{"unknown --set key", []string{"run", "--set", "fleet.clients=3"}, []string{`fleet.clients: unknown key "clients"`}},
		{"validate needs a scenario", []string{"validate"}, []string{"validate: expected a scenario file or library name"}},
		{"two scenarios", []string{"run", "a", "b"}, []string{"run: expected one scenario, found 2: a b"}},
		{"list takes no argument", []string{"list", "x"}, []string{`list: unexpected argument "x"`}},
		{"list with an unknown flag", []string{"list", "--lng"}, []string{"list: flag provided but not defined: -lng"}},
		{"explain needs a name", []string{"explain"}, []string{"explain: expected the name of a library scenario (see 'xdssim list')"}},
		{"explain takes one name", []string{"explain", "default", "cached-outage"}, []string{"explain: expected one library scenario, found 2: default cached-outage"}},
		{"explain of an unknown name lists the library", []string{"explain", "no-such"}, []string{
			`explain: no library scenario is named "no-such" (library: `, "cached-outage", "default,",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runMain(t, tt.args...)
			if code != exitInput {
				t.Errorf("exit code %d, want %d", code, exitInput)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not contain %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine") {
				t.Errorf("stderr shows a panic:\n%s", stderr)
			}
		})
	}
}

func TestValidatePrintsTheResolvedScenario(t *testing.T) {
	code, stdout, stderr := runMain(t, "validate", "default", "--set", "fleet.group[0].clients=7")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, w := range []string{`name = "default"`, "seed = 1", `sample_interval = "1s"`, "[[fleet.group]]", "clients = 7", `start_at = "0s"`} {
		if !strings.Contains(stdout, w) {
			t.Errorf("resolved scenario lacks %q:\n%s", w, stdout)
		}
	}
}

func TestListPrintsEachLibraryScenarioWithItsDescription(t *testing.T) {
	code, stdout, _ := runMain(t, "list")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, e := range scenarios.Library() {
		if !strings.Contains(stdout, e.Name+" ") || !strings.Contains(stdout, e.Description) {
			t.Errorf("list output lacks %s and its description:\n%s", e.Name, stdout)
		}
	}
}

func TestListLongPrintsEachScenarioWithItsExplanation(t *testing.T) {
	code, stdout, stderr := runMain(t, "list", "--long")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, e := range scenarios.Library() {
		if !strings.Contains(stdout, e.Name+": "+e.Description+"\n") {
			t.Errorf("list --long lacks the line %q:\n%s", e.Name+": "+e.Description, stdout)
		}
		first, _, _ := strings.Cut(e.Header, "\n")
		if !strings.Contains(stdout, "\n    "+first+"\n") {
			t.Errorf("list --long lacks %s's explanation, indented (%q)", e.Name, first)
		}
	}
}

// TestExplainPrintsTheHeaderComment pins explain: the scenario's leading
// comment block, without its "# " prefixes, which says the situation, its
// source and what to look at.
func TestExplainPrintsTheHeaderComment(t *testing.T) {
	tests := []struct {
		name string
		want []string // lines stdout holds
	}{
		{"default", []string{"A primary control-plane outage during a rolling restart: fallback against", ""}},
		{"blackholed-primary", []string{"A blackholed primary: connect attempts hang for 20 s before the restarted", "Source: gRFC A71 \"xDS Fallback\"; gRFC A57 (the 20 s minimum connect"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runMain(t, "explain", tt.name)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			src, err := scenarios.Open(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			var want strings.Builder
			for _, l := range strings.Split(string(src.Data), "\n") {
				if !strings.HasPrefix(l, "#") {
					break
				}
				want.WriteString(strings.TrimPrefix(strings.TrimPrefix(l, "#"), " ") + "\n")
			}
			if stdout != want.String() {
				t.Errorf("explain %s printed\n%s\nwant the file's leading comment block without \"# \":\n%s", tt.name, stdout, want.String())
			}
			lines := strings.Split(stdout, "\n")
			for _, w := range tt.want {
				if indexOf(lines, w) < 0 {
					t.Errorf("explain %s lacks the line %q:\n%s", tt.name, w, stdout)
				}
			}
		})
	}
}

func TestVersion(t *testing.T) {
	code, stdout, _ := runMain(t, "version")
	if code != exitOK || !strings.HasPrefix(stdout, "xdssim ") {
		t.Errorf("exit %d, version output %q", code, stdout)
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// gateScenario is a tiny scenario with expectations: two clients of one
// control plane for ten virtual seconds. Each client starts once and
// nothing is NACKed.
const gateScenario = `name = "gate"
duration = "10s"

[[control_plane]]
name = "primary"
[[control_plane.service]]
name = "echo"

[[fleet.group]]
clients = 2

[[expect]]
metric = "fleet.starts"
min = 2

[[expect]]
metric = "xds.nacks_sent"
max = 0

[[expect]]
metric = "control_plane.primary.requests"
min = 1
`

func writeScenario(t *testing.T, doc string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "gate.toml")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRunChecksTheScenarioExpectations pins the CI gate: the run prints a
// pass/FAIL table of the expectations on stdout, even with --quiet, before
// the report path, writes them into summary.json, and exits 0 when all
// pass and 3 when any is breached. Reference: docs/architecture.md, CLI conventions.
func TestRunChecksTheScenarioExpectations(t *testing.T) {
	file := writeScenario(t, gateScenario)
	tests := []struct {
		name      string
		args      []string
		code      int
		table     []string // lines stdout holds, spaces squeezed
		stderr    string
		inSummary string
	}{
		{
			name:      "every expectation holds",
			args:      []string{"run", file},
			code:      exitOK,
			table:     []string{"expectations: 0 of 3 breached", "metric bound value result", "fleet.starts >= 2 2 pass", "xds.nacks_sent <= 0 0 pass"},
			inSummary: `"pass": true`,
		},
		{
			name:      "a breached expectation exits 3",
			args:      []string{"run", file, "--set", "expect[0].min=3", "--set", "expect[0].max=10"},
			code:      exitBreached,
			table:     []string{"expectations: 1 of 3 breached", "fleet.starts in [3, 10] 2 FAIL", "xds.nacks_sent <= 0 0 pass"},
			stderr:    "xdssim: 1 of 3 expectations breached",
			inSummary: `"pass": false`,
		},
		{
			name:      "--quiet keeps the table",
			args:      []string{"run", "--quiet", file, "--set", "expect[1].max=-1"},
			code:      exitBreached,
			table:     []string{"expectations: 1 of 3 breached", "xds.nacks_sent <= -1 0 FAIL"},
			stderr:    "xdssim: 1 of 3 expectations breached",
			inSummary: `"max": -1`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			code, stdout, stderr := runMain(t, append(tt.args, "--out", out)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr)
			}
			lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
			for i, l := range lines {
				lines[i] = strings.Join(strings.Fields(l), " ")
			}
			for _, w := range tt.table {
				if indexOf(lines, w) < 0 {
					t.Errorf("stdout lacks the line %q:\n%s", w, stdout)
				}
			}
			if report := filepath.Join(out, "report.html"); lines[len(lines)-1] != report {
				t.Errorf("stdout does not end with the report path %s:\n%s", report, stdout)
			}
			if !strings.Contains(stderr, tt.stderr) {
				t.Errorf("stderr does not say %q:\n%s", tt.stderr, stderr)
			}
			sum, err := os.ReadFile(filepath.Join(out, "summary.json"))
			if err != nil {
				t.Fatalf("summary.json not written: %v", err)
			}
			if !strings.Contains(string(sum), `"expectations": [`) || !strings.Contains(string(sum), tt.inSummary) {
				t.Errorf("summary.json lacks the expectations or %s:\n%s", tt.inSummary, sum)
			}
			if page, err := os.ReadFile(filepath.Join(out, "report.html")); err != nil || !strings.Contains(string(page), "<h2>Expectations") {
				t.Errorf("report.html lacks the Expectations table (%v)", err)
			}
		})
	}
}

// TestUnknownMetricIsInvalidInput checks that run and validate reject an
// expectation of a metric the scenario's run would not report, with exit
// code 2, file:line:col and the metric it probably meant, before any run.
func TestUnknownMetricIsInvalidInput(t *testing.T) {
	file := writeScenario(t, strings.Replace(gateScenario, `"control_plane.primary.requests"`, `"control_plane.primry.requests"`, 1))
	want := `gate.toml:21:10: expect[2].metric: no metric "control_plane.primry.requests" in summary.json; did you mean "control_plane.primary.requests"?`
	for _, cmd := range []string{"validate", "run"} {
		t.Run(cmd, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			args := []string{cmd, file}
			if cmd == "run" {
				args = append(args, "--out", out)
			}
			code, stdout, stderr := runMain(t, args...)
			if code != exitInput {
				t.Errorf("exit %d, want %d", code, exitInput)
			}
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing", stdout)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("run wrote outputs for an invalid scenario")
			}
		})
	}
}

func TestValidatePrintsTheExpectations(t *testing.T) {
	code, stdout, stderr := runMain(t, "validate", writeScenario(t, gateScenario), "--set", "expect[1].min=-0.5")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := "[[expect]]\n  metric = \"xds.nacks_sent\"\n  min = -0.5\n  max = 0.0\n"
	if !strings.Contains(stdout, want) {
		t.Errorf("resolved scenario lacks\n%s\nin\n%s", want, stdout)
	}
}

// TestOlderFormatWarnsOnStderrAndStillRuns: validate and run print one
// warning per changed key of an older format, positioned, on stderr, and
// exit 0; a newer format than this xdssim knows exits 2 asking for an
// upgrade. Reference: docs/scenario-reference.md, "Format versions".
func TestOlderFormatWarnsOnStderrAndStillRuns(t *testing.T) {
	doc := `name = "old"
duration = "2s"
[[control_plane]]
name = "cp"
cache = "snapshot"
[[control_plane.service]]
name = "echo"
[[fleet.group]]
clients = 1
`
	old := writeScenario(t, doc)
	want := old + `:5:9: control_plane[0].cache: "snapshot" means something else since format 2 (this file is format 1)`
	for _, args := range [][]string{{"validate", old}, {"run", old, "--out", filepath.Join(t.TempDir(), "out"), "--quiet"}} {
		code, _, stderr := runMain(t, args...)
		if code != 0 || strings.Count(stderr, "xdssim: warning: ") != 1 || !strings.Contains(stderr, "xdssim: warning: "+want) {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant exit 0 and one warning: %s", args[0], code, stderr, want)
		}
	}
	current := writeScenario(t, "format = 2\n"+doc)
	if code, _, stderr := runMain(t, "validate", current); code != 0 || strings.Contains(stderr, "warning") {
		t.Errorf("format 2: exit %d, stderr:\n%s\nwant exit 0 and no warning", code, stderr)
	}
	future := writeScenario(t, "format = 3\n"+doc)
	code, _, stderr := runMain(t, "run", future, "--quiet")
	if code != 2 || !strings.Contains(stderr, future+":1:10: format: this scenario is format 3, and this xdssim reads formats 1 to 2: upgrade xdssim to run it") {
		t.Errorf("format 3: exit %d, stderr:\n%s\nwant exit 2 asking for an upgrade", code, stderr)
	}
}

// TestAddAppendsAnElementOnEveryCommand: --add key={...} appends an
// element to an array of tables, on the commands of either flag parser
// (run and validate have their own).
func TestAddAppendsAnElementOnEveryCommand(t *testing.T) {
	add := `fault={kind="server-down", servers=["primary"], at="1m7s", duration="30s"}`
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"validate prints it", []string{"validate", "default", "--add", add}, `at = "1m7s"`},
		{"trace runs with it", []string{"trace", "default", "--add", add, "--client", "web/0", "--from", "1m5s", "--to", "1m8s"},
			"1m7s  scenario    server-down [primary] begins"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runMain(t, tt.args...)
			if code != exitOK || !strings.Contains(stdout+stderr, tt.want) {
				t.Errorf("exit %d, no %q in:\n%s\n%s", code, tt.want, stdout, stderr)
			}
		})
	}
}
