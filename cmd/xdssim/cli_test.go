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
			if strings.TrimSpace(stdout) != report {
				t.Errorf("stdout = %q, want the report path %q", stdout, report)
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
		{"seed not a number", []string{"run", "--seed", "abc"}, []string{"--seed abc: expected a non-negative integer"}},
		{"missing file", []string{"run", filepath.Join(dir, "nope.toml")}, []string{"nope.toml: no such scenario file"}},
		{"unknown library name", []string{"run", "no-such"}, []string{`"no-such" is neither a scenario file nor a library scenario`}},
		{"every scenario error at once", []string{"validate", bad}, []string{
			"bad.toml:2:11: fleet.group[0].clients: expected a number of clients from 1 to 10000000, found -5",
			`bad.toml:3:1: fleet.group[0].CLIENTS: unknown key "CLIENTS" (keys are case-sensitive: did you mean "clients"?)`,
		}},
		{"malformed TOML", []string{"run", malformed}, []string{"malformed.toml:", "malformed TOML"}},
		{"malformed --set", []string{"run", "--set", "nonsense"}, []string{"--set nonsense: expected key=value"}},
		{"unknown --set key", []string{"run", "--set", "fleet.clients=3"}, []string{`fleet.clients: unknown key "clients"`}},
		{"validate needs a scenario", []string{"validate"}, []string{"validate: expected a scenario file or library name"}},
		{"two scenarios", []string{"run", "a", "b"}, []string{"run: expected one scenario, found 2: a b"}},
		{"list takes no argument", []string{"list", "x"}, []string{`list: unexpected argument "x"`}},
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
