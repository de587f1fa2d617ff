package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunWritesTheA78MetricsAsOpenMetrics: --metrics writes OpenMetrics
// text whose timestamps start at --metrics-start; a --metrics-start that
// is not an RFC 3339 time is invalid input.
func TestRunWritesTheA78MetricsAsOpenMetrics(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "run.om")
	code, _, stderr := runMain(t, "run", "default", "--out", dir, "--quiet", "--metrics", file, "--metrics-start", "2025-06-01T12:00:00Z")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if _, err := os.Stat(filepath.Join(dir, "series.csv")); err != nil {
		t.Errorf("run wrote no series.csv: %v", err)
	}
	for _, want := range []string{
		"# TYPE grpc_xds_client_connected gauge\n",
		`grpc_xds_client_connected{grpc_target="xds:///echo",grpc_xds_server="primary",xdssim_group="web",xdssim_run="`,
		`",xdssim_scenario="default",xdssim_seed="1"} 0 1748779200` + "\n",
		"# TYPE grpc_xds_client_server_failure_total counter\n",
		"# EOF\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the export lacks %q", want)
		}
	}
	if code, _, stderr := runMain(t, "run", "default", "--out", dir, "--metrics", file, "--metrics-start", "yesterday"); code != exitInput ||
		!strings.Contains(stderr, "--metrics-start yesterday: expected a time from 1970 on in RFC 3339 form") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}
