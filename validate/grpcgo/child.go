package grpcgo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"time"
	"unicode/utf8"

	v3statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/xds/csds"
	"google.golang.org/protobuf/types/known/emptypb"

	_ "google.golang.org/grpc/xds" // registers the xds resolver and balancers
)

// defaultCSDSInterval is how often a client dumps CSDS by default.
const defaultCSDSInterval = 100 * time.Millisecond

// maxMessage is the longest RPC status message a client reports, in bytes.
const maxMessage = 200

// MaybeRunClient must be called first thing in main or TestMain. If this
// process is a client child started by StartClient, MaybeRunClient runs the
// client and exits the process; otherwise it returns at once.
func MaybeRunClient() {
	js, ok := os.LookupEnv(clientEnv)
	if !ok {
		return
	}
	var spec ClientSpec
	if err := json.Unmarshal([]byte(js), &spec); err != nil {
		fmt.Fprintf(os.Stderr, "grpcgo client: bad %s: %v\n", clientEnv, err)
		os.Exit(2)
	}
	if err := spec.validate(); err != nil {
		fmt.Fprintf(os.Stderr, "grpcgo client %q: %v\n", spec.Name, err)
		os.Exit(2)
	}
	if err := runClient(spec, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "grpcgo client %q: %v\n", spec.Name, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// emitter writes events as JSON lines. It is safe for concurrent use.
type emitter struct {
	mu       sync.Mutex
	w        io.Writer
	closed   bool
	inFlight int // RPCs started and not reported yet
}

// started counts an RPC as in flight until its event is emitted.
func (e *emitter) started() {
	e.mu.Lock()
	e.inFlight++
	e.mu.Unlock()
}

// emit stamps ev with the current time and writes it, unless the emitter is
// closed. Stamping under the lock keeps At nondecreasing in the output.
func (e *emitter) emit(ev ClientEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	switch ev.Kind {
	case EventRPC:
		e.inFlight--
	case EventExit:
		ev.InFlight = e.inFlight
	}
	ev.At = time.Now().UnixNano()
	b, err := json.Marshal(ev)
	if err != nil {
		return // cannot happen: ClientEvent holds strings and integers
	}
	e.w.Write(append(b, '\n'))
}

// close writes ev as the last event.
func (e *emitter) close(ev ClientEvent) {
	e.emit(ev)
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
}

// runClient is the body of a client process.
func runClient(spec ClientSpec, out io.Writer) error {
	em := &emitter{w: out}
	em.emit(ClientEvent{Kind: EventStart})

	conn, err := grpc.NewClient(spec.Target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("new client for %q: %w", spec.Target, err)
	}
	defer conn.Close()
	cs, err := csds.NewClientStatusDiscoveryServer()
	if err != nil {
		return fmt.Errorf("new CSDS server: %w", err)
	}
	defer cs.Close()

	// Watchers run until the end of the run; RPCs until they finish or,
	// past the grace period, are canceled.
	watchCtx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	rpcCtx, stopRPCs := context.WithCancel(context.Background())
	defer stopRPCs()
	var watchers, rpcs sync.WaitGroup

	// Read the first state before Connect, so that IDLE is always reported.
	state := conn.GetState()
	em.emit(ClientEvent{Kind: EventState, State: state.String()})
	watchers.Add(1)
	go func() {
		defer watchers.Done()
		watchState(watchCtx, conn, state, em)
	}()
	conn.Connect()
	interval := spec.CSDSInterval
	if interval == 0 {
		interval = defaultCSDSInterval
	}
	watchers.Add(1)
	go func() {
		defer watchers.Done()
		pollCSDS(watchCtx, cs, interval, em)
	}()

	t0 := time.Now()
	end := t0.Add(spec.Run)
	if spec.Rate > 0 {
		period := float64(time.Second) / spec.Rate
		for k := 0; ; k++ {
			at := t0.Add(time.Duration(float64(k) * period))
			if !at.Before(end) {
				break
			}
			time.Sleep(time.Until(at))
			rpcs.Add(1)
			em.started()
			go func() {
				defer rpcs.Done()
				callOnce(rpcCtx, conn, spec, em)
			}()
		}
	}
	time.Sleep(time.Until(end))

	// Give in-flight RPCs their deadline and a second to finish.
	finished := make(chan struct{})
	go func() {
		rpcs.Wait()
		close(finished)
	}()
	grace := time.NewTimer(spec.Deadline + time.Second)
	select {
	case <-finished:
	case <-grace.C:
	}
	grace.Stop()

	stopWatch()
	watchers.Wait()
	em.close(ClientEvent{Kind: EventExit})
	// RPCs still in flight end now, unreported but counted in the exit
	// event.
	stopRPCs()
	<-finished
	return nil
}

// callOnce makes one RPC and reports its outcome.
func callOnce(ctx context.Context, conn *grpc.ClientConn, spec ClientSpec, em *emitter) {
	if spec.Deadline > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, spec.Deadline)
		defer cancel()
	}
	start := time.Now()
	err := conn.Invoke(ctx, spec.Method, &emptypb.Empty{}, &emptypb.Empty{})
	ev := ClientEvent{Kind: EventRPC, Start: start.UnixNano(), Code: CodeName(codes.OK)}
	if err != nil {
		st := status.Convert(err)
		ev.Code = CodeName(st.Code())
		ev.Message = truncate(st.Message(), maxMessage)
	}
	em.emit(ev)
}

// watchState reports every connectivity state change of conn, from s, until
// ctx ends.
func watchState(ctx context.Context, conn *grpc.ClientConn, s connectivity.State, em *emitter) {
	for conn.WaitForStateChange(ctx, s) {
		s = conn.GetState()
		em.emit(ClientEvent{Kind: EventState, State: s.String()})
	}
}

// csdsKey identifies a resource in a CSDS dump.
type csdsKey struct {
	scope, typeURL, name string
}

// csdsState is what is compared between dumps.
type csdsState struct {
	status, version     string
	hasError            bool
	errorDetail, errVer string
}

// pollCSDS dumps the client's resources now and then every interval until
// ctx ends, reporting every change.
func pollCSDS(ctx context.Context, cs *csds.ClientStatusDiscoveryServer, interval time.Duration, em *emitter) {
	prev := make(map[csdsKey]csdsState)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if resp, err := cs.FetchClientStatus(ctx, &v3statuspb.ClientStatusRequest{}); err == nil && resp != nil {
			// A nil response means the dump failed, not that it is empty.
			cur := csdsDump(resp)
			for _, ev := range csdsDiff(prev, cur) {
				em.emit(ev)
			}
			prev = cur
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// csdsDump flattens resp into the state of each resource.
func csdsDump(resp *v3statuspb.ClientStatusResponse) map[csdsKey]csdsState {
	out := make(map[csdsKey]csdsState)
	for _, cfg := range resp.GetConfig() {
		for _, g := range cfg.GetGenericXdsConfigs() {
			st := csdsState{
				status:  g.GetClientStatus().String(),
				version: g.GetVersionInfo(),
			}
			if g.GetClientStatus() == 0 && g.GetConfigStatus() != 0 {
				st.status = g.GetConfigStatus().String()
			}
			if es := g.GetErrorState(); es != nil {
				st.hasError = true
				st.errorDetail = es.GetDetails()
				st.errVer = es.GetVersionInfo()
			}
			out[csdsKey{cfg.GetClientScope(), g.GetTypeUrl(), g.GetName()}] = st
		}
	}
	return out
}

// csdsDiff returns the events that turn prev into cur, sorted by type URL
// and name.
func csdsDiff(prev, cur map[csdsKey]csdsState) []ClientEvent {
	var keys []csdsKey
	for k, s := range cur {
		if p, ok := prev[k]; !ok || p != s {
			keys = append(keys, k)
		}
	}
	for k := range prev {
		if _, ok := cur[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.typeURL != b.typeURL {
			return a.typeURL < b.typeURL
		}
		if a.name != b.name {
			return a.name < b.name
		}
		return a.scope < b.scope
	})
	events := make([]ClientEvent, 0, len(keys))
	for _, k := range keys {
		ev := ClientEvent{Kind: EventCSDS, TypeURL: k.typeURL, Name: k.name}
		if s, ok := cur[k]; ok {
			ev.Status, ev.Version = s.status, s.version
			ev.Error, ev.ErrorVersion = s.errorDetail, s.errVer
		} else {
			ev.Status = StatusGone
		}
		events = append(events, ev)
	}
	return events
}

// codeNames are the status code names of the gRPC spec.
var codeNames = [...]string{
	codes.OK:                 "OK",
	codes.Canceled:           "CANCELLED",
	codes.Unknown:            "UNKNOWN",
	codes.InvalidArgument:    "INVALID_ARGUMENT",
	codes.DeadlineExceeded:   "DEADLINE_EXCEEDED",
	codes.NotFound:           "NOT_FOUND",
	codes.AlreadyExists:      "ALREADY_EXISTS",
	codes.PermissionDenied:   "PERMISSION_DENIED",
	codes.ResourceExhausted:  "RESOURCE_EXHAUSTED",
	codes.FailedPrecondition: "FAILED_PRECONDITION",
	codes.Aborted:            "ABORTED",
	codes.OutOfRange:         "OUT_OF_RANGE",
	codes.Unimplemented:      "UNIMPLEMENTED",
	codes.Internal:           "INTERNAL",
	codes.Unavailable:        "UNAVAILABLE",
	codes.DataLoss:           "DATA_LOSS",
	codes.Unauthenticated:    "UNAUTHENTICATED",
}

// CodeName returns the name of c as written in the gRPC spec, in upper snake
// case: "OK", "CANCELLED", "DEADLINE_EXCEEDED", ... Codes outside the spec
// are named "CODE(n)".
func CodeName(c codes.Code) string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return fmt.Sprintf("CODE(%d)", uint32(c))
}

// truncate returns s cut to at most n bytes, on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
