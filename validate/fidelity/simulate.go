package fidelity

import (
	"fmt"
	"time"

	"github.com/xdssim/xdssim/model/fleet"
)

// Simulate runs cfg in the simulator and returns what it observed.
func Simulate(cfg fleet.Config) (*Observation, error) {
	obs := &Observation{}
	trace := func(e *fleet.TraceEvent) {
		c := obs.client(e.Client)
		switch e.Kind {
		case fleet.TraceStreamOpen:
			c.Streams = append(c.Streams, Stream{Server: e.Server, Open: e.At})
		case fleet.TraceRequest, fleet.TraceResponse:
			// A server sees messages only on a stream it opened.
			s := c.lastStream(e.Server)
			m := Message{At: e.At, Response: e.Kind == fleet.TraceResponse, Type: e.Type.String(),
				Version: e.Version, Nonce: e.Nonce, NACK: e.NACK}
			if !m.Response {
				m.Names = sortedCopy(e.Names)
			}
			s.Messages = append(s.Messages, m)
		case fleet.TraceResourceTimer:
			c.Timers = append(c.Timers, TimerFiring{At: e.At, Type: e.Type.String(), Name: e.Names[0]})
		case fleet.TraceFallback, fleet.TraceRevert:
			c.Switches = append(c.Switches, Switch{At: e.At, Server: e.Server, Revert: e.Kind == fleet.TraceRevert})
		case fleet.TraceRPC:
			c.RPCs = append(c.RPCs, RPC{End: e.At, Code: e.Code})
		case fleet.TraceConnect:
			obs.conn(e.Server, Conn{At: e.At, Opened: true})
		case fleet.TraceConnectTimeout, fleet.TraceKeepalive:
			obs.conn(e.Server, Conn{At: e.At})
		}
	}
	opts := fleet.Options{Trace: trace, ExactRPCs: true}
	if hasMesh(cfg) {
		// The final CSDS status of every resource, a moment before the
		// end, as the real client's last poll shows it.
		end := cfg.Duration - time.Millisecond
		opts.InspectAt = []time.Duration{end}
		opts.Inspect = func(at time.Duration, in *fleet.Inspector) {
			for _, g := range cfg.Groups {
				for k := range g.Clients {
					name := fmt.Sprintf("%s/%d", g.Name, k)
					obs.client(name).States = finalStates(in, name, at)
				}
			}
		}
	}
	// Every RPC one by one: the comparison reads each outcome.
	res, err := fleet.Run(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("fidelity: simulating %s: %w", cfg.Name, err)
	}
	obs.Routing = res.Routing
	obs.finish(cfg.DataPlane.WindowGap)
	return obs, nil
}
