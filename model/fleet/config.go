// Package fleet builds a simulated world from a scenario's configuration,
// runs it on the sim kernel, and records what happened as Results.
//
// A world is a fleet of clients in groups and the xDS management servers
// they talk to. Each client holds one XdsClient instance per data-plane
// target (gRFC A71, per-target instances), and each instance has a gRPC
// channel to every server of its bootstrap. The pure models do the
// thinking: model/xdsclient decides what an XdsClient does,
// model/network what the channel and the wire do, model/controlplane what
// a go-control-plane server answers. This package only carries their
// effects out on the kernel, as events, and records what happened.
package fleet

import (
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/xdssim/xdssim/model/controlplane"
	"github.com/xdssim/xdssim/model/dataplane"
	"github.com/xdssim/xdssim/model/network"
	"github.com/xdssim/xdssim/model/xdsclient"
	"github.com/xdssim/xdssim/sim"
)

// Config is a world to build: what scenarios.Scenario becomes once decoded,
// validated and resolved. The fleet package trusts it to be valid.
type Config struct {
	Name        string
	Description string
	Seed        uint64
	// Duration is the virtual time to simulate.
	Duration time.Duration
	// SampleInterval is the virtual time between samples of the series.
	SampleInterval time.Duration
	Groups         []Group
	Restarts       []Restart

	// ControlPlanes are the xDS management servers, by index.
	ControlPlanes []ControlPlane
	// Link is the link between a client and a server, unless the server
	// has its own.
	Link network.LinkConfig
	// Faults are the network and server faults over the run; their
	// Servers and Groups are indexes into ControlPlanes and Groups.
	Faults []network.Fault
	// Changes are the control planes' config changes over the run.
	Changes []Change
	// DataPlane configures backends and failure windows; BackendEvents
	// change backends over the run.
	DataPlane     DataPlane
	BackendEvents []BackendEvent

	// Resolved is the resolved scenario as TOML, carried into Results.
	Resolved string
	// Unmodelled lists, per verbatim resource, the fields that change
	// what a real client does and that the simulator does not model;
	// carried into Results.
	Unmodelled []ResourceNote
	// WhatIf lists the settings of the scenario that no shipping gRPC
	// client can be configured to have, carried into Results so that the
	// outputs label the run as a hypothetical.
	WhatIf []WhatIf
}

// WhatIf is one hypothetical setting of a scenario: a value only a change
// to a gRPC implementation could give (docs/architecture.md, "Faithful by default,
// what-if by name").
type WhatIf struct {
	// Key is the scenario key ("fleet.group[0].rpc.throttle_max_tokens").
	Key string
	// Value is the scenario's value; Ships what the implementation has.
	Value, Ships string
	// Why says why no deployment can set it.
	Why string
}

// ResourceNote is what the simulator does not model of one resource a
// server serves verbatim.
type ResourceNote struct {
	// Server is the control plane's name; Kind the resource's (listener,
	// route, cluster, endpoints); Name its name.
	Server, Kind, Name string
	Fields             []dataplane.FieldNote
}

// ControlPlane is one xDS management server.
type ControlPlane struct {
	// Server configures the server; its Rand is set by the fleet.
	Server controlplane.Config
	// Link, if set, replaces Config.Link for connections to this server.
	Link *network.LinkConfig
}

// Group is a set of identical clients.
type Group struct {
	Name    string
	Clients int
	// Clients start uniformly over [StartAt, StartAt+StartSpread); or
	// client i at StartAt + i × StartStagger; or, when StartTimes is
	// given, at StartAt + StartTimes[i].
	StartAt      time.Duration
	StartSpread  time.Duration
	StartStagger time.Duration
	StartTimes   []time.Duration

	// Profile is the XdsClient implementation the clients run.
	Profile xdsclient.Profile
	// ProcessingTime is the time a client takes to process one xDS
	// response (decode and validate it) before its ACK or NACK goes out
	// and its watchers hear of it; responses are processed one at a time
	// (readResponses). The zero Dist takes no time; scenarios give every
	// group a default measured against grpc-go.
	ProcessingTime sim.Dist
	// XDSChannel is the connection backoff of the clients' channels to
	// their xDS servers, and XDSKeepalive their keepalive; DataChannel is
	// the connection backoff of their data-plane subchannels. Each is the
	// implementation's own (network.BackoffConfigOf) unless the scenario
	// changes it; a zero BackoffConfig means that one. A zero XDSKeepalive
	// sends no keepalive pings.
	XDSChannel   network.BackoffConfig
	XDSKeepalive network.Keepalive
	DataChannel  network.BackoffConfig
	// Servers are the bootstrap's xds_servers, as indexes into
	// Config.ControlPlanes, highest priority first. Empty: the group's
	// clients use no xDS.
	Servers []int
	// Features are the server_features of every bootstrap server.
	Features xdsclient.ServerFeatures
	// Link, if set, replaces the server's (or Config.Link) for this
	// group's connections.
	Link *network.LinkConfig
	// Targets are the data-plane targets each client has a channel to:
	// each is the name of a Listener (xds:///NAME), with an XdsClient
	// instance of its own.
	Targets []string
	// RPC is the RPC load each client sends to each target.
	RPC RPCLoad
	// DataPlane is how the group's gRPC implementation balances load,
	// keeps sessions and retries.
	DataPlane dataplane.Profile
}

// Restart restarts a fraction of a group's clients (all groups when Group
// is empty): each chosen client stops at a time uniform in
// [At, At+Spread) and starts again Downtime later.
type Restart struct {
	Group    string
	At       time.Duration
	Fraction float64
	Spread   time.Duration
	Downtime time.Duration
}

// ChangeAction is what a config change does to a service.
type ChangeAction uint8

// Config changes.
const (
	// DeleteService removes the service's listener, route, cluster and
	// endpoints.
	DeleteService ChangeAction = iota + 1
	// RestoreService sets the service back to how the server was
	// configured at the start.
	RestoreService
	// PublishInvalid publishes a resource of the service that clients must
	// NACK (Change.Defect says which).
	PublishInvalid
	// ScaleEndpoints sets the number of endpoints to Change.Count.
	ScaleEndpoints
	// DrainEndpoints marks the last Change.Count endpoints DRAINING.
	DrainEndpoints
	// SetHealth sets the health of Change.Count endpoints from
	// Change.First to Change.Health.
	SetHealth
	// ReplaceEndpoints gives Change.Count endpoints from Change.First new
	// addresses, as a rolling deploy gives new pods new IPs.
	ReplaceEndpoints
	// Publish replaces a server's verbatim resources with
	// Change.Publish: the next version of a user's config.
	Publish
	// DeleteResource deletes the resource Change.Type, Change.Name.
	DeleteResource
	// RestoreResource serves the verbatim resource Change.Type,
	// Change.Name again, as last published.
	RestoreResource
)

// Change is one config change on one or more control planes.
type Change struct {
	At time.Duration
	// Servers are the control planes it applies to (indexes); empty: all
	// that have the service.
	Servers []int
	Action  ChangeAction
	Service string
	// Cluster is the service's cluster the change acts on; "" means the
	// first for endpoint changes and defects, every cluster for
	// Resources.
	Cluster string
	// Resources, when not empty, narrows DeleteService to deleting (and
	// RestoreService to publishing again) only the service's resources of
	// these types: the listener, the route, the clusters' Cluster and
	// ClusterLoadAssignment.
	Resources controlplane.TypeSet
	Defect    controlplane.Defect
	Count     int
	First     int
	Health    corepb.HealthStatus
	// Publish is the next dump's resources, for Publish; the servers
	// keep them, so they must not be modified. Label names it in outputs.
	Publish []proto.Message
	Label   string
	// Type and Name are the resource DeleteResource and RestoreResource
	// act on.
	Type controlplane.ResourceType
	Name string
}

// RPCLoad is the RPC load each client of a group sends to each of its
// targets.
type RPCLoad struct {
	// Rate is RPCs per second per client and target; 0 sends none.
	Rate float64
	// Constant spaces RPCs evenly; otherwise they arrive as a Poisson
	// process.
	Constant bool
	// RandomStart sends a client's first RPC at a random phase of its
	// arrivals after it starts (an exponential gap, or a uniform part of
	// the constant one); otherwise the first RPC goes as the client
	// starts, as an application's first RPC on a new channel starts the
	// channel's resolution (startRPCs).
	RandomStart bool
	// Deadline is each RPC's deadline; 0 means none.
	Deadline time.Duration
	// Method is the RPC's method path ("/pkg.Service/Method"); a session
	// cookie applies only to methods within its path (gRFC A55).
	Method string
	// Methods, when given, are the RPC mix: each RPC takes one, drawn by
	// weight, with its path and headers. Empty means Method alone.
	Methods []Method
	// Sessions is how many gRFC A55 sessions each client keeps per target;
	// 0 sends RPCs without sessions. Each RPC takes the next session in
	// turn; a session ends after SessionRPCs RPCs or SessionLifetime (0:
	// no limit) and a new one takes its place.
	Sessions        int
	SessionRPCs     uint32
	SessionLifetime time.Duration
	// ThrottleMaxTokens and ThrottleTokenRatio are the service config's
	// retryThrottling (gRFC A6); 0 tokens means no throttling.
	ThrottleMaxTokens  int
	ThrottleTokenRatio float64
}

// BackendAction is what a backend event does to its backends.
type BackendAction uint8

// Backend events.
const (
	// BackendDown crashes the backends; after Duration (if not 0) they
	// start again as new processes.
	BackendDown BackendAction = iota + 1
	// BackendDrain starts their termination grace period: they serve for
	// Duration, then stop for good.
	BackendDrain
	// BackendSlow gives them ServiceTime for Duration (0: to the end).
	BackendSlow
	// BackendFail makes them answer ErrorRate of RPCs with ErrorCode for
	// Duration (0: to the end).
	BackendFail
)

// BackendEvent changes the ground truth of some backends over a span of
// virtual time.
type BackendEvent struct {
	At       time.Duration
	Duration time.Duration
	Action   BackendAction
	// Label names the event in outputs ("echo endpoints 0-2 down").
	Label string
	// Backends are the backends' keys (see dataplane.BackendKey), and
	// Range more of them: a cluster's generated endpoints, named by
	// their index, held as a range so that an event on 100 000 backends
	// costs a few bytes until the run starts.
	Backends    []string
	Range       BackendRange
	ServiceTime sim.Dist
	ErrorRate   float64
	ErrorCode   codes.Code
}

// A BackendRange is the backends of the generated endpoints First to
// First+Count-1 of a cluster (controlplane.GeneratedAddress), on the
// default port; Count 0 is none.
type BackendRange struct {
	Cluster      string
	First, Count int
}

// each calls fn with the key of each backend of r, in order.
func (r BackendRange) each(fn func(key string)) {
	for k := r.First; k < r.First+r.Count && k >= 0; k++ {
		fn(BackendKey(r.Cluster, controlplane.GeneratedAddress(k), controlplane.DefaultPort))
	}
}

// DataPlane configures what the fleet's RPCs reach and how failures are
// counted.
type DataPlane struct {
	// WindowGap merges a client's failures less than this apart into one
	// failure window.
	WindowGap time.Duration
	// Backend is every backend's behaviour when no event changes it:
	// ServiceTime, ErrorRate and ErrorCode are used.
	Backend dataplane.Backend
}
