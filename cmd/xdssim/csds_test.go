package main

import (
	"strings"
	"testing"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/xdssim/xdssim/model/xdsclient"
)

// csds runs `xdssim csds` and decodes its output with the real envoy
// ClientStatusResponse proto.
func csds(t *testing.T, args ...string) *statuspb.ClientStatusResponse {
	t.Helper()
	code, stdout, stderr := runMain(t, append([]string{"csds"}, args...)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var resp statuspb.ClientStatusResponse
	if err := protojson.Unmarshal([]byte(stdout), &resp); err != nil {
		t.Fatalf("not a ClientStatusResponse: %v\n%s", err, stdout)
	}
	return &resp
}

// entry returns the CSDS entry of the resource of type t named name.
func entry(t *testing.T, resp *statuspb.ClientStatusResponse, typ xdsclient.ResourceType, name string) *statuspb.ClientConfig_GenericXdsConfig {
	t.Helper()
	if len(resp.GetConfig()) != 1 || resp.GetConfig()[0].GetClientScope() != "xds:///echo" {
		t.Fatalf("want one ClientConfig with client_scope xds:///echo (gRFC A71), got %v", resp.GetConfig())
	}
	for _, g := range resp.GetConfig()[0].GetGenericXdsConfigs() {
		if g.GetTypeUrl() == typ.TypeURL() && g.GetName() == name {
			return g
		}
	}
	t.Fatalf("no %v %s in the CSDS", typ, name)
	return nil
}

// TestCSDSShowsANACKWithItsError: after bad-cds-rollout's invalid Cluster,
// a client's CSDS has the Cluster NACKED, with the validation error in
// error_state and the rejected version, while it keeps the version it
// had (gRFC A40 CSDS, A88).
func TestCSDSShowsANACKWithItsError(t *testing.T) {
	resp := csds(t, "bad-cds-rollout", "--client", "go/0", "--at", "1m30s")
	cds := entry(t, resp, xdsclient.CDS, "echo-cluster")
	if cds.GetClientStatus() != adminpb.ClientResourceStatus_NACKED {
		t.Errorf("echo-cluster is %v, want NACKED", cds.GetClientStatus())
	}
	es := cds.GetErrorState()
	if !strings.Contains(es.GetDetails(), "NACKed") || !strings.Contains(es.GetDetails(), "cds.lb_policy") || es.GetVersionInfo() != "cp/2" {
		t.Errorf("error_state = %v, want the lb_policy validation error of version cp/2", es)
	}
	if cds.GetVersionInfo() != "cp/1" || cds.GetXdsConfig() == nil {
		t.Errorf("version %q, config %v: want the cached cp/1 kept", cds.GetVersionInfo(), cds.GetXdsConfig() != nil)
	}
	if lds := entry(t, resp, xdsclient.LDS, "echo"); lds.GetClientStatus() != adminpb.ClientResourceStatus_ACKED {
		t.Errorf("echo listener is %v, want ACKED", lds.GetClientStatus())
	}
	// Reference: gRFC A40; envoy admin/v3 ClientResourceStatus NACKED.
}

// TestCSDSShowsAReceivedError: when a server that sends xRFC TP3
// resource_errors deletes the service, an A88 client's entries are
// RECEIVED_ERROR with the server's error, and keep their resource (A88's
// default: data errors are not fatal).
func TestCSDSShowsAReceivedError(t *testing.T) {
	resp := csds(t, "accidental-deletion", "--set", "control_plane[0].resource_errors=true", "--client", "spec/0", "--at", "1m30s")
	for _, r := range []struct {
		typ  xdsclient.ResourceType
		name string
	}{{xdsclient.LDS, "echo"}, {xdsclient.CDS, "echo-cluster"}} {
		e := entry(t, resp, r.typ, r.name)
		if e.GetClientStatus() != adminpb.ClientResourceStatus_RECEIVED_ERROR {
			t.Errorf("%v %s is %v, want RECEIVED_ERROR", r.typ, r.name, e.GetClientStatus())
		}
		if !strings.Contains(e.GetErrorState().GetDetails(), "does not exist") || e.GetXdsConfig() == nil {
			t.Errorf("%v %s: error_state %v, cached %v; want the server's NOT_FOUND and the resource kept", r.typ, r.name, e.GetErrorState(), e.GetXdsConfig() != nil)
		}
	}
	// Reference: gRFC A88, Support for Errors Provided by the xDS server.
}

// TestCSDSOfAClientThatIsNotRunning: a client down for a restart has no
// XdsClient; the response is empty and stderr says why.
func TestCSDSOfAClientThatIsNotRunning(t *testing.T) {
	code, stdout, stderr := runMain(t, "csds", "default", "--client", "web/0", "--at", "0s")
	if code != exitOK || !strings.Contains(stderr, "web/0 has not started at 0s") || strings.TrimSpace(stdout) != "{}" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	for _, args := range [][]string{
		{"csds", "default", "--at", "1m"},
		{"csds", "default", "--client", "web/0"},
		{"csds", "default", "--client", "web/0", "--at", "1h"},
	} {
		if code, _, stderr := runMain(t, args...); code != exitInput {
			t.Errorf("%v: exit %d, %s", args, code, stderr)
		}
	}
}
