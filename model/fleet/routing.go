package fleet

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/xdssim/xdssim/model/dataplane"
	"github.com/xdssim/xdssim/sim"
)

// Method is one method of a group's RPC mix: its path, the request
// headers its RPCs carry (what route header matchers and ring_hash hash
// policies read), and its share of the RPCs.
type Method struct {
	Path    string
	Headers []dataplane.Header
	// Weight is the method's share of the RPCs, relative to the others';
	// 0 means 1.
	Weight uint32
}

// method returns the method of a new RPC of load: the only one, or one
// drawn by weight from rnd (which is drawn from only when there are
// several).
func (l *RPCLoad) method(rnd *sim.Rand) *Method {
	if len(l.Methods) == 1 {
		return &l.Methods[0]
	}
	var total uint64
	for i := range l.Methods {
		total += uint64(max(l.Methods[i].Weight, 1))
	}
	x := uint64(rnd.Float64() * float64(total))
	for i := range l.Methods {
		w := uint64(max(l.Methods[i].Weight, 1))
		if x < w {
			return &l.Methods[i]
		}
		x -= w
	}
	return &l.Methods[len(l.Methods)-1]
}

// methods fills a load's Methods from Method when it has none.
func (l *RPCLoad) methods() {
	if len(l.Methods) == 0 {
		l.Methods = []Method{{Path: l.Method, Weight: 1}}
	}
}

// Routing is where the fleet's RPCs went: per cluster and locality, the
// RPCs whose first attempt was picked there, in each phase of the run (the
// spans between config changes).
type Routing struct {
	// Phases are the spans [From, To) of virtual time the counts are
	// split by: from 0 to the first config change, between changes, and
	// from the last to the end of the run.
	Phases []Phase
	// Clusters are the clusters RPCs went to, sorted by name.
	Clusters []ClusterRPCs
}

// Phase is a span of virtual time.
type Phase struct{ From, To time.Duration }

// ClusterRPCs is the RPCs of one cluster, per phase, and of its
// localities.
type ClusterRPCs struct {
	Name       string
	RPCs       []int
	Localities []LocalityRPCs
}

// LocalityRPCs is the RPCs of one locality ("region/zone", with
// "/sub_zone" when it has one), per phase.
type LocalityRPCs struct {
	Name string
	RPCs []int
}

// routing counts RPCs per cluster and locality and phase; it is on only
// for runs that serve a user's own resources.
type routing struct {
	on       bool
	bounds   []sim.Time // the phases' starts after the first, sorted
	clusters map[string]int32
	names    []string
	counts   [][]int // [cluster id][phase]
	locs     map[locKey]int32
	locNames []locKey
	locCount [][]int
}

type locKey struct {
	cluster int32
	name    string
}

// init turns routing on for cfg when a control plane serves resources
// verbatim.
func (rt *routing) init(cfg *Config) {
	for _, cp := range cfg.ControlPlanes {
		rt.on = rt.on || len(cp.Server.Resources) > 0
	}
	if !rt.on {
		return
	}
	rt.clusters, rt.locs = map[string]int32{}, map[locKey]int32{}
	for _, ch := range cfg.Changes {
		if ch.At > 0 && ch.At < cfg.Duration {
			rt.bounds = append(rt.bounds, sim.Time(0).Add(ch.At))
		}
	}
	slices.Sort(rt.bounds)
	rt.bounds = slices.Compact(rt.bounds)
}

// label gives the clusters and localities of a new config their ids.
func (rt *routing) label(c *dataplane.Config) {
	if !rt.on || c == nil {
		return
	}
	phases := len(rt.bounds) + 1
	for i := range c.Clusters {
		cl := &c.Clusters[i]
		id, ok := rt.clusters[cl.Name]
		if !ok {
			id = int32(len(rt.names))
			rt.clusters[cl.Name] = id
			rt.names = append(rt.names, cl.Name)
			rt.counts = append(rt.counts, make([]int, phases))
		}
		cl.ID = id
		for l := range cl.Localities {
			k := locKey{id, cl.Localities[l].Name}
			lid, ok := rt.locs[k]
			if !ok {
				lid = int32(len(rt.locNames))
				rt.locs[k] = lid
				rt.locNames = append(rt.locNames, k)
				rt.locCount = append(rt.locCount, make([]int, phases))
			}
			cl.Localities[l].ID = lid
		}
	}
}

// count adds n RPCs picked in cluster cl, in its locality l (-1: unknown),
// at now.
func (rt *routing) count(cl *dataplane.Cluster, l int, n int, now sim.Time) {
	if !rt.on {
		return
	}
	p := 0
	for p < len(rt.bounds) && rt.bounds[p] <= now {
		p++
	}
	rt.counts[cl.ID][p] += n
	if l >= 0 && l < len(cl.Localities) {
		rt.locCount[cl.Localities[l].ID][p] += n
	}
}

// results returns the counts, sorted by name.
func (rt *routing) results(end time.Duration) *Routing {
	if !rt.on {
		return nil
	}
	out := &Routing{}
	from := time.Duration(0)
	for _, b := range rt.bounds {
		out.Phases = append(out.Phases, Phase{from, time.Duration(b)})
		from = time.Duration(b)
	}
	out.Phases = append(out.Phases, Phase{from, end})
	for id, name := range rt.names {
		c := ClusterRPCs{Name: name, RPCs: rt.counts[id]}
		for lid, k := range rt.locNames {
			if k.cluster == int32(id) {
				c.Localities = append(c.Localities, LocalityRPCs{Name: k.name, RPCs: rt.locCount[lid]})
			}
		}
		slices.SortFunc(c.Localities, func(a, b LocalityRPCs) int { return strings.Compare(a.Name, b.Name) })
		out.Clusters = append(out.Clusters, c)
	}
	slices.SortFunc(out.Clusters, func(a, b ClusterRPCs) int { return cmp.Compare(a.Name, b.Name) })
	return out
}
