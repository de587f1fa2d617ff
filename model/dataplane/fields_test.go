package dataplane

import (
	"strings"
	"testing"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	faultpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TestAuditListsEveryUnmodelledField: fields that change what a real
// client does and that the simulator does not model are listed with what
// clients do; fields gRPC does not read are listed as ignored; modelled
// fields and no-op values (a zero max_stream_duration, an empty fault
// filter) are not listed.
func TestAuditListsEveryUnmodelledField(t *testing.T) {
	fault, _ := anypb.New(&faultpb.HTTPFault{MaxActiveFaults: wrapperspb.UInt32(1)})
	cases := []struct {
		name string
		res  proto.Message
		want []string // "kind path" of every note, in order
	}{
		{"plain cluster", &clusterpb.Cluster{Name: "c", LbPolicy: clusterpb.Cluster_RING_HASH}, nil},
		{"cluster features", &clusterpb.Cluster{Name: "c",
			OutlierDetection: &clusterpb.OutlierDetection{},
			CircuitBreakers:  &clusterpb.CircuitBreakers{},
			ConnectTimeout:   durationpb.New(1),
			TransportSocket:  &corepb.TransportSocket{Name: "envoy.transport_sockets.tls"},
			DnsRefreshRate:   durationpb.New(1),
		}, []string{"unmodelled circuit_breakers", "ignored connect_timeout", "ignored dns_refresh_rate", "unmodelled outlier_detection", "unmodelled transport_socket"}},
		{"route features", &routepb.RouteConfiguration{Name: "r", VirtualHosts: []*routepb.VirtualHost{{
			Name: "v", Domains: []string{"*"},
			Routes: []*routepb.Route{{
				Match: &routepb.RouteMatch{PathSpecifier: &routepb.RouteMatch_Prefix{Prefix: "/"},
					RuntimeFraction: &corepb.RuntimeFractionalPercent{}},
				Action: &routepb.Route_Route{Route: &routepb.RouteAction{
					ClusterSpecifier:  &routepb.RouteAction_Cluster{Cluster: "c"},
					MaxStreamDuration: &routepb.RouteAction_MaxStreamDuration{MaxStreamDuration: durationpb.New(0), GrpcTimeoutHeaderMax: durationpb.New(5e9)},
					RetryPolicy:       &routepb.RetryPolicy{RetryOn: "unavailable,5xx", NumRetries: wrapperspb.UInt32(2)},
				}},
				TypedPerFilterConfig: map[string]*anypb.Any{"envoy.filters.http.fault": fault},
			}},
		}}}, []string{
			"unmodelled virtual_hosts[0].routes[0].match.runtime_fraction",
			"unmodelled virtual_hosts[0].routes[0].route.max_stream_duration.grpc_timeout_header_max",
			"ignored virtual_hosts[0].routes[0].route.retry_policy.retry_on",
			"unmodelled virtual_hosts[0].routes[0].typed_per_filter_config",
		}},
	}
	for _, tc := range cases {
		var got []string
		for _, n := range Audit(tc.res) {
			got = append(got, n.Kind.String()+" "+n.Path)
			if n.What == "" {
				t.Errorf("%s: %s says nothing of what clients do", tc.name, n.Path)
			}
		}
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s: notes\n%s\nwant\n%s", tc.name, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}
}
