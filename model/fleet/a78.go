package fleet

import (
	"slices"
	"strings"

	"github.com/xdssim/xdssim/model/xdsclient"
)

// gRFC A78's XdsClient metrics ("A78-grpc-metrics-wrr-pf-xds.md",
// XdsClient), sampled over the run as every gRPC process of the fleet
// would export them, and summed over the processes of a group.

// Instrument is one of gRFC A78's XdsClient instruments.
type Instrument struct {
	// Name is the instrument's name ("grpc.xds_client.connected").
	Name string
	// Counter is set for a counter; otherwise it is a gauge.
	Counter bool
	// Unit is A78's unit ("{bool}").
	Unit string
	// Labels are the labels A78 gives it, in A78's order.
	Labels []string
	// Description is A78's.
	Description string
}

// The A78 instruments, in A78's order; XdsClientMetric.Instrument
// indexes this.
var Instruments = []Instrument{
	{"grpc.xds_client.connected", false, "{bool}", []string{"grpc.target", "grpc.xds.server"},
		"Whether or not the xDS client currently has a working ADS stream to the xDS server. For a given server, this will be set to 1 when the stream is initially created. It will be set to 0 when we have a connectivity failure or when the ADS stream fails without seeing a response message, as per A57. Once set to 0, it will be reset to 1 when we receive the first response on an ADS stream."},
	{"grpc.xds_client.server_failure", true, "{failure}", []string{"grpc.target", "grpc.xds.server"},
		"A counter of xDS servers going from healthy to unhealthy. A server goes unhealthy when we have a connectivity failure or when the ADS stream fails without seeing a response message, as per gRFC A57."},
	{"grpc.xds_client.resource_updates_valid", true, "{resource}", []string{"grpc.target", "grpc.xds.server", "grpc.xds.resource_type"},
		"A counter of resources received that were considered valid. The counter will be incremented even for resources that have not changed."},
	{"grpc.xds_client.resource_updates_invalid", true, "{resource}", []string{"grpc.target", "grpc.xds.server", "grpc.xds.resource_type"},
		"A counter of resources received that were considered invalid."},
	{"grpc.xds_client.resources", false, "{resource}", []string{"grpc.target", "grpc.xds.authority", "grpc.xds.cache_state", "grpc.xds.resource_type"},
		"Number of xDS resources."},
}

// Indexes into Instruments.
const (
	InstrumentConnected = iota
	InstrumentServerFailure
	InstrumentUpdatesValid
	InstrumentUpdatesInvalid
	InstrumentResources
)

// XdsClientMetric is one labelled series of an A78 instrument: its value
// summed over the XdsClient instances of one group for one target, one
// value per sample. A counter counts from the start of the run, the
// instances a restart replaced included (a process's counter starts again
// from 0 when it restarts; the sum goes on), so it never goes down.
type XdsClientMetric struct {
	// Instrument indexes Instruments.
	Instrument int
	// Group is the group of the instances summed.
	Group string
	// Labels are the instrument's label values, in Instruments' order.
	Labels []string
	Values []float64
}

// a78Set samples the A78 metrics: a block of series per group and
// target, whose XdsClients record into the block's sink as their metrics
// change (xdsclient.MetricsSink), so that a sample reads the sinks and
// costs nothing per client.
type a78Set struct {
	blocks []a78Block
	sinks  []xdsclient.MetricsSink // per block
	byInst []int32                 // per instance: its block
	series []XdsClientMetric

	// What the fleet's other series read from the sinks: the cache
	// entries by CSDS status, and per group the instances connected to
	// their first server.
	statuses         [xdsclient.NumStatuses]int
	connectedToFirst []int
}

// a78Block is the series of one group and target: per server, connected,
// server_failure and the valid and invalid updates by type; then the
// resources by type and cache state.
type a78Block struct {
	group, target int
	first         int // its first series
	servers       int
}

const seriesPerServer = 2 + 2*xdsclient.NumResourceTypes

// typeLabel is A78's grpc.xds.resource_type: the type URL without
// "type.googleapis.com/".
func typeLabel(t xdsclient.ResourceType) string {
	return strings.TrimPrefix(t.TypeURL(), "type.googleapis.com/")
}

// buildA78 lays the series out, a block per group and target.
func (w *world) buildA78() {
	a := &w.a78
	n := int(w.cfg.Duration/w.cfg.SampleInterval) + 1
	add := func(inst int, group string, labels ...string) {
		a.series = append(a.series, XdsClientMetric{Instrument: inst, Group: group, Labels: labels, Values: make([]float64, 0, n)})
	}
	blockOf := map[[2]int]int32{}
	for gi := range w.cfg.Groups {
		g := &w.cfg.Groups[gi]
		if len(g.Servers) == 0 {
			continue
		}
		for ti, target := range g.Targets {
			blockOf[[2]int{gi, ti}] = int32(len(a.blocks))
			a.blocks = append(a.blocks, a78Block{group: gi, target: ti, first: len(a.series), servers: len(g.Servers)})
			tl := "xds:///" + target
			for _, si := range g.Servers {
				srv := w.cfg.ControlPlanes[si].Server.Name
				add(InstrumentConnected, g.Name, tl, srv)
				add(InstrumentServerFailure, g.Name, tl, srv)
				for t := range xdsclient.NumResourceTypes {
					add(InstrumentUpdatesValid, g.Name, tl, srv, typeLabel(xdsclient.ResourceType(t)))
				}
				for t := range xdsclient.NumResourceTypes {
					add(InstrumentUpdatesInvalid, g.Name, tl, srv, typeLabel(xdsclient.ResourceType(t)))
				}
			}
			for t := range xdsclient.NumResourceTypes {
				for s := range xdsclient.NumCacheStates {
					add(InstrumentResources, g.Name, tl, "#old", s.String(), typeLabel(xdsclient.ResourceType(t)))
				}
			}
		}
	}
	a.sinks = make([]xdsclient.MetricsSink, len(a.blocks))
	for b := range a.blocks {
		a.sinks[b].Servers = make([]xdsclient.ServerSink, a.blocks[b].servers)
	}
	a.byInst = make([]int32, len(w.insts))
	for ii := range w.insts {
		inst := &w.insts[ii]
		a.byInst[ii] = blockOf[[2]int{int(w.clients[inst.client].group), int(inst.target)}]
	}
	a.connectedToFirst = make([]int, len(w.cfg.Groups))
}

// sink is the MetricsSink instance ii's XdsClient records into.
func (w *world) sink(ii uint32) *xdsclient.MetricsSink { return &w.a78.sinks[w.a78.byInst[ii]] }

// sampleA78 adds a value to every A78 series, and counts the totals
// other series need (a78Set.statuses, connectedToFirst).
func (w *world) sampleA78() {
	a := &w.a78
	a.statuses = [xdsclient.NumStatuses]int{}
	clear(a.connectedToFirst)
	for b := range a.blocks {
		blk, sk := &a.blocks[b], &a.sinks[b]
		k := blk.first
		for s := range blk.servers {
			ss := &sk.Servers[s]
			a.add(k, ss.Connected)
			a.add(k+1, ss.ServerFailures)
			for t := range xdsclient.NumResourceTypes {
				a.add(k+2+t, ss.ResourceUpdatesValid[t])
				a.add(k+2+xdsclient.NumResourceTypes+t, ss.ResourceUpdatesInvalid[t])
			}
			k += seriesPerServer
		}
		a.connectedToFirst[blk.group] += sk.Servers[0].Connected
		for t := range xdsclient.NumResourceTypes {
			for s := range xdsclient.NumCacheStates {
				n := sk.Resources[t][s]
				a.add(k, n)
				a.statuses[s.Status()] += n
				k++
			}
		}
	}
}

func (a *a78Set) add(k, v int) { a.series[k].Values = append(a.series[k].Values, float64(v)) }

// a78Results returns the series, without those of resources in a cache
// state no instance was ever in, nor counters that never counted.
func (w *world) a78Results() []XdsClientMetric {
	// Every series, zero or not: an exporter reports a counter that
	// stayed at zero, and a dashboard tells "nothing happened" from "no
	// data" by it.
	return slices.Clone(w.a78.series)
}
