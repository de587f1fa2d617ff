package fleet

import (
	"slices"
	"strings"
	"time"

	"github.com/xdssim/xdssim/model/dataplane"
)

// The kinds of what a scenario does to the fleet over a run: Fault.Kind.
const (
	// KindFault is a network or server fault on the xDS links
	// ([[fault]]).
	KindFault = "fault"
	// KindRestart is a rolling restart of clients ([[fleet.restart]]).
	KindRestart = "restart"
	// KindBackend is an event of the data plane's backends ([[backend]]).
	KindBackend = "backend"
	// KindChange is a config change on a control plane ([[change]]).
	KindChange = "change"
)

// incident is one thing the scenario does to the fleet, with what it can
// explain: the failure windows whose root cause it is. Ground truth, as
// the causes are: the simulator knows what it injected and where.
type incident struct {
	Fault
	// groups and servers scope a fault or a restart (nil: every one).
	groups, servers []int
	// targets scope a change or a backend event: the listener names of
	// the services it acts on.
	targets []string
	// causes are the root causes it can give a window.
	causes causeSet
}

// causeSet is a set of root causes.
type causeSet uint32

func causesOf(cs ...dataplane.Cause) causeSet {
	var s causeSet
	for _, c := range cs {
		s |= 1 << c
	}
	return s
}

func (s causeSet) has(c dataplane.Cause) bool { return s&(1<<c) != 0 }

var (
	// xdsCauses come from the XdsClient's view of its control planes: a
	// fault on the xDS links (a server down, a partition, a stream reset)
	// gives them, and a client with stale endpoints.
	xdsCauses = causesOf(dataplane.NoConfigCPUnreachable, dataplane.NoConfigResourceNotSent,
		dataplane.ResourceTimerSpurious, dataplane.ResourceDoesNotExist, dataplane.BackendDownStaleEDS)
	// configCauses come from what a control plane publishes.
	configCauses = causesOf(dataplane.NACK, dataplane.ResourceDeleted, dataplane.ResourceError,
		dataplane.ResourceDoesNotExist, dataplane.NoConfigResourceNotSent)
	// dataCauses come from the backends.
	dataCauses = causesOf(dataplane.NoHealthyEndpoint, dataplane.BackendDownStaleEDS, dataplane.BackendDown,
		dataplane.BackendError, dataplane.Deadline)
	allCauses = causeSet(1<<dataplane.NumCauses - 1)
)

// incidents lists what the scenario does to the fleet, sorted by start:
// restarts, faults, changes and backend events.
func (w *world) incidents() []incident {
	var out []incident
	byName := map[string]int{}
	for i, g := range w.cfg.Groups {
		byName[g.Name] = i
	}
	for ri, rs := range w.cfg.Restarts {
		in := incident{Fault: Fault{Kind: KindRestart, Label: restartLabel(ri, rs), Start: rs.At,
			End: min(rs.At+rs.Spread+rs.Downtime, w.cfg.Duration)}, causes: allCauses}
		if rs.Group != "" {
			in.groups = []int{byName[rs.Group]}
		}
		out = append(out, in)
	}
	out = append(out, w.faultIncidents()...)
	// A cluster's targets, worked out once for all the events on it
	// (the services' cluster names are generated with their endpoints).
	targets := map[string][]string{}
	for _, e := range w.cfg.BackendEvents {
		end := w.cfg.Duration
		if e.Duration > 0 {
			end = min(e.At+e.Duration, end)
		}
		in := incident{Fault: Fault{Kind: KindBackend, Label: e.Label, Start: e.At, End: end}, causes: dataCauses}
		// Each cluster's targets once: the event's backends are often
		// all of one cluster, and many.
		var seen []string
		scope := func(cluster string) {
			if !slices.Contains(seen, cluster) {
				seen = append(seen, cluster)
				ts, ok := targets[cluster]
				if !ok {
					ts = w.targetsOfCluster(cluster)
					targets[cluster] = ts
				}
				in.targets = append(in.targets, ts...)
			}
		}
		for _, key := range e.Backends {
			cluster, _, _ := strings.Cut(key, "|")
			scope(cluster)
		}
		if e.Range.Count > 0 {
			scope(e.Range.Cluster)
		}
		out = append(out, in)
	}
	slices.SortStableFunc(out, func(a, b incident) int { return int(a.Start - b.Start) })
	return out
}

// targetsOfCluster returns the listener names of the services that have
// the cluster.
func (w *world) targetsOfCluster(cluster string) []string {
	var out []string
	for _, cp := range w.cfg.ControlPlanes {
		for i := range cp.Server.Services {
			s := &cp.Server.Services[i]
			if slices.Contains(s.ClusterNames(), cluster) && !slices.Contains(out, s.Listener()) {
				out = append(out, s.Listener())
			}
		}
	}
	return out
}

// targetsOfService returns the listener names of the services named name.
func (w *world) targetsOfService(name string) []string {
	var out []string
	for _, cp := range w.cfg.ControlPlanes {
		for i := range cp.Server.Services {
			if s := &cp.Server.Services[i]; s.Name == name && !slices.Contains(out, s.Listener()) {
				out = append(out, s.Listener())
			}
		}
	}
	return out
}

// covers reports whether in can be the cause of a window of cause c that
// instance ii opened at t: it gives such causes, began by t, and covers
// the instance's group, servers or target.
func (w *world) covers(in *incident, ii uint32, c dataplane.Cause, t time.Duration) bool {
	if !in.causes.has(c) || t < in.Start {
		return false
	}
	inst := &w.insts[ii]
	gi := int(w.clients[inst.client].group)
	g := &w.cfg.Groups[gi]
	if in.groups != nil && !slices.Contains(in.groups, gi) {
		return false
	}
	if in.servers != nil && !slices.ContainsFunc(in.servers, func(s int) bool { return slices.Contains(g.Servers, s) }) {
		return false
	}
	return in.targets == nil || slices.Contains(in.targets, g.Targets[inst.target])
}

// active reports whether in was under way at t: a span up to its end and
// the window gap after; a change from its time on, until it is replaced.
func (w *world) active(in *incident, t time.Duration) bool {
	return in.Kind == KindChange || t <= in.End+w.cfg.DataPlane.WindowGap
}

// attribute gives every failure window the incident that caused it. Of
// the incidents that cover the window, the one under way when it opened
// and begun last; else the last one to end before it (a client still
// without its config after an outage, its channel in backoff, fails
// because of the outage). A restart only when nothing else covers the
// window and the restart was under way: a restarted client that cannot get
// its config fails because of what keeps the config from it. Then each
// incident's Recovery is how long after its end its own windows went on.
func (w *world) attribute(ins []incident) {
	for i := range w.dp.windows {
		r := &w.dp.windows[i]
		t, c := time.Duration(r.w.Start), r.w.Cause()
		live, past, restart := -1, -1, -1
		for k := range ins {
			in := &ins[k]
			if !w.covers(in, r.inst, c, t) {
				continue
			}
			switch {
			case in.Kind == KindRestart:
				if w.active(in, t) {
					restart = k
				}
			case w.active(in, t):
				live = k // sorted by start: the last one begun
			case past < 0 || in.End >= ins[past].End:
				past = k
			}
		}
		best := live
		if best < 0 {
			best = past
		}
		if best < 0 {
			best = restart
		}
		r.source = int32(best)
		if best >= 0 {
			in := &ins[best]
			in.Windows++
			in.Recovery = max(in.Recovery, time.Duration(r.w.End)-in.End)
		}
	}
}
