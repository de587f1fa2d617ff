package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/scenarios"
	"github.com/xdssim/xdssim/stamp"
	"github.com/xdssim/xdssim/trace"
	"github.com/xdssim/xdssim/viz"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the pinned transcripts under testdata/")

// tornClient is a client of fallback-during-restarts that restarts during
// the primary's outage, falls back, reverts with a torn config and fails
// from 3m30s to the end (seed 1).
const tornClient = "go/432"

// TestTraceExplainsAFailureWindowOfFallbackDuringRestarts pins the
// narrative of a failing client of fallback-during-restarts, from its
// revert to the end of its failure window (testdata/trace/; -rewrite
// writes it anew), and checks that the whole narrative tells every step
// of the story the scenario's header tells: the restart with nothing
// cached, the stream to the primary failing before any response, the
// fallback and its four ACKs from the fallback server, the revert on the
// primary's Listener with no route, cluster or endpoints asked of it (the
// config tear), and the failure window with its cause.
func TestTraceExplainsAFailureWindowOfFallbackDuringRestarts(t *testing.T) {
	code, full, stderr := runMain(t, "trace", "fallback-during-restarts", "--client", tornClient)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	story := []string{
		"the client process stops for restart 0",
		"the client process starts: a new XdsClient with an empty cache",
		"ADS stream to primary failed before any response (UNAVAILABLE: connection error: connect: connection refused): a connectivity failure  [gRFC A57, Handling ADS Stream Termination",
		"falls back to fallback  [gRFC A71",
		`→ fallback ACK EDS [echo-cluster] version "fallback/1"`,
		"server-down [primary] ends",
		"reverts to primary, closing the lower-priority channels  [gRFC A71",
		"echo endpoints 0-2 down begins",
		"RPC failure window opens",
		"backend_down_stale_eds: the backends the client has are down while its control plane already lists others: stale EDS",
		"RPC failure window closes",
	}
	at := 0
	for _, s := range story {
		i := strings.Index(full[at:], s)
		if i < 0 {
			t.Fatalf("the narrative does not tell, after what came before, %q:\n%s", s, full)
		}
		at += i + len(s)
	}
	// After the revert the primary is asked for the Listener only: grpc-go
	// subscribes a new watch on the active channel (authority.go
	// watchResource, xdsChannelToUse), and the revert does not subscribe it
	// on the primary (handleRevertingToPrimaryOnUpdate).
	revert := full[strings.Index(full, "reverts to primary"):]
	for _, typ := range []string{"RDS", "CDS", "EDS"} {
		if strings.Contains(revert, "→ primary request "+typ) {
			t.Errorf("after the revert the client asks the primary for %s; the tear is that it does not", typ)
		}
	}

	code, got, _ := runMain(t, "trace", "fallback-during-restarts", "--client", tornClient, "--from", "3m16s")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	golden := filepath.Join("testdata", "trace", "fallback-during-restarts-go-432.txt")
	if *rewrite {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -run %s -rewrite writes it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("the narrative differs from %s (-rewrite writes it anew):\ngot:\n%s", golden, got)
	}
	// Reference: gRFC A71, Config tears; grpc-go authority.go watchResource
	// and handleRevertingToPrimaryOnUpdate (inferred from the code; no
	// grpc-go test confirms it).
}

// TestTracingLeavesSummaryJSONAsItIs: a run with a client traced writes
// the same summary.json, byte for byte, as the run without.
func TestTracingLeavesSummaryJSONAsItIs(t *testing.T) {
	s, err := scenarios.Load("fallback-during-restarts", nil)
	if err != nil {
		t.Fatal(err)
	}
	summary := func(opts fleet.Options) []byte {
		res, err := fleet.Run(s.FleetConfig(), opts)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := viz.WriteSummary(&b, res, stamp.Run{Build: stamp.Read(), ScenarioSHA256: s.SHA256()}, viz.Evaluate(res, s.Expect)...); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	var rec trace.Recorder
	plain := summary(fleet.Options{})
	if traced := summary(fleet.Options{Trace: rec.Record, TraceClients: []string{tornClient, "core/7"}}); !bytes.Equal(plain, traced) {
		t.Error("summary.json of a traced run differs from the untraced run's")
	}
	if len(rec.Events()) == 0 {
		t.Error("nothing was traced")
	}
}

// TestTraceWritesJSONLinesAndAChromeTrace: --json prints one event a
// line, --perfetto writes a Chrome trace; a bad --client is invalid input.
func TestTraceWritesJSONLinesAndAChromeTrace(t *testing.T) {
	p := filepath.Join(t.TempDir(), "trace.json")
	code, stdout, stderr := runMain(t, "trace", "default", "--client", "web/3", "--to", "2m", "--json", "--perfetto", p)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	for _, l := range lines {
		var e map[string]any
		if err := json.Unmarshal([]byte(l), &e); err != nil || e["client"] != "web/3" {
			t.Fatalf("not an event of web/3: %s (%v)", l, err)
		}
	}
	var doc struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	b, err := os.ReadFile(p)
	if err != nil || json.Unmarshal(b, &doc) != nil || len(doc.TraceEvents) == 0 {
		t.Fatalf("no Chrome trace in %s: %v", p, err)
	}
	for _, tt := range []struct{ args, want []string }{
		{[]string{"trace", "default"}, []string{"trace: expected --client"}},
		{[]string{"trace", "default", "--client", "web/999"}, []string{"--client", "group web has 200 clients"}},
		{[]string{"trace", "default", "--client", "nope/1"}, []string{`no group is named "nope" (groups: web, batch)`}},
		{[]string{"trace", "default", "--client", "web/1", "--from", "9m"}, []string{"--from 9m0s: after the end of the run (5m0s)"}},
		{[]string{"trace", "default", "--client", "web/1", "--from", "soon"}, []string{"--from soon: expected a virtual time"}},
	} {
		code, _, stderr := runMain(t, tt.args...)
		if code != exitInput {
			t.Errorf("%v: exit %d, want %d", tt.args, code, exitInput)
		}
		for _, w := range tt.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: stderr lacks %q: %s", tt.args, w, stderr)
			}
		}
	}
}
