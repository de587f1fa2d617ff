package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// peakRSS runs the test binary as xdssim with args (see TestMain) and
// returns its exit code, stderr and the peak resident memory of the
// command, the supervised child included (wait4 reports the largest of
// the process and its waited-for children).
func peakRSS(t *testing.T, args ...string) (code int, stderr string, peak int64) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "XDSSIM_TEST_MAIN=1")
	var errb strings.Builder
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
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Skip("this system does not report a process's peak memory")
	}
	return code, errb.String(), ru.Maxrss << 10 // KiB on Linux
}

// backendEvents is a scenario of n [[backend]] events, each on count of
// the service's 100 000 endpoints, for a fleet of clients.
func backendEvents(n, count, clients int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "duration = \"5m\"\n[[control_plane]]\nname = \"cp\"\n[[control_plane.service]]\nname = \"svc\"\nendpoints = %d\n[[fleet.group]]\nclients = %d\n", count, clients)
	for i := range n {
		fmt.Fprintf(&b, "[[backend]]\nat = \"%ds\"\naction = \"down\"\nservice = \"svc\"\ncount = %d\nduration = \"1s\"\n", 1+i%290, count)
	}
	return b.String()
}

// TestValidateDoesNotBuildWhatTheRunWould: validate resolves and
// estimates a scenario without building what the run would: 1 000
// [[backend]] events of 100 000 backends each (27 KB of TOML) made it
// name every backend of every event, and run out of memory at ~6.5 GB.
func TestValidateDoesNotBuildWhatTheRunWould(t *testing.T) {
	f := writeScenario(t, backendEvents(1000, 100_000, 10))
	code, stderr, peak := peakRSS(t, "validate", f, "--force")
	if code != exitOK {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	t.Logf("validate peaked at %.1f MiB", float64(peak)/(1<<20))
	if peak > 150<<20 {
		t.Errorf("validate peaked at %d MiB of resident memory, more than 150 MiB", peak>>20)
	}
}
