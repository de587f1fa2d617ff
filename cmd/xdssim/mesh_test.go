package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/xdssim/xdssim/scenarios"
)

const libMesh = "../../scenarios/library/mesh/"

// nackDump is the dump validate/ serves to real grpc-go in case mesh-nack:
// lint's verdicts for grpc-go are the ones the real client reaches there.
const nackDump = "../../validate/cases/mesh/nack.json"

// TestLintNACKsPerProfile: a dump with a non-optional stateful-session
// filter and a MAGLEV cluster is NACKed per profile as each client's
// parser does (the filter by grpc-go and grpc-java only; MAGLEV by all,
// each with its own text), and lint exits 3.
func TestLintNACKsPerProfile(t *testing.T) {
	code, stdout, stderr := runMain(t, "lint", "--json", nackDump)
	if code != exitBreached {
		t.Fatalf("exit %d, want %d: %s", code, exitBreached, stderr)
	}
	var rep lintReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	verdicts := map[string]string{}
	for _, r := range rep.Resources {
		for _, res := range r.Results {
			verdicts[r.Type+" "+r.Name+" "+res.Profile] = res.Verdict + " " + res.Rule
			if res.Verdict == "NACK" && (res.Source == "" || res.Error == "") {
				t.Errorf("%s %s: a NACK without its source or error", r.Type, res.Profile)
			}
		}
	}
	want := map[string]string{
		"LDS session.test:1 grpc-go": "NACK lds.http_filter_unsupported", "LDS session.test:1 grpc-java": "NACK lds.http_filter_unsupported",
		"LDS session.test:1 grpc-core": "ACK ", "LDS session.test:1 spec": "ACK ",
		"CDS maglev grpc-go": "NACK cds.lb_policy", "CDS maglev grpc-java": "NACK cds.lb_policy",
		"CDS maglev grpc-core": "NACK cds.lb_policy", "CDS maglev spec": "NACK cds.lb_policy",
		"LDS maglev.test:1 grpc-go": "ACK ", "CDS ok grpc-core": "ACK ", "EDS maglev grpc-java": "ACK ",
	}
	for k, v := range want {
		if verdicts[k] != v {
			t.Errorf("%s: %q, want %q", k, verdicts[k], v)
		}
	}
	if rep.NACKs != 6 {
		t.Errorf("nacks = %d, want 6", rep.NACKs)
	}
	// grpc-core alone still NACKs the MAGLEV cluster; the library dump
	// passes everywhere.
	if code, _, _ := runMain(t, "lint", "--profiles", "grpc-core", nackDump); code != exitBreached {
		t.Errorf("--profiles grpc-core: exit %d, want 3", code)
	}
	code, stdout, stderr = runMain(t, "lint", libMesh+"shop.json")
	if code != exitOK || !strings.Contains(stdout, "outlier_detection") || !strings.Contains(stdout, "connect_timeout") {
		t.Errorf("lint shop.json: exit %d, want 0 with the unmodelled and ignored fields listed:\n%s%s", code, stdout, stderr)
	}
	if code, _, stderr := runMain(t, "lint", "--profiles", "grpc-rust", libMesh+"shop.json"); code != exitInput || !strings.Contains(stderr, "--profiles") {
		t.Errorf("an unknown profile: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runMain(t, "lint", "testdata/mesh/nope.json"); code != exitInput || !strings.Contains(stderr, "nope.json") {
		t.Errorf("a missing file: exit %d: %s", code, stderr)
	}
}

// TestImportRunsTheSameOnEveryFormat: xdssim import on the library's
// bootstrap and dump, then xdssim run on what it wrote, works with the
// dump as plain JSON, as YAML and as a CSDS ClientStatusResponse, and the
// three runs write byte-identical summary.json files but for their
// scenario_sha256, which the dump's bytes make. What it writes is of the
// current scenario format, so that it runs without a warning.
func TestImportRunsTheSameOnEveryFormat(t *testing.T) {
	hashLine := regexp.MustCompile(`(?m)^  "scenario_sha256": "[0-9a-f]{64}",\n`)
	var summaries [][]byte
	var hashes []string
	for _, dump := range []string{"shop.json", "shop.yaml", "shop.csds.json"} {
		dir := filepath.Join(t.TempDir(), strings.ReplaceAll(dump, ".", "-"))
		scenario := filepath.Join(dir, "mesh.toml")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := runMain(t, "import", "--bootstrap", libMesh+"bootstrap.json", "--resources", libMesh+dump, "--out", scenario)
		if code != exitOK {
			t.Fatalf("import %s: exit %d: %s", dump, code, stderr)
		}
		if !strings.Contains(stderr, "certificate_providers") || !strings.Contains(stderr, "outlier_detection") {
			t.Errorf("import %s: stderr does not list what is not used or modelled:\n%s", dump, stderr)
		}
		if doc, err := os.ReadFile(scenario); err != nil || !bytes.Contains(doc, []byte(fmt.Sprintf("\nformat = %d\n", scenarios.CurrentFormat))) {
			t.Errorf("import %s wrote no format = %d: %v\n%s", dump, scenarios.CurrentFormat, err, doc)
		}
		out := filepath.Join(dir, "out")
		if code, _, stderr := runMain(t, "run", scenario, "--out", out, "--set", "duration=1m", "--set", "fleet.group[0].clients=20", "--quiet"); code != exitOK || strings.Contains(stderr, "warning") {
			t.Fatalf("run %s: exit %d: %s", dump, code, stderr)
		}
		b, err := os.ReadFile(filepath.Join(out, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		hash := hashLine.Find(b)
		if hash == nil || slices.ContainsFunc(hashes, func(h string) bool { return h == string(hash) }) {
			t.Errorf("summary.json of %s: scenario_sha256 %q, want one of its own", dump, hash)
		}
		hashes = append(hashes, string(hash))
		summaries = append(summaries, hashLine.ReplaceAll(b, nil))
	}
	for i := 1; i < len(summaries); i++ {
		if !bytes.Equal(summaries[0], summaries[i]) {
			t.Errorf("summary.json of format %d differs from the plain JSON one's", i)
		}
	}
	if !bytes.Contains(summaries[0], []byte(`"unmodelled"`)) || !bytes.Contains(summaries[0], []byte(`"routing"`)) {
		t.Errorf("summary.json lacks routing or unmodelled")
	}
}
