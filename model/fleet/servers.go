package fleet

import (
	"fmt"
	"time"

	"github.com/xdssim/xdssim/model/controlplane"
	"github.com/xdssim/xdssim/model/network"
	"github.com/xdssim/xdssim/sim"
)

func (w *world) buildServers() error {
	for i := range w.cfg.ControlPlanes {
		sc := w.cfg.ControlPlanes[i].Server
		sc.Rand = sim.NewStream(w.cfg.Seed, "controlplane/"+sc.Name)
		s, err := controlplane.New(sc)
		if err != nil {
			return fmt.Errorf("fleet: control plane %s: %w", sc.Name, err)
		}
		w.servers = append(w.servers, s)
	}
	return nil
}

func (w *world) scheduleFaultsAndChanges() error {
	f, err := network.NewFaults(w.cfg.Seed, w.cfg.Faults)
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	w.faults = f
	w.edges = f.Edges()
	end := sim.Time(0).Add(w.cfg.Duration)
	for i, e := range w.edges {
		if e.At <= end && e.Action() != network.ActionNone {
			w.kernel.Schedule(sim.Event{At: e.At, Entity: uint32(i), Kind: kindFaultEdge})
		}
	}
	for i, c := range w.cfg.Changes {
		w.kernel.Schedule(sim.Event{At: sim.Time(0).Add(c.At), Entity: uint32(i), Kind: kindChange})
	}
	return nil
}

// jobDone sends the responses of a request whose service has ended.
func (w *world) jobDone(ev sim.Event) {
	resps, err := w.servers[ev.Entity].Complete(w.kernel.Now(), controlplane.JobID(ev.Arg))
	w.scheduleCompletion(uint16(ev.Entity))
	if err != nil {
		return // the stream closed while the request waited: nothing to send
	}
	w.sendResponses(resps)
}

// scheduleCompletion schedules the completion of the request that server
// si hands out, if it does (controlplane.Server.NextCompletion): the
// kernel holds about one completion per server, not one per queued
// request. Its event takes the Seq reserved when the request arrived
// (deliverToServer), so that it runs where it would have had it been
// scheduled then: the order of events, and so the run, is the same.
func (w *world) scheduleCompletion(si uint16) {
	if j, ok := w.servers[si].NextCompletion(); ok {
		w.kernel.ScheduleReserved(sim.Event{At: j.Done, Seq: j.Tag, Entity: uint32(si), Kind: kindJobDone, Arg: uint64(j.ID)})
	}
}

// applyEdge acts on the open connections at the start or end of a fault
// (network.Edge.Action says what to do).
func (w *world) applyEdge(i int) {
	e := w.edges[i]
	now := w.kernel.Now()
	for ci := range w.conns {
		c := &w.conns[ci]
		if w.insts[c.inst].xds == nil || !w.faults.Covers(e.Fault, w.connClient(c).ref, int(c.cp)) {
			continue
		}
		switch e.Action() {
		case network.ActionReset:
			// The server process died or restarted: its connections are
			// reset. The channel sees its READY transport close first and
			// goes IDLE (grpc-go clientconn.go), so that the XdsClient's
			// retry of the failed stream (UNAVAILABLE) cannot be picked
			// onto the dead transport.
			if c.ch.State() == network.Ready {
				var buf [4]network.Effect
				w.channelEffects(uint32(ci), c.ch.ConnectionLost(now, buf[:0]))
			}
			w.failStream(uint32(ci), network.StatusConnectionReset)
		case network.ActionDrain:
			// GOAWAY: the transport takes no new streams (the channel goes
			// IDLE) while the open stream drains (gRFC A9).
			if id := c.st.ID(); c.st.Live(id) {
				c.st.Drain(id)
			}
			if c.ch.State() == network.Ready {
				var buf [4]network.Effect
				w.channelEffects(uint32(ci), c.ch.ConnectionLost(now, buf[:0]))
			}
		case network.ActionCloseDrained:
			if c.st.Draining() {
				w.failStream(uint32(ci), network.StatusDrained)
			}
		case network.ActionStall:
			// A blackhole: nothing tells the client; keepalive will.
			w.keepaliveStall(uint32(ci))
		case network.ActionEndAnswered:
			// The server starts ending streams after their Nth response:
			// those that had N already end now; the connection stays up.
			if c.answered >= uint32(w.faults.Fault(e.Fault).Responses) {
				w.endStream(uint32(ci))
			}
		}
	}
}

// applyChange carries out a config change on its servers and sends what
// they push.
func (w *world) applyChange(i int) {
	ch := &w.cfg.Changes[i]
	for _, si := range ch.Targets(w.servers) {
		resps, err := ch.Apply(w.servers[si], w.cfg.ControlPlanes[si].Server, w.kernel.Now())
		if err != nil {
			// The scenario was validated against the servers' initial
			// config; a change that no longer applies (a service deleted
			// by an earlier change) is skipped and counted.
			w.fx.changesSkipped++
			continue
		}
		w.sendResponses(resps)
	}
}

// Targets returns the indexes of the servers ch applies to: its Servers,
// or every server that has its service (any server, to restore it).
func (ch *Change) Targets(servers []*controlplane.Server) []int {
	if len(ch.Servers) > 0 {
		return ch.Servers
	}
	var out []int
	for si, s := range servers {
		switch ch.Action {
		case Publish:
			out = append(out, si)
			continue
		case DeleteResource, RestoreResource:
			if s.HasResource(ch.Type, ch.Name) {
				out = append(out, si)
			}
			continue
		}
		if _, ok := s.Service(ch.Service); ok || ch.Action == RestoreService {
			out = append(out, si)
		}
	}
	return out
}

// Apply carries out ch on s, a server configured at the start with
// initial, at now, and returns what s pushes. The fleet applies changes
// with it, and so does validate/, which serves s's cache over real gRPC.
func (ch *Change) Apply(s *controlplane.Server, initial controlplane.Config, now sim.Time) ([]controlplane.Response, error) {
	switch ch.Action {
	case DeleteService:
		if ch.Resources != 0 {
			return s.WithholdResources(now, ch.Service, ch.Resources, ch.Cluster)
		}
		return s.DeleteService(now, ch.Service)
	case RestoreService:
		if ch.Resources != 0 {
			return s.PublishResources(now, ch.Service, ch.Resources, ch.Cluster)
		}
		for _, svc := range initial.Services {
			if svc.Name == ch.Service {
				return s.SetService(now, svc)
			}
		}
		return nil, nil // the server never had it: nothing to restore
	case PublishInvalid:
		return s.PublishInvalid(now, ch.Service, ch.Cluster, ch.Defect)
	case ScaleEndpoints:
		return s.ScaleEndpoints(now, ch.Service, ch.Cluster, ch.Count)
	case DrainEndpoints:
		return s.DrainEndpoints(now, ch.Service, ch.Cluster, ch.Count)
	case SetHealth:
		return s.SetEndpointHealth(now, ch.Service, ch.Cluster, ch.First, ch.Count, ch.Health)
	case ReplaceEndpoints:
		return s.ReplaceEndpoints(now, ch.Service, ch.Cluster, ch.First, ch.Count)
	case Publish:
		return s.Publish(now, ch.Publish)
	case DeleteResource:
		return s.DeleteResource(now, ch.Type, ch.Name)
	case RestoreResource:
		return s.RestoreResource(now, ch.Type, ch.Name)
	}
	return nil, fmt.Errorf("fleet: unknown change action %v", ch.Action)
}

// faultSpans labels every fault for the report's shading.
func (w *world) faultIncidents() []incident {
	var out []incident
	for i := range w.cfg.Faults {
		f := w.faults.Fault(i)
		end := time.Duration(f.End())
		if f.End() == network.Never || end > w.cfg.Duration {
			end = w.cfg.Duration
		}
		var names []string
		for _, s := range f.Servers {
			names = append(names, w.cfg.ControlPlanes[s].Server.Name)
		}
		where := "every server"
		if len(names) > 0 {
			where = fmt.Sprint(names)
		}
		out = append(out, incident{Fault: Fault{Kind: KindFault, Label: fmt.Sprintf("%s %s", f.Kind, where), Start: time.Duration(f.Start), End: end},
			groups: f.Groups, servers: f.Servers, causes: xdsCauses})
	}
	for _, c := range w.cfg.Changes {
		in := incident{Fault: Fault{Kind: KindChange, Label: c.label(), Start: c.At, End: c.At},
			targets: w.targetsOfService(c.Service), causes: configCauses | dataCauses}
		if len(c.Servers) > 0 {
			in.servers = c.Servers
		}
		out = append(out, in)
	}
	return out
}

var actionNames = [...]string{DeleteService: "delete_service", RestoreService: "restore_service",
	PublishInvalid: "publish_invalid", ScaleEndpoints: "scale_endpoints", DrainEndpoints: "drain_endpoints",
	SetHealth: "set_health", ReplaceEndpoints: "replace_endpoints",
	Publish: "publish", DeleteResource: "delete_resource", RestoreResource: "restore_resource"}

// String returns the action's scenario name.
func (a ChangeAction) String() string {
	if int(a) < len(actionNames) && actionNames[a] != "" {
		return actionNames[a]
	}
	return fmt.Sprintf("ChangeAction(%d)", a)
}

// ParseChangeAction returns the action a scenario names.
func ParseChangeAction(s string) (ChangeAction, error) {
	for a, n := range actionNames {
		if n != "" && n == s {
			return ChangeAction(a), nil
		}
	}
	return 0, fmt.Errorf("unknown change action %q (expected one of: delete_service, restore_service, publish_invalid, scale_endpoints, drain_endpoints, set_health, replace_endpoints, publish, delete_resource, restore_resource)", s)
}

// label names the change in outputs: "delete_service echo", or with the
// resources and cluster it narrows to, "delete_service echo (canary:
// cluster+endpoints)".
func (ch *Change) label() string {
	switch ch.Action {
	case Publish:
		return "publish " + ch.Label
	case DeleteResource, RestoreResource:
		return fmt.Sprintf("%s %s %s", ch.Action, controlplane.KindName(ch.Type), ch.Name)
	}
	l := fmt.Sprintf("%s %s", ch.Action, ch.Service)
	switch {
	case ch.Resources != 0 && ch.Cluster != "":
		l += fmt.Sprintf(" (%s: %s)", ch.Cluster, ch.Resources)
	case ch.Resources != 0:
		l += fmt.Sprintf(" (%s)", ch.Resources)
	case ch.Cluster != "":
		l += fmt.Sprintf(" (%s)", ch.Cluster)
	}
	return l
}
