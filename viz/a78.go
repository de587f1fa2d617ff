package viz

import (
	"slices"

	"github.com/xdssim/xdssim/model/dataplane"
	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/model/xdsclient"
)

// sumBy sums the A78 series of instrument inst that have the same value
// of label k, in the order the values first appear; sums that are zero
// throughout are left out (the export keeps them).
func sumBy(r *fleet.Results, inst, k int) (keys []string, sums [][]float64) {
	defer func() {
		for i := len(sums) - 1; i >= 0; i-- {
			if allZero(sums[i]) {
				keys, sums = slices.Delete(keys, i, i+1), slices.Delete(sums, i, i+1)
			}
		}
	}()
	at := map[string]int{}
	for _, m := range r.XdsClientMetrics {
		if m.Instrument != inst || k >= len(m.Labels) {
			continue
		}
		i, ok := at[m.Labels[k]]
		if !ok {
			i = len(keys)
			at[m.Labels[k]] = i
			keys = append(keys, m.Labels[k])
			sums = append(sums, make([]float64, len(m.Values)))
		}
		for j, v := range m.Values {
			sums[i][j] += v
		}
	}
	return keys, sums
}

func allZero(vs []float64) bool {
	for _, v := range vs {
		if v != 0 {
			return false
		}
	}
	return true
}

// rate turns a counter into its increase per second, sample by sample;
// the first sample counts what happened at 0.
func rate(counter []float64, r *fleet.Results) []float64 {
	out := make([]float64, len(counter))
	per := 1 / r.SampleInterval.Seconds()
	for i, v := range counter {
		if i == 0 {
			out[i] = v
			continue
		}
		out[i] = (v - counter[i-1]) * per
	}
	return out
}

// cacheStateColors colour the cache states of grpc.xds_client.resources
// like the CSDS statuses of the xDS section.
var cacheStateColors = [xdsclient.NumCacheStates]string{
	xdsclient.CacheRequested:              colorInfo,
	xdsclient.CacheDoesNotExist:           causeColor(dataplane.ResourceDoesNotExist),
	xdsclient.CacheDoesNotExistButCached:  causeColor(dataplane.ResourceDeleted),
	xdsclient.CacheACKed:                  colorGood,
	xdsclient.CacheNACKed:                 causeColor(dataplane.NACK),
	xdsclient.CacheNACKedButCached:        colorFallback,
	xdsclient.CacheReceivedError:          causeColor(dataplane.ResourceError),
	xdsclient.CacheReceivedErrorButCached: colorWaiting,
	xdsclient.CacheTimeout:                causeColor(dataplane.ResourceTimerSpurious),
}

// a78Section charts gRFC A78's XdsClient metrics as a Prometheus scraping
// every client of the fleet would see them, summed over groups and
// targets: the connected gauge and server failures by server, resource
// updates, and cached resources by cache state.
func a78Section(r *fleet.Results) section {
	sec := section{ID: "a78", Title: "XdsClient metrics (gRFC A78)",
		Lead: "gRFC A78's XdsClient metrics summed over the fleet, as Prometheus would sum what every client exports: " +
			"grpc.xds_client.connected and server_failure by server, resource_updates_valid and _invalid, and " +
			"grpc.xds_client.resources by grpc.xds.cache_state. `xdssim run --metrics FILE` writes them per group and target " +
			"as OpenMetrics, for Prometheus and Grafana (docs/report.md)."}
	if len(r.XdsClientMetrics) == 0 {
		return sec
	}
	var connected, failures []line
	servers, sums := sumBy(r, fleet.InstrumentConnected, 1)
	for i, s := range servers {
		connected = append(connected, line{name: s, values: sums[i]})
	}
	servers, sums = sumBy(r, fleet.InstrumentServerFailure, 1)
	for i, s := range servers {
		failures = append(failures, line{name: s, values: rate(sums[i], r)})
	}
	sec.addTime(r, timeSpec{id: "chart_a78_connected", title: "grpc.xds_client.connected, by server",
		left: "instances connected", lines: connected})
	sec.addTime(r, timeSpec{id: "chart_a78_server_failure", title: "grpc.xds_client.server_failure per second, by server",
		left: "failures/s", lines: failures})
	var updates []line
	for _, u := range []struct {
		inst  int
		name  string
		color string
	}{{fleet.InstrumentUpdatesValid, "valid", colorGood}, {fleet.InstrumentUpdatesInvalid, "invalid", causeColor(dataplane.NACK)}} {
		types, sums := sumBy(r, u.inst, 2)
		if len(types) == 0 {
			continue
		}
		total := make([]float64, len(sums[0]))
		for _, s := range sums {
			for j, v := range s {
				total[j] += v
			}
		}
		updates = append(updates, line{name: u.name, values: rate(total, r), color: u.color})
	}
	sec.addTime(r, timeSpec{id: "chart_a78_updates", title: "grpc.xds_client.resource_updates_valid and _invalid per second",
		left: "resources/s", lines: updates})
	states, sums := sumBy(r, fleet.InstrumentResources, 2)
	var resources []line
	for s := range xdsclient.NumCacheStates {
		for i, name := range states {
			if name == s.String() {
				resources = append(resources, line{name: name, values: sums[i], color: cacheStateColors[s], area: true})
			}
		}
	}
	sec.addTime(r, timeSpec{id: "chart_a78_resources", title: "grpc.xds_client.resources, by grpc.xds.cache_state",
		left: "resources", lines: resources})
	return sec
}
