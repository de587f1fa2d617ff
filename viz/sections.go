package viz

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xdssim/xdssim/model/dataplane"
	"github.com/xdssim/xdssim/model/fleet"
)

// section is one titled part of the report, with its charts.
type section struct {
	ID, Title string
	// Lead says what the section shows and what to look for.
	Lead   string
	Charts []chart
	// Empty names the charts left out because every value they would
	// draw is zero.
	Empty []string
}

// seriesSet finds series by name and remembers which were drawn, so that
// the report can draw every other series on its own.
type seriesSet struct {
	r    *fleet.Results
	idx  map[string]int
	used []bool
}

func newSeriesSet(r *fleet.Results) *seriesSet {
	s := &seriesSet{r: r, idx: make(map[string]int, len(r.Series)), used: make([]bool, len(r.Series))}
	for i, x := range r.Series {
		if _, dup := s.idx[x.Name]; !dup {
			s.idx[x.Name] = i
		}
	}
	return s
}

// take returns the values of the named series and marks it drawn; ok is
// false when the run has no such series.
func (s *seriesSet) take(name string) (values []float64, ok bool) {
	i, ok := s.idx[name]
	if !ok {
		return nil, false
	}
	s.used[i] = true
	return s.r.Series[i].Values, true
}

// lines returns a line for each named series the run has.
func (s *seriesSet) lines(specs ...line) []line {
	var out []line
	for _, l := range specs {
		if v, ok := s.take(l.name); ok {
			l.values = v
			out = append(out, l)
		}
	}
	return out
}

// legend renames the lines by dropping prefix from their names.
func legend(ls []line, prefix string) []line {
	for i := range ls {
		ls[i].name = strings.TrimPrefix(ls[i].name, prefix)
	}
	return ls
}

// addTime adds a time chart to sec when it has lines; one whose values are
// all zero is only named in sec.Empty.
func (sec *section) addTime(r *fleet.Results, spec timeSpec) {
	if len(spec.lines) == 0 {
		return
	}
	if _, _, nonzero := spec.extent(); !nonzero {
		sec.Empty = append(sec.Empty, spec.title)
		return
	}
	if spec.right != "" && !slices.ContainsFunc(spec.lines, func(l line) bool { return l.right }) {
		spec.right = ""
	}
	sec.Charts = append(sec.Charts, timeChart(r, spec))
}

// sections lays out every chart of the report.
func sections(r *fleet.Results) []section {
	ss := newSeriesSet(r)
	var out []section
	add := func(s section) {
		if len(s.Charts) > 0 || len(s.Empty) > 0 {
			out = append(out, s)
		}
	}
	add(rpcSection(r, ss))
	if len(r.Tracks) > 0 {
		add(section{
			ID: "tracks", Title: "Client channels, one by one",
			Lead: fmt.Sprintf("A fixed sample of %d client channels (spread evenly over the fleet), one row each, one column per %s s of virtual time. "+
				"Vertical stripes are herds failing together; a row that alternates is a client flapping.",
				len(r.Tracks), formatSeconds(r.TrackInterval)),
			Charts: []chart{heatmapChart(r)},
		})
	}
	add(xdsSection(r, ss))
	add(a78Section(r))
	for _, name := range serverNames(r) {
		add(serverSection(r, ss, name))
	}
	add(fleetSection(r, ss))
	add(retrySection(r, ss))
	add(distributionSection(r))
	add(otherSection(r, ss))
	uniqueIDs(out)
	return out
}

// uniqueIDs makes every section and chart ID unique in the page, keeping
// the first of each and adding "_2", "_3", … to later ones (two control
// planes may have names that slug alike).
func uniqueIDs(secs []section) {
	// The page's own sections and the error banner hold these.
	used := idSet{"worst": true, "metrics": true, "intervals": true, "scenario": true, "report-errors": true}
	for i := range secs {
		secs[i].ID = used.unique(secs[i].ID)
		for j := range secs[i].Charts {
			secs[i].Charts[j].ID = used.unique(secs[i].Charts[j].ID)
		}
	}
}

// causeLines returns, for every cause the run has a series of, a stacked
// area named after the cause in its colour.
func causeLines(ss *seriesSet, prefix string) []line {
	var out []line
	for c := dataplane.Cause(0); c < dataplane.NumCauses; c++ {
		out = append(out, ss.lines(line{name: prefix + c.String(), color: causeColor(c), area: true})...)
	}
	return legend(out, prefix)
}

func rpcSection(r *fleet.Results, ss *seriesSet) section {
	sec := section{ID: "rpc", Title: "RPC failures",
		Lead: "Which share of client channels were in an RPC failure window, and which share of RPCs failed, stacked by root cause; " +
			"how long the RPCs that ended in each sample took, from their start to their final status. " +
			"Shaded spans are the scenario's faults; drag the slider (or scroll) to zoom, and every time chart follows."}
	total := ss.lines(line{name: "rpc.clients_failing", color: colorBad})
	causes := causeLines(ss, "rpc.clients_failing.")
	if len(causes) == 0 {
		causes = legend(total, "rpc.")
	}
	sec.addTime(r, timeSpec{id: "chart_rpc_clients_failing", title: "Client channels in an RPC failure window, by root cause",
		left: "% of client channels", percent: true, lines: causes})
	sec.addTime(r, timeSpec{id: "chart_rpc_error_rate", title: "RPC error rate, by root cause",
		left: "% of RPCs ended", percent: true, lines: causeLines(ss, "rpc.error_rate.")})
	var codes []line
	for _, c := range []struct{ name, color string }{
		{"OK", colorGood}, {"CANCELLED", colorIdle}, {"DEADLINE_EXCEEDED", causeColor(dataplane.Deadline)},
		{"RESOURCE_EXHAUSTED", colorWaiting}, {"INTERNAL", "#8c564b"}, {"UNAVAILABLE", colorBad},
	} {
		codes = append(codes, ss.lines(line{name: "rpc.rate." + c.name, color: c.color})...)
	}
	sec.addTime(r, timeSpec{id: "chart_rpc_codes", title: "RPCs ended per second, by status code",
		left: "RPCs/s", lines: legend(codes, "rpc.rate.")})
	sec.addTime(r, timeSpec{id: "chart_rpc_latency", title: "RPC latency, p50 and p99 per sample",
		left: "ms", lines: legend(ss.lines(
			line{name: "rpc.latency_p50", color: colorInfo},
			line{name: "rpc.latency_p99", color: colorWaiting},
		), "rpc.latency_")})
	ss.take("rpc.success_ratio") // the error rate shows it, by cause
	return sec
}

func xdsSection(r *fleet.Results, ss *seriesSet) section {
	sec := section{ID: "xds", Title: "xDS state",
		Lead: "What the XdsClients believed: their channel to the primary server, and per group, when there are several, " +
			"how many had their ADS stream to it connected (implementations reconnect on different schedules); their cache entries by CSDS status (gRFC A40), " +
			"how many were on a fallback server (gRFC A71) and had their whole config, and does-not-exist timer firings (gRFC A57)."}
	sec.addTime(r, timeSpec{id: "chart_xds_connectivity", title: "XdsClient channels to their primary server, by connectivity state",
		left: "channels", lines: legend(ss.lines(
			line{name: "xds.primary_ready", color: colorGood, area: true},
			line{name: "xds.primary_connecting", color: colorWaiting, area: true},
			line{name: "xds.primary_transient_failure", color: colorBad, area: true},
			line{name: "xds.primary_idle", color: colorIdle, area: true},
		), "xds.primary_")})
	var byGroup []line
	for _, x := range r.Series {
		if strings.HasPrefix(x.Name, connectedByGroup) {
			byGroup = append(byGroup, line{name: x.Name})
		}
	}
	sec.addTime(r, timeSpec{id: "chart_xds_connected_by_group", title: "XdsClient instances connected to their primary server, by group (% of the group's instances; gRFC A78 grpc.xds_client.connected)",
		left: "%", percent: true, lines: legend(ss.lines(byGroup...), connectedByGroup)})
	sec.addTime(r, timeSpec{id: "chart_xds_resources", title: "Cache entries by CSDS status",
		left: "entries", lines: legend(ss.lines(
			line{name: "xds.resources.acked", color: colorGood, area: true},
			line{name: "xds.resources.requested", color: colorInfo, area: true},
			line{name: "xds.resources.nacked", color: causeColor(dataplane.NACK), area: true},
			line{name: "xds.resources.does_not_exist", color: causeColor(dataplane.ResourceDoesNotExist), area: true},
			line{name: "xds.resources.timeout", color: causeColor(dataplane.ResourceTimerSpurious), area: true},
			line{name: "xds.resources.received_error", color: causeColor(dataplane.ResourceError), area: true},
		), "xds.resources.")})
	sec.addTime(r, timeSpec{id: "chart_xds_fallback", title: "XdsClient instances on a fallback server, and with their whole config",
		left: "instances", lines: legend(ss.lines(
			line{name: "xds.on_fallback", color: colorFallback},
			line{name: "xds.config_complete", color: colorGood},
		), "xds.")})
	sec.addTime(r, timeSpec{id: "chart_xds_timer_firings", title: "Does-not-exist timer firings",
		left: "firings/s", lines: legend(ss.lines(
			line{name: "xds.resource_timer_firings", color: causeColor(dataplane.ResourceTimerSpurious)},
		), "xds.")})
	return sec
}

// connectedByGroup prefixes each group's share of instances connected to
// their primary server, when the fleet has more than one group using xDS:
// groups of different implementations reconnect on different schedules.
const connectedByGroup = "xds.primary_connected_percent."

// serverNames lists the control planes the run has series of, in order.
func serverNames(r *fleet.Results) []string {
	var out []string
	for _, s := range r.Series {
		if name, ok := strings.CutPrefix(s.Name, "control_plane."); ok {
			if name, ok = strings.CutSuffix(name, ".open_streams"); ok && !strings.Contains(name, ".") {
				out = append(out, name)
			}
		}
	}
	return out
}

func serverSection(r *fleet.Results, ss *seriesSet, name string) section {
	p := "control_plane." + name + "."
	id := "chart_cp_" + slug(name) + "_"
	sec := section{ID: "cp-" + slug(name), Title: "Control plane: " + name,
		Lead: "The ADS streams this server held, the messages it handled, and how long requests waited for a worker."}
	sec.addTime(r, timeSpec{id: id + "streams", title: name + ": ADS streams", left: "open streams", right: "connects/s",
		lines: legend(ss.lines(
			line{name: p + "open_streams", color: colorInfo},
			line{name: p + "new_streams", color: colorWaiting, right: true},
		), p)})
	sec.addTime(r, timeSpec{id: id + "messages", title: name + ": DiscoveryRequests and responses", left: "messages/s",
		lines: legend(ss.lines(
			line{name: p + "requests", color: colorInfo},
			line{name: p + "responses", color: colorGood},
			line{name: p + "acks", color: "#59a14f"},
			line{name: p + "nacks", color: causeColor(dataplane.NACK)},
		), p)})
	sec.addTime(r, timeSpec{id: id + "load", title: name + ": queue depth and response latency", left: "requests waiting", right: "ms (p99)",
		lines: legend(ss.lines(
			line{name: p + "queue_depth", color: colorWaiting},
			line{name: p + "latency_p99", color: colorBad, right: true},
		), p)})
	return sec
}

func fleetSection(r *fleet.Results, ss *seriesSet) section {
	sec := section{ID: "fleet", Title: "Fleet", Lead: "Clients running, down for a restart, and starting."}
	sec.addTime(r, timeSpec{id: "chart_fleet_clients", title: "Clients running and restarting", left: "clients", right: "starts/s",
		lines: legend(ss.lines(
			line{name: "clients.running", color: colorGood},
			line{name: "clients.restarting", color: colorNotRunning},
			line{name: "clients.starts", color: colorInfo, right: true},
		), "clients.")})
	return sec
}

func retrySection(r *fleet.Results, ss *seriesSet) section {
	sec := section{ID: "retries", Title: "Sessions and retries",
		Lead: "Retry attempts (gRFC A6, GEP-3440) and how many attempts each RPC took; sessions whose backend was lost (gRFC A55)."}
	sec.addTime(r, timeSpec{id: "chart_retries", title: "Retries and retry amplification", left: "retries/s", right: "attempts per RPC",
		lines: ss.lines(
			line{name: "retries.rate", color: colorWaiting},
			line{name: "retries.amplification", color: colorInfo, right: true},
		)})
	sec.addTime(r, timeSpec{id: "chart_sessions", title: "Session affinity breaks", left: "breaks/s",
		lines: ss.lines(line{name: "sessions.affinity_breaks", color: colorAffinity})})
	return sec
}

func otherSection(r *fleet.Results, ss *seriesSet) section {
	sec := section{ID: "other", Title: "Other series", Lead: "Series the sections above do not draw."}
	ids := chartIDs(r.Series)
	for i, s := range r.Series {
		if ss.used[i] {
			continue
		}
		title := s.Title
		if title == "" {
			title = s.Name
		}
		sec.addTime(r, timeSpec{id: ids[i], title: title, left: s.Unit, lines: []line{{name: s.Name, values: s.Values}}})
	}
	return sec
}
