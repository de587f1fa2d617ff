package fleet

import (
	"fmt"

	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
)

// Inspector looks at a world paused at a moment of its run
// (Options.Inspect).
type Inspector struct{ w *world }

// ClientState says whether a client is running at the moment inspected.
type ClientState uint8

// Client states.
const (
	// ClientUp: the client runs, with its XdsClient instances.
	ClientUp ClientState = iota
	// ClientNotStarted: the client has not started yet.
	ClientNotStarted
	// ClientDown: the client is down for a restart.
	ClientDown
)

// CSDS returns what the client named ("group/index", or
// "group/index/target" for one target) would answer to a CSDS request
// now: the ClientConfig of each of its XdsClient instances, in target
// order, each with client_scope its target (gRFC A71, "Update CSDS to
// aggregate configs from multiple XdsClient instances"), as
// xdsclient.Client.CSDS builds it. A client that is not running has no
// XdsClient: the list is empty and the state says why.
func (in *Inspector) CSDS(name string) ([]*statuspb.ClientConfig, ClientState, error) {
	w := in.w
	ref, gi, err := w.cfg.findClient(name)
	if err != nil {
		return nil, 0, fmt.Errorf("fleet: %w", err)
	}
	id := uint32(ref.Index)
	for _, g := range w.cfg.Groups[:gi] {
		id += uint32(g.Clients)
	}
	c := &w.clients[id]
	if !c.up {
		if !c.started {
			return nil, ClientNotStarted, nil
		}
		return nil, ClientDown, nil
	}
	var out []*statuspb.ClientConfig
	for ti, t := range w.cfg.Groups[gi].Targets {
		if ref.Target != "" && ref.Target != t {
			continue
		}
		if x := w.insts[c.firstInst+uint32(ti)].xds; x != nil {
			cc := x.CSDS()
			cc.Node = w.node(id)
			out = append(out, cc)
		}
	}
	return out, ClientUp, nil
}
