package mesh

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	// The envoy and xDS types a dump's Anys may hold, registered in the
	// global type registry that protojson resolves "@type" with: the
	// admin and CSDS envelopes, the resources, and the extensions gRPC
	// clients (and Envoy sidecars, whose dumps users also have) use.
	_ "github.com/cncf/xds/go/udpa/type/v1"
	_ "github.com/cncf/xds/go/xds/type/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_authz/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/gcp_authn/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/grpc_stats/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/grpc_web/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/local_ratelimit/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/stateful_session/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/cookie/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/client_side_weighted_round_robin/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/least_request/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/maglev/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/pick_first/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/ring_hash/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/round_robin/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/wrr_locality/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/host/previous_hosts/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/raw_buffer/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
)

// opaqueType is the message type an unknown "@type" decodes as: a message
// with no fields, so that its Any keeps the type URL and drops the
// content.
var opaqueType = func() protoreflect.MessageType {
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name:        proto.String("xdssim/mesh/opaque.proto"),
		Package:     proto.String("xdssim.mesh"),
		Syntax:      proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{Name: proto.String("Opaque")}},
	}, nil)
	if err != nil {
		panic("mesh: building the opaque message type: " + err.Error())
	}
	return dynamicpb.NewMessageType(fd.Messages().Get(0))
}()

// opaqueResolver resolves the global registry's types, and the type URLs
// in urls as opaqueType.
type opaqueResolver struct{ urls []string }

func (r opaqueResolver) FindMessageByName(n protoreflect.FullName) (protoreflect.MessageType, error) {
	return protoregistry.GlobalTypes.FindMessageByName(n)
}

func (r opaqueResolver) FindMessageByURL(url string) (protoreflect.MessageType, error) {
	if slices.Contains(r.urls, url) {
		return opaqueType, nil
	}
	return protoregistry.GlobalTypes.FindMessageByURL(url)
}

func (r opaqueResolver) FindExtensionByName(n protoreflect.FullName) (protoreflect.ExtensionType, error) {
	return protoregistry.GlobalTypes.FindExtensionByName(n)
}

func (r opaqueResolver) FindExtensionByNumber(m protoreflect.FullName, n protoreflect.FieldNumber) (protoreflect.ExtensionType, error) {
	return protoregistry.GlobalTypes.FindExtensionByNumber(m, n)
}

// unmarshal decodes doc into msg strictly. An "@type" the registry does
// not know is kept as an opaque Any (its URL recorded in d.Opaque): the
// document is decoded again with those objects emptied.
func unmarshal(doc []byte, msg proto.Message, d *Dump) error {
	err := protojson.Unmarshal(doc, msg)
	if err == nil || !strings.Contains(err.Error(), "unable to resolve") {
		return err
	}
	var tree any
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if dec.Decode(&tree) != nil {
		return err
	}
	var urls []string
	tree = emptyUnknown(tree, &urls)
	if len(urls) == 0 {
		return err
	}
	slices.Sort(urls)
	urls = slices.Compact(urls)
	d.Opaque = urls
	doc2, jerr := json.Marshal(tree)
	if jerr != nil {
		return err
	}
	proto.Reset(msg)
	return protojson.UnmarshalOptions{Resolver: opaqueResolver{urls}}.Unmarshal(doc2, msg)
}

// emptyUnknown replaces every object whose "@type" the registry cannot
// resolve by {"@type": url}, and lists the URLs.
func emptyUnknown(x any, urls *[]string) any {
	switch v := x.(type) {
	case map[string]any:
		if u, ok := v["@type"].(string); ok {
			if _, err := protoregistry.GlobalTypes.FindMessageByURL(u); err != nil {
				*urls = append(*urls, u)
				return map[string]any{"@type": u}
			}
		}
		for k, e := range v {
			v[k] = emptyUnknown(e, urls)
		}
	case []any:
		for i, e := range v {
			v[i] = emptyUnknown(e, urls)
		}
	}
	return x
}
