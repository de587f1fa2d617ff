package fleet

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/xdssim/xdssim/internal/prefetch"
	"github.com/xdssim/xdssim/model/controlplane"
	"github.com/xdssim/xdssim/model/dataplane"
	"github.com/xdssim/xdssim/model/network"
	"github.com/xdssim/xdssim/model/xdsclient"
	"github.com/xdssim/xdssim/sim"
)

// Event kinds of the fleet world. Entity says which client, connection,
// server, timer, fault edge or change the event is for.
const (
	// kindStart starts a client (Entity: client); Arg is argEndsRestart for
	// the start that ends a restart.
	kindStart uint32 = iota + 1
	// kindStop stops a client for a restart (Entity: client; Arg: the
	// restart's index).
	kindStop
	// kindAttemptEnd ends a connect attempt (Entity: conn;
	// Arg: epoch<<40 | attempt<<8 | result).
	kindAttemptEnd
	// kindBackoffTimer fires a channel's backoff timer (Entity: conn;
	// Arg: epoch<<32 | timer id).
	kindBackoffTimer
	// kindToServer delivers the next client message of a stream to its
	// server (Entity: conn; Arg: the network.StreamID).
	kindToServer
	// kindToClient delivers the next server message of a stream to the
	// client (Entity: conn; Arg: the network.StreamID).
	kindToClient
	// kindXDSTimer fires an XdsClient timer (Entity: timer slot; Arg: the
	// slot's generation).
	kindXDSTimer
	// kindJobDone ends a request's service on a server (Entity: server;
	// Arg: the controlplane.JobID).
	kindJobDone
	// kindFaultEdge applies the start or end of a fault (Entity: edge).
	kindFaultEdge
	// kindChange applies a config change (Entity: change).
	kindChange
	// kindRPCArrival begins an RPC (Entity: instance; Arg: its rpcGen).
	kindRPCArrival
	// kindRPCAttempt ends an RPC attempt (Entity: rpc slot; Arg: its gen).
	kindRPCAttempt
	// kindRPCRetry starts a retry attempt (Entity: rpc slot; Arg: its gen).
	kindRPCRetry
	// kindBackend starts (Arg 0) or ends (Arg 1) a backend event
	// (Entity: the event).
	kindBackend
	// kindKeepalive closes a transport for keepalive (Entity: conn;
	// Arg: epoch<<32 | the stream's generation).
	kindKeepalive
	// kindSteadyEnd ends an instance's bulk run of RPCs when its first
	// session reaches its lifetime (Entity: instance; Arg: its arrivals
	// chain).
	kindSteadyEnd
	// kindProcessed ends a client's processing of a response (Entity:
	// conn; Arg: the network.StreamID).
	kindProcessed
)

// argEndsRestart marks the kindStart event that ends a restart.
const argEndsRestart = 1

// client is one simulated client. It is kept small: a fleet of 100 000
// clients holds 100 000 of these.
type client struct {
	group     uint32
	index     uint32 // within its group
	up        bool
	started   bool      // it has started at least once
	downAt    sim.Time  // when the current restart took it down
	firstInst uint32    // its XdsClient instances: firstInst .. +len(targets)
	rng       *sim.Rand // its stream, own
	ref       network.ClientRef
	// own is the client's random stream, beside the rest of it: the
	// world's clients are made once, in an array that never moves.
	own sim.Rand
}

// world is a running simulation of one Config. It implements sim.Handler.
type world struct {
	cfg     Config
	kernel  *sim.Kernel
	clients []client
	insts   []instance
	conns   []conn
	// connInst and xdsOf repeat conns[ci].inst and insts[ii].xds for
	// Ahead: 4 and 8 bytes an entry, they stay in the caches, so finding
	// an event's state to ask for waits for no memory.
	connInst []uint32
	xdsOf    []*xdsclient.Client
	servers  []*controlplane.Server
	faults   *network.Faults
	edges    []network.Edge
	timers   timerSlots
	decoded  decodeCache
	xq       effectQueue
	effects  xdsclient.Effects // the XdsClients' shared effect buffer
	// lbScratch holds the buffers a channel's new config is built in.
	lbScratch dataplane.Scratch
	// poolKeys are, per group, its targets' XdsClient pool keys
	// ("xds:///" + target), built once rather than per client.
	poolKeys [][]string
	// The arrays of the connections' message queues (conn.go spares).
	outSpares spares[outbound]
	inSpares  spares[inbound]
	fx        fleetCounters
	warm      uint64 // what was read ahead of use (package prefetch)

	backends dataplane.Backends
	// eventBackends are the backends of each backend event, as runs of
	// consecutive identifiers (buildDataPlane).
	eventBackends [][]idRun
	routing       routing
	dpConfigs     map[string]*dataplane.Config
	// ids number the decoded resources for dpConfigs' keys; clusters
	// and keyBuf are rederive's and channelConfig's scratch.
	ids      map[*xdsclient.Decoded]uint32
	profIDs  map[dataplane.Profile]uint32
	clusters []clusterRef
	keyBuf   []byte
	rpcs     rpcSlots
	// flying, bulkStarts, ages and settleRng are settleSteady's scratch
	// (steady.go).
	flying     []flight
	bulkStarts []sim.Time
	ages       []time.Duration
	settleRng  sim.Rand
	// local runs the RPC events of a bulk run that is replayed, while
	// replaying (steady.go).
	local     *sim.Kernel
	replaying bool
	// failing counts the backend events that make backends fail RPCs
	// and have begun but not ended: without them (and without a default
	// error rate) no instance needs replayEligible's look.
	failing int
	dp      dpCounters
	lat     latencies
	groups  []groupCounters // per group, in Config order
	// sources labels the incidents windows are attributed to (see
	// attribute), by index.
	sources []string
	// spans are the run's faults with their recovery times, once the
	// run is over.
	spans []Fault

	// peakFailing is the peak of rpc.clients_failing, once the run is
	// over.
	peakFailing float64

	running, down, peakDown int
	starts, restarts        int
	startsSinceSample       int

	sample    int
	series    []Series
	serverSe  [][]int // per server: indexes into series
	groupSe   []groupSeries
	intervals []Interval
	tr        trackSet
	a78       a78Set
	hists     [numHists]Histogram
	progress  func(now, end time.Duration)
	tracer    func(*TraceEvent)
	// traced says which instances the tracer follows; nil: every one.
	traced      []bool
	exactRPCs   bool
	settleAlone bool
}

// Options are what a caller may ask of a run beyond its Config.
type Options struct {
	// Progress, if set, is called at every sample with the virtual time
	// reached and the virtual time the run ends at.
	Progress func(now, end time.Duration)
	// Trace, if set, is called with every event of every instance that
	// TraceKind lists, in virtual-time order. The event is only valid
	// during the call. A traced run is the same run as without: the RPCs
	// of a steady channel are reported in bulk (TraceSteadyRPCs), unless
	// ExactRPCs takes them one by one. One exception: a traced instance
	// whose backend fails a share of its RPCs takes them one by one
	// rather than replaying them at the end of a bulk run (steady.go), so
	// that its trace tells each in time order; its client's random stream
	// is then drawn in another order when its XdsClient draws from it
	// meanwhile, which makes the traced run another sample of the same
	// distribution.
	Trace func(*TraceEvent)
	// TraceClients, if not empty, limits Trace to these clients, each
	// named "group/index" (every target of the client) or
	// "group/index/target" (one of its XdsClient instances); the others
	// are not traced and cost nothing. An unknown name is an error
	// ([Config.CheckClient]). Tracing never changes the run (but for
	// Trace's exception).
	TraceClients []string
	// ExactRPCs takes every RPC one by one, even those of a steady
	// channel that would be accounted in bulk (steady.go): a run of the
	// same distribution, several times slower.
	ExactRPCs bool
	// settleAlone accounts at the end of the run for each bulk run alone,
	// not together with those alike (settleAtEnd): for tests.
	settleAlone bool
	// Inspect, if set, is called at each virtual time of InspectAt (in
	// order; times past the end of the run are not reached), once every
	// event at or before it has run, to look at the world as it is then.
	// The Inspector is valid only during the call. Inspecting never
	// changes the run.
	Inspect   func(at time.Duration, in *Inspector)
	InspectAt []time.Duration
	// MaxEvents, if not 0, stops the run once it has handled that many
	// kernel events: Run then returns an *EventLimitError and no results.
	MaxEvents uint64
	// Events, if set, is called every EventsEvery events with the count
	// so far and the virtual time reached, so that a caller can tell a
	// run that heads far past its estimate. It never changes the run.
	Events func(events uint64, now time.Duration)
}

// EventsEvery is how often, in events, Options.Events is called.
const EventsEvery = 1 << 20

// An EventLimitError is a run stopped at Options.MaxEvents.
type EventLimitError struct {
	Limit uint64
	// At is the virtual time the run had reached; End where it would
	// have ended.
	At, End time.Duration
}

func (e *EventLimitError) Error() string {
	return fmt.Sprintf("fleet: stopped after %d events, at %s of %s of virtual time", e.Limit, e.At, e.End)
}

// Run builds the world of cfg, runs it for cfg.Duration of virtual time,
// and returns what happened.
func Run(cfg Config, opts Options) (*Results, error) {
	w, err := build(cfg)
	if err != nil {
		return nil, err
	}
	w.progress = opts.Progress
	w.tracer = opts.Trace
	if w.tracer != nil && len(opts.TraceClients) > 0 {
		if w.traced, err = w.selectTraced(opts.TraceClients); err != nil {
			return nil, err
		}
	}
	w.exactRPCs = opts.ExactRPCs
	w.settleAlone = opts.settleAlone
	if opts.MaxEvents > 0 || opts.Events != nil {
		w.watchEvents(opts.MaxEvents, opts.Events)
	}
	// stopped is the run cut at opts.MaxEvents, as watchEvents does.
	stopped := func() error {
		if opts.MaxEvents == 0 || w.kernel.Events() < opts.MaxEvents {
			return nil
		}
		return &EventLimitError{Limit: opts.MaxEvents, At: time.Duration(w.kernel.Now()), End: cfg.Duration}
	}
	if opts.Inspect != nil {
		at := slices.Sorted(slices.Values(opts.InspectAt))
		for _, t := range at {
			if t < 0 || t > cfg.Duration {
				continue
			}
			w.kernel.Run(sim.Time(0).Add(t))
			if err := stopped(); err != nil {
				return nil, err
			}
			opts.Inspect(t, &Inspector{w: w})
		}
	}
	w.kernel.Run(sim.Time(0).Add(cfg.Duration))
	if err := stopped(); err != nil {
		return nil, err
	}
	return w.results(), nil
}

// watchEvents stops the run at limit events (0: no limit) and reports the
// count every EventsEvery events to fn.
func (w *world) watchEvents(limit uint64, fn func(events uint64, now time.Duration)) {
	next := func(n uint64) uint64 {
		at := uint64(0)
		if fn != nil {
			at = n + EventsEvery - n%EventsEvery
		}
		if limit > 0 && (at == 0 || limit < at) && limit > n {
			at = limit
		}
		return at
	}
	w.kernel.Watch(next(0), func(n uint64) uint64 {
		if fn != nil && n%EventsEvery == 0 {
			fn(n, time.Duration(w.kernel.Now()))
		}
		if limit > 0 && n >= limit {
			w.kernel.Stop()
			return 0
		}
		return next(n)
	})
}

func build(cfg Config) (*world, error) {
	w := &world{cfg: cfg, dpConfigs: map[string]*dataplane.Config{}, ids: map[*xdsclient.Decoded]uint32{},
		profIDs: map[dataplane.Profile]uint32{}}
	// The groups are the caller's (a sweep builds many worlds from one):
	// the RPC mix is filled in on a copy.
	w.cfg.Groups = slices.Clone(w.cfg.Groups)
	for gi := range w.cfg.Groups {
		w.cfg.Groups[gi].RPC.methods()
	}
	w.kernel = sim.NewKernel(w)
	w.local = sim.NewLocalKernel(w)
	if err := w.resolveChannels(); err != nil {
		return nil, err
	}
	total := 0
	for _, g := range cfg.Groups {
		total += g.Clients
	}
	if total == 0 {
		return nil, fmt.Errorf("fleet: no clients")
	}
	if err := w.buildServers(); err != nil {
		return nil, err
	}
	w.clients = make([]client, 0, total)
	// The instances and their connections, sized at once: grown by
	// append, they would hold up to twice their size at a million clients.
	insts, conns := 0, 0
	for _, g := range cfg.Groups {
		if len(g.Servers) > 0 {
			insts += g.Clients * len(g.Targets)
			conns += g.Clients * len(g.Targets) * len(g.Servers)
		}
	}
	w.insts = make([]instance, 0, insts)
	w.conns = make([]conn, 0, conns)
	w.connInst = make([]uint32, 0, conns)
	w.xdsOf = make([]*xdsclient.Client, insts)
	w.groups = make([]groupCounters, len(cfg.Groups))
	byGroup := make(map[string][]uint32, len(cfg.Groups))
	for gi, g := range cfg.Groups {
		for i := 0; i < g.Clients; i++ {
			id := uint32(len(w.clients))
			key := fmt.Sprintf("client/%s/%d", g.Name, i)
			// Each client draws from its own stream, so adding a client
			// never moves another's start, latencies or jitter.
			w.clients = append(w.clients, client{group: uint32(gi), index: uint32(i), ref: network.NewClientRef(gi, key)})
			c := &w.clients[id]
			c.own.Init(cfg.Seed, key)
			c.rng = &c.own
			byGroup[g.Name] = append(byGroup[g.Name], id)
			at := g.StartAt
			switch {
			case len(g.StartTimes) > i:
				at += g.StartTimes[i]
			case g.StartStagger > 0:
				at += time.Duration(i) * g.StartStagger
			case g.StartSpread > 0:
				at += time.Duration(w.clients[id].rng.Uniform(0, float64(g.StartSpread)))
			}
			w.kernel.Schedule(sim.Event{At: sim.Time(0).Add(at), Entity: id, Kind: kindStart})
			w.addInstances(id)
		}
	}
	for ri, r := range cfg.Restarts {
		var pool []uint32
		if r.Group == "" {
			pool = make([]uint32, len(w.clients))
			for i := range pool {
				pool[i] = uint32(i)
			}
		} else {
			pool = append([]uint32(nil), byGroup[r.Group]...)
		}
		if len(pool) == 0 {
			return nil, fmt.Errorf("fleet: restart %d: no group named %q", ri, r.Group)
		}
		// The restart's own stream picks its clients (a partial
		// Fisher-Yates shuffle) and their stop times.
		rng := sim.NewStream(cfg.Seed, fmt.Sprintf("restart/%d", ri))
		k := max(1, int(math.Round(r.Fraction*float64(len(pool)))))
		for i := 0; i < k; i++ {
			j := i + rng.IntN(len(pool)-i)
			pool[i], pool[j] = pool[j], pool[i]
			at := r.At
			if r.Spread > 0 {
				at += time.Duration(rng.Uniform(0, float64(r.Spread)))
			}
			w.kernel.Schedule(sim.Event{At: sim.Time(0).Add(at), Entity: pool[i], Kind: kindStop, Arg: uint64(ri)})
		}
	}
	w.buildDataPlane()
	w.buildLatencies()
	if err := w.scheduleFaultsAndChanges(); err != nil {
		return nil, err
	}
	w.routing.init(&w.cfg)
	w.buildSeries()
	w.buildTracks()
	w.buildA78()
	w.buildHistograms()
	w.kernel.SetSampler(cfg.SampleInterval, w.takeSample)
	return w, nil
}

// clientName is how a client is named in outputs: group/index.
func (w *world) clientName(id uint32) string {
	c := &w.clients[id]
	return fmt.Sprintf("%s/%d", w.cfg.Groups[c.group].Name, c.index)
}

// Ahead asks for the state that event ev, which runs soon, reads first
// (sim.Looker): for a response, its connection, instance and XdsClient,
// so that their lines arrive while the event before it runs. It reads
// only what leads to them, and changes nothing.
func (w *world) Ahead(ev *sim.Event) {
	switch ev.Kind {
	case kindToClient, kindProcessed:
		ii := w.connInst[ev.Entity]
		prefetch.Hint(&w.conns[ev.Entity])
		prefetch.Hint(&w.insts[ii])
		if x := w.xdsOf[ii]; x != nil {
			x.Hint()
		}
	case kindToServer, kindAttemptEnd, kindBackoffTimer, kindKeepalive:
		prefetch.Hint(&w.conns[ev.Entity])
	case kindXDSTimer:
		prefetch.Hint(&w.timers.slots[ev.Entity])
	case kindRPCArrival:
		prefetch.Hint(&w.insts[ev.Entity])
	}
}

// HandleEvent runs one event of the fleet world.
func (w *world) HandleEvent(k *sim.Kernel, ev sim.Event) {
	switch ev.Kind {
	case kindStart:
		w.startClient(ev)
	case kindStop:
		w.stopClient(ev)
	case kindAttemptEnd, kindBackoffTimer:
		w.channelEvent(ev)
	case kindToServer:
		w.deliverToServer(ev)
	case kindToClient:
		w.deliverToClient(ev)
	case kindXDSTimer:
		w.xdsTimerFired(ev)
	case kindJobDone:
		w.jobDone(ev)
	case kindFaultEdge:
		w.applyEdge(int(ev.Entity))
	case kindChange:
		w.applyChange(int(ev.Entity))
	case kindRPCArrival:
		w.rpcArrival(ev)
	case kindRPCAttempt:
		w.attemptDone(ev)
	case kindRPCRetry:
		w.rpcRetry(ev)
	case kindBackend:
		w.backendEvent(ev)
	case kindKeepalive:
		w.keepaliveFired(ev)
	case kindSteadyEnd:
		w.steadyEnd(ev)
	case kindProcessed:
		w.responseProcessed(ev)
	default:
		panic(fmt.Sprintf("fleet: unknown event kind %d", ev.Kind))
	}
}

func (w *world) startClient(ev sim.Event) {
	c := &w.clients[ev.Entity]
	if c.up {
		panic(fmt.Sprintf("fleet: client %d started while up", ev.Entity)) // invariant
	}
	now := w.kernel.Now()
	if ev.Arg == argEndsRestart {
		w.down--
		w.intervals = append(w.intervals, Interval{
			Entity: w.clientName(ev.Entity), Kind: "restart",
			Start: time.Duration(c.downAt), End: time.Duration(now),
		})
	}
	c.up, c.started = true, true
	w.running++
	w.starts++
	w.startsSinceSample++
	if w.tracer != nil {
		w.traceClient(ev.Entity, TraceEvent{Kind: TraceClientStart, Rule: ruleStart})
	}
	w.startInstances(ev.Entity)
}

func (w *world) stopClient(ev sim.Event) {
	c := &w.clients[ev.Entity]
	// A client that is not up (not started yet, or down for another
	// restart) has nothing to restart.
	if !c.up {
		return
	}
	c.up = false
	c.downAt = w.kernel.Now()
	w.running--
	w.down++
	w.peakDown = max(w.peakDown, w.down)
	w.restarts++
	if w.tracer != nil {
		w.traceClient(ev.Entity, TraceEvent{Kind: TraceClientStop, Count: int(ev.Arg), Delay: w.cfg.Restarts[ev.Arg].Downtime, Rule: ruleRestart})
	}
	w.stopInstances(ev.Entity)
	w.kernel.After(w.cfg.Restarts[ev.Arg].Downtime, sim.Event{Entity: ev.Entity, Kind: kindStart, Arg: argEndsRestart})
}

func (w *world) results() *Results {
	w.settleAtEnd(sim.Time(0).Add(w.cfg.Duration))
	w.closeWindows()
	w.trackWindows()
	w.spans = w.faultList()
	dps := w.dataPlaneSeries(w.sample)
	if len(dps) > 0 {
		w.peakFailing = slices.Max(dps[0].Values) // rpc.clients_failing
	}
	r := &Results{
		Scenario:       w.cfg.Name,
		Description:    w.cfg.Description,
		Seed:           w.cfg.Seed,
		Clients:        len(w.clients),
		Duration:       w.cfg.Duration,
		Events:         w.kernel.Events(),
		ReplayedRPCs:   w.dp.replayed,
		Groups:         groupInfo(&w.cfg),
		SampleInterval: w.cfg.SampleInterval,
		Samples:        w.sample,
		Series:         append(w.series, dps...),
		Metrics:        metrics(&w.cfg, w),
		TrackInterval:  w.trackInterval(),
		Tracks:         w.tr.tracks,
		Histograms:     slices.Clone(w.hists[:]),
		RPCLatency:     w.fleetLatency(),
		Intervals:      append(w.intervals, w.windowIntervals()...),
		Faults:         w.spans,
		Resolved:       w.cfg.Resolved,
		WhatIf:         w.cfg.WhatIf,
		Routing:        w.routing.results(w.cfg.Duration),
		Unmodelled:     w.cfg.Unmodelled,

		XdsClientMetrics: w.a78Results(),
	}
	sort.SliceStable(r.Intervals, func(i, j int) bool {
		a, b := r.Intervals[i], r.Intervals[j]
		if a.Start != b.Start {
			return a.Start < b.Start
		}
		return a.Entity < b.Entity
	})
	return r
}

// groupInfo describes the groups of cfg.
func groupInfo(cfg *Config) []GroupInfo {
	out := make([]GroupInfo, len(cfg.Groups))
	for i, g := range cfg.Groups {
		out[i] = GroupInfo{Name: g.Name, Clients: g.Clients}
		if len(g.Servers) > 0 {
			out[i].Profile = g.Profile.Name
		}
	}
	return out
}

// faultList is everything the scenario did to the fleet (faults,
// restarts, backend events, config changes), sorted by start, each with
// the failure windows it caused and how long after its end they went on.
func (w *world) faultList() []Fault {
	ins := w.incidents()
	w.attribute(ins)
	w.sources = make([]string, len(ins))
	out := make([]Fault, len(ins))
	for i := range ins {
		out[i], w.sources[i] = ins[i].Fault, ins[i].Label
	}
	return out
}

// restartLabel names restart ri in outputs.
func restartLabel(ri int, rs Restart) string {
	who := "every group"
	if rs.Group != "" {
		who = rs.Group
	}
	return fmt.Sprintf("restart %d: %g%% of %s", ri, rs.Fraction*100, who)
}

// resolveChannels gives every group whose channel backoffs are the zero
// value its implementation's own (network.BackoffConfigOf), on a copy of
// the groups so that the caller's Config is not changed, and checks them
// and the XdsClient profile: the channels keep pointers to these configs,
// and every XdsClient of a group shares its profile.
func (w *world) resolveChannels() error {
	w.cfg.Groups = slices.Clone(w.cfg.Groups)
	for i := range w.cfg.Groups {
		g := &w.cfg.Groups[i]
		if len(g.Servers) > 0 {
			if err := g.Profile.Validate(); err != nil {
				return fmt.Errorf("fleet: group %s: %w", g.Name, err)
			}
		}
		def, ok := network.BackoffConfigOf(g.Profile.Name)
		if !ok {
			def = network.DefaultBackoffConfig()
		}
		for _, b := range []*network.BackoffConfig{&g.XDSChannel, &g.DataChannel} {
			if *b == (network.BackoffConfig{}) {
				*b = def
			}
			if err := b.Validate(); err != nil {
				return fmt.Errorf("fleet: group %s: %w", g.Name, err)
			}
		}
	}
	return nil
}
