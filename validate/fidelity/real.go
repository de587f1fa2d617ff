package fidelity

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc/codes"

	"github.com/xdssim/xdssim/model/controlplane"
	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/model/network"
	"github.com/xdssim/xdssim/model/xdsclient"
	"github.com/xdssim/xdssim/sim"
	"github.com/xdssim/xdssim/validate/grpcgo"
)

// RealRun is what a real run observed, with what the comparison needs to
// know about how the run went.
type RealRun struct {
	*Observation
	// StartSkew is the latest a client process started after its
	// scheduled time.
	StartSkew time.Duration
	// Records are the servers' raw records, for a failing case's report.
	Records []grpcgo.ServerRecord
	// Wire is, per server, every read and write it made on each client
	// connection (grpcgo.ManagementServer.Wire): what the processing
	// times are measured from. Start is the wall-clock time of the
	// case's time 0.
	Wire  map[string][][]grpcgo.WireEvent
	Start time.Time
	// Loopback are round trips through a proxy on loopback with nothing
	// to process, measured before the run (grpcgo.MeasureLoopback).
	Loopback []time.Duration
	// Load is the machine's load when the run ended: the 1-minute load
	// average and the CPU count, or "" where the system does not say.
	Load string
}

// loopbackRoundTrips is how many round trips measure the loopback, of
// messages the size of a NACK.
const loopbackRoundTrips, loopbackMessage = 2000, 300

// supported reports why the harness cannot run cfg for real, or nil.
func supported(cfg fleet.Config) error {
	var why []string
	for _, cp := range cfg.ControlPlanes {
		c := cp.Server
		if c.Capacity.Workers != 0 || c.Capacity.MaxStreams != 0 || c.Capacity.ServiceTime != (sim.Dist{}) {
			why = append(why, fmt.Sprintf("control plane %s has a capacity model (workers, service_time, max_streams)", c.Name))
		}
		if c.ResourceErrors {
			why = append(why, fmt.Sprintf("control plane %s sends TP3 resource errors, which grpc-go does not read", c.Name))
		}
	}
	for _, g := range cfg.Groups {
		if g.Profile.Name != "grpc-go" {
			why = append(why, fmt.Sprintf("group %s runs profile %s, not grpc-go", g.Name, g.Profile.Name))
		}
		if len(g.Targets) != 1 {
			why = append(why, fmt.Sprintf("group %s has %d targets, not 1", g.Name, len(g.Targets)))
		}
		if !g.RPC.Constant || g.RPC.Rate <= 0 {
			why = append(why, fmt.Sprintf("group %s must send RPCs at a constant rate", g.Name))
		}
		if g.StartSpread != 0 {
			why = append(why, fmt.Sprintf("group %s has a start spread (random starts; a stagger or a list of times is fine)", g.Name))
		}
		if g.RPC.Sessions != 0 || g.RPC.ThrottleMaxTokens != 0 {
			why = append(why, fmt.Sprintf("group %s uses sessions or retry throttling", g.Name))
		}
	}
	for i, f := range cfg.Faults {
		switch {
		case f.Kind != network.ServerDown && f.Kind != network.ServerRestart && f.Kind != network.Blackhole && f.Kind != network.BlackholeHold:
			why = append(why, fmt.Sprintf("fault %d is %v; the harness does server-down, server-restart, blackhole-hold and blackhole", i, f.Kind))
		case f.Groups != nil || f.Fraction != 0:
			why = append(why, fmt.Sprintf("fault %d covers only some clients", i))
		case f.Kind == network.Blackhole && f.End() != network.Never && time.Duration(f.End()) < cfg.Duration:
			// The proxy accepts and holds (it cannot drop SYNs without
			// root); until it clears, a held connect and a dropped SYN
			// both time out at the connect deadline, but not after.
			why = append(why, fmt.Sprintf("fault %d is a blackhole that clears within the run; the proxy can only hold (use blackhole-hold)", i))
		}
	}
	if hasMesh(cfg) {
		if _, err := meshEndpoints(cfg); err != nil {
			why = append(why, "its resources cannot be served for real: "+err.Error())
		}
		for _, g := range cfg.Groups {
			if len(g.RPC.Methods) > 1 || len(g.RPC.Methods) == 1 && len(g.RPC.Methods[0].Headers) > 0 {
				why = append(why, fmt.Sprintf("group %s sends an RPC mix or headers, which the real client does not", g.Name))
			}
		}
	}
	if len(cfg.Restarts) > 0 || len(cfg.BackendEvents) > 0 {
		why = append(why, "client restarts and backend events are not run for real")
	}
	if len(why) > 0 {
		return fmt.Errorf("fidelity: %s cannot run for real: %s", cfg.Name, strings.Join(why, "; "))
	}
	return nil
}

// realServer is one control plane of a real run: the simulator's model
// server, whose cache go-control-plane's real ADS server serves.
type realServer struct {
	initial controlplane.Config
	model   *controlplane.Server
	ms      *grpcgo.ManagementServer
}

// action is one step of a real run's timeline.
type action struct {
	at   time.Duration
	rank int // at equal times: faults, then changes, then client starts
	name string
	do   func() error
}

// Run runs cfg for real: grpc-go clients, go-control-plane servers and
// backends on loopback, with the faults and changes at their times.
func Run(ctx context.Context, cfg fleet.Config) (*RealRun, error) {
	if err := supported(cfg); err != nil {
		return nil, err
	}
	loopback, err := grpcgo.MeasureLoopback(loopbackRoundTrips, loopbackMessage)
	if err != nil {
		return nil, fmt.Errorf("fidelity: %w", err)
	}
	// Every endpoint of a cluster is a real backend on loopback: the same
	// backend for the same (service, cluster, index) on every server.
	ports := map[epKey]int{}
	var need int
	for _, cp := range cfg.ControlPlanes {
		for _, svc := range cp.Server.Services {
			for _, c := range clustersOf(&svc) {
				k := epKey{svc.Name, c.name}
				if n := len(c.endpoints); n > ports[k] {
					need += n - ports[k]
					ports[k] = n
				}
			}
		}
	}
	backends, err := grpcgo.StartBackends(need)
	if err != nil {
		return nil, fmt.Errorf("fidelity: backends: %w", err)
	}
	defer backends.Close()
	// The endpoints of resources served verbatim are backends at their
	// own addresses; their calls are counted at each change and at the
	// end, for where the RPCs went.
	meshEPs, _ := meshEndpoints(cfg)
	var meshAddrs []string
	for _, ep := range meshEPs {
		meshAddrs = append(meshAddrs, ep.addr)
	}
	meshBackends, err := grpcgo.StartBackendsAt(meshAddrs)
	if err != nil {
		return nil, fmt.Errorf("fidelity: the resources' backends: %w", err)
	}
	defer meshBackends.Close()
	var marks [][]int64
	first := map[epKey]int{}
	next := 0
	for _, k := range sortedEPKeys(ports) {
		first[k] = next
		next += ports[k]
	}

	rec := grpcgo.NewRecorder()
	var servers []*realServer
	defer func() {
		for _, s := range servers {
			s.ms.Close()
		}
	}()
	for i, cp := range cfg.ControlPlanes {
		c := cp.Server
		c.Services = slices.Clone(c.Services)
		for j := range c.Services {
			svc := &c.Services[j]
			svc.Clusters = slices.Clone(svc.Clusters)
			for _, cl := range clustersOf(svc) {
				eps := slices.Clone(cl.endpoints)
				for k := range eps {
					eps[k].Address, eps[k].Port = "127.0.0.1", uint32(backends.Ports()[first[epKey{svc.Name, cl.name}]+k])
				}
				*cl.set, *cl.count = eps, 0
			}
		}
		c.Rand = sim.NewStream(cfg.Seed, "controlplane/"+c.Name)
		m, err := controlplane.New(c)
		if err != nil {
			return nil, fmt.Errorf("fidelity: control plane %d: %w", i, err)
		}
		// The real server follows the same NACK policy as the simulated
		// one, through go-control-plane's request callback and the watch's
		// subscription (controlplane.NACKPolicy).
		ms, err := grpcgo.StartManagementServerWith(c.Name, m.Cache(), rec, c.OnNACK)
		if err != nil {
			return nil, fmt.Errorf("fidelity: control plane %s: %w", c.Name, err)
		}
		servers = append(servers, &realServer{initial: c, model: m, ms: ms})
	}

	var acts []action
	for i := range cfg.Faults {
		f := cfg.Faults[i]
		covered := f.Servers
		if covered == nil {
			for s := range servers {
				covered = append(covered, s)
			}
		}
		set := func(start bool) func() error {
			return func() error {
				for _, s := range covered {
					p := servers[s].ms.Proxy()
					var err error
					switch {
					case !start:
						err = p.Forward()
					case f.Kind == network.Blackhole || f.Kind == network.BlackholeHold:
						// Accepts and holds the bytes until Forward.
						err = p.Blackhole()
					default:
						p.Refuse()
					}
					if err != nil {
						return err
					}
				}
				return nil
			}
		}
		acts = append(acts, action{at: time.Duration(f.Start), rank: 0, name: fmt.Sprintf("%v starts", f.Kind), do: set(true)})
		if end := f.End(); end != network.Never && time.Duration(end) < cfg.Duration {
			acts = append(acts, action{at: time.Duration(end), rank: 0, name: fmt.Sprintf("%v ends", f.Kind), do: set(false)})
		}
	}
	for i := range cfg.Changes {
		ch := &cfg.Changes[i]
		acts = append(acts, action{at: ch.At, rank: 1, name: fmt.Sprintf("%v %s", ch.Action, ch.Service), do: func() error {
			models := make([]*controlplane.Server, len(servers))
			for s := range servers {
				models[s] = servers[s].model
			}
			if ch.At > 0 && (len(marks) == 0 || i == 0 || cfg.Changes[i-1].At != ch.At) {
				marks = append(marks, meshBackends.Calls())
			}
			for _, s := range ch.Targets(models) {
				if _, err := ch.Apply(servers[s].model, servers[s].initial, sim.Time(ch.At)); err != nil {
					return err
				}
			}
			return nil
		}})
	}
	type started struct {
		name string
		at   time.Duration
		c    *grpcgo.Client
	}
	var clients []*started
	defer func() {
		for _, c := range clients {
			if c.c != nil {
				c.c.Kill()
			}
		}
	}()
	for _, g := range cfg.Groups {
		var addrs []string
		for _, s := range g.Servers {
			addrs = append(addrs, servers[s].ms.Addr())
		}
		for k := 0; k < g.Clients; k++ {
			at := g.StartAt + time.Duration(k)*g.StartStagger
			if k < len(g.StartTimes) {
				at = g.StartAt + g.StartTimes[k]
			}
			st := &started{name: fmt.Sprintf("%s/%d", g.Name, k), at: at}
			clients = append(clients, st)
			spec := grpcgo.ClientSpec{
				Name:      st.name,
				Target:    "xds:///" + g.Targets[0],
				Bootstrap: grpcgo.Bootstrap(st.name, addrs, g.Features.Names()),
				Rate:      g.RPC.Rate,
				Deadline:  g.RPC.Deadline,
				Method:    g.RPC.Method,
				Run:       cfg.Duration - at,
			}
			acts = append(acts, action{at: at, rank: 2, name: "start " + st.name, do: func() error {
				c, err := grpcgo.StartClient(spec)
				st.c = c
				return err
			}})
		}
	}
	slices.SortStableFunc(acts, func(a, b action) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return a.rank - b.rank
	})

	t0 := time.Now()
	for _, a := range acts {
		if err := sleepUntil(ctx, t0.Add(a.at)); err != nil {
			return nil, err
		}
		if err := a.do(); err != nil {
			return nil, fmt.Errorf("fidelity: at %v, %s: %w", a.at, a.name, err)
		}
	}
	run := &RealRun{Observation: &Observation{}, Start: t0, Loopback: loopback}
	var errs []error
	for _, st := range clients {
		events, err := st.c.Wait()
		st.c = nil
		if err != nil {
			errs = append(errs, fmt.Errorf("client %s: %w", st.name, err))
			continue
		}
		c := run.client(st.name)
		last := map[string]string{}
		for _, e := range events {
			at := time.Unix(0, e.At).Sub(t0)
			switch e.Kind {
			case grpcgo.EventStart:
				run.StartSkew = max(run.StartSkew, at-st.at)
			case grpcgo.EventRPC:
				code, ok := codeByName[e.Code]
				if !ok {
					errs = append(errs, fmt.Errorf("client %s: unknown status code %q", st.name, e.Code))
				}
				c.RPCs = append(c.RPCs, RPC{End: at, Code: code})
			case grpcgo.EventCSDS:
				typ := typeName(e.TypeURL)
				key := typ + "/" + e.Name
				// A name that goes from requested (or nowhere) to
				// does-not-exist was timed out; from ACKED it was deleted.
				if e.Status == adminpb.ClientResourceStatus_DOES_NOT_EXIST.String() &&
					(last[key] == "" || last[key] == adminpb.ClientResourceStatus_REQUESTED.String()) {
					c.Timers = append(c.Timers, TimerFiring{At: at, Type: typ, Name: e.Name})
				}
				last[key] = e.Status
				c.States = append(c.States, ResourceState{At: at, Type: typ, Name: e.Name, Status: e.Status, Version: e.Version, Error: e.Error})
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if hasMesh(cfg) {
		// Every client has exited: the last phase's calls are in.
		run.Routing = meshRouting(cfg, meshEPs, append(marks, meshBackends.Calls()))
	}
	run.Records = rec.Records()
	run.addServerRecords(t0, cfg)
	run.Wire = map[string][][]grpcgo.WireEvent{}
	for _, s := range servers {
		run.Wire[s.initial.Name] = s.ms.Wire()
		for _, ev := range s.ms.Proxy().ConnEvents() {
			if at := ev.At.Sub(t0); at < cfg.Duration {
				run.conn(s.initial.Name, Conn{At: at, Opened: ev.Opened})
			}
		}
	}
	run.Load = machineLoad()
	run.finish(cfg.DataPlane.WindowGap)
	return run, nil
}

// machineLoad describes the machine's load: other work on it slows the
// real clients and servers, and with them a NACK storm.
func machineLoad() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	return fmt.Sprintf("load average %s on %d CPUs", f[0], runtime.NumCPU())
}

// addServerRecords turns the servers' records into streams and messages,
// and derives the fallback switches: a stream a client opens to a server
// other than its first is a switch to it (grpc-go creates the fallback
// channel when it falls back, authority.go fallbackToServer); the close
// of that stream while the client's primary stream has had a response is
// the revert (the fallback channel is closed when the primary answers).
func (r *RealRun) addServerRecords(t0 time.Time, cfg fleet.Config) {
	primary := map[string]string{} // client -> its first server's name
	for _, g := range cfg.Groups {
		for k := 0; k < g.Clients; k++ {
			primary[fmt.Sprintf("%s/%d", g.Name, k)] = cfg.ControlPlanes[g.Servers[0]].Server.Name
		}
	}
	type key struct {
		server string
		stream int64
	}
	node := map[key]string{}
	answered := map[key]bool{}
	live := map[string]key{} // client -> its live primary stream
	for _, rec := range r.Records {
		at := rec.At.Sub(t0)
		if at >= cfg.Duration {
			// The clients shut down: their unsubscriptions are not
			// part of the case.
			continue
		}
		k := key{rec.Server, rec.Stream}
		if rec.Node != "" {
			node[k] = rec.Node
		}
		name := node[k]
		if name == "" {
			continue // a stream that never sent a request
		}
		c := r.client(name)
		switch rec.Kind {
		case grpcgo.KindRequest, grpcgo.KindResponse:
			i := slices.IndexFunc(c.Streams, func(s Stream) bool { return s.Server == rec.Server && s.id == rec.Stream })
			if i < 0 {
				// The stream's first message: the node is known only
				// from the first request.
				c.Streams = append(c.Streams, Stream{Server: rec.Server, Open: at, id: rec.Stream})
				i = len(c.Streams) - 1
				if rec.Server != primary[name] {
					c.Switches = append(c.Switches, Switch{At: at, Server: rec.Server})
				} else {
					live[name] = k
				}
			}
			m := Message{At: at, Response: rec.Kind == grpcgo.KindResponse, Type: typeName(rec.TypeURL), Version: rec.Version, Nonce: rec.Nonce, NACK: rec.NACK}
			if !m.Response {
				m.Names = sortedCopy(rec.Names)
			} else {
				answered[k] = true
			}
			c.Streams[i].Messages = append(c.Streams[i].Messages, m)
		case grpcgo.KindClose:
			if rec.Server != primary[name] {
				if p, ok := live[name]; ok && answered[p] {
					c.Switches = append(c.Switches, Switch{At: at, Server: primary[name], Revert: true})
				}
			} else if live[name] == k {
				delete(live, name)
			}
		}
	}
}

// epKey names a cluster of a service.
type epKey struct{ service, cluster string }

func sortedEPKeys(m map[epKey]int) []epKey {
	var out []epKey
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b epKey) int {
		if a.service != b.service {
			return strings.Compare(a.service, b.service)
		}
		return strings.Compare(a.cluster, b.cluster)
	})
	return out
}

// clusterEndpoints is one cluster of a service: its endpoints (generated
// ones filled in) and where the service keeps them.
type clusterEndpoints struct {
	name      string
	endpoints []controlplane.Endpoint
	set       *[]controlplane.Endpoint
	count     *int
}

// clustersOf returns the clusters of svc, pointing into it.
func clustersOf(svc *controlplane.Service) []clusterEndpoints {
	gen := func(eps []controlplane.Endpoint, n int) []controlplane.Endpoint {
		if len(eps) > 0 {
			return eps
		}
		out := make([]controlplane.Endpoint, n)
		for i := range out {
			out[i] = controlplane.Endpoint{Address: controlplane.GeneratedAddress(i), Health: corepb.HealthStatus_HEALTHY}
		}
		return out
	}
	if len(svc.Clusters) == 0 {
		return []clusterEndpoints{{svc.ClusterNames()[0], gen(svc.Endpoints, svc.EndpointCount), &svc.Endpoints, &svc.EndpointCount}}
	}
	var out []clusterEndpoints
	for i := range svc.Clusters {
		c := &svc.Clusters[i]
		out = append(out, clusterEndpoints{c.Name, gen(c.Endpoints, c.EndpointCount), &c.Endpoints, &c.EndpointCount})
	}
	return out
}

func typeName(url string) string {
	t, err := xdsclient.ParseResourceType(url)
	if err != nil {
		return url
	}
	return t.String()
}

// codeByName maps the name a client process reports a status code by
// (grpcgo.CodeName) back to the code.
var codeByName = func() map[string]codes.Code {
	m := map[string]codes.Code{}
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		m[grpcgo.CodeName(c)] = c
	}
	return m
}()

func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
