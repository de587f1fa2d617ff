package scenarios

import (
	"crypto/sha256"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdssim/xdssim/model/controlplane"
	"github.com/xdssim/xdssim/model/dataplane"
	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/scenarios/mesh"
)

// A user's own mesh: dump files a control plane serves verbatim
// (control_plane[].resources), the next version a [[change]] publishes,
// bootstrap files a group's clients use (fleet.group[].bootstrap), and
// the RPC mix they send (rpc.methods). Files are named relative to the
// scenario file; a library scenario's, relative to the library.

// Method is one method of a group's RPC mix.
type Method struct {
	// Method is the method path ("/pkg.Service/Method").
	Method string `toml:"method"`
	// Headers are the request headers its RPCs carry, which route header
	// matchers and ring_hash hash policies read.
	Headers map[string]string `toml:"headers,omitempty"`
	// Weight is its share of the RPCs, relative to the others'.
	Weight int `toml:"weight"`
}

func (m *Method) setDefaults() { m.Weight = 1 }

// meshFiles are the dump and bootstrap files a scenario names, by the
// name the scenario gives them.
type meshFiles struct {
	dumps map[string]*mesh.Dump
	boots map[string]*mesh.Bootstrap
	// sums are the SHA-256 of each file's bytes as read, by the name the
	// scenario gives it (SHA256).
	sums map[string][sha256.Size]byte
}

// readRef reads a file the scenario names: relative to the scenario file,
// or to the library for a library scenario. It returns the name to show.
func (s *Scenario) readRef(ref string) (data []byte, shown string, err error) {
	if s.src != nil && s.src.embedded {
		p := path.Clean(path.Join("library", ref))
		if strings.HasPrefix(ref, "/") || !strings.HasPrefix(p, "library/") {
			return nil, ref, fmt.Errorf("%s: a library scenario names files inside the library", ref)
		}
		data, err := library.ReadFile(p)
		if err != nil {
			return nil, p, fmt.Errorf("%s: no such file in the library", p)
		}
		return data, p, nil
	}
	p := ref
	if !filepath.IsAbs(ref) && s.src != nil {
		p = filepath.Join(filepath.Dir(s.src.File), ref)
	}
	data, err = mesh.ReadFile(p)
	return data, p, err
}

// dump returns the dump file ref, reading it once; a problem is recorded
// at key.
func (s *Scenario) dump(p *problems, key, ref string) *mesh.Dump {
	return readOnce(s, p, &s.mesh.dumps, key, ref, mesh.Parse)
}

// bootstrap returns the bootstrap file ref, reading it once.
func (s *Scenario) bootstrap(p *problems, key, ref string) *mesh.Bootstrap {
	return readOnce(s, p, &s.mesh.boots, key, ref, mesh.ParseBootstrap)
}

// readOnce returns the file ref parsed, from cache or read and parsed
// now; nil, with a problem recorded at key, if it cannot be.
func readOnce[T any](s *Scenario, p *problems, cache *map[string]*T, key, ref string, parse func(string, []byte) (*T, error)) *T {
	if v, ok := (*cache)[ref]; ok {
		return v
	}
	if *cache == nil {
		*cache = map[string]*T{}
	}
	data, shown, err := s.readRef(ref)
	var v *T
	if err == nil {
		if s.mesh.sums == nil {
			s.mesh.sums = map[string][sha256.Size]byte{}
		}
		s.mesh.sums[ref] = sha256.Sum256(data)
		v, err = parse(shown, data)
	}
	if err != nil {
		p.valueError(key, "%v", err)
	}
	(*cache)[ref] = v
	return v
}

// loadMesh reads every file the scenario names.
func (s *Scenario) loadMesh(p *problems) {
	for i, cp := range s.ControlPlanes {
		for j, f := range cp.Resources {
			s.dump(p, fmt.Sprintf("control_plane[%d].resources[%d]", i, j), f)
		}
	}
	for i, ch := range s.Changes {
		if ch.Action == "publish" {
			for j, f := range ch.Resources {
				s.dump(p, fmt.Sprintf("change[%d].resources[%d]", i, j), f)
			}
		}
	}
	for i, g := range s.Fleet.Groups {
		if g.Bootstrap != "" {
			s.bootstrap(p, fmt.Sprintf("fleet.group[%d].bootstrap", i), g.Bootstrap)
		}
	}
}

// resources returns the resources of the dump files files, in order.
func (s *Scenario) resources(files []string) []mesh.Resource {
	var out []mesh.Resource
	for _, f := range files {
		if d := s.mesh.dumps[f]; d != nil {
			out = append(out, d.Resources...)
		}
	}
	return out
}

// apiListeners returns the names of the client (API) listeners of the
// dump files files: the targets clients dial.
func (s *Scenario) apiListeners(files []string) []string {
	var out []string
	for _, r := range s.resources(files) {
		if l, ok := r.Message.(*listenerpb.Listener); ok && l.GetApiListener() != nil && !slices.Contains(out, r.Name) {
			out = append(out, r.Name)
		}
	}
	return out
}

// resolveBootstrap gives a group with a bootstrap file its servers (the
// control planes whose server_uri its xds_servers name, in order) and
// server features (its first server's that xdssim knows). A scenario may
// give them too (a resolved scenario does) only as the bootstrap has them.
func (s *Scenario) resolveBootstrap(p *problems, i int, g *Group) {
	b := s.mesh.boots[g.Bootstrap]
	if b == nil {
		return
	}
	key := fmt.Sprintf("fleet.group[%d].bootstrap", i)
	servers := []string{}
	for j, srv := range b.Servers {
		k := slices.IndexFunc(s.ControlPlanes, func(cp ControlPlane) bool { return cp.ServerURI == srv.URI })
		if k < 0 {
			var uris []string
			for _, cp := range s.ControlPlanes {
				if cp.ServerURI != "" {
					uris = append(uris, fmt.Sprintf("%s = %q", cp.Name, cp.ServerURI))
				}
			}
			p.valueError(key, "%s: xds_servers[%d] has server_uri %q, which no control plane has (give one server_uri = %q; control planes with one: %s)",
				b.File, j, srv.URI, srv.URI, strings.Join(uris, ", "))
			continue
		}
		servers = append(servers, s.ControlPlanes[k].Name)
	}
	features := []string{}
	for _, f := range b.Servers[0].Features {
		if slices.Contains(serverFeatures, f) {
			features = append(features, f)
		}
	}
	gp := fmt.Sprintf("fleet.group[%d]", i)
	if g.Servers == nil {
		g.Servers = servers
	} else if !slices.Equal(g.Servers, servers) {
		p.valueError(gp+".servers", "the bootstrap file gives the servers %v: leave servers out, or the bootstrap", servers)
	}
	if g.ServerFeatures == nil {
		g.ServerFeatures = features
	} else if !slices.Equal(g.ServerFeatures, features) {
		p.valueError(gp+".server_features", "the bootstrap file gives the server features %v: leave server_features out, or the bootstrap", features)
	}
}

// validateMesh checks what names a user's own mesh: the resources of each
// control plane, publish and resource changes, the RPC mix, and backends
// chosen by address or locality.
func (s *Scenario) validateMesh(c *checker) {
	for i, cp := range s.ControlPlanes {
		p := fmt.Sprintf("control_plane[%d]", i)
		s.validateResourceSet(c, p+".resources", i, cp.Resources)
		if cp.ServerURI != "" {
			for j := range i {
				c.check(s.ControlPlanes[j].ServerURI != cp.ServerURI, p+".server_uri", "control_plane[%d] has the same server_uri", j)
			}
		}
	}
	for i, g := range s.Fleet.Groups {
		p := fmt.Sprintf("fleet.group[%d]", i)
		for j, m := range g.RPC.Methods {
			q := fmt.Sprintf("%s.rpc.methods[%d]", p, j)
			c.check(strings.HasPrefix(m.Method, "/"), q+".method", "expected a method path like \"/pkg.Service/Method\", found %q", m.Method)
			c.check(m.Weight >= 1 && m.Weight <= 1_000_000, q+".weight", "expected a weight from 1 to 1000000, found %d", m.Weight)
			for _, h := range sortedKeys(m.Headers) {
				c.check(h != "" && h == strings.ToLower(h), joinPath(q+".headers", h), "expected a lowercase header name (gRPC metadata keys are lowercase)")
			}
		}
	}
	for i, ch := range s.Changes {
		p := fmt.Sprintf("change[%d]", i)
		switch ch.Action {
		case "publish":
			c.check(ch.Service == "", p+".service", "is not used by action = \"publish\"")
			if c.check(len(ch.Resources) > 0, p+".resources", "publish needs the dump files of the next version: resources = [\"next.json\"]") {
				servers := ch.Servers
				if len(servers) == 0 {
					servers = s.meshServers()
				}
				c.check(len(servers) > 0, p+".servers", "no control plane serves resources of its own (control_plane[].resources) to publish over")
				for _, name := range servers {
					if k := s.controlPlaneIndex(name); k >= 0 {
						s.validateResourceSet(c, p+".resources", k, ch.Resources)
					}
				}
			}
		case "delete_resource", "restore_resource":
			c.check(ch.Service == "", p+".service", "is not used by action = %q", ch.Action)
			t, err := controlplane.ParseKind(ch.Type)
			if c.check(err == nil, p+".type", "expected one of: %s, found %q", kindNames, ch.Type) &&
				c.check(ch.Name != "", p+".name", "is required: the name of the resource") {
				c.check(s.hasResource(t, ch.Name, ch.Action == "restore_resource"), p+".name",
					"no control plane has a %s named %q%s", ch.Type, ch.Name, map[bool]string{true: " of its own", false: ""}[ch.Action == "restore_resource"])
			}
		default:
			c.check(!c.given(p+".type"), p+".type", "is only used by action = \"delete_resource\" and \"restore_resource\"")
			c.check(!c.given(p+".name"), p+".name", "is only used by action = \"delete_resource\" and \"restore_resource\"")
		}
	}
	for i, b := range s.Backends {
		p := fmt.Sprintf("backend[%d]", i)
		if b.Address == "" && b.Locality == "" {
			continue
		}
		c.check(b.Service == "" && !c.given(p+".first") && !c.given(p+".count"), p+".address",
			"address and locality choose backends of a user's own resources: leave service, first and count out")
		c.check(b.Address == "" || b.Locality == "", p+".locality", "give address or locality, not both")
		c.check(len(s.backendKeys(&b)) > 0, p+map[bool]string{true: ".address", false: ".locality"}[b.Address != ""],
			"no ClusterLoadAssignment of the control planes' own resources has an endpoint %s", b.describe())
	}
}

// meshServers are the control planes that serve resources of their own.
func (s *Scenario) meshServers() []string {
	var out []string
	for _, cp := range s.ControlPlanes {
		if len(cp.Resources) > 0 {
			out = append(out, cp.Name)
		}
	}
	return out
}

// validateResourceSet checks that the dump files files hold each
// resource once (or identically) and that none is named like a resource
// of control plane k's services.
func (s *Scenario) validateResourceSet(c *checker, key string, k int, files []string) {
	if len(files) == 0 {
		return
	}
	seen := map[controlplane.ResourceKey]proto.Message{}
	owned := s.ControlPlanes[k].serviceResources()
	for _, r := range s.resources(files) {
		rk := controlplane.ResourceKey{Type: r.Type, Name: r.Name}
		if m, dup := seen[rk]; dup && !proto.Equal(m, r.Message) {
			c.check(false, key, "%v resource %q is in two of the files with different contents", r.Type, r.Name)
		}
		seen[rk] = r.Message
		if svc, ok := owned[rk]; ok {
			c.check(false, key, "%v resource %q is also a resource of service %q on %s", r.Type, r.Name, svc, s.ControlPlanes[k].Name)
		}
	}
}

// hasResource reports whether a control plane has resource (t, name): of
// its own, or (unless own) a resource of one of its services.
func (s *Scenario) hasResource(t controlplane.ResourceType, name string, own bool) bool {
	for _, cp := range s.ControlPlanes {
		files := slices.Clone(cp.Resources)
		for _, ch := range s.Changes {
			if ch.Action == "publish" {
				files = append(files, ch.Resources...)
			}
		}
		for _, r := range s.resources(files) {
			if r.Type == t && r.Name == name {
				return true
			}
		}
		if _, ok := cp.serviceResources()[controlplane.ResourceKey{Type: t, Name: name}]; ok && !own {
			return true
		}
	}
	return false
}

// serviceResources returns the names of the resources the control
// plane's services expand to, with the service each belongs to.
func (cp *ControlPlane) serviceResources() map[controlplane.ResourceKey]string {
	out := map[controlplane.ResourceKey]string{}
	for _, svc := range cp.Services {
		// The names do not depend on the endpoints: none are generated.
		cs := controlplane.Service{Name: svc.Name, InlineRoute: svc.InlineRoute}
		svc.shapeService(&cs)
		cs.EndpointCount = 0
		for i := range cs.Clusters {
			cs.Clusters[i].EndpointCount, cs.Clusters[i].Endpoints = 0, nil
		}
		for _, k := range cs.Resources() {
			out[k] = svc.Name
		}
	}
	return out
}

func (b *Backend) describe() string {
	if b.Address != "" {
		return fmt.Sprintf("at %q", b.Address)
	}
	return fmt.Sprintf("in locality %q", b.Locality)
}

// backendKeys returns the backends a [[backend]] chooses by address or
// locality: every matching endpoint of every ClusterLoadAssignment the
// control planes serve of their own, first or published later.
func (s *Scenario) backendKeys(b *Backend) []string {
	var files []string
	for _, cp := range s.ControlPlanes {
		files = append(files, cp.Resources...)
	}
	for _, ch := range s.Changes {
		if ch.Action == "publish" {
			files = append(files, ch.Resources...)
		}
	}
	var out []string
	for _, r := range s.resources(files) {
		for _, ep := range mesh.Endpoints(r) {
			match := false
			switch {
			case b.Address != "":
				match = ep.Address == b.Address || ep.IP == b.Address
			default:
				match = ep.Zone == b.Locality || ep.Region+"/"+ep.Zone == b.Locality
			}
			if match {
				if k := dataplane.BackendKey(r.Name, ep.Address); !slices.Contains(out, k) {
					out = append(out, k)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// meshConfig adds what a user's own mesh gives to cfg: each server's
// resources, the changes' next versions and resources, the groups' RPC
// mixes and bootstrap targets, the backends chosen by address or
// locality, and what the simulator does not model of the resources.
func (s *Scenario) meshConfig(cfg *fleet.Config) {
	// One note per resource a server serves, whatever version of it: the
	// fields of each version it serves, once.
	notes := map[string]int{}
	note := func(server string, r mesh.Resource) {
		for _, f := range dataplane.Audit(r.Message) {
			if f.Kind != dataplane.Unmodelled {
				continue
			}
			k := server + "\x00" + controlplane.KindName(r.Type) + "\x00" + r.Name
			i, ok := notes[k]
			if !ok {
				i = len(cfg.Unmodelled)
				notes[k] = i
				cfg.Unmodelled = append(cfg.Unmodelled, fleet.ResourceNote{Server: server, Kind: controlplane.KindName(r.Type), Name: r.Name})
			}
			if n := &cfg.Unmodelled[i]; !slices.Contains(n.Fields, f) {
				n.Fields = append(n.Fields, f)
			}
		}
	}
	for i, cp := range s.ControlPlanes {
		for _, r := range s.resources(cp.Resources) {
			cfg.ControlPlanes[i].Server.Resources = append(cfg.ControlPlanes[i].Server.Resources, r.Message)
			note(cp.Name, r)
		}
	}
	for i, ch := range s.Changes {
		fc := &cfg.Changes[i]
		switch ch.Action {
		case "publish":
			fc.Label = strings.Join(ch.Resources, ", ")
			for _, r := range s.resources(ch.Resources) {
				fc.Publish = append(fc.Publish, r.Message)
			}
			if len(fc.Servers) == 0 {
				for _, name := range s.meshServers() {
					fc.Servers = append(fc.Servers, s.controlPlaneIndex(name))
				}
			}
			for _, si := range fc.Servers {
				for _, r := range s.resources(ch.Resources) {
					note(s.ControlPlanes[si].Name, r)
				}
			}
		case "delete_resource", "restore_resource":
			fc.Type, _ = controlplane.ParseKind(ch.Type)
			fc.Name = ch.Name
		}
	}
	for i, g := range s.Fleet.Groups {
		fg := &cfg.Groups[i]
		for _, m := range g.RPC.Methods {
			fm := fleet.Method{Path: m.Method, Weight: uint32(m.Weight)}
			for _, h := range sortedKeys(m.Headers) {
				fm.Headers = append(fm.Headers, dataplane.Header{Name: h, Value: m.Headers[h]})
			}
			fg.RPC.Methods = append(fg.RPC.Methods, fm)
		}
		if b := s.mesh.boots[g.Bootstrap]; b != nil {
			fg.Targets = nil
			for _, t := range g.Targets {
				fg.Targets = append(fg.Targets, b.ListenerName(t))
			}
		}
	}
	for i := range s.Backends {
		b := &s.Backends[i]
		if b.Address == "" && b.Locality == "" {
			continue
		}
		e := &cfg.BackendEvents[i]
		e.Backends = s.backendKeys(b)
		e.Label = fmt.Sprintf("endpoints %s %s", b.describe(), b.Action)
	}
	slicesSortNotes(cfg.Unmodelled)
}

func slicesSortNotes(ns []fleet.ResourceNote) {
	for i := range ns {
		slices.SortStableFunc(ns[i].Fields, func(a, b dataplane.FieldNote) int { return strings.Compare(a.Path, b.Path) })
	}
	slices.SortStableFunc(ns, func(a, b fleet.ResourceNote) int {
		if c := strings.Compare(a.Server, b.Server); c != 0 {
			return c
		}
		if c := strings.Compare(kindOrder(a.Kind), kindOrder(b.Kind)); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}

func kindOrder(k string) string {
	t, err := controlplane.ParseKind(k)
	if err != nil {
		return k
	}
	return string(rune('0' + t))
}

// MeshNotes says, one line each, what the simulator does not use or model
// of the files the scenario names: the parts of bootstrap files it does
// not use, what dumps held besides resources, embedded configs of unknown
// types, and every field of the resources that changes what a real client
// does and is not modelled, with what the real clients do.
func (s *Scenario) MeshNotes() []string {
	var out []string
	for _, ref := range sortedKeysOf(s.mesh.boots) {
		if b := s.mesh.boots[ref]; b != nil {
			for _, u := range b.Unused {
				out = append(out, fmt.Sprintf("%s: not used: %s", b.File, u))
			}
		}
	}
	for _, ref := range sortedKeysOf(s.mesh.dumps) {
		d := s.mesh.dumps[ref]
		if d == nil {
			continue
		}
		for _, sk := range d.Skipped {
			out = append(out, fmt.Sprintf("%s: skipped: %s", d.File, sk))
		}
		for _, u := range d.Opaque {
			out = append(out, fmt.Sprintf("%s: config of type %s kept by type URL only (xdssim has no message type for it)", d.File, u))
		}
	}
	cfg := s.FleetConfig()
	for _, n := range cfg.Unmodelled {
		for _, f := range n.Fields {
			out = append(out, fmt.Sprintf("%s %s %q: %s: not modelled: %s", n.Server, n.Kind, n.Name, f.Path, f.What))
		}
	}
	return out
}

func sortedKeysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
