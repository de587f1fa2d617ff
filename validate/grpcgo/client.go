package grpcgo

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Environment variables and argument of a client child process.
const (
	// clientEnv carries the JSON ClientSpec to the child.
	clientEnv = "XDSSIM_GRPCGO_CLIENT"
	// clientArg is the child's only argument; it marks the process in ps.
	clientArg = "grpcgo-client"
	// bootstrapEnv carries the grpc-go bootstrap configuration.
	bootstrapEnv = "GRPC_XDS_BOOTSTRAP_CONFIG"
	// bootstrapFileEnv would take precedence over bootstrapEnv, so it is
	// removed from the child's environment.
	bootstrapFileEnv = "GRPC_XDS_BOOTSTRAP"
)

// stderrKeep is how many trailing bytes of a child's stderr are kept.
const stderrKeep = 64 << 10

// stderrReport is how many trailing bytes of a child's stderr Wait reports.
const stderrReport = 4 << 10

// ClientSpec says what one client process does.
type ClientSpec struct {
	Name      string        // names the client; also the bootstrap node id
	Target    string        // the channel's target, e.g. "xds:///echo"
	Bootstrap []byte        // the bootstrap JSON
	Rate      float64       // RPCs per second, evenly spaced from the start; 0 = none
	Deadline  time.Duration // per-RPC deadline; 0 = none
	Method    string        // full method name, e.g. "/xdssim.Echo/Call"
	Run       time.Duration // how long the client sends RPCs before exiting

	// CSDSInterval is how often the client dumps its xDS resources through
	// CSDS; 0 means 100 ms.
	CSDSInterval time.Duration
	// Env holds extra "KEY=VALUE" environment variables for the child, for
	// example to enable an experimental grpc-go feature. They override the
	// ones StartClient sets.
	Env []string
}

// Kinds of ClientEvent.
const (
	EventStart = "start" // the client process started
	EventRPC   = "rpc"   // an RPC completed
	EventCSDS  = "csds"  // the CSDS status of a resource changed
	EventState = "state" // the channel's connectivity state changed
	EventExit  = "exit"  // the client is about to exit; the last event
)

// StatusGone is the CSDS status reported when a resource left the dump.
const StatusGone = "GONE"

// ClientEvent is one line of a client process's output.
type ClientEvent struct {
	At   int64  `json:"at"`   // time.Now().UnixNano() when the event was written
	Kind string `json:"kind"` // EventStart, EventRPC, EventCSDS, EventState or EventExit

	// rpc
	Start   int64  `json:"start,omitempty"`   // UnixNano the RPC began
	Code    string `json:"code,omitempty"`    // status code as named in the gRPC spec, e.g. "OK", "UNAVAILABLE"
	Message string `json:"message,omitempty"` // status message of a failed RPC, at most 200 bytes

	// csds
	TypeURL      string `json:"type_url,omitempty"`
	Name         string `json:"name,omitempty"`
	Status       string `json:"status,omitempty"`        // ClientResourceStatus name, e.g. "ACKED", or StatusGone
	Version      string `json:"version,omitempty"`       // version_info of the accepted resource
	Error        string `json:"error,omitempty"`         // error_state details, if any
	ErrorVersion string `json:"error_version,omitempty"` // error_state version_info, if any

	// state
	State string `json:"state,omitempty"` // connectivity state name, e.g. "READY"

	// exit
	InFlight int `json:"in_flight,omitempty"` // RPCs still in flight at exit, which go unreported
}

// Time returns At as a time.Time.
func (e ClientEvent) Time() time.Time { return time.Unix(0, e.At) }

// Bootstrap returns a grpc-go bootstrap JSON with node id node and the given
// xDS servers, in order (the gRFC A71 fallback order), each with insecure
// channel credentials and the given server features.
func Bootstrap(node string, servers []string, features []string) []byte {
	type creds struct {
		Type string `json:"type"`
	}
	type server struct {
		ServerURI      string   `json:"server_uri"`
		ChannelCreds   []creds  `json:"channel_creds"`
		ServerFeatures []string `json:"server_features,omitempty"`
	}
	type nodeJSON struct {
		ID string `json:"id"`
	}
	var b struct {
		XDSServers []server `json:"xds_servers"`
		Node       nodeJSON `json:"node"`
	}
	b.Node.ID = node
	b.XDSServers = []server{}
	for _, s := range servers {
		b.XDSServers = append(b.XDSServers, server{
			ServerURI:      s,
			ChannelCreds:   []creds{{Type: "insecure"}},
			ServerFeatures: append([]string(nil), features...),
		})
	}
	out, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		// Strings and slices of strings always marshal.
		panic(fmt.Sprintf("grpcgo: marshal bootstrap: %v", err))
	}
	return out
}

// Client is a running client process.
type Client struct {
	spec   ClientSpec
	cmd    *exec.Cmd
	stderr *tailBuffer
	done   chan struct{} // closed once the process was reaped

	mu     sync.Mutex
	events []ClientEvent
	notify chan struct{} // closed and replaced on every new event
	err    error         // the process's exit error, once done
}

// StartClient starts a client in a child process. The child is this
// executable, run again with the argument "grpcgo-client" and the spec in
// the environment; its main function (or TestMain) must call MaybeRunClient
// first thing.
//
// The process is reaped as soon as it exits; Wait returns what it did.
func StartClient(spec ClientSpec) (*Client, error) {
	if err := spec.validate(); err != nil {
		return nil, fmt.Errorf("start client %q: %w", spec.Name, err)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("start client %q: %w", spec.Name, err)
	}
	js, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("start client %q: marshal spec: %w", spec.Name, err)
	}
	c := &Client{
		spec:   spec,
		cmd:    exec.Command(exe, clientArg),
		stderr: &tailBuffer{max: stderrKeep},
		done:   make(chan struct{}),
		notify: make(chan struct{}),
	}
	c.cmd.Env = childEnv(os.Environ(), string(js), spec)
	c.cmd.Stderr = c.stderr
	setParentDeathSignal(c.cmd)
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start client %q: %w", spec.Name, err)
	}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start client %q: %w", spec.Name, err)
	}
	go c.read(stdout)
	return c, nil
}

func (s ClientSpec) validate() error {
	switch {
	case s.Target == "":
		return errors.New("empty target")
	case len(s.Bootstrap) == 0:
		return errors.New("empty bootstrap")
	case !json.Valid(s.Bootstrap):
		return errors.New("bootstrap is not valid JSON")
	case s.Rate < 0:
		return fmt.Errorf("negative rate %v", s.Rate)
	case s.Rate > 0 && s.Method == "":
		return errors.New("empty method")
	case s.Deadline < 0:
		return fmt.Errorf("negative deadline %v", s.Deadline)
	case s.Run < 0:
		return fmt.Errorf("negative run time %v", s.Run)
	case s.CSDSInterval < 0:
		return fmt.Errorf("negative CSDS interval %v", s.CSDSInterval)
	}
	for _, kv := range s.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("malformed environment variable %q", kv)
		}
	}
	return nil
}

// childEnv returns the environment of a client child process.
func childEnv(parent []string, spec string, s ClientSpec) []string {
	drop := map[string]bool{
		clientEnv:                     true,
		bootstrapEnv:                  true,
		bootstrapFileEnv:              true,
		"GRPC_GO_LOG_SEVERITY_LEVEL":  true,
		"GRPC_GO_LOG_VERBOSITY_LEVEL": true,
	}
	env := make([]string, 0, len(parent)+5+len(s.Env))
	for _, kv := range parent {
		k, _, _ := strings.Cut(kv, "=")
		if !drop[k] {
			env = append(env, kv)
		}
	}
	env = append(env,
		clientEnv+"="+spec,
		bootstrapEnv+"="+string(s.Bootstrap),
		"GRPC_GO_LOG_SEVERITY_LEVEL=error",
		"GRPC_GO_LOG_VERBOSITY_LEVEL=0",
	)
	// exec.Cmd keeps the last value of a duplicated key, so these win.
	return append(env, s.Env...)
}

// read collects the child's events until its stdout closes, then reaps it.
func (c *Client) read(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var ev ClientEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || ev.Kind == "" {
			fmt.Fprintf(c.stderr, "grpcgo: unexpected stdout line: %q\n", sc.Bytes())
			continue
		}
		c.mu.Lock()
		c.events = append(c.events, ev)
		close(c.notify)
		c.notify = make(chan struct{})
		c.mu.Unlock()
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(c.stderr, "grpcgo: reading stdout: %v\n", err)
		// Keep the child from blocking on a full pipe.
		io.Copy(io.Discard, stdout)
	}
	err := c.cmd.Wait()
	c.mu.Lock()
	c.err = err
	c.mu.Unlock()
	close(c.done)
}

// Name returns the spec's name.
func (c *Client) Name() string { return c.spec.Name }

// Spec returns the spec the client was started with.
func (c *Client) Spec() ClientSpec { return c.spec }

// Done returns a channel closed once the process has exited and all its
// events were read.
func (c *Client) Done() <-chan struct{} { return c.done }

// Events returns a copy of the events received so far.
func (c *Client) Events() []ClientEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]ClientEvent(nil), c.events...)
}

// WaitEvent waits for an event for which match reports true, looking at the
// events already received first, and returns it. It fails if ctx ends or the
// process exits first.
func (c *Client) WaitEvent(ctx context.Context, match func(ClientEvent) bool) (ClientEvent, error) {
	next := 0
	for {
		c.mu.Lock()
		events, notify := c.events[next:], c.notify
		next = len(c.events)
		c.mu.Unlock()
		for _, ev := range events {
			if match(ev) {
				return ev, nil
			}
		}
		select {
		case <-notify:
		case <-c.done:
			// Look at the last events before giving up.
			c.mu.Lock()
			events = c.events[next:]
			c.mu.Unlock()
			for _, ev := range events {
				if match(ev) {
					return ev, nil
				}
			}
			return ClientEvent{}, fmt.Errorf("client %q: exited before the awaited event", c.spec.Name)
		case <-ctx.Done():
			return ClientEvent{}, fmt.Errorf("client %q: waiting for an event: %w", c.spec.Name, ctx.Err())
		}
	}
}

// Wait waits for the process to exit and returns every event it wrote. If
// the process did not exit cleanly the error includes the tail of its
// stderr.
func (c *Client) Wait() ([]ClientEvent, error) {
	<-c.done
	c.mu.Lock()
	events, err := append([]ClientEvent(nil), c.events...), c.err
	c.mu.Unlock()
	if err != nil {
		return events, fmt.Errorf("client %q: %w; stderr tail:\n%s", c.spec.Name, err, c.stderr.tail(stderrReport))
	}
	return events, nil
}

// Stderr returns the tail of what the process wrote to stderr, for
// diagnostics.
func (c *Client) Stderr() string { return c.stderr.tail(stderrKeep) }

// Kill kills the process at once; Wait then reports the kill as an error.
// Kill does nothing once the process has exited.
func (c *Client) Kill() {
	select {
	case <-c.done:
	default:
		// The process may be exiting on its own; then there is nothing to
		// kill and the error says so.
		c.cmd.Process.Kill()
	}
}

// tailBuffer is an io.Writer keeping the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// tail returns at most the last n bytes written.
func (t *tailBuffer) tail(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
