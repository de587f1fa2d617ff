package scenarios

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"time"

	"github.com/xdssim/xdssim/model/fleet"
)

// Scenario is one simulation, as the user wrote it in TOML. Every field has
// a `toml` tag naming its key; docs/scenario-reference.md documents each key
// and a test keeps the two in step.
type Scenario struct {
	// Format is the scenario format the file is written in (format.go);
	// resolved, it is CurrentFormat.
	Format int `toml:"format"`
	// Name names the scenario and its output directory.
	Name string `toml:"name"`
	// Description is a one-line summary, shown by `xdssim list`.
	Description string `toml:"description"`
	// Seed is the run seed every random stream derives from.
	Seed uint64 `toml:"seed"`
	// Duration is how much virtual time the run covers.
	Duration time.Duration `toml:"duration"`
	// SampleInterval is the virtual time between two samples of the time
	// series.
	SampleInterval time.Duration `toml:"sample_interval"`
	// Network is the links between clients and servers.
	Network Network `toml:"network"`
	// ControlPlanes are the xDS management servers.
	ControlPlanes []ControlPlane `toml:"control_plane"`
	// Fleet is the simulated clients.
	Fleet Fleet `toml:"fleet"`
	// Faults are the faults injected over the run.
	Faults []Fault `toml:"fault"`
	// Changes are the control planes' config changes over the run.
	Changes []Change `toml:"change"`
	// DataPlane is how backends behave and failures are counted; Backends
	// change backends over the run.
	DataPlane DataPlane `toml:"data_plane"`
	Backends  []Backend `toml:"backend"`
	// Expect are bounds on the run's headline figures; `xdssim run` exits
	// with code 3 when one is breached.
	Expect []Expect `toml:"expect"`
	// WhatIf allows settings that no shipping gRPC client can be
	// configured to have (see whatif.go); the outputs list them.
	WhatIf bool `toml:"what_if"`
	// Sweep, when given, is what `xdssim sweep` varies and looks for
	// (sweep.go); `xdssim run` ignores it.
	Sweep *Sweep `toml:"sweep,omitempty"`

	// src is the document parsed, and mesh the dump and bootstrap files
	// it names, read once (mesh.go).
	src  *Source
	mesh meshFiles
	// warnings are what the load found that does not stop the run.
	warnings ErrorList
}

// Fleet is the set of simulated clients: one or more groups, and the
// restarts that happen to them.
type Fleet struct {
	Groups   []Group   `toml:"group"`
	Restarts []Restart `toml:"restart"`
}

// Group is a set of identical clients.
type Group struct {
	// Name identifies the group; it defaults to "group-N" (N from 0, in the
	// order the groups stand in the file).
	Name string `toml:"name"`
	// Clients is how many clients the group has.
	Clients int `toml:"clients"`
	// StartAt is when the group's first client may start.
	StartAt time.Duration `toml:"start_at"`
	// StartSpread spreads the starts uniformly over [StartAt,
	// StartAt+StartSpread); 0 starts every client at StartAt.
	StartSpread time.Duration `toml:"start_spread"`
	// StartStagger starts client i at StartAt + i × StartStagger.
	StartStagger time.Duration `toml:"start_stagger"`
	// StartTimes, when given, starts client i at StartAt + StartTimes[i]:
	// one time per client, as a measured rollout had them.
	StartTimes []time.Duration `toml:"start_times,omitempty"`
	// Profile is the XdsClient implementation: grpc-go, grpc-java,
	// grpc-core or spec.
	Profile string `toml:"profile"`
	// ProfileFields override single fields of the profile.
	ProfileFields map[string]string `toml:"profile_fields"`
	// ProcessingTime is the time a client takes per xDS response before
	// its ACK or NACK goes out; it defaults to the profile's
	// (processingTimeDefault).
	ProcessingTime Dist `toml:"processing_time"`
	// Servers are the bootstrap's xds_servers, by control plane name,
	// highest priority first; they default to the servers of Bootstrap,
	// or every control plane in the order they are declared.
	Servers []string `toml:"servers"`
	// Bootstrap, when given, is a gRPC bootstrap file (gRFC A27) whose
	// xds_servers (matched to control planes by server_uri) and
	// server_features the group's clients use.
	Bootstrap string `toml:"bootstrap,omitempty"`
	// ServerFeatures are the server_features of every bootstrap server.
	ServerFeatures []string `toml:"server_features"`
	// Latency, if set, replaces the link latency of this group's clients.
	Latency Dist `toml:"latency"`
	// Targets are the listener names the clients have channels to
	// (xds:///NAME); they default to every service of the first server.
	Targets []string `toml:"targets"`
	// RPC is the RPC load each client sends to each target.
	RPC RPC `toml:"rpc"`
	// XDSChannel is the connection backoff of the clients' channels to
	// their xDS servers, XDSKeepalive their keepalive; DataChannel is the
	// connection backoff of their data-plane subchannels. Each defaults to
	// what the profile's implementation ships.
	XDSChannel   Channel   `toml:"xds_channel"`
	XDSKeepalive Keepalive `toml:"xds_keepalive"`
	DataChannel  Channel   `toml:"data_channel"`
}

// Restart restarts a fraction of a group's clients: each chosen client
// stops at a time spread over [At, At+Spread) and starts again Downtime
// later, as a process restart does.
type Restart struct {
	// Group names the group; empty means every group.
	Group string `toml:"group"`
	// At is when the first restart may happen.
	At time.Duration `toml:"at"`
	// Fraction of the group's clients that restart, in (0, 1].
	Fraction float64 `toml:"fraction"`
	// Spread spreads the restarts uniformly over [At, At+Spread).
	Spread time.Duration `toml:"spread"`
	// Downtime is how long a restarting client is down.
	Downtime time.Duration `toml:"downtime"`
}

// Defaults. They are all here, in one place: setDefaults methods give a
// value its defaults before the decoder fills it, and resolve fills in what
// depends on other values once decoding is done.

// DefaultSeed is the run seed of a scenario that names none.
const DefaultSeed = 1

func (s *Scenario) setDefaults() {
	s.Seed = DefaultSeed
	s.Duration = 5 * time.Minute
	s.SampleInterval = time.Second
	s.Network.setDefaults()
	s.DataPlane.setDefaults()
}

func (g *Group) setDefaults() {
	g.Profile = "grpc-go"
	g.RPC.setDefaults()
}

func (r *Restart) setDefaults() {
	r.Fraction = 1
}

// resolve fills in the defaults that depend on the rest of the scenario;
// p tells which keys the scenario gives.
func (s *Scenario) resolve(file string, p *problems) {
	if s.Name == "" {
		s.Name = file
	}
	s.loadMesh(p)
	for i := range s.Fleet.Groups {
		g := &s.Fleet.Groups[i]
		if g.Name == "" {
			g.Name = fmt.Sprintf("group-%d", i)
		}
		if g.ProfileFields == nil {
			g.ProfileFields = map[string]string{}
		}
		for j := range g.RPC.Methods {
			if g.RPC.Methods[j].Headers == nil {
				g.RPC.Methods[j].Headers = map[string]string{}
			}
		}
		if g.Bootstrap != "" {
			s.resolveBootstrap(p, i, g)
		}
		if g.Servers == nil {
			g.Servers = []string{}
			for _, cp := range s.ControlPlanes {
				g.Servers = append(g.Servers, cp.Name)
			}
		}
		if g.ServerFeatures == nil {
			g.ServerFeatures = []string{}
		}
		gp := fmt.Sprintf("fleet.group[%d]", i)
		if !p.given(gp + ".processing_time") {
			g.ProcessingTime = clientProcessingDefault(g.Profile)
		}
		resolveGiven(p, gp+".xds_channel", &g.XDSChannel, channelDefaults(g.Profile))
		resolveGiven(p, gp+".xds_keepalive", &g.XDSKeepalive, xdsKeepaliveDefaults())
		resolveGiven(p, gp+".data_channel", &g.DataChannel, channelDefaults(g.Profile))
		if g.Targets == nil {
			g.Targets = []string{}
			if len(g.Servers) > 0 {
				for _, cp := range s.ControlPlanes {
					if cp.Name == g.Servers[0] {
						for _, svc := range cp.Services {
							g.Targets = append(g.Targets, svc.Name)
						}
						g.Targets = append(g.Targets, s.apiListeners(cp.Resources)...)
					}
				}
			}
		}
	}
	s.resolveXDS()
	s.resolveDataPlane()
}

// Limits on sizes, so that a typo cannot ask for a run that would exhaust
// memory before it starts.
const (
	maxClients  = 10_000_000
	maxSamples  = 1_000_000
	maxDuration = 30 * 24 * time.Hour // also the longest duration any key takes
	// maxEndpoints bounds a service's, a cluster's or a locality's
	// endpoints, and the endpoints a change acts on: each is a resource
	// every client decodes and may hold a subchannel to.
	maxEndpoints = 100_000
	// maxWorkers bounds a control plane's workers: the server keeps one
	// free time per worker.
	maxWorkers = 1_000_000
	// maxControlPlanes bounds the control planes: each is a server with
	// a cache of its own, and a group's clients use at most 64
	// (xdsclient.MaxServers). (A client's connection names its server in
	// 16 bits.)
	maxControlPlanes = 10_000
	// maxTargets bounds a group's targets: an XdsClient instance names its
	// target in 16 bits.
	maxTargets = math.MaxUint16
)

var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// validate checks ranges and cross-references. Decoding already checked
// types; a key that failed to decode is not checked again.
func (s *Scenario) validate(c *checker) {
	c.check(namePattern.MatchString(s.Name), "name",
		"expected a name of lowercase letters, digits, '.', '-' and '_' (it names the output directory), found %q", s.Name)
	c.check(s.Duration > 0 && s.Duration <= maxDuration, "duration",
		"expected a duration > 0 and <= %s, found %s", maxDuration, s.Duration)
	if c.check(s.SampleInterval > 0, "sample_interval", "expected a duration > 0, found %s", s.SampleInterval) &&
		s.Duration > 0 {
		n := s.Duration / s.SampleInterval
		c.check(n <= maxSamples, "sample_interval",
			"%s over a duration of %s makes %d samples; expected at most %d (use a longer interval)",
			s.SampleInterval, s.Duration, n, maxSamples)
		c.check(s.SampleInterval <= s.Duration, "sample_interval",
			"expected at most the duration (%s), found %s", s.Duration, s.SampleInterval)
	}

	c.check(len(s.Fleet.Groups) > 0, "fleet.group",
		"expected at least one client group ([[fleet.group]] with clients = N)")
	groups := make(map[string]int)
	total := 0
	for i, g := range s.Fleet.Groups {
		p := fmt.Sprintf("fleet.group[%d]", i)
		if j, dup := groups[g.Name]; dup {
			c.check(false, p+".name", "group name %q is already used by fleet.group[%d]", g.Name, j)
		}
		groups[g.Name] = i
		c.check(namePattern.MatchString(g.Name), p+".name",
			"expected a name of lowercase letters, digits, '.', '-' and '_', found %q", g.Name)
		if c.check(c.given(p+".clients"), p+".clients", "is required: how many clients the group has (clients = N)") {
			c.check(g.Clients > 0 && g.Clients <= maxClients, p+".clients",
				"expected a number of clients from 1 to %d, found %d", maxClients, g.Clients)
		}
		total += max(g.Clients, 0)
		c.during(p+".start_at", g.StartAt, s.Duration)
		c.check(g.StartSpread >= 0, p+".start_spread", "expected a duration >= 0, found %s", g.StartSpread)
		s.validateStarts(c, p, &g)
		s.validateGroupXDS(c, p, &g)
	}
	c.check(total <= maxClients, "fleet.group", "expected at most %d clients in all, found %d", maxClients, total)

	s.validateXDS(c)
	s.validateDataPlane(c)
	s.validateMesh(c)
	for i, r := range s.Fleet.Restarts {
		p := fmt.Sprintf("fleet.restart[%d]", i)
		if r.Group != "" {
			_, ok := groups[r.Group]
			c.check(ok, p+".group", "no group is named %q (groups: %s)", r.Group, groupNames(s.Fleet.Groups))
		}
		c.during(p+".at", r.At, s.Duration)
		c.check(r.Fraction > 0 && r.Fraction <= 1, p+".fraction", "expected a fraction in (0, 1], found %v", r.Fraction)
		c.check(r.Spread >= 0, p+".spread", "expected a duration >= 0, found %s", r.Spread)
		c.check(r.Downtime >= 0, p+".downtime", "expected a duration >= 0, found %s", r.Downtime)
	}
	s.validateWhatIf(c)
	s.validateExpect(c)
	s.validateSweep(c)
	s.validateMetricPaths(c)
}

func groupNames(gs []Group) string {
	s := ""
	for i, g := range gs {
		if i > 0 {
			s += ", "
		}
		s += g.Name
	}
	return s
}

// checker records validation problems, skipping keys whose value already
// failed to decode (their field holds a default, not what the user wrote).
type checker struct {
	p *problems
	// paths are the figures summary.json will hold, built once: the
	// fleet config behind them renders the whole scenario.
	paths []string
}

// metricPaths returns the paths of the figures a run of s reports (see
// fleet.MetricPaths), sorted. Only a scenario without errors in the
// parts a fleet config reads may ask.
// MetricPaths lists the summary.json paths a run of the scenario
// reports, sorted.
func (s *Scenario) MetricPaths() []string {
	cfg := s.fleetConfig()
	paths := fleet.MetricPaths(&cfg)
	slices.Sort(paths)
	return paths
}

func (c *checker) metricPaths(s *Scenario) []string {
	if c.paths == nil {
		c.paths = s.MetricPaths()
	}
	return c.paths
}

// during checks that the time at path falls within a run of the given
// duration: from 0s to before its end.
func (c *checker) during(path string, at, end time.Duration) bool {
	return c.check(at >= 0 && at < end, path, "expected a time from 0s to before the end of the run (%s), found %s", end, at)
}

// given reports whether the user gave path a value, in the file or with
// --set.
func (c *checker) given(path string) bool { return c.p.given(path) }

// given reports whether the user gave path a value, in the file or with
// --set.
// Parse sets the tree, with every --set applied, before anything asks.
func (p *problems) given(path string) bool { return inTree(p.tree, path) }

// inTree reports whether the key path stands in a parsed document tree.
// A --set that gives a table (network.latency={dist=...,mean=...}) gives
// the keys it holds, and only those.
func inTree(tree map[string]any, path string) bool {
	parts, err := splitPath(path)
	if err != nil {
		return false
	}
	var node any = tree
	for _, part := range parts {
		m, ok := node.(map[string]any)
		if !ok {
			return false
		}
		if node, ok = m[part.key]; !ok {
			return false
		}
		if part.index < 0 {
			continue
		}
		switch a := node.(type) {
		case []map[string]any:
			if part.index >= len(a) {
				return false
			}
			node = a[part.index]
		case []any:
			if part.index >= len(a) {
				return false
			}
			node = a[part.index]
		default:
			return false
		}
	}
	return true
}

// check records a problem at path unless ok; it returns ok.
func (c *checker) check(ok bool, path, format string, args ...any) bool {
	if !ok && !c.p.bad[path] {
		c.p.valueError(path, format, args...)
	}
	return ok
}
