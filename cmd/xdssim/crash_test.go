package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestMain lets a test run the test binary as the xdssim command:
// XDSSIM_TEST_MAIN=1 runs main() with the arguments. With
// XDSSIM_TEST_CRASH=1 the supervised child crashes in a way no recover
// can catch, as an out-of-memory abort does.
func TestMain(m *testing.M) {
	if os.Getenv("XDSSIM_TEST_MAIN") != "" {
		installTestHooks()
		if os.Getenv(supervisedEnv) != "" && os.Getenv("XDSSIM_TEST_CRASH") != "" {
			supervise(os.Args[1:]) // the child: sets the crash output
			done := make(chan bool)
			go func() { panic("a goroutine's panic, fatal to the process") }()
			<-done
		}
		main()
	}
	os.Exit(m.Run())
}

func TestAPanicExitsInternalWithItsStackAndAReportRequest(t *testing.T) {
	var stderr bytes.Buffer
	code := exitCode(&stderr, func() error { panic("boom") })
	if code != exitInternal {
		t.Errorf("exit %d, want %d (internal error, never 2)", code, exitInternal)
	}
	for _, want := range []string{"internal error: panic: boom", "goroutine ", "please report"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

func TestExitCodeClasses(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"success", nil, exitOK},
		{"bad input", badInput("--seed x: no"), exitInput},
		{"breached expectation", breachedError{breached: 1, total: 2}, exitBreached},
		{"no point of a sweep meets its constraints", breachedError{msg: "no point of the sweep meets every constraint"}, exitBreached},
		{"our own error", errors.New("fleet: broken invariant"), exitInternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := exitCode(io.Discard, func() error { return tt.err }); got != tt.want {
				t.Errorf("exit %d, want %d", got, tt.want)
			}
		})
	}
}

// runBinary runs the test binary as xdssim (see TestMain).
func runBinary(t *testing.T, env []string, args ...string) (code int, stderr string) {
	t.Helper()
	return runBinaryUnder(t, 0, env, args...)
}

// runBinaryUnder runs the test binary as xdssim with its address space
// limited (RLIMIT_AS, as by ulimit -v) to addressSpace bytes; 0: no limit.
func runBinaryUnder(t *testing.T, addressSpace int64, env []string, args ...string) (code int, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	if addressSpace > 0 {
		cmd = exec.Command("prlimit", append([]string{fmt.Sprintf("--as=%d", addressSpace), os.Args[0]}, args...)...)
	}
	return runXdssim(t, cmd, env)
}

// runXdssim runs cmd, which runs the test binary as xdssim, with env
// added to its environment, and returns its exit code and stderr.
func runXdssim(t *testing.T, cmd *exec.Cmd, env []string) (code int, stderr string) {
	t.Helper()
	cmd.Env = append(os.Environ(), append([]string{"XDSSIM_TEST_MAIN=1"}, env...)...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatal(err)
	}
	return code, errb.String()
}

func TestAFatalErrorOfTheRuntimeExitsInternalNotInput(t *testing.T) {
	code, stderr := runBinary(t, []string{"XDSSIM_TEST_CRASH=1"}, "version")
	if code != exitInternal {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, exitInternal, stderr)
	}
	for _, want := range []string{"internal error: xdssim crashed: panic: a goroutine's panic", "please report"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

func TestTheSupervisedBinaryKeepsTheExitCodes(t *testing.T) {
	if code, stderr := runBinary(t, nil, "version"); code != exitOK {
		t.Errorf("version: exit %d:\n%s", code, stderr)
	}
	if code, stderr := runBinary(t, nil, "validate", "no-such-scenario"); code != exitInput {
		t.Errorf("validate no-such-scenario: exit %d, want %d:\n%s", code, exitInput, stderr)
	}
}

func TestAChildKilledBySignalIsInternalUnlessTheUserSentIt(t *testing.T) {
	err := exec.Command("sh", "-c", "kill -KILL $$").Run()
	if err == nil {
		t.Fatal("sh survived kill -KILL")
	}
	var stderr bytes.Buffer
	if got := childExit(err, nil, nil, &stderr); got != exitInternal || !strings.Contains(stderr.String(), "killed by signal") {
		t.Errorf("killed by the kernel: exit %d, stderr %q; want %d and a message", got, stderr.String(), exitInternal)
	}
	if got := childExit(err, nil, syscall.SIGINT, io.Discard); got != 128+int(syscall.SIGKILL) {
		t.Errorf("killed after the user's signal: exit %d, want %d", got, 128+int(syscall.SIGKILL))
	}
	// Ctrl-C reaches the child as well as the parent: an interrupted
	// child is the user's doing even before the parent forwards anything.
	err = exec.Command("sh", "-c", "kill -INT $$").Run()
	if got := childExit(err, nil, nil, io.Discard); got != 128+int(syscall.SIGINT) {
		t.Errorf("interrupted: exit %d, want %d", got, 128+int(syscall.SIGINT))
	}
}

func TestOutputsReplaceASymlinkAndNeverWriteThroughIt(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	os.Mkdir(out, 0o755)
	target := filepath.Join(dir, "precious.txt")
	os.WriteFile(target, []byte("keep me"), 0o644)
	if err := os.Symlink(target, filepath.Join(out, "report.html")); err != nil {
		t.Skip("no symlinks here:", err)
	}
	// A report.html and no manifest: an older xdssim's outputs, replaced
	// only with --overwrite.
	if code, _, stderr := runMain(t, "run", tinyScenario(t), "--out", out, "--quiet", "--overwrite"); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep me" {
		t.Errorf("the symlink's target was overwritten: %q", b)
	}
	st, err := os.Lstat(filepath.Join(out, "report.html"))
	if err != nil || !st.Mode().IsRegular() {
		t.Errorf("report.html is not a regular file: %v %v", st, err)
	}
	assertNoTempFiles(t, out)
}

func TestOutputPathsAreCheckedBeforeTheRun(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	os.WriteFile(file, nil, 0o644)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"empty --out", []string{"--out", ""}, "--out: expected a path, found an empty value"},
		{"empty --cpuprofile", []string{"--cpuprofile="}, "--cpuprofile: expected a path, found an empty value"},
		{"empty --memprofile", []string{"--memprofile", ""}, "--memprofile: expected a path, found an empty value"},
		{"--out under a file", []string{"--out", filepath.Join(file, "x")}, "--out " + filepath.Join(file, "x")},
		{"--metrics in a missing directory", []string{"--out", filepath.Join(dir, "o"), "--metrics", filepath.Join(dir, "nope", "m.om")}, "--metrics"},
		{"--cpuprofile is a directory", []string{"--out", filepath.Join(dir, "o"), "--cpuprofile", dir}, "is a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runMain(t, append([]string{"run", tinyScenario(t)}, tt.args...)...)
			if code != exitInput || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and %q", code, stderr, tt.want)
			}
			if strings.Contains(stderr, "seed ") {
				t.Errorf("the run started before the paths were checked:\n%s", stderr)
			}
		})
	}
}

func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") || strings.HasPrefix(e.Name(), ".xdssim-check") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

// tinyScenario writes a scenario that runs in milliseconds.
func tinyScenario(t *testing.T) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "tiny.toml")
	os.WriteFile(f, []byte(`duration = "10s"
[[control_plane]]
name = "cp"
[[control_plane.service]]
name = "svc"
[[fleet.group]]
clients = 2
`), 0o644)
	return f
}

// TestAFullDiskIsNotCalledABug: an output the file system refuses to hold
// (a full disk) exits 1 and keeps the previous output, without the request
// to report a bug; an error of the renderer itself is still a bug.
func TestAFullDiskIsNotCalledABug(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "report.html")
	if err := os.WriteFile(name, []byte("previous"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		err     error
		wantBug bool
	}{
		{"the disk is full", &os.PathError{Op: "write", Path: name, Err: syscall.ENOSPC}, false},
		{"the renderer failed", errors.New("template: no such chart"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := exitCode(&stderr, func() error {
				return writeFile("", name, func(w io.Writer) error {
					io.WriteString(w, "half a report")
					return tc.err
				})
			})
			if code != exitInternal {
				t.Errorf("exit %d, want %d", code, exitInternal)
			}
			if got := strings.Contains(stderr.String(), "please report"); got != tc.wantBug {
				t.Errorf("asks to report a bug: %v, want %v:\n%s", got, tc.wantBug, stderr.String())
			}
			if b, _ := os.ReadFile(name); string(b) != "previous" {
				t.Errorf("the previous output became %q", b)
			}
		})
	}
}
