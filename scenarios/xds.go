package scenarios

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/xdssim/xdssim/model/controlplane"
	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/model/network"
	"github.com/xdssim/xdssim/model/xdsclient"
	"github.com/xdssim/xdssim/sim"
)

// Network is the network between clients and servers. A channel's
// connection backoff belongs to its client's implementation: see a group's
// xds_channel and data_channel.
type Network struct {
	// Latency is the one-way latency of a client-server link.
	Latency Dist `toml:"latency"`
}

// Dist is a distribution of durations, written as an inline table:
// { dist = "constant", value = "1ms" }, { dist = "uniform", min, max },
// { dist = "exponential", mean }, { dist = "lognormal", median, p99 }.
type Dist struct {
	Dist   string        `toml:"dist,omitempty,omitzero"`
	Value  time.Duration `toml:"value,omitempty,omitzero"`
	Min    time.Duration `toml:"min,omitempty,omitzero"`
	Max    time.Duration `toml:"max,omitempty,omitzero"`
	Mean   time.Duration `toml:"mean,omitempty,omitzero"`
	Median time.Duration `toml:"median,omitempty,omitzero"`
	P99    time.Duration `toml:"p99,omitempty,omitzero"`
}

// ControlPlane is one xDS management server, serving its services from
// go-control-plane's cache.
type ControlPlane struct {
	Name string `toml:"name"`
	// Cache is go-control-plane's cache: linear (LinearCache per type),
	// snapshot (SnapshotCache, one version per snapshot) or
	// snapshot-per-type (a version per type).
	Cache string `toml:"cache"`
	// OnNACK is what the server does with a NACK: hold or resend.
	OnNACK string `toml:"on_nack"`
	// EmptyTypes is what a snapshot server does for a type it holds no
	// resource of: answered (an empty response) or unanswered.
	EmptyTypes string `toml:"empty_types"`
	// ResourceErrors makes the server send xRFC TP3 resource_errors.
	ResourceErrors bool `toml:"resource_errors"`
	// Workers serve requests at once; 0 means no limit.
	Workers int `toml:"workers"`
	// ProcessingTime is what the server's own code (gRPC and
	// go-control-plane) takes per request; ServiceTime is what a request
	// takes a worker on top of it.
	ProcessingTime Dist `toml:"processing_time"`
	ServiceTime    Dist `toml:"service_time"`
	// MaxStreams refuses streams beyond it with RESOURCE_EXHAUSTED; 0
	// means no limit.
	MaxStreams int `toml:"max_streams"`
	// Latency, if set, replaces network.latency for links to this server.
	Latency Dist `toml:"latency"`
	// Services are what the server serves.
	Services []Service `toml:"service"`
	// Resources are dump files (CSDS, Envoy ConfigDump or plain
	// resources; JSON or YAML) whose Listeners, RouteConfigurations,
	// Clusters and ClusterLoadAssignments the server serves verbatim.
	Resources []string `toml:"resources,omitempty"`
	// ServerURI is the server_uri bootstrap files name this server by.
	ServerURI string `toml:"server_uri,omitempty"`
}

// Service is a listener, its route, cluster and endpoints, expanded by
// the server into real envoy resources.
type Service struct {
	// Name names the service and its listener (the target xds:///NAME).
	Name string `toml:"name"`
	// Endpoints is how many endpoints the service has.
	Endpoints int `toml:"endpoints"`
	// LB is the cluster's policy: round_robin, ring_hash or least_request.
	LB string `toml:"lb"`
	// InlineRoute puts the route in the listener instead of RDS.
	InlineRoute bool `toml:"inline_route"`
	// Defect makes a resource invalid from the start, so clients NACK it.
	Defect string `toml:"defect"`
	// Retry is the route's retry policy; absent means none.
	Retry *Retry `toml:"retry,omitempty"`
	// Session turns on gRFC A55 stateful session affinity.
	Session *Session `toml:"session,omitempty"`
	// OverrideHostStatus is the cluster's override_host_status; absent
	// means UNKNOWN and HEALTHY, plus DRAINING with a session.
	OverrideHostStatus []string `toml:"override_host_status"`
	// EndpointWeights and Localities shape the service's single cluster's
	// endpoints: their weights, and their localities with weights and EDS
	// priorities.
	EndpointWeights []int      `toml:"endpoint_weights,omitempty"`
	Localities      []Locality `toml:"localities,omitempty"`
	// Withhold lists the service's resources the server never publishes:
	// listener, route, cluster, endpoints.
	Withhold []string `toml:"withhold"`
	// Clusters, when given, are the service's clusters instead of its
	// single one; Routes its routes.
	Clusters []Cluster `toml:"cluster,omitempty"`
	Routes   []Route   `toml:"route,omitempty"`
}

// Fault is a fault over a window of virtual time.
type Fault struct {
	// Kind: server-down, blackhole, partition, added-latency,
	// server-restart, goaway, message-loss or stream-reset-after-response.
	Kind string `toml:"kind"`
	// At is when it starts; Duration how long it lasts (0: to the end).
	At       time.Duration `toml:"at"`
	Duration time.Duration `toml:"duration"`
	// Servers it affects, by name; empty: every server.
	Servers []string `toml:"servers"`
	// Groups and Fraction choose the clients it affects; empty and 0:
	// every client.
	Groups   []string `toml:"groups"`
	Fraction float64  `toml:"fraction"`
	// Latency is what added-latency adds, one way.
	Latency time.Duration `toml:"latency,omitzero"`
	// Probability is message-loss's chance per message.
	Probability float64 `toml:"probability,omitzero"`
	// Responses is how many responses stream-reset-after-response lets a
	// stream have before the server ends it (default 1).
	Responses int `toml:"responses,omitzero"`
}

// Change is a config change on the control planes.
type Change struct {
	At time.Duration `toml:"at"`
	// Servers it applies to, by name; empty: every server with the service.
	Servers []string `toml:"servers"`
	// Action: delete_service, restore_service, publish_invalid,
	// scale_endpoints, drain_endpoints or set_health.
	Action  string `toml:"action"`
	Service string `toml:"service"`
	// Cluster is the service's cluster the change acts on: its endpoints,
	// its defect, its resources; "" means the first (every cluster for
	// resources).
	Cluster string `toml:"cluster,omitempty"`
	// Resources narrows delete_service and restore_service to some of the
	// service's resources: listener, route, cluster, endpoints. For
	// publish, it is the dump files of the next version.
	Resources []string `toml:"resources,omitempty"`
	// Type and Name are the resource delete_resource and
	// restore_resource act on: its kind (listener, route, cluster,
	// endpoints) and name.
	Type string `toml:"type,omitempty"`
	Name string `toml:"name,omitempty"`
	// Defect is what publish_invalid breaks.
	Defect string `toml:"defect,omitempty"`
	// Count and First say which endpoints scale_endpoints, drain_endpoints
	// and set_health act on; Health is set_health's new status.
	Count  int    `toml:"count"`
	First  int    `toml:"first"`
	Health string `toml:"health,omitempty"`
}

// defaultResponses is stream-reset-after-response's responses: the
// server ends each stream after its first response.
const defaultResponses = 1

func (f *Fault) setDefaults() {
	f.Responses = defaultResponses
}

func (n *Network) setDefaults() {
	n.Latency = Dist{Dist: "constant", Value: time.Millisecond}
}

func (cp *ControlPlane) setDefaults() {
	cp.Cache = "linear"
	cp.OnNACK = "hold"
	cp.EmptyTypes = "answered"
	cp.ProcessingTime = serverProcessingDefault
	cp.ServiceTime = Dist{Dist: "constant"}
}

// The processing times a real client takes per xDS response and a real
// go-control-plane server per request, measured in validate/'s nack-policy
// case (fidelity.Processing; docs/model-fidelity.md, "Processing times"):
// over eight runs, the median of the runs' medians and of their means,
// as the log-normal with that median and mean (its p99 follows), since
// the mean is what sets a storm's rate. They depend on the machine: these
// are a 2-vCPU AMD EPYC's, the client and the server each in a process of
// its own, one storm at a time.
var (
	// serverProcessingDefault is go-control-plane v0.14.0's per request,
	// from the read of a NACK to the write of its response.
	serverProcessingDefault = Dist{Dist: "lognormal", Median: 12 * time.Microsecond, P99: 120 * time.Microsecond}
	// grpcGoProcessingDefault is grpc-go 1.84.0's per response, from
	// the response's arrival to the write of its ACK or NACK.
	grpcGoProcessingDefault = Dist{Dist: "lognormal", Median: 37 * time.Microsecond, P99: 600 * time.Microsecond}
)

// clientProcessingDefault is the processing time of a client of the named
// profile. Only grpc-go can be measured (validate/ runs it); grpc-java,
// C-core and the spec profile take its figure, as a stand-in for a client
// that decodes and validates the same resources.
func clientProcessingDefault(profile string) Dist {
	return grpcGoProcessingDefault
}

// defaultEndpoints is a service's (and a cluster's) endpoint count.
const defaultEndpoints = 3

func (s *Service) setDefaults() {
	s.Endpoints = defaultEndpoints
	s.LB = "round_robin"
}

// normalize keeps only the fields the distribution uses, so that a
// default's value does not linger beside what the user wrote.
func (d *Dist) normalize() {
	keep := *d
	*d = Dist{Dist: keep.Dist}
	switch keep.Dist {
	case "constant":
		d.Value = keep.Value
	case "uniform":
		d.Min, d.Max = keep.Min, keep.Max
	case "exponential":
		d.Mean = keep.Mean
	case "lognormal":
		d.Median, d.P99 = keep.Median, keep.P99
	default:
		*d = keep // invalid: validation reports it as written
	}
}

// resolveXDS fills the xDS defaults that depend on the rest.
func (s *Scenario) resolveXDS() {
	s.Network.Latency.normalize()
	for i := range s.Fleet.Groups {
		s.Fleet.Groups[i].Latency.normalize()
		s.Fleet.Groups[i].ProcessingTime.normalize()
	}
	for i := range s.ControlPlanes {
		s.ControlPlanes[i].ProcessingTime.normalize()
		s.ControlPlanes[i].ServiceTime.normalize()
		s.ControlPlanes[i].Latency.normalize()
		for j := range s.ControlPlanes[i].Services {
			s.ControlPlanes[i].Services[j].resolveShape()
		}
	}
	for i := range s.Faults {
		f := &s.Faults[i]
		if f.Servers == nil {
			f.Servers = []string{}
		}
		if f.Groups == nil {
			f.Groups = []string{}
		}
		if faultKinds[f.Kind] != network.StreamResetAfterResponse {
			// Only stream-reset-after-response has responses; validation
			// reports it if the file gives it to another kind.
			f.Responses = 0
		}
	}
	for i := range s.Changes {
		if s.Changes[i].Servers == nil {
			s.Changes[i].Servers = []string{}
		}
	}
}

const defectNames = "one of: cluster-lb-policy, endpoint-zero-weight, route-retry, listener-no-router"

var serverFeatures = xdsclient.ServerFeatureNames()

var faultKinds = map[string]network.FaultKind{
	"server-down": network.ServerDown, "blackhole": network.Blackhole, "partition": network.Partition,
	"added-latency": network.AddedLatency, "server-restart": network.ServerRestart, "goaway": network.GoAway,
	"message-loss": network.MessageLoss, "stream-reset-after-response": network.StreamResetAfterResponse,
	"blackhole-hold": network.BlackholeHold,
}

// oneOf says "expected one of a, b, c" over a map's sorted keys.
func oneOf[V any](m map[string]V) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return "expected one of: " + strings.Join(keys, ", ")
}

// dist converts and checks a Dist at path; allowZero allows a constant 0.
func (c *checker) dist(path string, d Dist, allowZero bool) sim.Dist {
	used := map[string][]string{
		"constant": {"value"}, "uniform": {"min", "max"}, "exponential": {"mean"}, "lognormal": {"median", "p99"},
	}
	keys, ok := used[d.Dist]
	if !c.check(ok, path+".dist", "%s, found %q", oneOf(used), d.Dist) {
		return sim.Dist{}
	}
	for _, k := range []string{"value", "min", "max", "mean", "median", "p99"} {
		if !slices.Contains(keys, k) && c.given(path+"."+k) {
			c.p.keyError(path+"."+k, "is not used by dist = %q (it takes %s)", d.Dist, strings.Join(keys, " and "))
		}
	}
	switch d.Dist {
	case "constant":
		atLeast := "> 0"
		if allowZero {
			atLeast = ">= 0"
		}
		if c.check(d.Value > 0 || allowZero && d.Value == 0, path+".value", "expected a duration %s, found %s", atLeast, d.Value) {
			return sim.Constant(d.Value)
		}
	case "uniform":
		if c.check(d.Min >= 0 && d.Max >= d.Min && d.Max > 0, path+".max", "expected 0 <= min <= max and max > 0, found min %s, max %s", d.Min, d.Max) {
			return sim.UniformDist(d.Min, d.Max)
		}
	case "exponential":
		if c.check(d.Mean > 0, path+".mean", "expected a duration > 0, found %s", d.Mean) {
			return sim.Exponential(d.Mean)
		}
	case "lognormal":
		if c.check(d.Median > 0 && d.P99 >= d.Median, path+".p99", "expected 0 < median <= p99, found median %s, p99 %s", d.Median, d.P99) {
			return sim.LogNormal(d.Median, d.P99)
		}
	}
	return sim.Dist{}
}

func (s *Scenario) controlPlaneIndex(name string) int {
	for i, cp := range s.ControlPlanes {
		if cp.Name == name {
			return i
		}
	}
	return -1
}

func (s *Scenario) controlPlaneNames() string {
	var n []string
	for _, cp := range s.ControlPlanes {
		n = append(n, cp.Name)
	}
	if len(n) == 0 {
		return "none are declared: add a [[control_plane]]"
	}
	return strings.Join(n, ", ")
}

// validateXDS checks the network, control planes, faults and changes.
func (s *Scenario) validateXDS(c *checker) {
	c.dist("network.latency", s.Network.Latency, false)

	if n := len(s.ControlPlanes); n > maxControlPlanes {
		c.check(false, fmt.Sprintf("control_plane[%d]", maxControlPlanes), "expected at most %d control planes, found %d", maxControlPlanes, n)
	}
	names := map[string]int{}
	for i, cp := range s.ControlPlanes {
		p := fmt.Sprintf("control_plane[%d]", i)
		if j, dup := names[cp.Name]; dup {
			c.check(false, p+".name", "control plane name %q is already used by control_plane[%d]", cp.Name, j)
		}
		names[cp.Name] = i
		c.check(namePattern.MatchString(cp.Name), p+".name", "expected a name of lowercase letters, digits, '.', '-' and '_', found %q", cp.Name)
		s.validateServer(c, p, &cp)
		c.check(cp.Workers >= 0 && cp.Workers <= maxWorkers, p+".workers", "expected a number from 0 (no limit) to %d, found %d", maxWorkers, cp.Workers)
		c.check(cp.MaxStreams >= 0, p+".max_streams", "expected a number >= 0 (0: no limit), found %d", cp.MaxStreams)
		c.dist(p+".processing_time", cp.ProcessingTime, true)
		c.dist(p+".service_time", cp.ServiceTime, true)
		if cp.Latency.Dist != "" {
			c.dist(p+".latency", cp.Latency, false)
		}
		svcs := map[string]bool{}
		for j, svc := range cp.Services {
			q := fmt.Sprintf("%s.service[%d]", p, j)
			c.check(!svcs[svc.Name], q+".name", "service %q is already declared on %s", svc.Name, cp.Name)
			svcs[svc.Name] = true
			c.check(svc.Name != "", q+".name", "is required: the service's name, which is its listener and target")
			_, err := controlplane.ParseLBPolicy(svc.LB)
			c.check(err == nil, q+".lb", "expected round_robin, pick_first, ring_hash or least_request, found %q", svc.LB)
			if svc.Defect != "" {
				_, err := controlplane.ParseDefect(svc.Defect)
				c.check(err == nil, q+".defect", "expected %s, found %q", defectNames, svc.Defect)
			}
			s.validateShape(c, q, i, &svc)
		}
	}

	for i, f := range s.Faults {
		p := fmt.Sprintf("fault[%d]", i)
		kind, ok := faultKinds[f.Kind]
		c.check(ok, p+".kind", "%s, found %q", oneOf(faultKinds), f.Kind)
		c.during(p+".at", f.At, s.Duration)
		c.check(f.Duration >= 0, p+".duration", "expected a duration >= 0 (0: until the end of the run), found %s", f.Duration)
		for j, name := range f.Servers {
			c.check(s.controlPlaneIndex(name) >= 0, fmt.Sprintf("%s.servers[%d]", p, j), "no control plane is named %q (control planes: %s)", name, s.controlPlaneNames())
		}
		for j, name := range f.Groups {
			c.check(slices.ContainsFunc(s.Fleet.Groups, func(g Group) bool { return g.Name == name }),
				fmt.Sprintf("%s.groups[%d]", p, j), "no group is named %q (groups: %s)", name, groupNames(s.Fleet.Groups))
		}
		c.check(f.Fraction >= 0 && f.Fraction <= 1, p+".fraction", "expected a fraction in [0, 1] (0: every client), found %v", f.Fraction)
		switch kind {
		case network.Partition:
			c.check(len(f.Groups) > 0 || f.Fraction > 0, p+".kind", "a partition cuts off some clients: name groups or a fraction")
		case network.ServerDown, network.ServerRestart:
			c.check(len(f.Groups) == 0 && f.Fraction == 0, p+".kind", "a %s affects every client: remove groups and fraction", f.Kind)
		case network.AddedLatency:
			c.check(f.Latency > 0, p+".latency", "added-latency needs latency > 0, found %s", f.Latency)
		case network.MessageLoss:
			c.check(f.Probability > 0 && f.Probability <= 1, p+".probability", "message-loss needs a probability in (0, 1], found %v", f.Probability)
		case network.StreamResetAfterResponse:
			c.check(f.Responses >= 1, p+".responses", "expected a number of responses >= 1 (the server ends each stream after that many), found %d", f.Responses)
		}
		c.check(kind == network.AddedLatency || !c.given(p+".latency"), p+".latency", "is only used by kind = \"added-latency\"")
		c.check(kind == network.MessageLoss || !c.given(p+".probability"), p+".probability", "is only used by kind = \"message-loss\"")
		c.check(kind == network.StreamResetAfterResponse || !c.given(p+".responses"), p+".responses", "is only used by kind = \"stream-reset-after-response\"")
	}

	for i, ch := range s.Changes {
		p := fmt.Sprintf("change[%d]", i)
		action, err := fleet.ParseChangeAction(ch.Action)
		c.check(err == nil, p+".action", "%v", err)
		c.during(p+".at", ch.At, s.Duration)
		servers := ch.Servers
		for j, name := range servers {
			c.check(s.controlPlaneIndex(name) >= 0, fmt.Sprintf("%s.servers[%d]", p, j), "no control plane is named %q (control planes: %s)", name, s.controlPlaneNames())
		}
		if len(servers) == 0 {
			for _, cp := range s.ControlPlanes {
				servers = append(servers, cp.Name)
			}
		}
		found := false
		for _, name := range servers {
			if k := s.controlPlaneIndex(name); k >= 0 {
				found = found || slices.ContainsFunc(s.ControlPlanes[k].Services, func(sv Service) bool { return sv.Name == ch.Service })
			}
		}
		if action == fleet.Publish || action == fleet.DeleteResource || action == fleet.RestoreResource {
			continue // validateMesh checks them
		}
		c.check(found, p+".service", "no control plane it applies to serves a service named %q", ch.Service)
		s.validateChangeTarget(c, p, action, &ch, servers)
		c.check(action == fleet.PublishInvalid || !c.given(p+".defect"), p+".defect", "is only used by action = \"publish_invalid\"")
		if action == fleet.PublishInvalid {
			d, err := controlplane.ParseDefect(ch.Defect)
			c.check(err == nil && d != controlplane.NoDefect, p+".defect",
				"publish_invalid needs a defect: %s, found %q", defectNames, ch.Defect)
		}
		c.check(ch.Count >= 0 && ch.Count <= maxEndpoints, p+".count", "expected a number from 0 to %d, found %d", maxEndpoints, ch.Count)
		c.check(ch.First >= 0 && ch.First <= maxEndpoints, p+".first", "expected a number from 0 to %d, found %d", maxEndpoints, ch.First)
		if action == fleet.SetHealth {
			_, ok := corepb.HealthStatus_value[ch.Health]
			c.check(ok, p+".health", "expected UNKNOWN, HEALTHY, UNHEALTHY, DRAINING, TIMEOUT or DEGRADED, found %q", ch.Health)
		} else {
			c.check(!c.given(p+".health"), p+".health", "is only used by action = \"set_health\"")
		}
	}
	if len(c.p.errs) == 0 {
		s.validateChangeRanges(c)
	}
	s.validateMethods(c)
}

// validateGroupXDS checks a group's profile, bootstrap and targets.
func (s *Scenario) validateGroupXDS(c *checker, p string, g *Group) {
	prof, err := xdsclient.ProfileByName(g.Profile)
	if c.check(err == nil, p+".profile", "expected grpc-go, grpc-java, grpc-core or spec, found %q", g.Profile) {
		ok := true
		for _, k := range sortedKeys(g.ProfileFields) {
			fp := joinPath(p+".profile_fields", k)
			if !slices.Contains(xdsclient.FieldNames(), k) {
				c.p.keyError(fp, "unknown profile field%s", suggest(k, xdsclient.FieldNames()))
				ok = false
				continue
			}
			err := prof.Set(k, g.ProfileFields[k])
			ok = c.check(err == nil, fp, "%s", strings.TrimPrefix(fmt.Sprint(err), "xdsclient: ")) && ok
			if d, isDur := prof.DurationField(k); isDur {
				ok = c.check(d <= maxDuration, fp, "expected a duration of at most %s (30 days), found %s", maxDuration, d) && ok
			}
		}
		// The fields are checked as a whole too: backoff_max against
		// backoff_initial, and every value the run will use.
		if err := prof.Validate(); ok && err != nil {
			c.check(false, p+".profile_fields", "%s", strings.TrimPrefix(err.Error(), "xdsclient: "))
		}
	}
	if g.Latency.Dist != "" {
		c.dist(p+".latency", g.Latency, false)
	}
	c.dist(p+".processing_time", g.ProcessingTime, true)
	c.channel(p+".xds_channel", g.XDSChannel)
	c.keepalive(p+".xds_keepalive", g.XDSKeepalive)
	c.channel(p+".data_channel", g.DataChannel)
	for j, name := range g.Servers {
		c.check(s.controlPlaneIndex(name) >= 0, fmt.Sprintf("%s.servers[%d]", p, j), "no control plane is named %q (control planes: %s)", name, s.controlPlaneNames())
	}
	if n := len(g.Servers); n > xdsclient.MaxServers {
		unless := ""
		switch {
		case c.given(p + ".servers"):
		case g.Bootstrap != "":
			unless = " (the bootstrap's xds_servers)"
		default:
			unless = " (every control plane, the default without servers: list the ones the group's clients use)"
		}
		c.check(false, p+".servers", "expected at most %d servers, the most an XdsClient's authority is modelled with, found %d%s", xdsclient.MaxServers, n, unless)
	}
	for j, f := range g.ServerFeatures {
		c.check(slices.Contains(serverFeatures, f), fmt.Sprintf("%s.server_features[%d]", p, j), "expected one of: %s, found %q", strings.Join(serverFeatures, ", "), f)
	}
	c.check(len(g.Servers) > 0 || len(g.Targets) == 0, p+".targets", "targets need servers to get them from")
	c.check(len(g.Targets) <= maxTargets, p+".targets", "expected at most %d targets, found %d", maxTargets, len(g.Targets))
	for j, t := range g.Targets {
		c.check(t != "", fmt.Sprintf("%s.targets[%d]", p, j), "expected a listener name, found \"\"")
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (d Dist) sim() sim.Dist {
	switch d.Dist {
	case "uniform":
		return sim.UniformDist(d.Min, d.Max)
	case "exponential":
		return sim.Exponential(d.Mean)
	case "lognormal":
		return sim.LogNormal(d.Median, d.P99)
	default:
		return sim.Constant(d.Value)
	}
}

// FleetConfig returns the world to build for this (valid) scenario.
func (s *Scenario) FleetConfig() fleet.Config {
	cfg := s.fleetConfig()
	cfg.Resolved = s.TOML()
	return cfg
}

// fleetConfig is FleetConfig without Resolved, whose encoding is most of
// its cost: what validation needs (the metric paths a run reports).
func (s *Scenario) fleetConfig() fleet.Config {
	cfg := fleet.Config{
		Name:           s.Name,
		Description:    s.Description,
		Seed:           s.Seed,
		Duration:       s.Duration,
		SampleInterval: s.SampleInterval,
		Link:           network.LinkConfig{Latency: s.Network.Latency.sim()},
		WhatIf:         s.whatIfs(),
	}
	for _, cp := range s.ControlPlanes {
		cache, _ := controlplane.ParseCacheKind(cp.Cache)
		nack, _ := controlplane.ParseNACKPolicy(cp.OnNACK)
		out := fleet.ControlPlane{Server: controlplane.Config{
			Name: cp.Name, Cache: cache, ResourceErrors: cp.ResourceErrors, OnNACK: nack, EmptyTypesUnanswered: cp.EmptyTypes == "unanswered",
			Capacity: controlplane.Capacity{Workers: cp.Workers, ProcessingTime: cp.ProcessingTime.sim(), ServiceTime: cp.ServiceTime.sim(), MaxStreams: cp.MaxStreams},
		}}
		if cp.Latency.Dist != "" {
			out.Link = &network.LinkConfig{Latency: cp.Latency.sim()}
		}
		for _, svc := range cp.Services {
			lb, _ := controlplane.ParseLBPolicy(svc.LB)
			d := controlplane.NoDefect
			if svc.Defect != "" {
				d, _ = controlplane.ParseDefect(svc.Defect)
			}
			cs := controlplane.Service{
				Name: svc.Name, EndpointCount: svc.Endpoints, LB: lb, InlineRoute: svc.InlineRoute, Defect: d,
			}
			svc.controlPlaneService(&cs)
			svc.shapeService(&cs)
			out.Server.Services = append(out.Server.Services, cs)
		}
		cfg.ControlPlanes = append(cfg.ControlPlanes, out)
	}
	groupIndex := map[string]int{}
	for gi, g := range s.Fleet.Groups {
		groupIndex[g.Name] = gi
		prof, _ := xdsclient.ProfileByName(g.Profile)
		for _, k := range sortedKeys(g.ProfileFields) {
			_ = prof.Set(k, g.ProfileFields[k]) // validated
		}
		fg := fleet.Group{Name: g.Name, Clients: g.Clients, StartAt: g.StartAt, StartSpread: g.StartSpread,
			StartStagger: g.StartStagger, StartTimes: g.StartTimes, Profile: prof, ProcessingTime: g.ProcessingTime.sim(), Targets: g.Targets,
			XDSChannel: g.XDSChannel.backoff(), XDSKeepalive: g.XDSKeepalive.network(), DataChannel: g.DataChannel.backoff()}
		if g.Latency.Dist != "" {
			fg.Link = &network.LinkConfig{Latency: g.Latency.sim()}
		}
		for _, name := range g.Servers {
			fg.Servers = append(fg.Servers, s.controlPlaneIndex(name))
		}
		for _, f := range g.ServerFeatures {
			fg.Features.Set(f) // validated against ServerFeatureNames
		}
		cfg.Groups = append(cfg.Groups, fg)
	}
	for _, r := range s.Fleet.Restarts {
		cfg.Restarts = append(cfg.Restarts, fleet.Restart(r))
	}
	for _, f := range s.Faults {
		nf := network.Fault{Kind: faultKinds[f.Kind], Start: sim.Time(0).Add(f.At), Duration: f.Duration,
			Fraction: f.Fraction, Latency: f.Latency, Probability: f.Probability, Responses: f.Responses}
		if f.Duration == 0 {
			nf.Duration = network.Forever
		}
		for _, name := range f.Servers {
			nf.Servers = append(nf.Servers, s.controlPlaneIndex(name))
		}
		for _, name := range f.Groups {
			nf.Groups = append(nf.Groups, groupIndex[name])
		}
		cfg.Faults = append(cfg.Faults, nf)
	}
	for _, ch := range s.Changes {
		action, _ := fleet.ParseChangeAction(ch.Action)
		fc := fleet.Change{At: ch.At, Action: action, Service: ch.Service, Count: ch.Count, First: ch.First,
			Health: corepb.HealthStatus(corepb.HealthStatus_value[ch.Health]), Cluster: ch.Cluster, Resources: kindSet(ch.Resources)}
		if action == fleet.PublishInvalid {
			fc.Defect, _ = controlplane.ParseDefect(ch.Defect)
		}
		for _, name := range ch.Servers {
			fc.Servers = append(fc.Servers, s.controlPlaneIndex(name))
		}
		cfg.Changes = append(cfg.Changes, fc)
	}
	s.dataPlaneConfig(&cfg)
	s.meshConfig(&cfg)
	return cfg
}
