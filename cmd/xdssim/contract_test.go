package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The reproducers of issue 16 that are valid scenarios: each runs to the
// end and writes its outputs (exit 0, or 3 for a breached expectation),
// where it used to panic or exhaust memory.
func TestAcceptedValuesRunToTheEnd(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		// A log-normal whose p99 is 30 days draws service times past the
		// end of virtual time; they used to wrap into the past.
		{"service time p99 of almost 30 days", []string{"reconnect-storm", "--set", `control_plane[0].service_time.p99="719h59m59s"`}},
		// 1e-12 RPCs/s: a mean gap of 1e21 ns used to overflow.
		{"an RPC rate of 1e-12", []string{"--set", "fleet.group[0].rpc.rate=1e-12"}},
		{"an exponential latency of 30 days", []string{"--set", `network.latency={dist="exponential",mean="720h"}`}},
		{"an immediate NACK loop", []string{"bad-cds-rollout", "--set", `change[0].at="0s"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			code, _, stderr := runMain(t, append([]string{"run", "--quiet", "--out", out}, tt.args...)...)
			if code != exitOK && code != exitBreached {
				t.Fatalf("exit %d, want 0 or 3:\n%s", code, stderr)
			}
			for _, f := range []string{"report.html", "summary.json"} {
				if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
					t.Errorf("%s not written: %v", f, err)
				}
			}
		})
	}
}

func TestValidateRefusesWhatWouldExhaustItsMemory(t *testing.T) {
	dir := t.TempDir()
	nested := filepath.Join(dir, "nested.toml")
	os.WriteFile(nested, []byte("a = "+strings.Repeat("{b = ", 10000)+"1"+strings.Repeat("}", 10000)+"\n"), 0o644)
	tests := []struct {
		name string
		ref  string
		want string
	}{
		{"/dev/zero", "/dev/zero", "xdssim: /dev/zero: expected a regular file, found a device"},
		{"40 KB of nested inline tables", nested, nested + ":1:165: malformed TOML: arrays and inline tables nested more than 32 deep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runMain(t, "validate", tt.ref)
			if code != exitInput || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and %q", code, stderr, tt.want)
			}
		})
	}
}
