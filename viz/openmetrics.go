package viz

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/stamp"
)

// WriteOpenMetrics writes the gRFC A78 XdsClient metrics of r
// (Results.XdsClientMetrics) to w in the OpenMetrics text format, every
// sample with its timestamp: start plus the sample's virtual time. Each
// series is one group's sum for one target, labelled as gRPC's
// OpenTelemetry plugin labels it once Prometheus has translated the names
// (grpc.target becomes grpc_target) plus xdssim_scenario, xdssim_group,
// xdssim_seed and xdssim_run (the first 12 hex digits of the run's
// scenario_sha256, st's: two runs backfilled into one Prometheus stay two
// series), so `promtool tsdb create-blocks-from
// openmetrics` can backfill a run into Prometheus beside what production
// clients export (docs/report.md, "The A78 metrics in Prometheus and
// Grafana"). Every series is written, those that stayed at zero too.
//
// The export opens with xdssim_build_info, an info-style gauge that is 1
// at every sample time (so that a query over the run can join it on
// xdssim_run): its labels name the build of xdssim that ran the run
// (version, revision, dirty and go, from st) and the run (scenario_sha256
// and the xdssim_ labels above).
//
// Metric names follow the same translation: grpc.xds_client.connected is
// grpc_xds_client_connected, and a counter's family keeps the _total its
// samples have (grpc_xds_client_server_failure_total), which both
// Prometheus's OpenMetrics parser and `promtool check metrics` (the
// Prometheus text format's linter) accept. Timestamps are in seconds,
// whole when start and the sample interval are whole seconds (which the
// text format's linter needs), else to the millisecond.
func WriteOpenMetrics(w io.Writer, r *fleet.Results, st stamp.Run, start time.Time) error {
	if err := st.Check(); err != nil {
		return fmt.Errorf("viz: OpenMetrics: stamp: %w", err)
	}
	bw := bufio.NewWriter(w)
	run := st.ScenarioSHA256[:12]
	startMS := start.UnixMilli()
	stepMS := r.SampleInterval.Milliseconds()
	bw.WriteString("# HELP xdssim_build_info The build of xdssim that ran this run, and the SHA-256 of its resolved scenario: 1 at every sample\n")
	bw.WriteString("# TYPE xdssim_build_info gauge\n")
	info := fmt.Sprintf("xdssim_build_info{dirty=\"%s\",go=\"%s\",revision=\"%s\",scenario_sha256=\"%s\",version=\"%s\",xdssim_run=\"%s\",xdssim_scenario=\"%s\",xdssim_seed=\"%d\"} 1 ",
		escapeLabel(st.Dirty), escapeLabel(st.Go), escapeLabel(st.Revision), escapeLabel(st.ScenarioSHA256), escapeLabel(st.Version),
		run, escapeLabel(r.Scenario), r.Seed)
	for k := range max(r.Samples, 1) {
		bw.WriteString(info)
		bw.WriteString(timestamp(startMS + int64(k)*stepMS))
		bw.WriteByte('\n')
	}
	for inst, in := range fleet.Instruments {
		name := promName(in.Name)
		kind := "gauge"
		if in.Counter {
			name, kind = name+"_total", "counter"
		}
		wrote := false
		for _, m := range r.XdsClientMetrics {
			if m.Instrument != inst {
				continue
			}
			if !wrote {
				fmt.Fprintf(bw, "# HELP %s %s (gRFC A78 %s, unit %s)\n", name, escapeHelp(in.Description), in.Name, in.Unit)
				fmt.Fprintf(bw, "# TYPE %s %s\n", name, kind)
				wrote = true
			}
			var lb strings.Builder
			lb.WriteString(name)
			lb.WriteByte('{')
			for i, l := range in.Labels {
				fmt.Fprintf(&lb, "%s=\"%s\",", promName(l), escapeLabel(m.Labels[i]))
			}
			fmt.Fprintf(&lb, "xdssim_group=\"%s\",xdssim_run=\"%s\",xdssim_scenario=\"%s\",xdssim_seed=\"%d\"} ",
				escapeLabel(m.Group), run, escapeLabel(r.Scenario), r.Seed)
			prefix := lb.String()
			for k, v := range m.Values {
				bw.WriteString(prefix)
				bw.WriteString(strconv.FormatFloat(v, 'f', -1, 64))
				bw.WriteByte(' ')
				bw.WriteString(timestamp(startMS + int64(k)*stepMS))
				bw.WriteByte('\n')
			}
		}
	}
	bw.WriteString("# EOF\n")
	return bw.Flush()
}

// promName is an OpenTelemetry name as Prometheus writes it: every
// character other than a letter, digit or '_' becomes '_'.
func promName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

// timestamp formats milliseconds since the epoch as OpenMetrics seconds.
func timestamp(ms int64) string {
	if ms%1000 == 0 {
		return strconv.FormatInt(ms/1000, 10)
	}
	return strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64)
}

func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

func escapeHelp(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}
