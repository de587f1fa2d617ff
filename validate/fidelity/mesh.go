package fidelity

import (
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdssim/xdssim/model/fleet"
)

// A user's own mesh for real: the servers serve the case's dump files
// verbatim, every endpoint of their ClusterLoadAssignments is a real
// backend listening at its own (loopback) address, and the comparison
// adds two checks: each client's final CSDS status and error per
// resource, and where the RPCs went, per cluster and locality and per
// phase between config changes.

// meshEndpoint is where one endpoint address of the served resources
// belongs.
type meshEndpoint struct {
	addr              string
	cluster, locality string
}

// meshEndpoints lists the endpoints of every ClusterLoadAssignment cfg
// serves, at the start or published later, sorted by address; an
// address in two places is an error (a backend's calls could not be
// told apart).
func meshEndpoints(cfg fleet.Config) ([]meshEndpoint, error) {
	var msgs []proto.Message
	for _, cp := range cfg.ControlPlanes {
		msgs = append(msgs, cp.Server.Resources...)
	}
	for _, ch := range cfg.Changes {
		msgs = append(msgs, ch.Publish...)
	}
	byAddr := map[string]meshEndpoint{}
	for _, m := range msgs {
		cla, ok := m.(*endpointpb.ClusterLoadAssignment)
		if !ok {
			continue
		}
		for _, loc := range cla.GetEndpoints() {
			l := loc.GetLocality().GetRegion() + "/" + loc.GetLocality().GetZone()
			for _, e := range loc.GetLbEndpoints() {
				sa := e.GetEndpoint().GetAddress().GetSocketAddress()
				ep := meshEndpoint{net.JoinHostPort(sa.GetAddress(), strconv.Itoa(int(sa.GetPortValue()))), cla.GetClusterName(), l}
				if ip := net.ParseIP(sa.GetAddress()); ip == nil || !ip.IsLoopback() || sa.GetPortValue() == 0 {
					return nil, fmt.Errorf("endpoint %s of %s is not a loopback address with a port", ep.addr, ep.cluster)
				}
				if o, dup := byAddr[ep.addr]; dup && o != ep {
					return nil, fmt.Errorf("endpoint %s is in %s (%s) and %s (%s)", ep.addr, o.cluster, o.locality, ep.cluster, ep.locality)
				}
				byAddr[ep.addr] = ep
			}
		}
	}
	out := make([]meshEndpoint, 0, len(byAddr))
	for _, ep := range byAddr {
		out = append(out, ep)
	}
	slices.SortFunc(out, func(a, b meshEndpoint) int { return strings.Compare(a.addr, b.addr) })
	return out, nil
}

// hasMesh reports whether cfg serves resources verbatim.
func hasMesh(cfg fleet.Config) bool {
	for _, cp := range cfg.ControlPlanes {
		if len(cp.Server.Resources) > 0 {
			return true
		}
	}
	return false
}

// meshRouting turns the backends' call counts at each phase's end into
// the fleet's Routing shape: per cluster and locality, the calls of each
// phase. A call is a first attempt or a retry; the cases send no RPC
// that fails, so every RPC is one call.
func meshRouting(cfg fleet.Config, eps []meshEndpoint, marks [][]int64) *fleet.Routing {
	rt := &fleet.Routing{}
	var bounds []time.Duration
	for _, ch := range cfg.Changes {
		if ch.At > 0 && ch.At < cfg.Duration && !slices.Contains(bounds, ch.At) {
			bounds = append(bounds, ch.At)
		}
	}
	slices.Sort(bounds)
	from := time.Duration(0)
	for _, b := range bounds {
		rt.Phases = append(rt.Phases, fleet.Phase{From: from, To: b})
		from = b
	}
	rt.Phases = append(rt.Phases, fleet.Phase{From: from, To: cfg.Duration})
	clusters := map[string]*fleet.ClusterRPCs{}
	var names []string
	for i, ep := range eps {
		c := clusters[ep.cluster]
		if c == nil {
			c = &fleet.ClusterRPCs{Name: ep.cluster, RPCs: make([]int, len(rt.Phases))}
			clusters[ep.cluster] = c
			names = append(names, ep.cluster)
		}
		li := slices.IndexFunc(c.Localities, func(l fleet.LocalityRPCs) bool { return l.Name == ep.locality })
		if li < 0 {
			c.Localities = append(c.Localities, fleet.LocalityRPCs{Name: ep.locality, RPCs: make([]int, len(rt.Phases))})
			li = len(c.Localities) - 1
		}
		prev := int64(0)
		for p := range rt.Phases {
			n := int(marks[p][i] - prev)
			prev = marks[p][i]
			c.RPCs[p] += n
			c.Localities[li].RPCs[p] += n
		}
	}
	slices.Sort(names)
	for _, n := range names {
		c := clusters[n]
		slices.SortFunc(c.Localities, func(a, b fleet.LocalityRPCs) int { return strings.Compare(a.Name, b.Name) })
		rt.Clusters = append(rt.Clusters, *c)
	}
	return rt
}

// routingZ is how far apart two shares may be, in standard errors of
// their difference (the two-proportion z-test with a pooled proportion):
// 4 makes a false alarm about 1 in 16 000 per comparison.
const routingZ = 4

// compareRouting checks that each cluster's and locality's share of the
// RPCs in each phase is the same in the simulation and for real, within
// sampling error (two-proportion z-test, |z| <= routingZ).
func compareRouting(sim, real *fleet.Routing) Check {
	c := Check{Client: "all", What: "RPCs per cluster and locality", Pass: true}
	if sim == nil || real == nil {
		c.Pass = sim == nil && real == nil
		c.Detail = "one side has no routing"
		return c
	}
	type row struct {
		name     string
		sim, rea []int
	}
	var rows []row
	simTot, realTot := make([]int, len(sim.Phases)), make([]int, len(real.Phases))
	for _, cl := range sim.Clusters {
		for p, n := range cl.RPCs {
			simTot[p] += n
		}
	}
	for _, cl := range real.Clusters {
		for p, n := range cl.RPCs {
			realTot[p] += n
		}
	}
	find := func(rt *fleet.Routing, name string) []int {
		for _, cl := range rt.Clusters {
			if cl.Name == name {
				return cl.RPCs
			}
			for _, l := range cl.Localities {
				if cl.Name+" "+l.Name == name {
					return l.RPCs
				}
			}
		}
		return make([]int, len(rt.Phases))
	}
	seen := map[string]bool{}
	for _, rt := range []*fleet.Routing{sim, real} {
		for _, cl := range rt.Clusters {
			for _, n := range append([]string{cl.Name}, localityNames(cl)...) {
				if !seen[n] {
					seen[n] = true
					rows = append(rows, row{name: n, sim: find(sim, n), rea: find(real, n)})
				}
			}
		}
	}
	if len(sim.Phases) != len(real.Phases) {
		c.Pass, c.Detail = false, fmt.Sprintf("%d phases simulated, %d real", len(sim.Phases), len(real.Phases))
		return c
	}
	var b strings.Builder
	for _, r := range rows {
		for p := range sim.Phases {
			n1, n2 := simTot[p], realTot[p]
			if n1 == 0 || n2 == 0 {
				continue
			}
			p1, p2 := float64(r.sim[p])/float64(n1), float64(r.rea[p])/float64(n2)
			pool := float64(r.sim[p]+r.rea[p]) / float64(n1+n2)
			se := math.Sqrt(pool * (1 - pool) * (1/float64(n1) + 1/float64(n2)))
			z := 0.0
			if se > 0 {
				z = (p1 - p2) / se
			} else if p1 != p2 {
				z = math.Inf(1)
			}
			c.Count++
			ok := math.Abs(z) <= routingZ
			c.Pass = c.Pass && ok
			mark := ""
			if !ok {
				mark = "  <- differs"
			}
			fmt.Fprintf(&b, "  %s, phase %d: simulated %.1f %% of %d, real %.1f %% of %d (z = %.2f)%s\n",
				r.name, p, 100*p1, n1, 100*p2, n2, z, mark)
		}
	}
	c.Detail = b.String()
	return c
}

func localityNames(cl fleet.ClusterRPCs) []string {
	var out []string
	for _, l := range cl.Localities {
		out = append(out, cl.Name+" "+l.Name)
	}
	return out
}

// compareFinalStates checks each client's last CSDS status per resource:
// ACKED or NACKED alike, and a NACK's error in the real client holding the
// simulated one's text (less the "listener \"NAME\": " prefix the model
// adds).
func compareFinalStates(client string, sim, real []ResourceState) Check {
	c := Check{Client: client, What: "final status per resource", Pass: true}
	last := func(states []ResourceState) map[string]ResourceState {
		m := map[string]ResourceState{}
		for _, s := range states {
			m[s.Type+" "+s.Name] = s
		}
		return m
	}
	s, r := last(sim), last(real)
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	for k := range r {
		if _, ok := s[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		ss, rs := s[k], r[k]
		ok := ss.Status == rs.Status
		if ok && ss.Status == "NACKED" {
			ok = strings.Contains(rs.Error, errorCore(ss.Error))
		}
		c.Count++
		c.Pass = c.Pass && ok
		mark := ""
		if !ok {
			mark = "  <- differs"
		}
		fmt.Fprintf(&b, "  %s: simulated %s %q, real %s %q%s\n", k, orNothing(ss.Status), ss.Error, orNothing(rs.Status), rs.Error, mark)
	}
	c.Detail = b.String()
	return c
}

// errorCore is a modelled NACK's error text without the rule name and the
// resource the model names first ("cds.lb_policy: cluster \"C\": ").
func errorCore(e string) string {
	if i := strings.Index(e, "\": "); i >= 0 {
		e = e[i+3:]
	}
	return e
}

// finalStates reads the simulated client's CSDS: every resource's status
// and error detail.
func finalStates(in *fleet.Inspector, client string, at time.Duration) []ResourceState {
	ccs, _, err := in.CSDS(client)
	if err != nil {
		return nil
	}
	var out []ResourceState
	for _, cc := range ccs {
		for _, g := range cc.GetGenericXdsConfigs() {
			out = append(out, ResourceState{At: at, Type: typeName(g.GetTypeUrl()), Name: g.GetName(),
				Status: g.GetClientStatus().String(), Version: g.GetVersionInfo(), Error: g.GetErrorState().GetDetails()})
		}
	}
	return out
}
