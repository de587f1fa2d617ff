package mesh

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Bootstrap is a gRPC xDS bootstrap file (gRFC A27, with A47's
// authorities and listener name templates and A71's fallback: the
// xds_servers in order are the primary and its fallbacks).
type Bootstrap struct {
	// File is the path the bootstrap was read from.
	File string
	// Servers are xds_servers, highest priority first.
	Servers []BootstrapServer
	// NodeID and NodeCluster are node.id and node.cluster.
	NodeID, NodeCluster string
	// ListenerTemplate is client_default_listener_resource_name_template;
	// "%s" when the file gives none (gRFC A47).
	ListenerTemplate string
	// Authorities are the authorities, sorted by name.
	Authorities []Authority
	// Unused says what the file sets that the simulator does not use
	// (credentials, certificate providers, server-side templates, keys
	// it does not know), one sentence each, sorted.
	Unused []string
}

// BootstrapServer is one entry of xds_servers.
type BootstrapServer struct {
	URI string
	// Creds are the channel_creds types, in order.
	Creds []string
	// Features are server_features, in order.
	Features []string
}

// Authority is one entry of a bootstrap's authorities (gRFC A47).
type Authority struct {
	Name             string
	ListenerTemplate string
	Servers          []BootstrapServer
}

type rawServer struct {
	ServerURI    string `json:"server_uri"`
	ChannelCreds []struct {
		Type   string          `json:"type"`
		Config json.RawMessage `json:"config"`
	} `json:"channel_creds"`
	ServerFeatures []string `json:"server_features"`
}

// ReadBootstrap reads and parses the bootstrap file at path.
func ReadBootstrap(path string) (*Bootstrap, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseBootstrap(path, data)
}

// ParseBootstrap parses a bootstrap file named file (for messages). The
// checks are the ones every gRPC client makes (grpc-go
// internal/xds/bootstrap bootstrap.go newConfigFromContents; grpc-java
// BootstrapperImpl.bootstrap; C-core xds_bootstrap_grpc.cc): xds_servers
// is not empty and each server has a server_uri.
func ParseBootstrap(file string, data []byte) (*Bootstrap, error) {
	doc, wasYAML, err := toJSON(file, data)
	if err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc, &top); err != nil {
		return nil, jsonError(file, doc, wasYAML, err)
	}
	b := &Bootstrap{File: file, ListenerTemplate: "%s"}
	field := func(key string, v any) error {
		raw, ok := top[key]
		if !ok {
			return nil
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		if err := dec.Decode(v); err != nil {
			return &Error{File: file, Msg: fmt.Sprintf("%s: %v", key, err)}
		}
		return nil
	}
	var servers []rawServer
	if err := field("xds_servers", &servers); err != nil {
		return nil, err
	}
	if len(servers) == 0 {
		return nil, &Error{File: file, Msg: "xds_servers: expected at least one server (gRFC A27)"}
	}
	if b.Servers, err = b.servers(file, "xds_servers", servers); err != nil {
		return nil, err
	}
	var node struct {
		ID      string `json:"id"`
		Cluster string `json:"cluster"`
	}
	if err := field("node", &node); err != nil {
		return nil, err
	}
	b.NodeID, b.NodeCluster = node.ID, node.Cluster
	if err := field("client_default_listener_resource_name_template", &b.ListenerTemplate); err != nil {
		return nil, err
	}
	var auths map[string]struct {
		Template string      `json:"client_listener_resource_name_template"`
		Servers  []rawServer `json:"xds_servers"`
	}
	if err := field("authorities", &auths); err != nil {
		return nil, err
	}
	for name, a := range auths {
		ss, err := b.servers(file, "authorities."+name+".xds_servers", a.Servers)
		if err != nil {
			return nil, err
		}
		tmpl := a.Template
		if tmpl == "" {
			// gRFC A47: "xdstp://<authority_name>/envoy.config.listener.v3.Listener/%s".
			tmpl = "xdstp://" + name + "/envoy.config.listener.v3.Listener/%s"
		}
		b.Authorities = append(b.Authorities, Authority{Name: name, ListenerTemplate: tmpl, Servers: ss})
	}
	slices.SortFunc(b.Authorities, func(x, y Authority) int { return strings.Compare(x.Name, y.Name) })
	if len(b.Authorities) > 0 {
		b.Unused = append(b.Unused, b.authoritiesUnused())
	}
	for key := range top {
		switch key {
		case "xds_servers", "node", "client_default_listener_resource_name_template", "authorities":
		case "certificate_providers":
			b.Unused = append(b.Unused, "certificate_providers: TLS certificates are not modelled (connections are plaintext in the simulation)")
		case "server_listener_resource_name_template":
			b.Unused = append(b.Unused, "server_listener_resource_name_template: xDS-enabled servers are not simulated")
		default:
			b.Unused = append(b.Unused, fmt.Sprintf("%s: a key xdssim does not know; not used", key))
		}
	}
	slices.Sort(b.Unused)
	return b, nil
}

// authoritiesUnused says that the authorities are read but not simulated:
// every target of a group uses the default authority's servers.
func (b *Bootstrap) authoritiesUnused() string {
	var names []string
	for _, a := range b.Authorities {
		names = append(names, a.Name)
	}
	return fmt.Sprintf("authorities (%s): xdstp:// targets are not simulated; every target uses xds_servers", strings.Join(names, ", "))
}

func (b *Bootstrap) servers(file, key string, raw []rawServer) ([]BootstrapServer, error) {
	var out []BootstrapServer
	for i, s := range raw {
		if s.ServerURI == "" {
			return nil, &Error{File: file, Msg: fmt.Sprintf("%s[%d].server_uri: is required (gRFC A27)", key, i)}
		}
		bs := BootstrapServer{URI: s.ServerURI, Features: s.ServerFeatures}
		for _, c := range s.ChannelCreds {
			bs.Creds = append(bs.Creds, c.Type)
		}
		if len(bs.Creds) > 0 {
			b.Unused = append(b.Unused, fmt.Sprintf("%s[%d].channel_creds (%s): credentials are not modelled", key, i, strings.Join(bs.Creds, ", ")))
		}
		out = append(out, bs)
	}
	return out, nil
}

// ListenerName returns the Listener a client of this bootstrap watches
// for the target xds:///name: the default listener template with %s
// replaced by name, percent-encoded when the template is an xdstp:// name
// (gRFC A47, "Listener resource name template").
func (b *Bootstrap) ListenerName(name string) string {
	if strings.HasPrefix(b.ListenerTemplate, "xdstp:") {
		name = strings.ReplaceAll(url.PathEscape(name), "%2F", "/")
	}
	return strings.ReplaceAll(b.ListenerTemplate, "%s", name)
}
