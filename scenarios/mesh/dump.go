package mesh

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"sigs.k8s.io/yaml"

	"github.com/xdssim/xdssim/model/controlplane"
)

// Format is the kind of dump a file holds.
type Format uint8

// The dump formats.
const (
	// Plain is one resource as an Any, a list of them, or a
	// DiscoveryResponse's "resources".
	Plain Format = iota
	// CSDS is a ClientStatusResponse.
	CSDS
	// ConfigDump is an Envoy admin ConfigDump.
	ConfigDump
)

var formatNames = [...]string{"plain resources", "CSDS ClientStatusResponse", "Envoy ConfigDump"}

// String names the format as error messages and notes do.
func (f Format) String() string {
	if int(f) < len(formatNames) {
		return formatNames[f]
	}
	return "Format(" + strconv.Itoa(int(f)) + ")"
}

// Resource is one xDS resource of a dump.
type Resource struct {
	Type controlplane.ResourceType
	Name string
	// Version is the version the dump gives the resource ("" when it
	// gives none). A server serves the resource at the version its own
	// cache gives it, not this one.
	Version string
	// Message is the resource: a *listenerpb.Listener,
	// *routepb.RouteConfiguration, *clusterpb.Cluster or
	// *endpointpb.ClusterLoadAssignment.
	Message proto.Message
}

// Dump is the resources of one dump file.
type Dump struct {
	// File is the path the dump was read from, as given.
	File   string
	Format Format
	// Resources are the dump's resources, sorted by type (LDS, RDS, CDS,
	// EDS) and name; a resource the dump holds several times with the
	// same content is kept once.
	Resources []Resource
	// Skipped says what the dump held that is not one of the four
	// resource types, or had no config (a resource a client requested
	// but never received), one sentence each, sorted.
	Skipped []string
	// Opaque lists the type URLs of embedded configs (an HTTP filter's,
	// a transport socket's) that xdssim has no message type for, sorted:
	// their type URL is kept and their content dropped. A gRPC client
	// that meets such a type in a non-optional filter rejects the
	// Listener exactly as it does with the content.
	Opaque []string
}

// Error is a dump or bootstrap file that cannot be read, with the
// position in the file when it is known.
type Error struct {
	File      string
	Line, Col int // 0 when unknown
	Msg       string
}

// Error formats the error as "file:line:col: msg".
func (e *Error) Error() string {
	switch {
	case e.Line > 0 && e.Col > 0:
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// MaxFileSize is the largest dump or bootstrap file read.
const MaxFileSize = 256 << 20

// Read reads and parses the dump file at path.
func Read(path string) (*Dump, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// ReadFile reads a dump or bootstrap file of at most MaxFileSize bytes;
// its errors name the path.
func ReadFile(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &Error{File: path, Msg: err.Error()}
	}
	if !st.Mode().IsRegular() {
		return nil, &Error{File: path, Msg: "expected a regular file"}
	}
	if st.Size() > MaxFileSize {
		return nil, &Error{File: path, Msg: fmt.Sprintf("expected at most %d MiB, found %d MiB", MaxFileSize>>20, st.Size()>>20)}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{File: path, Msg: err.Error()}
	}
	return data, nil
}

// Parse parses a dump named file (for messages) from data, JSON or YAML.
func Parse(file string, data []byte) (*Dump, error) {
	doc, yamlDoc, err := toJSON(file, data)
	if err != nil {
		return nil, err
	}
	var top any
	if err := json.Unmarshal(doc, &top); err != nil {
		return nil, jsonError(file, doc, yamlDoc, err)
	}
	d := &Dump{File: file}
	var msg proto.Message
	prefix := 0 // bytes added before the document on its first line
	switch t := top.(type) {
	case []any:
		// A list of Anys reads as a DiscoveryResponse's resources.
		doc = append(append([]byte(`{"resources":`), doc...), '}')
		prefix = len(`{"resources":`)
		msg = &discoverypb.DiscoveryResponse{}
	case map[string]any:
		switch {
		case t["config"] != nil:
			d.Format, msg = CSDS, &statuspb.ClientStatusResponse{}
		case t["configs"] != nil:
			d.Format, msg = ConfigDump, &adminpb.ConfigDump{}
		case t["resources"] != nil:
			msg = &discoverypb.DiscoveryResponse{}
		case t["@type"] != nil:
			doc = append(append([]byte(`{"resources":[`), doc...), ']', '}')
			prefix = len(`{"resources":[`)
			msg = &discoverypb.DiscoveryResponse{}
		}
	}
	if msg == nil {
		return nil, &Error{File: file, Line: 1, Msg: `expected a CSDS ClientStatusResponse ({"config": [...]}), an Envoy ConfigDump ({"configs": [...]}), ` +
			`a list of resources ([{"@type": ...}]), {"resources": [...]} or one resource with "@type"`}
	}
	if err := unmarshal(doc, msg, d); err != nil {
		return nil, protoError(file, yamlDoc, prefix, err)
	}
	c := &collector{d: d, seen: map[controlplane.ResourceKey]int{}}
	switch m := msg.(type) {
	case *discoverypb.DiscoveryResponse:
		for i, a := range m.GetResources() {
			c.any(a, "", fmt.Sprintf("resource %d", i))
		}
	case *statuspb.ClientStatusResponse:
		c.csds(m)
	case *adminpb.ConfigDump:
		for _, a := range m.GetConfigs() {
			c.configDump(a)
		}
	}
	if c.err != nil {
		return nil, &Error{File: file, Msg: c.err.Error()}
	}
	slices.SortFunc(d.Resources, func(a, b Resource) int {
		return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.Name, b.Name))
	})
	slices.Sort(d.Skipped)
	d.Skipped = slices.Compact(d.Skipped)
	if len(d.Resources) == 0 {
		return nil, &Error{File: file, Msg: fmt.Sprintf("the %v holds no Listener, RouteConfiguration, Cluster or ClusterLoadAssignment", d.Format)}
	}
	return d, nil
}

// toJSON returns data as JSON: YAML (a .yaml or .yml file, or a document
// that does not start with '{' or '[') is converted.
func toJSON(file string, data []byte) (doc []byte, wasYAML bool, err error) {
	ext := strings.ToLower(filepath.Ext(file))
	trimmed := bytes.TrimSpace(data)
	if ext != ".yaml" && ext != ".yml" && (len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[')) {
		return data, false, nil
	}
	if len(trimmed) == 0 {
		return nil, false, &Error{File: file, Msg: "the file is empty"}
	}
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, true, yamlError(file, err)
	}
	return j, true, nil
}

var yamlLine = regexp.MustCompile(`^(?:error converting YAML to JSON: )?yaml: line (\d+): (.*)$`)

func yamlError(file string, err error) error {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{File: file, Line: line, Msg: "malformed YAML: " + m[2]}
	}
	return &Error{File: file, Msg: "malformed YAML: " + strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")}
}

// jsonError positions an encoding/json error in doc.
func jsonError(file string, doc []byte, wasYAML bool, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) && !wasYAML {
		line, col := position(doc, int(se.Offset))
		return &Error{File: file, Line: line, Col: col, Msg: "malformed JSON: " + se.Error()}
	}
	return &Error{File: file, Msg: "malformed JSON: " + err.Error()}
}

// position returns the 1-based line and column of byte offset off.
func position(doc []byte, off int) (line, col int) {
	off = min(max(off, 0), len(doc))
	line = 1 + bytes.Count(doc[:off], []byte{'\n'})
	col = off - bytes.LastIndexByte(doc[:off], '\n')
	return line, max(col, 1)
}

var protoPos = regexp.MustCompile(`^proto:\s*(?:syntax error )?\(line (\d+):(\d+)\):\s*(.*)$`)

// protoError positions a protojson error: in the file for JSON (less the
// prefix added on its first line), not at all for converted YAML.
func protoError(file string, wasYAML bool, prefix int, err error) error {
	msg := strings.ReplaceAll(err.Error(), "\u00a0", " ")
	if m := protoPos.FindStringSubmatch(msg); m != nil {
		if wasYAML {
			return &Error{File: file, Msg: m[3]}
		}
		line, _ := strconv.Atoi(m[1])
		col, _ := strconv.Atoi(m[2])
		if line == 1 {
			col = max(col-prefix, 1)
		}
		return &Error{File: file, Line: line, Col: col, Msg: m[3]}
	}
	return &Error{File: file, Msg: strings.TrimPrefix(msg, "proto: ")}
}

// collector gathers a dump's resources.
type collector struct {
	d    *Dump
	seen map[controlplane.ResourceKey]int // index in d.Resources
	err  error
}

func (c *collector) skip(format string, args ...any) {
	c.d.Skipped = append(c.d.Skipped, fmt.Sprintf(format, args...))
}

// any adds the resource a holds, if it is one of the four types.
func (c *collector) any(a *anypb.Any, version, where string) {
	if c.err != nil || a == nil {
		return
	}
	if a.GetTypeUrl() == "type.googleapis.com/envoy.service.discovery.v3.Resource" {
		w := &discoverypb.Resource{}
		if err := a.UnmarshalTo(w); err != nil {
			c.err = fmt.Errorf("%s: %v", where, err)
			return
		}
		version = cmp.Or(w.GetVersion(), version)
		a = w.GetResource()
	}
	t, ok := controlplane.TypeFromURL(a.GetTypeUrl())
	if !ok {
		c.skip("%s of type %s (not a Listener, RouteConfiguration, Cluster or ClusterLoadAssignment)", where, a.GetTypeUrl())
		return
	}
	var m proto.Message
	switch t {
	case controlplane.LDS:
		m = &listenerpb.Listener{}
	case controlplane.RDS:
		m = &routepb.RouteConfiguration{}
	case controlplane.CDS:
		m = &clusterpb.Cluster{}
	default:
		m = &endpointpb.ClusterLoadAssignment{}
	}
	if err := a.UnmarshalTo(m); err != nil {
		c.err = fmt.Errorf("%s: %v", where, err)
		return
	}
	name := NameOf(m)
	if name == "" {
		c.err = fmt.Errorf("%s: a %v resource without a name", where, t)
		return
	}
	k := controlplane.ResourceKey{Type: t, Name: name}
	if i, dup := c.seen[k]; dup {
		if !proto.Equal(c.d.Resources[i].Message, m) {
			c.err = fmt.Errorf("%v resource %q appears twice with different contents (a dump of several clients at different versions?): keep one", t, name)
		}
		return
	}
	c.seen[k] = len(c.d.Resources)
	c.d.Resources = append(c.d.Resources, Resource{Type: t, Name: name, Version: version, Message: m})
}

// Endpoint is one endpoint of a ClusterLoadAssignment.
type Endpoint struct {
	// Address is "ip:port"; IP the address alone.
	Address, IP string
	// Region and Zone are its locality's.
	Region, Zone string
}

// Endpoints returns the endpoints of r when it is a
// ClusterLoadAssignment, in order.
func Endpoints(r Resource) []Endpoint {
	cla, ok := r.Message.(*endpointpb.ClusterLoadAssignment)
	if !ok {
		return nil
	}
	var out []Endpoint
	for _, loc := range cla.GetEndpoints() {
		for _, e := range loc.GetLbEndpoints() {
			sa := e.GetEndpoint().GetAddress().GetSocketAddress()
			out = append(out, Endpoint{
				Address: net.JoinHostPort(sa.GetAddress(), strconv.Itoa(int(sa.GetPortValue()))), IP: sa.GetAddress(),
				Region: loc.GetLocality().GetRegion(), Zone: loc.GetLocality().GetZone(),
			})
		}
	}
	return out
}

// EndpointCount returns how many endpoints r has when it is a
// ClusterLoadAssignment (len(Endpoints(r)), without building them).
func EndpointCount(r Resource) int {
	cla, ok := r.Message.(*endpointpb.ClusterLoadAssignment)
	if !ok {
		return 0
	}
	n := 0
	for _, loc := range cla.GetEndpoints() {
		n += len(loc.GetLbEndpoints())
	}
	return n
}

// NameOf returns the name of an envoy resource message: a
// ClusterLoadAssignment's cluster_name, the others' name, as
// go-control-plane's cache names them.
func NameOf(m proto.Message) string { return cachev3.GetResourceName(m) }

// csds collects a ClientStatusResponse: every client's generic configs,
// and the per-type dumps older clients send.
func (c *collector) csds(m *statuspb.ClientStatusResponse) {
	for _, cfg := range m.GetConfig() {
		for _, g := range cfg.GetGenericXdsConfigs() {
			where := fmt.Sprintf("%s %q", shortType(g.GetTypeUrl()), g.GetName())
			if g.GetXdsConfig() == nil {
				c.skip("%s: no config in the dump (client status %v)", where, g.GetClientStatus())
				continue
			}
			c.any(g.GetXdsConfig(), g.GetVersionInfo(), where)
		}
		for _, per := range cfg.GetXdsConfig() { //nolint:staticcheck // older clients fill the per-type dumps
			switch x := per.GetPerXdsConfig().(type) {
			case *statuspb.PerXdsConfig_ListenerConfig:
				c.listeners(x.ListenerConfig)
			case *statuspb.PerXdsConfig_RouteConfig:
				c.routes(x.RouteConfig)
			case *statuspb.PerXdsConfig_ClusterConfig:
				c.clusters(x.ClusterConfig)
			case *statuspb.PerXdsConfig_EndpointConfig:
				c.endpoints(x.EndpointConfig)
			default:
				c.skip("a per-type xds_config of kind %T", x)
			}
		}
	}
}

func shortType(url string) string { return url[strings.LastIndexByte(url, '.')+1:] }

// configDump collects one section of an Envoy ConfigDump.
func (c *collector) configDump(a *anypb.Any) {
	m, err := a.UnmarshalNew()
	if err != nil {
		c.skip("config dump section %s (%v)", a.GetTypeUrl(), err)
		return
	}
	switch s := m.(type) {
	case *adminpb.ListenersConfigDump:
		c.listeners(s)
	case *adminpb.RoutesConfigDump:
		c.routes(s)
	case *adminpb.ClustersConfigDump:
		c.clusters(s)
	case *adminpb.EndpointsConfigDump:
		c.endpoints(s)
	default:
		c.skip("config dump section %s", proto.MessageName(m))
	}
}

func (c *collector) listeners(s *adminpb.ListenersConfigDump) {
	for _, l := range s.GetStaticListeners() {
		c.any(l.GetListener(), "", "static listener")
	}
	for _, l := range s.GetDynamicListeners() {
		if st := l.GetActiveState(); st != nil {
			c.any(st.GetListener(), st.GetVersionInfo(), fmt.Sprintf("listener %q", l.GetName()))
		} else {
			c.skip("listener %q: no active state in the dump", l.GetName())
		}
	}
}

func (c *collector) routes(s *adminpb.RoutesConfigDump) {
	for _, r := range s.GetStaticRouteConfigs() {
		c.any(r.GetRouteConfig(), "", "static route configuration")
	}
	for _, r := range s.GetDynamicRouteConfigs() {
		c.any(r.GetRouteConfig(), r.GetVersionInfo(), "dynamic route configuration")
	}
}

func (c *collector) clusters(s *adminpb.ClustersConfigDump) {
	for _, cl := range s.GetStaticClusters() {
		c.any(cl.GetCluster(), "", "static cluster")
	}
	for _, cl := range s.GetDynamicActiveClusters() {
		c.any(cl.GetCluster(), cl.GetVersionInfo(), "dynamic cluster")
	}
	for _, cl := range s.GetDynamicWarmingClusters() {
		c.skip("warming cluster (not yet active) of version %q", cl.GetVersionInfo())
	}
}

func (c *collector) endpoints(s *adminpb.EndpointsConfigDump) {
	for _, e := range s.GetStaticEndpointConfigs() {
		c.any(e.GetEndpointConfig(), "", "static endpoint configuration")
	}
	for _, e := range s.GetDynamicEndpointConfigs() {
		c.any(e.GetEndpointConfig(), e.GetVersionInfo(), "dynamic endpoint configuration")
	}
}
