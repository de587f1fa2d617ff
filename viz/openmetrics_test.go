package viz

import (
	"bytes"
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var omSample = regexp.MustCompile(`^([a-z_]+)\{([^}]*)\} (\S+) (\S+)$`)

// TestOpenMetricsExportIsWellFormed checks the export of a real run
// against the OpenMetrics text format: every family has its HELP and TYPE
// before its samples and is not interleaved with another, a counter's
// samples never go down, each series' timestamps rise one sample
// interval at a time from --metrics-start, the text ends with "# EOF",
// and the export opens with xdssim_build_info, 1 at every sample, labelled
// with the build and the run. Reference: OpenMetrics 1.0, "Text format";
// gRFC A78.
func TestOpenMetricsExportIsWellFormed(t *testing.T) {
	t.Parallel()
	r, _ := libraryRun(t)
	start := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	if err := WriteOpenMetrics(&b, r, testStamp, start); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if lines[len(lines)-1] != "# EOF" {
		t.Fatalf("last line %q, want # EOF", lines[len(lines)-1])
	}
	families := map[string]string{} // name -> type
	done := map[string]bool{}       // families whose samples are over
	var family string
	last := map[string][2]float64{} // series -> last value, timestamp
	samples := 0
	for i, l := range lines[:len(lines)-1] {
		switch {
		case strings.HasPrefix(l, "# HELP "):
			name := strings.Fields(l)[2]
			if done[name] || families[name] != "" {
				t.Fatalf("line %d: family %s again", i+1, name)
			}
			if family != "" {
				done[family] = true
			}
			family = name
		case strings.HasPrefix(l, "# TYPE "):
			f := strings.Fields(l)
			if f[2] != family || (f[3] != "gauge" && f[3] != "counter") {
				t.Fatalf("line %d: %q after HELP %s", i+1, l, family)
			}
			families[family] = f[3]
			if f[3] == "counter" && !strings.HasSuffix(family, "_total") {
				t.Errorf("counter %s does not end in _total", family)
			}
		default:
			m := omSample.FindStringSubmatch(l)
			if m == nil || m[1] != family {
				t.Fatalf("line %d: %q is not a sample of %s", i+1, l, family)
			}
			samples++
			v, err1 := strconv.ParseFloat(m[3], 64)
			ts, err2 := strconv.ParseFloat(m[4], 64)
			if err1 != nil || err2 != nil {
				t.Fatalf("line %d: value or timestamp not a number: %q", i+1, l)
			}
			key := m[1] + "{" + m[2] + "}"
			prev, seen := last[key]
			want := float64(start.Unix())
			if seen {
				want = prev[1] + r.SampleInterval.Seconds()
				if families[family] == "counter" && v < prev[0] {
					t.Errorf("line %d: counter %s went down from %v to %v", i+1, key, prev[0], v)
				}
			}
			if ts != want {
				t.Fatalf("line %d: timestamp %v, want %v", i+1, ts, want)
			}
			last[key] = [2]float64{v, ts}
			labels := []string{`grpc_target="xds:///echo"`, `xdssim_scenario="fallback-during-restarts"`}
			if family == "xdssim_build_info" {
				labels = []string{`xdssim_scenario="fallback-during-restarts"`, `version="v1.2.3"`, `revision="` + testStamp.Revision + `"`,
					`dirty="false"`, `go="go1.26.8"`, `scenario_sha256="` + testStamp.ScenarioSHA256 + `"`, `xdssim_run="` + testStamp.ScenarioSHA256[:12] + `"`}
				if v != 1 {
					t.Errorf("line %d: xdssim_build_info is %v, want 1", i+1, v)
				}
			}
			for _, label := range labels {
				if !strings.Contains(m[2], label) {
					t.Errorf("line %d lacks %s", i+1, label)
				}
			}
		}
	}
	for _, name := range []string{"xdssim_build_info", "grpc_xds_client_connected", "grpc_xds_client_server_failure_total",
		"grpc_xds_client_resource_updates_valid_total", "grpc_xds_client_resources"} {
		if families[name] == "" {
			t.Errorf("no family %s", name)
		}
	}
	if want := (len(r.XdsClientMetrics) + 1) * r.Samples; samples != want {
		t.Errorf("%d samples, want %d (xdssim_build_info and every series, every sample)", samples, want)
	}
	if !strings.HasPrefix(b.String(), "# HELP xdssim_build_info ") {
		t.Errorf("the export does not open with xdssim_build_info:\n%.300s", b.String())
	}
	promtoolChecks(t, b.Bytes())
}

// promtoolChecks runs Prometheus's own tools on an export: `promtool check
// metrics` lints it, and `promtool tsdb create-blocks-from openmetrics`
// backfills it into TSDB blocks. Without promtool it skips them, unless
// XDSSIM_PROMTOOL_TEST=required (.ci/run installs Debian's prometheus
// package and sets it).
func promtoolChecks(t *testing.T, export []byte) {
	bin, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("XDSSIM_PROMTOOL_TEST") == "required" {
			t.Fatal("no promtool on PATH, and XDSSIM_PROMTOOL_TEST=required")
		}
		t.Log("no promtool on PATH (apt-get install prometheus): not checked with it")
		return
	}
	check := exec.Command(bin, "check", "metrics")
	check.Stdin = bytes.NewReader(export)
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "run.om")
	if err := os.WriteFile(file, export, 0o644); err != nil {
		t.Fatal(err)
	}
	backfill := exec.Command(bin, "tsdb", "create-blocks-from", "openmetrics", file, filepath.Join(dir, "data"))
	if out, err := backfill.CombinedOutput(); err != nil || !strings.Contains(string(out), "BLOCK ULID") {
		t.Errorf("promtool tsdb create-blocks-from openmetrics: %v\n%s", err, out)
	}
}

// TestOpenMetricsLabelsEachRunAndKeepsZeros: every sample carries the
// run's seed and ID (the first 12 hex digits of its scenario_sha256,
// which another seed changes: scenarios.TestSHA256NamesWhatTheScenarioRuns),
// so that two seeds backfilled into one Prometheus stay two series; and a
// series that stayed at zero is written too (an exporter reports a
// counter at zero).
func TestOpenMetricsLabelsEachRunAndKeepsZeros(t *testing.T) {
	t.Parallel()
	r, _ := libraryRun(t)
	var b bytes.Buffer
	if err := WriteOpenMetrics(&b, r, testStamp, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	want := `xdssim_run="` + testStamp.ScenarioSHA256[:12] + `",xdssim_scenario="fallback-during-restarts",xdssim_seed="1"}`
	zero := regexp.MustCompile(`(?m)^grpc_xds_client_resource_updates_invalid_total\{[^}]*\} 0 `)
	if !strings.Contains(out, want) || !zero.MatchString(out) {
		t.Errorf("the export lacks %s, or a zero-valued invalid-updates series:\n%.800s", want, out)
	}
}

// TestSeriesCSVIsTidy: one row per series and sample, every series of the
// report and of A78, times one sample interval apart.
func TestSeriesCSVIsTidy(t *testing.T) {
	t.Parallel()
	r, _ := libraryRun(t)
	var b bytes.Buffer
	if err := WriteSeriesCSV(&b, r); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if want := 1 + r.Samples*(len(r.Series)+len(r.XdsClientMetrics)); len(rows) != want {
		t.Fatalf("%d rows, want a header and %d", len(rows), want-1)
	}
	if strings.Join(rows[0], ",") != "time_seconds,series,labels,value" {
		t.Errorf("header %q", rows[0])
	}
	seen := map[string]bool{}
	for _, row := range rows[1:] {
		seen[row[1]] = true
	}
	for _, s := range []string{"rpc.clients_failing", "clients.running", "grpc.xds_client.connected", "grpc.xds_client.resources"} {
		if !seen[s] {
			t.Errorf("no series %s", s)
		}
	}
	if rows[2][0] != formatSeconds(r.SampleInterval) {
		t.Errorf("second row at %s, want one sample interval", rows[2][0])
	}
}
