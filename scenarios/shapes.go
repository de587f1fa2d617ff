package scenarios

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/xdssim/xdssim/model/controlplane"
	"github.com/xdssim/xdssim/model/fleet"
)

// Cluster is one of a service's clusters, when it has several: a route's
// weighted_clusters split traffic between them, or routes send methods
// to them.
type Cluster struct {
	// Name is the cluster's (and its ClusterLoadAssignment's) name.
	Name string `toml:"name"`
	// Weight is its weight in a route that splits traffic.
	Weight int `toml:"weight"`
	// Endpoints, EndpointWeights and Localities are its backends, as a
	// service's are.
	Endpoints       int        `toml:"endpoints"`
	EndpointWeights []int      `toml:"endpoint_weights,omitempty"`
	Localities      []Locality `toml:"localities,omitempty"`
	// Withhold lists its resources the server never publishes: cluster,
	// endpoints.
	Withhold []string `toml:"withhold"`
}

// Locality is a locality of a cluster's ClusterLoadAssignment: the next
// Endpoints endpoints, in a zone, at an EDS priority, with a weight.
type Locality struct {
	Zone      string `toml:"zone"`
	Priority  int    `toml:"priority"`
	Weight    int    `toml:"weight"`
	Endpoints int    `toml:"endpoints"`
}

// Route is a route of a service's RouteConfiguration.
type Route struct {
	// Prefix is the path prefix it matches.
	Prefix string `toml:"prefix"`
	// Clusters are the clusters it sends RPCs to (weighted when several);
	// empty means every cluster of the service.
	Clusters []string `toml:"clusters"`
}

func (c *Cluster) setDefaults() {
	c.Weight = 1
	c.Endpoints = defaultEndpoints
}

func (l *Locality) setDefaults() {
	l.Endpoints = 1
}

func (r *Route) setDefaults() {
	r.Prefix = "/"
}

// resolveShape fills the defaults of the service's shape keys.
func (svc *Service) resolveShape() {
	if svc.Withhold == nil {
		svc.Withhold = []string{}
	}
	resolveLocalities(svc.Localities)
	for i := range svc.Clusters {
		c := &svc.Clusters[i]
		if c.Withhold == nil {
			c.Withhold = []string{}
		}
		resolveLocalities(c.Localities)
	}
	for i := range svc.Routes {
		if svc.Routes[i].Clusters == nil {
			svc.Routes[i].Clusters = []string{}
		}
	}
}

// resolveLocalities names the localities without a zone by their place:
// zone-a, zone-b, ...
func resolveLocalities(ls []Locality) {
	for i := range ls {
		if ls[i].Zone == "" {
			ls[i].Zone = localityZone(i)
		}
	}
}

func localityZone(i int) string {
	if i < 26 {
		return "zone-" + string(rune('a'+i))
	}
	return fmt.Sprintf("zone-%d", i)
}

// clusterNames returns the names of the service's clusters.
func (svc *Service) clusterNames() []string {
	if len(svc.Clusters) == 0 {
		return []string{svc.Name + "-cluster"}
	}
	var out []string
	for _, c := range svc.Clusters {
		out = append(out, c.Name)
	}
	return out
}

var kindNames = "listener, route, cluster, endpoints"

// kindSet converts resource kind names (validated) to a TypeSet.
func kindSet(names []string) controlplane.TypeSet {
	var ts controlplane.TypeSet
	for _, n := range names {
		if t, err := controlplane.ParseKind(n); err == nil {
			ts |= controlplane.TypesOf(t)
		}
	}
	return ts
}

// validateServer checks a control plane's cache, NACK policy and empty
// types.
func (s *Scenario) validateServer(c *checker, p string, cp *ControlPlane) {
	cache, err := controlplane.ParseCacheKind(cp.Cache)
	c.check(err == nil, p+".cache", "expected linear, snapshot or snapshot-per-type, found %q", cp.Cache)
	_, err = controlplane.ParseNACKPolicy(cp.OnNACK)
	c.check(err == nil, p+".on_nack", "expected hold or resend, found %q", cp.OnNACK)
	if c.check(cp.EmptyTypes == "answered" || cp.EmptyTypes == "unanswered", p+".empty_types",
		"expected answered or unanswered, found %q", cp.EmptyTypes) && cp.EmptyTypes == "unanswered" {
		c.check(cache.Snapshot(), p+".empty_types",
			"a %s cache answers every first request (go-control-plane linear.go); unanswered needs cache = \"snapshot\" or \"snapshot-per-type\"", cp.Cache)
	}
}

// validateKinds checks a list of resource kinds, allowing only allowed.
func (c *checker) validateKinds(path string, kinds []string, allowed controlplane.TypeSet) {
	for k, n := range kinds {
		t, err := controlplane.ParseKind(n)
		if !c.check(err == nil, fmt.Sprintf("%s[%d]", path, k), "expected one of: %s, found %q", kindNames, n) {
			continue
		}
		c.check(allowed.Has(t), fmt.Sprintf("%s[%d]", path, k), "expected one of: %s, found %q", allowed, n)
	}
}

// validateShape checks a service's clusters, routes, localities, endpoint
// weights and withheld resources.
func (s *Scenario) validateShape(c *checker, q string, server int, svc *Service) {
	c.validateKinds(q+".withhold", svc.Withhold, controlplane.AllTypes)
	if len(svc.Clusters) > 0 {
		// endpoints keeps its default in the resolved TOML: only another
		// value is a mistake.
		for _, k := range []string{"endpoints", "endpoint_weights", "localities"} {
			given := c.given(q + "." + k)
			if k == "endpoints" {
				given = given && svc.Endpoints != defaultEndpoints
			}
			c.check(!given, q+"."+k, "describes the service's single cluster; with [[...service.cluster]] tables give it per cluster")
		}
	} else {
		c.validateEndpoints(q, svc.Endpoints, svc.EndpointWeights, svc.Localities)
	}
	// Cluster names are CDS and EDS resource names: unique on the server.
	taken := map[string]string{}
	for _, other := range s.ControlPlanes[server].Services {
		if other.Name != svc.Name {
			for _, n := range other.clusterNames() {
				taken[n] = other.Name
			}
		}
	}
	seen := map[string]bool{}
	for j, cl := range svc.Clusters {
		p := fmt.Sprintf("%s.cluster[%d]", q, j)
		if c.check(cl.Name != "", p+".name", "is required: the cluster's name") {
			c.check(!seen[cl.Name], p+".name", "cluster %q is already declared on service %s", cl.Name, svc.Name)
			o, dup := taken[cl.Name]
			c.check(!dup, p+".name", "cluster %q is already a cluster of service %q on this control plane", cl.Name, o)
		}
		seen[cl.Name] = true
		c.check(cl.Weight >= 1 && cl.Weight <= math.MaxUint32, p+".weight", "expected a weight from 1 to %d, found %d", uint32(math.MaxUint32), cl.Weight)
		c.validateEndpoints(p, cl.Endpoints, cl.EndpointWeights, cl.Localities)
		c.validateKinds(p+".withhold", cl.Withhold, controlplane.TypesOf(controlplane.CDS, controlplane.EDS))
	}
	names := svc.clusterNames()
	for j, r := range svc.Routes {
		p := fmt.Sprintf("%s.route[%d]", q, j)
		c.check(strings.HasPrefix(r.Prefix, "/"), p+".prefix", "expected a path prefix starting with \"/\", found %q", r.Prefix)
		for k, n := range r.Clusters {
			c.check(slices.Contains(names, n), fmt.Sprintf("%s.clusters[%d]", p, k), "service %q has no cluster %q (clusters: %s)",
				svc.Name, n, strings.Join(names, ", "))
		}
	}
	if svc.Session != nil {
		c.check(len(names) == 1, q+".session", "session affinity (gRFC A55) is modelled for a service with one cluster; this one has %d", len(names))
	}
}

// validateEndpoints checks the endpoint count, weights and localities of
// one cluster at path p.
func (c *checker) validateEndpoints(p string, n int, weights []int, locs []Locality) {
	c.check(n >= 0 && n <= maxEndpoints, p+".endpoints", "expected a number from 0 to %d, found %d", maxEndpoints, n)
	if len(locs) > 0 {
		c.check(!c.given(p+".endpoints"), p+".endpoints", "is the sum of the localities' endpoints: give one or the other")
		n = 0
		type key struct {
			zone string
			prio int
		}
		seen := map[key]int{}
		prios := map[int]bool{}
		maxPrio := 0
		for k, l := range locs {
			lp := fmt.Sprintf("%s.localities[%d]", p, k)
			c.check(l.Endpoints >= 0 && l.Endpoints <= maxEndpoints, lp+".endpoints", "expected a number from 0 to %d, found %d", maxEndpoints, l.Endpoints)
			c.check(l.Weight >= 0 && l.Weight <= math.MaxUint32, lp+".weight", "expected a weight >= 0 (0: the sum of its endpoints'), found %d", l.Weight)
			if c.check(l.Priority >= 0 && l.Priority < 1000, lp+".priority", "expected a priority from 0 to 999, found %d", l.Priority) {
				prios[l.Priority] = true
				maxPrio = max(maxPrio, l.Priority)
			}
			if j, dup := seen[key{l.Zone, l.Priority}]; dup {
				c.check(false, lp+".zone", "locality %s at priority %d is already localities[%d]", l.Zone, l.Priority, j)
			}
			seen[key{l.Zone, l.Priority}] = k
			n += min(max(l.Endpoints, 0), maxEndpoints)
		}
		c.check(n <= maxEndpoints, p+".localities", "expected at most %d endpoints in all, found %d", maxEndpoints, n)
		for pr := 0; pr <= maxPrio; pr++ {
			if !prios[pr] {
				c.check(false, p+".localities", "priority %d has no locality: priorities must be 0 to %d without a gap (gRFC A27; a client NACKs a gap)", pr, maxPrio)
				break
			}
		}
	}
	c.check(len(weights) <= max(n, 0), p+".endpoint_weights", "expected at most one weight per endpoint (%d), found %d", max(n, 0), len(weights))
	for k, w := range weights {
		c.check(w >= 1 && w <= math.MaxUint32, fmt.Sprintf("%s.endpoint_weights[%d]", p, k),
			"expected a weight from 1 to %d (a client NACKs 0), found %d", uint32(math.MaxUint32), w)
	}
}

// validateChangeTarget checks a change's cluster and resources against
// the services of the servers it applies to.
func (s *Scenario) validateChangeTarget(c *checker, p string, action fleet.ChangeAction, ch *Change, servers []string) {
	if len(ch.Resources) > 0 || c.given(p+".resources") {
		if c.check(action == fleet.DeleteService || action == fleet.RestoreService, p+".resources",
			"is only used by action = \"delete_service\" and \"restore_service\"") {
			c.check(len(ch.Resources) > 0, p+".resources", "expected at least one of: %s (leave resources out for the whole service)", kindNames)
			c.validateKinds(p+".resources", ch.Resources, controlplane.AllTypes)
		}
	}
	if ch.Cluster == "" {
		return
	}
	switch action {
	case fleet.DeleteService, fleet.RestoreService:
		c.check(len(ch.Resources) > 0, p+".cluster", "narrows resources: give resources = [\"cluster\", \"endpoints\"] too")
	case fleet.PublishInvalid, fleet.ScaleEndpoints, fleet.DrainEndpoints, fleet.SetHealth, fleet.ReplaceEndpoints:
	default:
		c.check(false, p+".cluster", "is not used by action = %q", ch.Action)
		return
	}
	found := false
	var names []string
	for _, name := range servers {
		if k := s.controlPlaneIndex(name); k >= 0 {
			for _, svc := range s.ControlPlanes[k].Services {
				if svc.Name == ch.Service {
					names = svc.clusterNames()
					found = found || slices.Contains(names, ch.Cluster)
				}
			}
		}
	}
	c.check(found || names == nil, p+".cluster", "service %q has no cluster %q (clusters: %s)", ch.Service, ch.Cluster, strings.Join(names, ", "))
}

// validateChangeRanges checks that each endpoint change names endpoints the
// cluster has when it comes: drain_endpoints at most as many as it has,
// set_health and replace_endpoints first + count within them. The counts
// follow the changes in time order (scale_endpoints sets one;
// restore_service gives back the server's configured one), server by
// server. The model refuses such a change when it comes
// (controlplane.Server.SetEndpointHealth, ReplaceEndpoints,
// DrainEndpoints) and the run skips it: so it is refused here instead.
func (s *Scenario) validateChangeRanges(c *checker) {
	type at struct {
		server           int
		service, cluster string
	}
	initial := func(k at) (int, bool) {
		for _, svc := range s.ControlPlanes[k.server].Services {
			if svc.Name != k.service {
				continue
			}
			if len(svc.Clusters) == 0 {
				return endpointCount(svc.Endpoints, svc.Localities), k.cluster == svc.clusterNames()[0]
			}
			for _, cl := range svc.Clusters {
				if cl.Name == k.cluster {
					return endpointCount(cl.Endpoints, cl.Localities), true
				}
			}
		}
		return 0, false
	}
	order := make([]int, len(s.Changes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(s.Changes[a].At, s.Changes[b].At) })
	counts := map[at]int{}
	for _, i := range order {
		ch := &s.Changes[i]
		action, _ := fleet.ParseChangeAction(ch.Action)
		p := fmt.Sprintf("change[%d]", i)
		servers := ch.Servers
		if len(servers) == 0 {
			for _, cp := range s.ControlPlanes {
				servers = append(servers, cp.Name)
			}
		}
		for _, name := range servers {
			k := at{server: s.controlPlaneIndex(name), service: ch.Service, cluster: ch.Cluster}
			if k.server < 0 {
				continue
			}
			if k.cluster == "" {
				for _, svc := range s.ControlPlanes[k.server].Services {
					if svc.Name == ch.Service {
						k.cluster = svc.clusterNames()[0]
					}
				}
			}
			n, ok := counts[k]
			if !ok {
				if n, ok = initial(k); !ok {
					continue // the server does not serve it: the change passes it by
				}
			}
			when := fmt.Sprintf("at %s", ch.At)
			switch action {
			case fleet.ScaleEndpoints:
				n = ch.Count
			case fleet.RestoreService:
				if len(ch.Resources) == 0 {
					n, _ = initial(k)
				}
			case fleet.DrainEndpoints:
				c.check(ch.Count <= n, p+".count", "drains %d endpoints of cluster %s on %s, which has %d %s", ch.Count, k.cluster, name, n, when)
			case fleet.SetHealth, fleet.ReplaceEndpoints:
				c.check(ch.First+ch.Count <= n, p+".count", "endpoints %d to %d (first = %d, count = %d) of cluster %s on %s: it has %d (0 to %d) %s",
					ch.First, ch.First+ch.Count-1, ch.First, ch.Count, k.cluster, name, n, n-1, when)
			}
			counts[k] = n
		}
	}
}

// endpointCount is the number of endpoints of a cluster: the sum of its
// localities' when it has localities.
func endpointCount(n int, locs []Locality) int {
	if len(locs) == 0 {
		return n
	}
	sum := 0
	for _, l := range locs {
		sum += l.Endpoints
	}
	return sum
}

// validateStarts checks a group's start schedule: a spread, a stagger or
// a list of times, each start within the run.
func (s *Scenario) validateStarts(c *checker, p string, g *Group) {
	kinds := 0
	for _, on := range []bool{g.StartSpread > 0, g.StartStagger > 0, c.given(p + ".start_times")} {
		if on {
			kinds++
		}
	}
	if !c.check(kinds <= 1, p+".start_times", "start_spread, start_stagger and start_times are three ways to schedule the starts: give one") {
		return
	}
	c.check(g.StartStagger >= 0, p+".start_stagger", "expected a duration >= 0, found %s", g.StartStagger)
	if g.StartStagger > 0 && g.Clients > 0 {
		last := g.StartAt + time.Duration(g.Clients-1)*g.StartStagger
		c.check(g.StartStagger <= s.Duration && last < s.Duration, p+".start_stagger",
			"the last client would start at %s (start_at + %d × start_stagger), after the run ends (%s)", last, g.Clients-1, s.Duration)
	}
	if !c.given(p + ".start_times") {
		return
	}
	c.check(len(g.StartTimes) == g.Clients, p+".start_times", "expected one start time per client (%d), found %d", g.Clients, len(g.StartTimes))
	for k, t := range g.StartTimes {
		c.check(t >= 0 && g.StartAt+t < s.Duration, fmt.Sprintf("%s.start_times[%d]", p, k),
			"expected a time from 0s such that start_at + it is before the end of the run (%s), found %s", s.Duration, t)
	}
}

// validateMethods checks that every group's RPC method has a route on
// every service it targets: an RPC no route matches fails before any
// pick.
func (s *Scenario) validateMethods(c *checker) {
	for i, g := range s.Fleet.Groups {
		for _, cpName := range g.Servers {
			k := s.controlPlaneIndex(cpName)
			if k < 0 {
				continue
			}
			for _, svc := range s.ControlPlanes[k].Services {
				if !slices.Contains(g.Targets, svc.Name) || len(svc.Routes) == 0 {
					continue
				}
				ok := slices.ContainsFunc(svc.Routes, func(r Route) bool { return strings.HasPrefix(g.RPC.Method, r.Prefix) })
				c.check(ok, fmt.Sprintf("fleet.group[%d].rpc.method", i), "no route of service %q on %s matches %q (prefixes: %s)",
					svc.Name, cpName, g.RPC.Method, routePrefixes(svc.Routes))
			}
		}
	}
}

func routePrefixes(rs []Route) string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Prefix)
	}
	return strings.Join(out, ", ")
}

// shapeService converts a (valid) service's shape into out.
func (svc *Service) shapeService(out *controlplane.Service) {
	out.Withhold = kindSet(svc.Withhold)
	if len(svc.Clusters) == 0 {
		if eps, locs, ok := endpoints(svc.Endpoints, svc.EndpointWeights, svc.Localities); ok {
			out.Endpoints, out.Localities, out.EndpointCount = eps, locs, 0
		}
	}
	for _, cl := range svc.Clusters {
		c := controlplane.Cluster{Name: cl.Name, Weight: uint32(cl.Weight), EndpointCount: cl.Endpoints, Withhold: kindSet(cl.Withhold)}
		if eps, locs, ok := endpoints(cl.Endpoints, cl.EndpointWeights, cl.Localities); ok {
			c.Endpoints, c.Localities, c.EndpointCount = eps, locs, 0
		}
		out.Clusters = append(out.Clusters, c)
	}
	for _, r := range svc.Routes {
		out.Routes = append(out.Routes, controlplane.Route{Prefix: r.Prefix, Clusters: slices.Clone(r.Clusters)})
	}
}

// endpoints generates the endpoints of a cluster with weights or
// localities; ok is false when it has neither (the server generates n
// plain ones).
func endpoints(n int, weights []int, locs []Locality) (eps []controlplane.Endpoint, ls []controlplane.Locality, ok bool) {
	if len(weights) == 0 && len(locs) == 0 {
		return nil, nil, false
	}
	add := func(zone string, prio uint32) {
		i := len(eps)
		e := controlplane.Endpoint{Address: controlplane.GeneratedAddress(i), Health: corepb.HealthStatus_HEALTHY, Zone: zone, Priority: prio}
		if i < len(weights) {
			e.Weight = uint32(weights[i])
		}
		eps = append(eps, e)
	}
	if len(locs) == 0 {
		for range n {
			add("", 0)
		}
		return eps, nil, true
	}
	for _, l := range locs {
		ls = append(ls, controlplane.Locality{Zone: l.Zone, Priority: uint32(l.Priority), Weight: uint32(l.Weight)})
		for range l.Endpoints {
			add(l.Zone, uint32(l.Priority))
		}
	}
	return eps, ls, true
}
