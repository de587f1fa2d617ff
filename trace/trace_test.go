package trace_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/xdssim/xdssim/model/dataplane"
	"github.com/xdssim/xdssim/model/fleet"
	"github.com/xdssim/xdssim/model/xdsclient"
	"github.com/xdssim/xdssim/scenarios"
	"github.com/xdssim/xdssim/trace"
)

// traced runs a library scenario with overrides, tracing clients.
func traced(t *testing.T, name string, sets []string, clients ...string) ([]fleet.TraceEvent, *fleet.Results) {
	t.Helper()
	s, err := scenarios.Load(name, sets)
	if err != nil {
		t.Fatal(err)
	}
	var rec trace.Recorder
	res, err := fleet.Run(s.FleetConfig(), fleet.Options{Trace: rec.Record, TraceClients: clients})
	if err != nil {
		t.Fatal(err)
	}
	return rec.Events(), res
}

// failing returns the first client whose RPCs failed for cause in a run
// of the library scenario name with sets.
func failing(t *testing.T, name string, sets []string, cause dataplane.Cause) string {
	t.Helper()
	s, err := scenarios.Load(name, sets)
	if err != nil {
		t.Fatal(err)
	}
	res, err := fleet.Run(s.FleetConfig(), fleet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range res.Intervals {
		if c, ok := in.WindowCause(); ok && c == cause {
			return in.Entity[:strings.LastIndexByte(in.Entity, '/')]
		}
	}
	t.Fatalf("no client of %s failed for %v", name, cause)
	return ""
}

func narrative(t *testing.T, n trace.Narrative) []string {
	t.Helper()
	var b bytes.Buffer
	if err := trace.WriteNarrative(&b, n); err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// rpcEvents are the events of one RPC that went to backend and ended with
// code at its start.
func rpcEvents(id uint64, at time.Duration, backend string, code codes.Code, cause dataplane.Cause) []fleet.TraceEvent {
	e := fleet.TraceEvent{Client: "web/0", Target: "echo", At: at, RPC: id, Attempt: 1}
	pick, attempt, end := e, e, e
	pick.Kind, pick.Backend, pick.Rule = fleet.TracePick, backend, "round_robin"
	attempt.Kind, attempt.Code, attempt.Cause, attempt.Rule = fleet.TraceAttempt, code, cause, "ground truth"
	end.Kind, end.Code, end.Cause = fleet.TraceRPC, code, cause
	if code == codes.OK {
		end.Cause = 0
	}
	return []fleet.TraceEvent{pick, attempt, end}
}

// TestNarrativeFoldsRPCsThatWentAlike: a run of RPCs with the same
// outcome is told as its first RPC and a count; another outcome, or any
// other event, ends the run.
func TestNarrativeFoldsRPCsThatWentAlike(t *testing.T) {
	var evs []fleet.TraceEvent
	for i := range 4 {
		evs = append(evs, rpcEvents(uint64(10+i), ms(100*i), "10.0.0.1:8080", codes.OK, 0)...)
	}
	evs = append(evs, fleet.TraceEvent{Client: "web/0", Target: "echo", At: ms(450), Kind: fleet.TraceConnectivity, Server: "cp", Rule: "r"})
	for i := range 3 {
		evs = append(evs, rpcEvents(uint64(20+i), ms(500+100*i), "10.0.0.2:8080", codes.Unavailable, dataplane.BackendDown)...)
	}
	got := narrative(t, trace.Narrative{Events: evs})
	want := []string{
		"         0s  web/0/echo  RPC #10 → 10.0.0.1:8080 OK  [round_robin; ground truth]",
		"      300ms  web/0/echo  … and 3 more RPCs like #10 until 300ms, to 10.0.0.1:8080",
		"      450ms  web/0/echo  channel to cp: IDLE → IDLE  [r]",
		"      500ms  web/0/echo  RPC #20 → 10.0.0.2:8080 UNAVAILABLE (backend_down)  [round_robin; ground truth]",
		"      700ms  web/0/echo  … and 2 more RPCs like #20 until 700ms, to 10.0.0.2:8080",
	}
	if !slices.Equal(got, want) {
		t.Errorf("narrative:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestNarrativeTellsOneErrorToManyWatchersOnce: a connectivity failure
// tells every watcher of the authority (gRFC A88 table); the narrative
// says it once, naming them all.
func TestNarrativeTellsOneErrorToManyWatchersOnce(t *testing.T) {
	var evs []fleet.TraceEvent
	st := xdsclient.Status{Code: codes.Unavailable, Message: "connection refused"}
	for _, r := range []struct {
		typ  xdsclient.ResourceType
		name string
	}{{xdsclient.LDS, "echo"}, {xdsclient.CDS, "echo-cluster"}} {
		evs = append(evs, fleet.TraceEvent{Client: "web/0", Target: "echo", At: time.Second, Kind: fleet.TraceNotify,
			Notification: xdsclient.AmbientError, Type: r.typ, Names: []string{r.name}, Status: st, Rule: "A88"})
	}
	got := narrative(t, trace.Narrative{Events: evs})
	want := []string{"         1s  web/0/echo  watchers of LDS echo, CDS echo-cluster: OnAmbientError(UNAVAILABLE: connection refused): the cached resource stays in use  [A88]"}
	if !slices.Equal(got, want) {
		t.Errorf("narrative:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestNarrativeTellsTheScenarioAndKeepsToItsWindow: the scenario's faults
// begin and end among the client's lines; --from and --to keep to a span.
func TestNarrativeTellsTheScenarioAndKeepsToItsWindow(t *testing.T) {
	evs, res := traced(t, "fallback-during-restarts", []string{"fleet.group[0].clients=10", "fleet.group[1].clients=10"}, "go/0")
	all := narrative(t, trace.Narrative{Events: evs, Scenario: res.Faults})
	for _, w := range []string{"server-down [primary] begins", "server-down [primary] ends", "the client process starts"} {
		if !slices.ContainsFunc(all, func(l string) bool { return strings.Contains(l, w) }) {
			t.Errorf("narrative lacks %q", w)
		}
	}
	win := trace.Window{From: time.Minute, To: 2 * time.Minute}
	for _, l := range narrative(t, trace.Narrative{Events: evs, Scenario: res.Faults, Window: win}) {
		at, err := time.ParseDuration(strings.Fields(l)[0])
		if err != nil || !win.Contains(at) {
			t.Errorf("line outside [1m, 2m]: %s", l)
		}
	}
}

// TestJSONLinesHoldEveryEventWithItsTextAndRule: one JSON object a line,
// in time order, each with its kind, client, text and rule.
func TestJSONLinesHoldEveryEventWithItsTextAndRule(t *testing.T) {
	evs, _ := traced(t, "bad-cds-rollout", []string{"fleet.group[0].clients=5", "fleet.group[1].clients=5", "fleet.group[2].clients=5"},
		"spec-fail-on-data-errors/0")
	var b bytes.Buffer
	if err := trace.WriteJSONLines(&b, evs); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(&b)
	sc.Buffer(nil, 1<<20)
	n, nacks, last := 0, 0, int64(-1)
	for sc.Scan() {
		var e struct {
			AtNS   int64  `json:"at_ns"`
			Kind   string `json:"kind"`
			Client string `json:"client"`
			Text   string `json:"text"`
			Rule   string `json:"rule"`
			NACK   bool   `json:"nack"`
			Status *struct {
				Code string `json:"code"`
			} `json:"status"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %d: %v: %s", n+1, err, sc.Text())
		}
		n++
		if e.AtNS < last || e.Client != "spec-fail-on-data-errors/0" || e.Text == "" || e.Rule == "" {
			t.Errorf("line %d out of order or incomplete: %s", n, sc.Text())
		}
		last = e.AtNS
		if e.Kind == "send" && e.NACK {
			nacks++
			if e.Status == nil || e.Status.Code != "INVALID_ARGUMENT" {
				t.Errorf("NACK without its INVALID_ARGUMENT error_detail: %s", sc.Text())
			}
		}
	}
	if n != len(evs) || nacks == 0 {
		t.Errorf("%d lines for %d events, %d NACKs; want one line each and a NACK", n, len(evs), nacks)
	}
}

type chromeEvent struct {
	Name string         `json:"name"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  *float64       `json:"dur"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Args map[string]any `json:"args"`
}

// TestPerfettoTraceHasATrackPerChannelAndNestedSlices: the Chrome trace
// parses; every thread with events is named; slices on one thread never
// partly overlap (the format needs them nested); the client's channels,
// streams, fallback and failure windows are slices, its NACKs and timer
// firings instants.
func TestPerfettoTraceHasATrackPerChannelAndNestedSlices(t *testing.T) {
	for _, tt := range []struct {
		name, client string
		sets         []string
		slices       []string // names (prefixes) of slices the trace must have
		instants     []string
	}{
		{"fallback-during-restarts", "", []string{"fleet.group[0].clients=5", "fleet.group[1].clients=5"},
			[]string{"READY", "TRANSIENT_FAILURE", "ADS stream", "on fallback: fallback", "client down (restart)", "failing: backend_down_stale_eds"},
			[]string{"ADS retry timer fired", "stream failed: UNAVAILABLE"}},
		{"bad-cds-rollout", "spec-fail-on-data-errors/0", []string{"fleet.group[0].clients=5", "fleet.group[1].clients=5", "fleet.group[2].clients=5"},
			[]string{"ADS stream", "failing: nack"}, []string{"NACK CDS", "OnResourceChanged INVALID_ARGUMENT"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.client == "" {
				tt.client = failing(t, tt.name, tt.sets, dataplane.BackendDownStaleEDS)
			}
			evs, res := traced(t, tt.name, tt.sets, tt.client)
			var b bytes.Buffer
			if err := trace.WritePerfetto(&b, trace.Perfetto{Events: evs, Scenario: res.Faults, End: res.Duration, Title: tt.name}); err != nil {
				t.Fatal(err)
			}
			var doc struct {
				TraceEvents []chromeEvent `json:"traceEvents"`
			}
			if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
				t.Fatalf("not JSON: %v", err)
			}
			named := map[[2]int]bool{}
			threads := map[[2]int][]chromeEvent{}
			var names []string
			for _, e := range doc.TraceEvents {
				k := [2]int{e.Pid, e.Tid}
				switch e.Ph {
				case "M":
					if e.Name == "thread_name" || e.Name == "process_name" {
						named[k] = true
					}
				case "X":
					if e.Dur == nil || *e.Dur < 0 || e.Ts < 0 || e.Ts+*e.Dur > float64(res.Duration/time.Microsecond) {
						t.Errorf("slice %q at %v without a duration in the run", e.Name, e.Ts)
					}
					threads[k] = append(threads[k], e)
					names = append(names, "X:"+e.Name)
				case "i":
					threads[k] = append(threads[k], e)
					names = append(names, "i:"+e.Name)
				default:
					t.Errorf("event of phase %q", e.Ph)
				}
			}
			for k, evs := range threads {
				if !named[k] {
					t.Errorf("thread %v has events but no name", k)
				}
				var xs []chromeEvent
				for _, e := range evs {
					if e.Ph == "X" {
						xs = append(xs, e)
					}
				}
				slices.SortStableFunc(xs, func(a, b chromeEvent) int { return int(a.Ts - b.Ts) })
				for i := 1; i < len(xs); i++ {
					a, b := xs[i-1], xs[i]
					if b.Ts < a.Ts+*a.Dur && b.Ts+*b.Dur > a.Ts+*a.Dur {
						t.Errorf("thread %v: slices %q and %q overlap without nesting", k, a.Name, b.Name)
					}
				}
			}
			for _, want := range tt.slices {
				if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "X:"+want) }) {
					t.Errorf("no slice %q", want)
				}
			}
			for _, want := range tt.instants {
				if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "i:"+want) }) {
					t.Errorf("no instant %q", want)
				}
			}
		})
	}
}
