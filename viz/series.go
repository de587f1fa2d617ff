package viz

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/xdssim/xdssim/model/fleet"
)

// WriteSeriesCSV writes every time series of r, the report's charts' and
// gRFC A78's XdsClient metrics, as one tidy CSV to w: one row per series
// and sample, with the columns
//
//	time_seconds  the sample's virtual time
//	series        the series' name ("rpc.clients_failing",
//	              "grpc.xds_client.resources")
//	labels        its labels, "key=value" joined by ";" ("" for the
//	              report's series; group and A78's labels for A78's)
//	value         the value at that sample (empty for NaN)
//
// so that pandas or DuckDB read a run's whole timeline in one line
// (docs/report.md, "The series as CSV").
func WriteSeriesCSV(w io.Writer, r *fleet.Results) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"time_seconds", "series", "labels", "value"}); err != nil {
		return err
	}
	row := make([]string, 4)
	emit := func(name, labels string, values []float64) error {
		for k, v := range values {
			row[0] = formatSeconds(r.SampleInterval * time.Duration(k))
			row[1], row[2] = name, labels
			row[3] = ""
			if finite(v) {
				row[3] = strconv.FormatFloat(v, 'g', -1, 64)
			}
			if err := cw.Write(row); err != nil {
				return err
			}
		}
		return nil
	}
	for _, s := range r.Series {
		if err := emit(s.Name, "", s.Values); err != nil {
			return err
		}
	}
	for _, m := range r.XdsClientMetrics {
		in := fleet.Instruments[m.Instrument]
		labels := []string{"xdssim_group=" + m.Group}
		for i, l := range in.Labels {
			if i < len(m.Labels) {
				labels = append(labels, l+"="+m.Labels[i])
			}
		}
		if err := emit(in.Name, strings.Join(labels, ";"), m.Values); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
