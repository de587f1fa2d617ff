package main

import (
	"io"
	"time"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/stamp"
	"github.com/xdssim/xdssim/viz"
)

// parseMetricsStart parses --metrics-start: the wall-clock time that
// virtual time 0 stands for in the OpenMetrics export (RFC 3339); the
// Unix epoch when it is not given.
func parseMetricsStart(s string) (time.Time, error) {
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Before(time.Unix(0, 0)) {
		return time.Time{}, badInput("--metrics-start %s: expected a time from 1970 on in RFC 3339 form, such as 2025-06-01T12:00:00Z", s)
	}
	return t, nil
}

// metricsWriter writes the run's gRFC A78 metrics as OpenMetrics text,
// virtual time 0 at start, stamped with st.
func metricsWriter(start time.Time, res *fleet.Results, st stamp.Run) func(io.Writer) error {
	return func(w io.Writer) error { return viz.WriteOpenMetrics(w, res, st, start) }
}
