package scenarios

import (
	"fmt"
	"github.com/xdssim/xdssim/scenarios/mesh"
	"slices"
	"sort"
	"strings"
)

// An Estimate is what a run of a scenario will cost, predicted before it
// starts from the resolved scenario: the peak memory of the process and
// the kernel events it handles. docs/limits.md gives the cost model and
// its accuracy against measured runs.
type Estimate struct {
	// Memory is the predicted peak resident memory, in bytes.
	Memory int64
	// Events is the predicted number of kernel events: a typical run's,
	// not a bound (a scenario that loops, reconnecting or NACKing without
	// end, handles many more).
	Events int64
	// Drivers are the terms of Memory, largest first: the keys whose
	// values drive the cost, and what they cost.
	Drivers []Driver
	// EventDrivers are the terms of Events, largest first.
	EventDrivers []Driver
}

// Max is the larger of e and o in memory and in events, each with its
// drivers: the estimate of the costliest of several runs.
func (e Estimate) Max(o Estimate) Estimate {
	if o.Memory > e.Memory {
		e.Memory, e.Drivers = o.Memory, o.Drivers
	}
	if o.Events > e.Events {
		e.Events, e.EventDrivers = o.Events, o.EventDrivers
	}
	return e
}

// A Driver is one term of an estimate: the scenario keys it comes from,
// what it counts, and its cost (bytes or events).
type Driver struct {
	Keys string // "fleet.group[0].clients"
	What string // "1000000 clients × 1 target"
	Cost int64
}

// The cost model's constants, fitted to peak RSS measured with
// /usr/bin/time -v on the library and the benchmark scenarios
// (docs/limits.md).
const (
	// baseMemory is the process with nothing simulated: the runtime, the
	// go-control-plane and protobuf registries, the report's templates.
	baseMemory = 32 << 20
	// perClient and perInstance are a client, and each of its XdsClient
	// instances (one per target) with its channels, caches, timers,
	// data-plane channel and queued events.
	perClient   = 1 << 10
	perInstance = 5 << 10
	// perEndpointView is one endpoint as one instance's data-plane
	// channel holds it (a subchannel, its address and state).
	perEndpointView = 64
	// perSeriesSample and perSampleFixed are one value of one time series,
	// kept during the run and rendered into the report, and the data
	// plane's per-sample buckets, with the latencies of the RPCs that
	// ended in the sample (one or two latency buckets, 48 bytes each, at
	// a constant service time).
	perSeriesSample = 24
	perSampleFixed  = 352
	// perWorker is a control plane worker's next free time.
	perWorker = 8
	// perServiceEndpoint is one endpoint of one service of one control
	// plane, at its peak: the server's resources (its caches' copies of
	// the ClusterLoadAssignment), the decoded update and the data-plane
	// config the clients share, and its backend in the run's registry.
	perServiceEndpoint = 2 << 10
	// perIncident is one fault, restart, change or backend event: its
	// events, its incident and what the report draws of it.
	perIncident = 18 << 10
	// perNameByte and perNameByteInstance are one byte of a service's,
	// cluster's, locality's or control plane's name: in the resources
	// the server keeps, the figures' paths and the report, and in each
	// instance's caches. A group's name costs perNameByte, and
	// perNameByteClient in each of its clients.
	perNameByte         = 64
	perNameByteInstance = 16
	perNameByteClient   = 4
)

// Estimate predicts the cost of a run of the (valid) scenario.
func (s *Scenario) Estimate() Estimate {
	var e Estimate
	mem := func(keys, what string, cost int64) {
		if cost > 0 {
			e.Drivers = append(e.Drivers, Driver{Keys: keys, What: what, Cost: cost})
		}
	}
	ev := func(keys, what string, cost int64) {
		if cost > 0 {
			e.EventDrivers = append(e.EventDrivers, Driver{Keys: keys, What: what, Cost: cost})
		}
	}
	mem("", "the process itself", baseMemory)

	seconds := s.Duration.Seconds()
	samples := int64(s.Duration/max(s.SampleInterval, 1)) + 1
	series := int64(22 + 8*len(s.ControlPlanes))
	restarts := 0.0
	for _, r := range s.Fleet.Restarts {
		restarts += r.Fraction
	}
	// The endpoints of each control plane's dumps: all, and the most one
	// assignment has.
	meshEps := make([][2]int64, len(s.ControlPlanes))
	for k := range s.ControlPlanes {
		meshEps[k][0], meshEps[k][1] = s.meshEndpoints(k)
	}
	for i, g := range s.Fleet.Groups {
		p := fmt.Sprintf("fleet.group[%d]", i)
		clients := int64(g.Clients)
		targets := int64(len(g.Targets))
		if len(g.Servers) == 0 {
			targets = 0
		}
		insts := clients * targets
		mem(p+".clients", fmt.Sprintf("%d clients × %d target(s)", clients, targets), clients*perClient+insts*perInstance)
		if eps, key := s.targetEndpoints(&g, meshEps); eps > 0 && insts > 0 {
			mem(key+", "+p+".clients", fmt.Sprintf("%d instances × %d endpoints", insts, eps), insts*eps*perEndpointView)
		}
		mem(p+".start_times", fmt.Sprintf("%d start times", len(g.StartTimes)), int64(len(g.StartTimes))*8)
		series += 1 + targets*int64(len(g.Servers))*10

		// Events: an instance's start (connect, stream, four resources,
		// ACKs), about 40 per server of its bootstrap, and as many again
		// for each fault it reconnects through and each restart; about 4
		// for each config change it receives; and the RPCs taken one by
		// one while its channel is not steady, about 5 % of them.
		servers := int64(max(len(g.Servers), 1))
		ev(p+".clients", fmt.Sprintf("%d instances starting and reconnecting", insts),
			int64(float64(insts*servers*40)*(1+restarts+float64(len(s.Faults)))))
		ev("change", fmt.Sprintf("%d changes × %d instances", len(s.Changes), insts), int64(len(s.Changes))*insts*4)
		ev(p+".rpc.rate", fmt.Sprintf("%d instances × %g RPC/s × %s", insts, g.RPC.Rate, s.Duration),
			int64(float64(insts)*g.RPC.Rate*seconds*0.05))
	}
	mem("sample_interval, duration", fmt.Sprintf("%d samples × %d series", samples, series), samples*(series*perSeriesSample+perSampleFixed))
	for k, cp := range s.ControlPlanes {
		for j := range cp.Services {
			if eps := s.peakEndpoints(&cp.Services[j]); eps > 0 {
				mem(fmt.Sprintf("control_plane[%d].service[%d].endpoints, change", k, j), fmt.Sprintf("%d endpoints at their peak", eps), eps*perServiceEndpoint)
			}
		}
		if eps := meshEps[k][0]; eps > 0 {
			mem(fmt.Sprintf("control_plane[%d].resources, change[].resources", k), fmt.Sprintf("%d endpoints in its dumps", eps), eps*perServiceEndpoint)
		}
	}
	incidents := int64(len(s.Faults) + len(s.Fleet.Restarts) + len(s.Changes) + len(s.Backends))
	mem("fault, fleet.restart, change, backend", fmt.Sprintf("%d faults, restarts, changes and backend events", incidents), incidents*perIncident)
	var insts, nameBytes, groupNames int64 // groupNames in bytes of memory
	for _, g := range s.Fleet.Groups {
		if len(g.Servers) > 0 {
			insts += int64(g.Clients) * int64(len(g.Targets))
		}
		groupNames += int64(len(g.Name)) * (perNameByte + int64(g.Clients)*perNameByteClient)
	}
	for _, cp := range s.ControlPlanes {
		nameBytes += int64(len(cp.Name))
		for _, svc := range cp.Services {
			nameBytes += int64(len(svc.Name))
			for _, c := range svc.Clusters {
				nameBytes += int64(len(c.Name))
				for _, l := range c.Localities {
					nameBytes += int64(len(l.Zone))
				}
			}
			for _, l := range svc.Localities {
				nameBytes += int64(len(l.Zone))
			}
		}
	}
	mem("control_plane[].name, control_plane[].service[].name", fmt.Sprintf("%d bytes of names × %d instances", nameBytes, insts), nameBytes*(perNameByte+insts*perNameByteInstance))
	mem("fleet.group[].name", "the groups' names, in their clients", groupNames)
	for i, cp := range s.ControlPlanes {
		mem(fmt.Sprintf("control_plane[%d].workers", i), fmt.Sprintf("%d workers", cp.Workers), int64(cp.Workers)*perWorker)
	}

	sort.SliceStable(e.Drivers, func(i, j int) bool { return e.Drivers[i].Cost > e.Drivers[j].Cost })
	sort.SliceStable(e.EventDrivers, func(i, j int) bool { return e.EventDrivers[i].Cost > e.EventDrivers[j].Cost })
	for _, d := range e.Drivers {
		e.Memory += d.Cost
	}
	for _, d := range e.EventDrivers {
		e.Events += d.Cost
	}
	return e
}

// targetEndpoints is the largest number of endpoints any service the
// group targets has, over its clusters, or one assignment of its servers'
// dumps has (meshEps, per control plane: all, and the most in one), and
// the key that gives it.
func (s *Scenario) targetEndpoints(g *Group, meshEps [][2]int64) (n int64, key string) {
	for _, name := range g.Servers {
		k := s.controlPlaneIndex(name)
		if k < 0 {
			continue
		}
		for j, svc := range s.ControlPlanes[k].Services {
			if !slices.Contains(g.Targets, svc.Name) {
				continue
			}
			if eps := s.peakEndpoints(&svc); eps > n {
				n, key = eps, fmt.Sprintf("control_plane[%d].service[%d].endpoints", k, j)
			}
		}
		if largest := meshEps[k][1]; largest > n {
			n, key = largest, fmt.Sprintf("control_plane[%d].resources", k)
		}
	}
	return n, key
}

// meshEndpoints counts the endpoints of the ClusterLoadAssignments the
// control plane k serves from dump files (control_plane[].resources) and
// may publish (every change's resources, which name dumps only for
// publish): all of them, and the most one assignment has, which bounds
// what one client's channel holds of a cluster.
func (s *Scenario) meshEndpoints(k int) (total, largest int64) {
	files := slices.Clone(s.ControlPlanes[k].Resources)
	for _, c := range s.Changes {
		if c.Action == "publish" {
			files = append(files, c.Resources...)
		}
	}
	for _, r := range s.resources(files) {
		n := int64(mesh.EndpointCount(r))
		total += n
		largest = max(largest, n)
	}
	return total, largest
}

// peakEndpoints bounds the endpoints the service has at once over the
// run: those it is configured with, the most a scale_endpoints gives it
// (added, since it may scale one cluster of several), and every endpoint
// a replace_endpoints gives a new address (the old ones live on in the
// clients until their update).
func (s *Scenario) peakEndpoints(svc *Service) int64 {
	eps := int64(svc.Endpoints)
	if len(svc.Localities) > 0 {
		eps = 0
		for _, l := range svc.Localities {
			eps += int64(l.Endpoints)
		}
	}
	if len(svc.Clusters) > 0 {
		eps = 0
		for _, c := range svc.Clusters {
			eps += int64(c.Endpoints)
			for _, l := range c.Localities {
				eps += int64(l.Endpoints)
			}
		}
	}
	var scaled int64
	for _, ch := range s.Changes {
		if ch.Service != svc.Name {
			continue
		}
		switch ch.Action {
		case "scale_endpoints":
			scaled = max(scaled, int64(ch.Count))
		case "replace_endpoints":
			eps += int64(ch.Count)
		}
	}
	return eps + scaled
}

// Main returns the keys of the largest terms, up to n: what to change to
// make the run cheaper.
func (e Estimate) Main(drivers []Driver, n int) string {
	var parts []string
	for _, d := range drivers {
		if d.Keys == "" {
			continue
		}
		if len(parts) == n {
			break
		}
		parts = append(parts, d.Keys+" ("+d.What+")")
	}
	return strings.Join(parts, "; ")
}
