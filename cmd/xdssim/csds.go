package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"

	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/trace"
)

var csdsCommand = command{
	runs: true,
	name: "csds", args: "FILE|NAME", scenario: true,
	summary: "print a client's xDS cache at a moment of the run, as a CSDS ClientStatusResponse",
	about: `Run a scenario to virtual time --at and print what the client named by
--client would answer a CSDS request then (gRFC A40; envoy
service/status/v3 ClientStatusResponse, as JSON with the proto's field
names): one ClientConfig per XdsClient instance of the client, whose
client_scope is its data-plane target (gRFC A71), with every resource in its
cache: type_url, name, version_info, client_status (REQUESTED, ACKED,
NACKED, DOES_NOT_EXIST, TIMEOUT or RECEIVED_ERROR), last_updated, the
resource itself as xds_config, and error_state (the last error: its details,
the version that carried it and when). Times are virtual, counted from the
Unix epoch. A client that is not running at --at has no XdsClient: its
response is empty, and stderr says why.`,
	flags: []flagDoc{
		{name: "client", arg: "NAME[/TARGET]", doc: "the client: GROUP/INDEX (every target) or GROUP/INDEX/TARGET (required)"},
		{name: "at", arg: "T", doc: "the virtual time to look at, such as 1m30s (required)"},
		flagSeed, flagSet, flagAdd, flagMaxMemory, flagMaxEvents, flagMaxCPU, flagForce,
	},
	exec: cmdCSDS,
}

func cmdCSDS(vals flagValues, pos []string, stdout, stderr io.Writer) error {
	s, lim, err := loadScenario("csds", vals, pos, true, stderr)
	if err != nil {
		return err
	}
	client := vals.last("client")
	if client == "" {
		return badInput("csds: expected --client GROUP/INDEX[/TARGET], such as --client %s/0", s.Fleet.Groups[0].Name)
	}
	if !vals.given("at") {
		return badInput("csds: expected --at T, the virtual time to look at, such as --at 1m")
	}
	at, err := durationFlag(vals, "at")
	if err != nil {
		return err
	}
	cfg := s.FleetConfig()
	if err := cfg.CheckClient(client); err != nil {
		return badInput("--client %v", err)
	}
	if at > cfg.Duration {
		return badInput("--at %s: after the end of the run (%s)", trace.Dur(at), trace.Dur(cfg.Duration))
	}
	fmt.Fprintf(stderr, "xdssim: scenario %s, seed %d: the CSDS of %s at %s\n", s.Name, s.Seed, client, trace.Dur(at))
	var resp statuspb.ClientStatusResponse
	var state fleet.ClientState
	var inspectErr error
	_, err = runBounded(lim, s, cfg, fleet.Options{InspectAt: []time.Duration{at}, Inspect: func(_ time.Duration, in *fleet.Inspector) {
		resp.Config, state, inspectErr = in.CSDS(client)
	}})
	if err != nil {
		return err
	}
	if inspectErr != nil {
		return inspectErr
	}
	switch state {
	case fleet.ClientNotStarted:
		fmt.Fprintf(stderr, "xdssim: %s has not started at %s: it has no XdsClient\n", client, trace.Dur(at))
	case fleet.ClientDown:
		fmt.Fprintf(stderr, "xdssim: %s is down for a restart at %s: it has no XdsClient\n", client, trace.Dur(at))
	}
	out, err := csdsJSON(&resp)
	if err != nil {
		return err
	}
	beginWriting() // --max-cpu no longer stops a half-printed response
	_, err = stdout.Write(out)
	return err
}

// csdsJSON formats resp as CSDS clients print it: protojson with the
// proto's field names, indented. protojson's own whitespace is not
// stable on purpose, so it is compacted and indented again, which makes
// the same response the same bytes.
func csdsJSON(resp *statuspb.ClientStatusResponse) ([]byte, error) {
	raw, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(resp)
	if err != nil {
		return nil, fmt.Errorf("csds: %w", err)
	}
	var compact, out bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, fmt.Errorf("csds: %w", err)
	}
	if err := json.Indent(&out, compact.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("csds: %w", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}
