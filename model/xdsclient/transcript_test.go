package xdsclient

// A small interaction-transcript runner in the style of
// cockroachdb/datadriven, as go.etcd.io/raft uses it. A transcript is a
// sequence of blocks:
//
//	# comment lines (kept on rewrite)
//	command arg key=value ...
//	optional input lines
//	----
//	expected output lines
//	<blank line>
//
// `go test -run TestX -rewrite` rewrites the expected output of every block
// from what the machine really did.
//
// The harness is also the wiring a simulator would be. It arms timers, counts
// Sends for SendDone, and does ADS flow control: between PauseRead and
// ResumeRead it holds what the stream delivers ("respond" and "fail" print
// "(held ...)"), and delivers it in order after ResumeRead. It records each
// notification's done handle for the "done" command ("done w=N" answers
// watcher N's oldest waiting notification, "done all" every one). "metrics"
// prints Client.Metrics and ReadPaused for each server. Clients run with
// Config.AutoDone unless "new" says autodone=false.

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointpb "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerpb "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routepb "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	faultpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	gcpauthnpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/gcp_authn/v3"
	rbacpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	routerpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	sessionpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/stateful_session/v3"
	hcmpb "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata transcripts")

type block struct {
	comments []string // lines before the command
	cmd      string
	input    []string
	want     []string
	line     int
}

func parseTranscript(t *testing.T, path string) (blocks []block, trailer []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	var cur block
	i := 0
	for i < len(lines) {
		l := lines[i]
		if strings.HasPrefix(l, "#") || strings.TrimSpace(l) == "" {
			cur.comments = append(cur.comments, l)
			i++
			continue
		}
		cur.cmd, cur.line = l, i+1
		i++
		for i < len(lines) && lines[i] != "----" {
			cur.input = append(cur.input, lines[i])
			i++
		}
		if i == len(lines) {
			t.Fatalf("%s:%d: command %q has no ---- separator", path, cur.line, cur.cmd)
		}
		i++
		for i < len(lines) && lines[i] != "" {
			cur.want = append(cur.want, lines[i])
			i++
		}
		if i < len(lines) {
			i++ // the blank line ending the output
		}
		blocks = append(blocks, cur)
		cur = block{}
	}
	return blocks, cur.comments
}

// runTranscript runs one testdata file against a fresh harness.
func runTranscript(t *testing.T, file string) {
	t.Helper()
	path := filepath.Join("testdata", file)
	blocks, trailer := parseTranscript(t, path)
	h := &harness{t: t}
	h.resetWiring()
	var out strings.Builder
	for _, b := range blocks {
		got := h.run(b)
		h.checkStatusCounts(path, b)
		if !*rewrite && strings.Join(got, "\n") != strings.Join(b.want, "\n") {
			t.Errorf("%s:%d: %s\n--- want\n%s\n--- got\n%s", path, b.line, b.cmd, strings.Join(b.want, "\n"), strings.Join(got, "\n"))
		}
		for _, c := range b.comments {
			out.WriteString(c + "\n")
		}
		out.WriteString(b.cmd + "\n")
		for _, in := range b.input {
			out.WriteString(in + "\n")
		}
		out.WriteString("----\n")
		for _, g := range got {
			out.WriteString(g + "\n")
		}
		out.WriteString("\n")
	}
	for _, c := range trailer {
		out.WriteString(c + "\n")
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// checkStatusCounts checks after every block that the client's running
// status counts (AddStatusCounts) agree with its cache (Resources).
func (h *harness) checkStatusCounts(path string, b block) {
	if h.c == nil {
		return
	}
	var got, want [NumStatuses]int
	h.c.AddStatusCounts(&got)
	for _, rs := range h.c.Resources() {
		want[rs.Status]++
	}
	if got != want {
		h.t.Errorf("%s:%d: %s: status counts %v, the cache holds %v", path, b.line, b.cmd, got, want)
	}
	h.checkSink(path, b)
}

// checkSink checks after every block that the MetricsSink the client
// records into, which it has to itself, holds the client's own gRFC A78
// metrics: its connected gauges and counters (Metrics), and its cache
// entries by cache state.
func (h *harness) checkSink(path string, b block) {
	var want MetricsSink
	for i := range h.c.Servers() {
		m := h.c.Metrics(i)
		s := want.server(i)
		if m.Connected {
			s.Connected = 1
		}
		s.ServerFailures, s.ResourceUpdatesValid, s.ResourceUpdatesInvalid = m.ServerFailures, m.ResourceUpdatesValid, m.ResourceUpdatesInvalid
	}
	for _, rs := range h.c.Resources() {
		st := resourceState{stat: uint8(rs.Status), cache: rs.Resource}
		want.Resources[rs.Type][st.cacheState()]++
	}
	got := MetricsSink{Servers: slices.Clone(h.sink.Servers), Resources: h.sink.Resources}
	got.server(len(want.Servers) - 1) // a server it never recorded anything for has zeros
	if !reflect.DeepEqual(&got, &want) {
		h.t.Errorf("%s:%d: %s: the metrics sink holds %+v, the client's own metrics are %+v", path, b.line, b.cmd, got, want)
	}
}

type timerEntry struct {
	at  time.Duration
	seq int
}

type harness struct {
	t           *testing.T
	c           *Client
	sink        *MetricsSink // the client's only
	now         time.Duration
	timers      map[TimerID]timerEntry
	seq         int
	outstanding map[int]int // Sends not yet SendDone, per server
	legacy      bool
	// held is what each server's stream delivered while its reads were
	// paused, in order; dones are the waiting done handles per watcher, in
	// the order the callbacks ran.
	held  map[int][]block
	dones map[WatcherID][]DoneHandle
}

func (h *harness) resetWiring() {
	h.now = 0
	h.timers = map[TimerID]timerEntry{}
	h.outstanding = map[int]int{}
	h.held = map[int][]block{}
	h.dones = map[WatcherID][]DoneHandle{}
}

type constRand float64

func (r constRand) Float64() float64 { return float64(r) }

// args splits "cmd a b k=v k2=\"x y\"" into positional and keyed args.
func args(line string) (pos []string, kv map[string]string) {
	kv = map[string]string{}
	var toks []string
	var cur strings.Builder
	inQ := false
	for _, r := range line {
		switch {
		case r == '"':
			inQ = !inQ
		case r == ' ' && !inQ:
			if cur.Len() > 0 {
				toks = append(toks, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		toks = append(toks, cur.String())
	}
	for _, tok := range toks {
		if k, v, ok := strings.Cut(tok, "="); ok {
			kv[k] = v
		} else {
			pos = append(pos, tok)
		}
	}
	return pos, kv
}

func (h *harness) fatalf(b block, format string, a ...any) {
	h.t.Fatalf("line %d: %s: %s", b.line, b.cmd, fmt.Sprintf(format, a...))
}

func (h *harness) server(b block, kv map[string]string) int {
	s, err := strconv.Atoi(strings.TrimPrefix(kv["s"], "s"))
	if err != nil {
		h.fatalf(b, "want s=<server index>")
	}
	return s
}

func (h *harness) run(b block) []string {
	pos, kv := args(b.cmd)
	if len(pos) == 0 {
		h.fatalf(b, "empty command")
	}
	var out []string
	switch pos[0] {
	case "new":
		h.newClient(b, kv)
		for i, s := range h.c.Servers() {
			out = append(out, fmt.Sprintf("server s%d %s%s", i, s.URI, featureString(s.Features)))
		}
		return out
	case "watch", "unwatch":
		typ, name := h.typeName(b, pos)
		w := WatcherID(1)
		if v, ok := kv["w"]; ok {
			n, _ := strconv.Atoi(v)
			w = WatcherID(n)
		}
		if pos[0] == "watch" {
			return h.effects(h.c.Watch(h.now, typ, name, w))
		}
		return h.effects(h.c.Unwatch(h.now, typ, name, w))
	case "conn":
		s := h.server(b, kv)
		st, err := ParseConnectivityState(pos[1])
		if err != nil {
			h.fatalf(b, "%v", err)
		}
		return h.effects(h.c.ConnectivityChanged(h.now, s, st))
	case "open":
		return h.effects(h.c.StreamOpened(h.now, h.server(b, kv)))
	case "fail", "respond":
		s := h.server(b, kv)
		if h.c.ReadPaused(s) {
			// The wiring holds everything the stream delivers, its end
			// included, until ResumeRead.
			h.held[s] = append(h.held[s], b)
			return []string{fmt.Sprintf("(held: s%d reads paused)", s)}
		}
		return h.deliver(b)
	case "done":
		return h.done(b, pos, kv)
	case "metrics":
		for i := range h.c.Servers() {
			out = append(out, formatMetrics(i, h.c.Metrics(i), h.c.ReadPaused(i)))
		}
		return out
	case "sent":
		s := h.server(b, kv)
		n := h.outstanding[s]
		if v, ok := kv["n"]; ok {
			n, _ = strconv.Atoi(v)
		}
		for i := 0; i < n; i++ {
			h.outstanding[s]--
			out = append(out, h.effects(h.c.SendDone(h.now, s))...)
		}
		return out
	case "connect":
		// connect s=N: READY, StreamOpened, every Send written.
		s := h.server(b, kv)
		out = append(out, h.effects(h.c.ConnectivityChanged(h.now, s, Ready))...)
		out = append(out, h.effects(h.c.StreamOpened(h.now, s))...)
		for h.outstanding[s] > 0 {
			h.outstanding[s]--
			out = append(out, h.effects(h.c.SendDone(h.now, s))...)
		}
		return out
	case "advance":
		d, err := time.ParseDuration(pos[1])
		if err != nil {
			h.fatalf(b, "%v", err)
		}
		return h.advance(h.now + d)
	case "csds":
		for _, rs := range h.c.Resources() {
			out = append(out, formatStatus(rs))
		}
		if len(out) == 0 {
			out = append(out, "(empty)")
		}
		return out
	case "timers":
		return h.pendingTimers()
	}
	h.fatalf(b, "unknown command %q", pos[0])
	return nil
}

// deliver hands one "respond" or "fail" block to the machine.
func (h *harness) deliver(b block) []string {
	pos, kv := args(b.cmd)
	s := h.server(b, kv)
	if pos[0] == "fail" {
		h.outstanding[s] = 0
		st := Status{Code: codes.Unavailable, Message: "connection refused"}
		if v, ok := kv["code"]; ok {
			st.Code = parseCode(b, h, v)
		}
		if v, ok := kv["msg"]; ok {
			st.Message = v
		}
		return h.effects(h.c.StreamFailed(h.now, s, st))
	}
	resp := h.response(b, pos, kv)
	out := h.effects(h.c.DecodedResponseReceived(h.now, s, resp))
	if kv["ack"] == "written" {
		// Write the ACK/NACK at once so timers of new names start.
		for h.outstanding[s] > 0 {
			h.outstanding[s]--
			out = append(out, h.effects(h.c.SendDone(h.now, s))...)
		}
	}
	return out
}

// done answers waiting notifications with WatcherDone: "done w=N" the
// oldest one of watcher N, "done all" every one, watcher by watcher. After
// a ResumeRead it delivers what was held.
func (h *harness) done(b block, pos []string, kv map[string]string) []string {
	var ws []WatcherID
	if len(pos) > 1 && pos[1] == "all" {
		for w := range h.dones {
			ws = append(ws, w)
		}
		sort.Slice(ws, func(i, j int) bool { return ws[i] < ws[j] })
	} else {
		n, err := strconv.Atoi(kv["w"])
		if err != nil {
			h.fatalf(b, "want done w=<watcher> or done all")
		}
		ws = []WatcherID{WatcherID(n)}
	}
	var out []string
	for _, w := range ws {
		for len(h.dones[w]) > 0 {
			d := h.dones[w][0]
			h.dones[w] = h.dones[w][1:]
			if len(h.dones[w]) == 0 {
				delete(h.dones, w)
			}
			out = append(out, fmt.Sprintf("w%d done %v", w, d))
			effs := h.effects(h.c.WatcherDone(h.now, d))
			out = append(out, effs...)
			if len(effs) == 0 && h.c.ReadPaused(d.Server) {
				out = append(out, fmt.Sprintf("(s%d reads still paused: %d callback(s) outstanding)", d.Server, h.waiting(d)))
			}
			out = append(out, h.drain(d.Server)...)
			if len(pos) < 2 || pos[1] != "all" {
				return out
			}
		}
	}
	if len(out) == 0 {
		h.fatalf(b, "no notification is waiting for done")
	}
	return out
}

// waiting counts recorded notifications still waiting on d's response.
func (h *harness) waiting(d DoneHandle) int {
	n := 0
	for _, hs := range h.dones {
		for _, x := range hs {
			if x == d {
				n++
			}
		}
	}
	return n
}

// drain delivers what server s's stream held, in order, until its reads
// pause again.
func (h *harness) drain(s int) []string {
	var out []string
	for !h.c.ReadPaused(s) && len(h.held[s]) > 0 {
		b := h.held[s][0]
		h.held[s] = h.held[s][1:]
		out = append(out, "read: "+b.cmd)
		out = append(out, h.deliver(b)...)
	}
	return out
}

func formatMetrics(s int, m ServerMetrics, paused bool) string {
	counts := func(a [numTypes]int) string {
		var p []string
		for t, n := range a {
			if n > 0 {
				p = append(p, fmt.Sprintf("%v:%d", ResourceType(t), n))
			}
		}
		return "{" + strings.Join(p, " ") + "}"
	}
	if !m.Active {
		return fmt.Sprintf("s%d inactive server_failures=%d valid=%s invalid=%s", s, m.ServerFailures, counts(m.ResourceUpdatesValid), counts(m.ResourceUpdatesInvalid))
	}
	return fmt.Sprintf("s%d connected=%v server_failures=%d valid=%s invalid=%s reads_paused=%v",
		s, m.Connected, m.ServerFailures, counts(m.ResourceUpdatesValid), counts(m.ResourceUpdatesInvalid), paused)
}

func parseCode(b block, h *harness, v string) codes.Code {
	var c codes.Code
	if err := c.UnmarshalJSON([]byte(`"` + v + `"`)); err != nil {
		h.fatalf(b, "bad code %q", v)
	}
	return c
}

func (h *harness) typeName(b block, pos []string) (ResourceType, string) {
	if len(pos) < 3 {
		h.fatalf(b, "want <TYPE> <name>")
	}
	typ, err := ParseResourceType(pos[1])
	if err != nil {
		h.fatalf(b, "%v", err)
	}
	return typ, pos[2]
}

// new profile=P servers=A,B+feature [rand=0.5] [profile.field=value ...]
func (h *harness) newClient(b block, kv map[string]string) {
	prof := GRPCGo()
	if v, ok := kv["profile"]; ok {
		p, err := ProfileByName(v)
		if err != nil {
			h.fatalf(b, "%v", err)
		}
		prof = p
	}
	var keys []string
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if f, ok := strings.CutPrefix(k, "profile."); ok {
			if err := prof.Set(f, kv[k]); err != nil {
				h.fatalf(b, "%v", err)
			}
		}
	}
	h.legacy = prof.WatcherAPI == WatcherAPILegacy
	servers := "primary"
	if v, ok := kv["servers"]; ok {
		servers = v
	}
	var boot Bootstrap
	boot.Node = &corepb.Node{Id: "node-1"}
	for _, s := range strings.Split(servers, ",") {
		parts := strings.Split(s, "+")
		sc := ServerConfig{URI: parts[0]}
		for _, f := range parts[1:] {
			switch f {
			case "ignore_resource_deletion":
				sc.Features.IgnoreResourceDeletion = true
			case "fail_on_data_errors":
				sc.Features.FailOnDataErrors = true
			case "resource_timer_is_transient_error":
				sc.Features.ResourceTimerIsTransientError = true
			default:
				h.fatalf(b, "unknown server feature %q", f)
			}
		}
		boot.Servers = append(boot.Servers, sc)
	}
	h.sink = &MetricsSink{}
	cfg := Config{Target: "xds:///target", Bootstrap: boot, Profile: prof, AutoDone: kv["autodone"] != "false", Metrics: h.sink}
	if v, ok := kv["rand"]; ok {
		f, _ := strconv.ParseFloat(v, 64)
		cfg.Rand = constRand(f)
	}
	c, err := New(cfg)
	if err != nil {
		h.fatalf(b, "%v", err)
	}
	h.c = c
	h.resetWiring()
}

func featureString(f ServerFeatures) string {
	if names := f.Names(); len(names) > 0 {
		return " features=" + strings.Join(names, ",")
	}
	return ""
}

// advance fires due timers in (deadline, arm order) and moves time to end.
func (h *harness) advance(end time.Duration) []string {
	var out []string
	for {
		var next TimerID
		var best timerEntry
		found := false
		for id, e := range h.timers {
			if e.at > end {
				continue
			}
			if !found || e.at < best.at || (e.at == best.at && e.seq < best.seq) {
				next, best, found = id, e, true
			}
		}
		if !found {
			break
		}
		delete(h.timers, next)
		h.now = best.at
		out = append(out, fmt.Sprintf("t=%v: timer %v fired", h.now, next))
		out = append(out, h.effects(h.c.TimerFired(h.now, next))...)
	}
	h.now = end
	if len(out) == 0 {
		out = append(out, fmt.Sprintf("t=%v: (no timers)", end))
	}
	return out
}

func (h *harness) pendingTimers() []string {
	var ids []TimerID
	for id := range h.timers {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return h.timers[ids[i]].seq < h.timers[ids[j]].seq })
	var out []string
	for _, id := range ids {
		out = append(out, fmt.Sprintf("%v at t=%v", id, h.timers[id].at))
	}
	if len(out) == 0 {
		out = append(out, "(none)")
	}
	return out
}

// effects formats effs and applies the timer/send bookkeeping a kernel would.
func (h *harness) effects(effs []Effect) []string {
	var out []string
	for _, e := range effs {
		switch e.Kind {
		case ArmTimer:
			h.seq++
			h.timers[e.Timer] = timerEntry{at: h.now + e.Delay, seq: h.seq}
		case CancelTimer:
			delete(h.timers, e.Timer)
		case Send:
			h.outstanding[e.Server]++
			// Every Request must build a real envoy DiscoveryRequest.
			if p := e.Request.Proto(h.c.node); p.GetTypeUrl() != e.Request.Type.TypeURL() {
				h.t.Fatalf("Request.Proto type URL %q", p.GetTypeUrl())
			}
		case CloseStream:
			// The stream is gone: so is what it held.
			h.outstanding[e.Server] = 0
			delete(h.held, e.Server)
		case Notify:
			if d := e.Notification.Done; d.Waits() {
				w := e.Notification.Watcher
				h.dones[w] = append(h.dones[w], d)
			}
		}
		out = append(out, formatEffect(e, h.legacy))
	}
	return out
}

func formatEffect(e Effect, legacy bool) string {
	switch e.Kind {
	case OpenStream:
		return fmt.Sprintf("open-stream s%d wait_for_ready=%v", e.Server, e.WaitForReady)
	case CloseStream:
		return fmt.Sprintf("close-stream s%d", e.Server)
	case Send:
		r := e.Request
		s := fmt.Sprintf("send s%d %v version=%q nonce=%q names=[%s]", e.Server, r.Type, r.Version, r.Nonce, strings.Join(r.Names, " "))
		if r.Node {
			s += " +node"
		}
		if r.ErrorDetail != nil {
			s += fmt.Sprintf(" NACK(%v: %s)", r.ErrorDetail.Code, r.ErrorDetail.Message)
		}
		return s
	case ArmTimer:
		return fmt.Sprintf("arm-timer %v %v", e.Timer, e.Delay)
	case CancelTimer:
		return fmt.Sprintf("cancel-timer %v", e.Timer)
	case PauseRead:
		return fmt.Sprintf("pause-read s%d", e.Server)
	case ResumeRead:
		return fmt.Sprintf("resume-read s%d", e.Server)
	case Notify:
		n := e.Notification
		kind := "ResourceChanged"
		if n.Kind == AmbientError {
			kind = "AmbientError"
		}
		if legacy {
			kind = n.Legacy().String()
		}
		done := ""
		if n.Done.Waits() {
			done = " done=" + n.Done.String()
		}
		if n.Resource != nil {
			return fmt.Sprintf("notify w%d %s %v %s version=%q {%s}%s", n.Watcher, kind, n.Type, n.Name, n.Version, summarize(n.Resource), done)
		}
		return fmt.Sprintf("notify w%d %s %v %s error=%v cause=%v: %q%s", n.Watcher, kind, n.Type, n.Name, n.Status.Code, n.Cause, n.Status.Message, done)
	}
	return "?"
}

func summarize(d *Decoded) string {
	switch m := d.Message.(type) {
	case *listenerpb.Listener:
		if d.RouteConfigName != "" {
			return "rds=" + d.RouteConfigName
		}
		return "inline clusters=[" + strings.Join(d.Clusters, " ") + "]"
	case *routepb.RouteConfiguration:
		return "clusters=[" + strings.Join(d.Clusters, " ") + "]"
	case *clusterpb.Cluster:
		return "eds=" + d.EDSServiceName
	case *endpointpb.ClusterLoadAssignment:
		var addrs []string
		for _, l := range m.GetEndpoints() {
			for _, e := range l.GetLbEndpoints() {
				addrs = append(addrs, endpointAddr(e.GetEndpoint().GetAddress()))
			}
		}
		return "endpoints=[" + strings.Join(addrs, " ") + "]"
	}
	return "?"
}

func formatStatus(rs ResourceStatus) string {
	s := fmt.Sprintf("%v %s %v version=%q", rs.Type, rs.Name, rs.Status, rs.Version)
	if rs.Resource != nil {
		s += " cached={" + summarize(rs.Resource) + "}"
	}
	if rs.Updated {
		s += fmt.Sprintf(" updated=t=%v", rs.LastUpdated)
	}
	if rs.Error != nil {
		s += fmt.Sprintf(" error=%v@%q", rs.Error.Code, rs.ErrorVersion)
	}
	return s + fmt.Sprintf(" watchers=%d", rs.Watchers)
}

// response builds a DecodedResponse: "respond s=0 LDS v=1 nonce=A" with one
// resource per input line (see resourceFromLine). The resources go through
// real envoy protos and Decode.
func (h *harness) response(b block, pos []string, kv map[string]string) *DecodedResponse {
	if len(pos) < 2 {
		h.fatalf(b, "want respond s=N <TYPE>")
	}
	resp := &DecodedResponse{Version: kv["v"], Nonce: kv["nonce"]}
	typ, err := ParseResourceType(pos[1])
	if err != nil {
		resp.TypeURL = "type.googleapis.com/" + pos[1]
		return resp
	}
	resp.TypeURL = typ.TypeURL()
	for _, l := range b.input {
		p, kvs := args(l)
		if p[0] == "error" {
			resp.ResourceErrors = append(resp.ResourceErrors, ResourceError{Name: p[1], Status: Status{Code: parseCode(b, h, kvs["code"]), Message: kvs["msg"]}})
			continue
		}
		m, mt := resourceFromLine(b, h, p, kvs)
		if mt != typ {
			h.fatalf(b, "resource %q is not %v", l, typ)
		}
		a, err := anypb.New(m)
		if err != nil {
			h.fatalf(b, "%v", err)
		}
		resp.Resources = append(resp.Resources, Decode(typ, a))
	}
	return resp
}

// resourceFromLine builds a real envoy resource:
//
//	listener NAME rds=ROUTE | inline=CLUSTER [no-router] [no-api-listener] [filter=KIND[?],...]
//
// A listener's filter= list puts HTTP filters before the router: KIND is
// session (A55 stateful_session), rbac, fault or gcp_authn, and a
// trailing "?" marks the filter optional.
//
//	route NAME cluster=C [weighted-zero] [no-vhosts]
//	cluster NAME [eds=SERVICE] [type=STATIC] [lb=MAGLEV]
//	endpoints NAME [addr=IP:PORT,...] [zero-weight]
func resourceFromLine(b block, h *harness, p []string, kv map[string]string) (proto.Message, ResourceType) {
	has := func(flag string) bool {
		for _, x := range p[2:] {
			if x == flag {
				return true
			}
		}
		return false
	}
	name := p[1]
	switch p[0] {
	case "listener":
		lis := testListener(name, kv["rds"], kv["inline"], has("no-router"), has("no-api-listener"))
		if v, ok := kv["filter"]; ok {
			for _, f := range strings.Split(v, ",") {
				kind, optional := strings.CutSuffix(f, "?")
				if err := addTestFilter(lis, kind, optional); err != nil {
					h.fatalf(b, "%v", err)
				}
			}
		}
		return lis, LDS
	case "route":
		return testRoute(name, kv["cluster"], has("weighted-zero"), has("no-vhosts")), RDS
	case "cluster":
		return testCluster(name, kv["eds"], kv["type"], kv["lb"]), CDS
	case "endpoints":
		addrs := []string{"10.0.0.1:8080"}
		if v, ok := kv["addr"]; ok {
			addrs = strings.Split(v, ",")
		}
		return testEndpoints(name, addrs, has("zero-weight")), EDS
	}
	h.fatalf(b, "unknown resource %q", p[0])
	return nil, 0
}

func ads() *corepb.ConfigSource {
	return &corepb.ConfigSource{ConfigSourceSpecifier: &corepb.ConfigSource_Ads{Ads: &corepb.AggregatedConfigSource{}}}
}

func testListener(name, rds, inline string, noRouter, noAPI bool) *listenerpb.Listener {
	if noAPI {
		return &listenerpb.Listener{Name: name}
	}
	hcm := &hcmpb.HttpConnectionManager{}
	if inline != "" {
		hcm.RouteSpecifier = &hcmpb.HttpConnectionManager_RouteConfig{RouteConfig: testRoute(name+"-route", inline, false, false)}
	} else {
		hcm.RouteSpecifier = &hcmpb.HttpConnectionManager_Rds{Rds: &hcmpb.Rds{ConfigSource: ads(), RouteConfigName: rds}}
	}
	if !noRouter {
		router, _ := anypb.New(&routerpb.Router{})
		hcm.HttpFilters = []*hcmpb.HttpFilter{{Name: "router", ConfigType: &hcmpb.HttpFilter_TypedConfig{TypedConfig: router}}}
	}
	a, _ := anypb.New(hcm)
	return &listenerpb.Listener{Name: name, ApiListener: &listenerpb.ApiListener{ApiListener: a}}
}

// testFilterConfigs are the filter configs the transcripts' filter= key
// names.
var testFilterConfigs = map[string]func() proto.Message{
	"session":   func() proto.Message { return &sessionpb.StatefulSession{} },
	"rbac":      func() proto.Message { return &rbacpb.RBAC{} },
	"fault":     func() proto.Message { return &faultpb.HTTPFault{} },
	"gcp_authn": func() proto.Message { return &gcpauthnpb.GcpAuthnFilterConfig{} },
}

// addTestFilter inserts a filter of the named kind before lis's last
// filter (the router).
func addTestFilter(lis *listenerpb.Listener, kind string, optional bool) error {
	mk, ok := testFilterConfigs[kind]
	if !ok {
		return fmt.Errorf("unknown filter kind %q", kind)
	}
	hcm := &hcmpb.HttpConnectionManager{}
	if err := lis.GetApiListener().GetApiListener().UnmarshalTo(hcm); err != nil {
		return err
	}
	cfg, err := anypb.New(mk())
	if err != nil {
		return err
	}
	f := &hcmpb.HttpFilter{Name: kind, IsOptional: optional, ConfigType: &hcmpb.HttpFilter_TypedConfig{TypedConfig: cfg}}
	n := len(hcm.HttpFilters)
	hcm.HttpFilters = append(hcm.HttpFilters[:max(n-1, 0):max(n-1, 0)], append([]*hcmpb.HttpFilter{f}, hcm.HttpFilters[max(n-1, 0):]...)...)
	a, err := anypb.New(hcm)
	if err != nil {
		return err
	}
	lis.ApiListener.ApiListener = a
	return nil
}

func testRoute(name, cluster string, weightedZero, noVHosts bool) *routepb.RouteConfiguration {
	rc := &routepb.RouteConfiguration{Name: name}
	if noVHosts {
		return rc
	}
	action := &routepb.RouteAction{ClusterSpecifier: &routepb.RouteAction_Cluster{Cluster: cluster}}
	if weightedZero {
		action.ClusterSpecifier = &routepb.RouteAction_WeightedClusters{WeightedClusters: &routepb.WeightedCluster{
			Clusters: []*routepb.WeightedCluster_ClusterWeight{{Name: cluster, Weight: wrapperspb.UInt32(0)}},
		}}
	}
	rc.VirtualHosts = []*routepb.VirtualHost{{
		Name: "vh", Domains: []string{"*"},
		Routes: []*routepb.Route{{
			Match:  &routepb.RouteMatch{PathSpecifier: &routepb.RouteMatch_Prefix{Prefix: "/"}},
			Action: &routepb.Route_Route{Route: action},
		}},
	}}
	return rc
}

func testCluster(name, eds, typ, lb string) *clusterpb.Cluster {
	c := &clusterpb.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &clusterpb.Cluster_Type{Type: clusterpb.Cluster_EDS},
		EdsClusterConfig:     &clusterpb.Cluster_EdsClusterConfig{EdsConfig: ads(), ServiceName: eds},
	}
	if typ != "" {
		c.ClusterDiscoveryType = &clusterpb.Cluster_Type{Type: clusterpb.Cluster_DiscoveryType(clusterpb.Cluster_DiscoveryType_value[typ])}
	}
	if lb != "" {
		c.LbPolicy = clusterpb.Cluster_LbPolicy(clusterpb.Cluster_LbPolicy_value[lb])
	}
	return c
}

func testEndpoints(name string, addrs []string, zeroWeight bool) *endpointpb.ClusterLoadAssignment {
	loc := &endpointpb.LocalityLbEndpoints{
		Locality:            &corepb.Locality{Region: "r", Zone: "z"},
		LoadBalancingWeight: wrapperspb.UInt32(1),
	}
	for _, a := range addrs {
		host, port, _ := strings.Cut(a, ":")
		p, _ := strconv.Atoi(port)
		e := &endpointpb.LbEndpoint{HostIdentifier: &endpointpb.LbEndpoint_Endpoint{Endpoint: &endpointpb.Endpoint{
			Address: &corepb.Address{Address: &corepb.Address_SocketAddress{SocketAddress: &corepb.SocketAddress{
				Address: host, PortSpecifier: &corepb.SocketAddress_PortValue{PortValue: uint32(p)},
			}}},
		}}}
		if zeroWeight {
			e.LoadBalancingWeight = wrapperspb.UInt32(0)
		}
		loc.LbEndpoints = append(loc.LbEndpoints, e)
	}
	return &endpointpb.ClusterLoadAssignment{ClusterName: name, Endpoints: []*endpointpb.LocalityLbEndpoints{loc}}
}
