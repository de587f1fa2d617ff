package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/xdssim/xdssim/scenarios"
)

// peakRSS runs the test binary as xdssim with args (see TestMain) under
// GNU time, and returns its exit code, stderr and the peak resident
// memory of the command, the supervised child included. The rusage that
// wait4 gives this process of its own child is no measure: a child
// started by vfork and exec counts the RSS its parent, this test, had.
// time's child is forked from time, which is small.
func peakRSS(t *testing.T, args ...string) (code int, stderr string, peak int64) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		t.Skip("no /usr/bin/time to measure the peak memory with")
	}
	out := filepath.Join(t.TempDir(), "maxrss")
	code, stderr = runXdssim(t, exec.Command("/usr/bin/time", append([]string{"-f", "%M", "-o", out, os.Args[0]}, args...)...), nil)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	kib, err := strconv.ParseInt(strings.TrimSpace(string(b[bytes.LastIndexByte(bytes.TrimSpace(b), '\n')+1:])), 10, 64)
	if err != nil {
		t.Fatalf("/usr/bin/time wrote %q", b)
	}
	return code, stderr, kib << 10
}

// backendEvents is a scenario of n [[backend]] events, each on count of
// the service's 100 000 endpoints, for a fleet of clients.
func backendEvents(n, count, clients int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "duration = \"5m\"\n[[control_plane]]\nname = \"cp\"\n[[control_plane.service]]\nname = \"svc\"\nendpoints = %d\n[[fleet.group]]\nclients = %d\n", count, clients)
	for i := range n {
		fmt.Fprintf(&b, "[[backend]]\nat = \"%ds\"\naction = \"down\"\nservice = \"svc\"\ncount = %d\nduration = \"1s\"\n", 1+i%290, count)
	}
	return b.String()
}

// TestValidateDoesNotBuildWhatTheRunWould: validate resolves and
// estimates a scenario without building what the run would: 1 000
// [[backend]] events of 100 000 backends each (27 KB of TOML) made it
// name every backend of every event, and run out of memory at ~6.5 GB.
func TestValidateDoesNotBuildWhatTheRunWould(t *testing.T) {
	f := writeScenario(t, backendEvents(1000, 100_000, 10))
	code, stderr, peak := peakRSS(t, "validate", f, "--force")
	if code != exitOK {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	t.Logf("validate peaked at %.1f MiB", float64(peak)/(1<<20))
	if peak > 150<<20 {
		t.Errorf("validate peaked at %d MiB of resident memory, more than 150 MiB", peak>>20)
	}
}

// costClass generates scenarios whose cost grows with n along one class
// of what the scenario language can express.
type costClass struct {
	name string
	// small and long are the sizes the test runs: small by default,
	// long (the sizes of issue 27's reproducers) with
	// XDSSIM_LONG_CALIBRATION=1.
	small, long int
	gen         func(n int) string
	// files, if set, are the files the scenario names (a dump), by
	// name, written beside it.
	files func(n int) map[string]string
}

// meshDump is a dump of plain resources: one API listener "svc:1", its
// route, an EDS cluster and its ClusterLoadAssignment of n endpoints.
func meshDump(n int) string {
	var eps strings.Builder
	for i := range n {
		if i > 0 {
			eps.WriteByte(',')
		}
		fmt.Fprintf(&eps, `{"endpoint":{"address":{"socketAddress":{"address":"10.%d.%d.%d","portValue":8080}}},"healthStatus":"HEALTHY"}`, i>>16, i>>8&255, i&255)
	}
	return `[{"@type":"type.googleapis.com/envoy.config.listener.v3.Listener","name":"svc:1","apiListener":{"apiListener":{"@type":"type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager","rds":{"configSource":{"ads":{},"resourceApiVersion":"V3"},"routeConfigName":"svc:1"},"httpFilters":[{"name":"envoy.filters.http.router","typedConfig":{"@type":"type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}]}}},
{"@type":"type.googleapis.com/envoy.config.route.v3.RouteConfiguration","name":"svc:1","virtualHosts":[{"name":"svc:1","domains":["svc:1"],"routes":[{"match":{"prefix":"/"},"route":{"cluster":"c"}}]}]},
{"@type":"type.googleapis.com/envoy.config.cluster.v3.Cluster","name":"c","type":"EDS","edsClusterConfig":{"edsConfig":{"ads":{},"resourceApiVersion":"V3"},"serviceName":"c"},"lbPolicy":"ROUND_ROBIN"},
{"@type":"type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment","clusterName":"c","endpoints":[{"locality":{"region":"r","zone":"z"},"lbEndpoints":[` + eps.String() + `]}]}]`
}

// fleetOf is a scenario of one control plane serving services of eps
// endpoints each (named by names, or "svc"), and a group of clients.
func fleetOf(duration string, eps, clients int, names ...string) string {
	if len(names) == 0 {
		names = []string{"svc"}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "duration = %q\n[[control_plane]]\nname = \"cp\"\n", duration)
	for _, n := range names {
		fmt.Fprintf(&b, "[[control_plane.service]]\nname = %q\nendpoints = %d\n", n, eps)
	}
	fmt.Fprintf(&b, "[[fleet.group]]\nclients = %d\n", clients)
	return b.String()
}

// withTables appends n tables made by table(i) to doc.
func withTables(doc string, n int, table func(i int) string) string {
	var b strings.Builder
	b.WriteString(doc)
	for i := range n {
		b.WriteString(table(i))
	}
	return b.String()
}

// spreadAt is the i-th of times spread over the first 110 s of a run.
func spreadAt(i int) string { return fmt.Sprintf("%dms", 1000+i*37%110_000) }

var costClasses = []costClass{
	{"services × endpoints (4 services, 10 clients)", 10_000, 100_000, func(n int) string {
		return fleetOf("2m", n, 10, "a", "b", "c", "d")
	}, nil},
	{"endpoints × clients (1 service of 20 000)", 20, 200, func(n int) string { return fleetOf("2m", 20_000, n) }, nil},
	{"scale_endpoints (10 clients)", 20_000, 100_000, func(n int) string {
		return fleetOf("2m", 3, 10) + fmt.Sprintf("[[change]]\nat = \"30s\"\naction = \"scale_endpoints\"\nservice = \"svc\"\ncount = %d\n", n)
	}, nil},
	{"replace_endpoints (10 clients)", 10_000, 30_000, func(n int) string {
		return fleetOf("2m", n, 10) + fmt.Sprintf("[[change]]\nat = \"30s\"\naction = \"replace_endpoints\"\nservice = \"svc\"\ncount = %d\n", n)
	}, nil},
	{"backend events of 10 000 backends (10 clients)", 50, 300, func(n int) string {
		return withTables(fleetOf("2m", 10_000, 10), n, func(i int) string {
			return fmt.Sprintf("[[backend]]\nat = %q\naction = \"down\"\nservice = \"svc\"\ncount = 10000\nduration = \"1s\"\n", spreadAt(i))
		})
	}, nil},
	{"service name bytes (40 clients)", 10_000, 100_000, func(n int) string {
		return fleetOf("2m", 3, 40, strings.Repeat("s", n))
	}, nil},
	{"group name bytes (1 000 clients)", 1_000, 10_000, func(n int) string {
		return strings.Replace(fleetOf("2m", 3, 1000), "[[fleet.group]]\n", fmt.Sprintf("[[fleet.group]]\nname = %q\n", strings.Repeat("g", n)), 1)
	}, nil},
	{"faults (10 clients)", 2_000, 20_000, func(n int) string {
		return withTables(fleetOf("2m", 3, 10), n, func(i int) string {
			return fmt.Sprintf("[[fault]]\nkind = \"server-down\"\nat = %q\nduration = \"50ms\"\n", spreadAt(i))
		})
	}, nil},
	{"restarts (10 clients)", 1_000, 20_000, func(n int) string {
		return withTables(fleetOf("2m", 3, 10), n, func(i int) string {
			return fmt.Sprintf("[[fleet.restart]]\nat = %q\nfraction = 0.1\ndowntime = \"50ms\"\n", spreadAt(i))
		})
	}, nil},
	{"own-mesh endpoints in a dump (50 clients)", 40_000, 100_000, func(n int) string {
		return "duration = \"1m\"\n[[control_plane]]\nname = \"cp\"\nresources = [\"dump.json\"]\n[[fleet.group]]\nclients = 50\ntargets = [\"svc:1\"]\n"
	}, func(n int) map[string]string { return map[string]string{"dump.json": meshDump(n)} }},
	{"changes (10 clients)", 1_000, 20_000, func(n int) string {
		return withTables(fleetOf("2m", 3, 10), n, func(i int) string {
			return fmt.Sprintf("[[change]]\nat = %q\naction = \"set_health\"\nservice = \"svc\"\ncount = 1\nhealth = %q\n",
				spreadAt(i), [2]string{"UNHEALTHY", "HEALTHY"}[i%2])
		})
	}, nil},
}

// TestTheEstimateCoversEveryCostClass runs a scenario of each cost class
// and fails when its measured peak memory is more than twice the
// estimate. -v prints the docs/limits.md table row of each.
func TestTheEstimateCoversEveryCostClass(t *testing.T) {
	long := os.Getenv("XDSSIM_LONG_CALIBRATION") != ""
	if testing.Short() && !long {
		t.Skip("runs a scenario per cost class")
	}
	for _, c := range costClasses {
		t.Run(c.name, func(t *testing.T) {
			n := c.small
			if long {
				n = c.long
			}
			f := writeScenario(t, c.gen(n))
			if c.files != nil {
				for name, doc := range c.files(n) {
					if err := os.WriteFile(filepath.Join(filepath.Dir(f), name), []byte(doc), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			s, err := scenarios.Load(f, nil)
			if err != nil {
				t.Fatal(err)
			}
			est := s.Estimate()
			code, stderr, peak := peakRSS(t, "run", f, "--quiet", "--force", "--out", filepath.Join(t.TempDir(), "out"))
			if code != exitOK {
				t.Fatalf("exit %d:\n%s", code, stderr)
			}
			t.Logf("| %s, n = %d | %s | %s | %.2f |", c.name, n, formatBytes(uint64(est.Memory)), formatBytes(uint64(peak)), float64(est.Memory)/float64(peak))
			if peak > 2*est.Memory {
				t.Errorf("n = %d: measured peak %s, more than twice the estimate %s (%s)", n, formatBytes(uint64(peak)), formatBytes(uint64(est.Memory)), est.Main(est.Drivers, 3))
			}
		})
	}
}
