package grpcgo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// proxyMode is what a Proxy does with connections.
type proxyMode int

const (
	modeForward proxyMode = iota
	modeRefuse
	modeBlackhole
	modeClosed
)

func (m proxyMode) String() string {
	switch m {
	case modeForward:
		return "forward"
	case modeRefuse:
		return "refuse"
	case modeBlackhole:
		return "blackhole"
	case modeClosed:
		return "closed"
	}
	return fmt.Sprintf("proxyMode(%d)", int(m))
}

// relistenTimeout bounds how long Forward and Blackhole retry listening
// again on the proxy's port after Refuse.
const relistenTimeout = 2 * time.Second

// dialTimeout bounds how long the proxy waits for the upstream to accept a
// connection.
const dialTimeout = 5 * time.Second

// Proxy forwards TCP connections from 127.0.0.1:<port> to an upstream
// address. It can be switched at any time, from any goroutine, between
// forwarding, refusing connections (as if the upstream were down) and
// blackholing them (as if the network silently dropped every packet).
//
// A Proxy must be closed with Close, which waits for all its goroutines.
type Proxy struct {
	upstream string
	addr     string // "127.0.0.1:PORT", fixed at creation

	ctx    context.Context // canceled by Close; aborts upstream dials
	cancel context.CancelFunc
	wg     sync.WaitGroup // accept loops, connection handlers and copiers

	mu     sync.Mutex
	mode   proxyMode
	ln     net.Listener  // nil while refusing or closed
	gate   chan struct{} // open while blackholed, closed otherwise
	pipes  map[*pipe]struct{}
	events []ConnEvent
}

// ConnEvent is something a client did to its connections through the
// proxy: opened one (the proxy accepted it) or ended one (the proxy read
// its end, a close or a reset, from the client's side). During a
// blackhole these are what the client does while its server hears
// nothing: the connect attempts it starts and gives up, and the
// connection its keepalive closes.
type ConnEvent struct {
	At     time.Time
	Opened bool
}

// ConnEvents returns the proxy's connection events so far, in order.
func (p *Proxy) ConnEvents() []ConnEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]ConnEvent(nil), p.events...)
}

func (p *Proxy) record(opened bool) {
	at := time.Now()
	p.mu.Lock()
	p.events = append(p.events, ConnEvent{At: at, Opened: opened})
	p.mu.Unlock()
}

// pipe is one accepted connection and, once connected, its upstream.
type pipe struct {
	client   net.Conn
	upstream net.Conn // nil until the upstream dial succeeds; guarded by Proxy.mu
	dead     bool     // the pipe was torn down; guarded by Proxy.mu
	done     chan struct{}
}

// NewProxy returns a Proxy listening on 127.0.0.1 on a port chosen by the
// kernel and forwarding to upstream.
func NewProxy(upstream string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy for %s: listen: %w", upstream, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gate := make(chan struct{})
	close(gate)
	p := &Proxy{
		upstream: upstream,
		addr:     ln.Addr().String(),
		ctx:      ctx,
		cancel:   cancel,
		mode:     modeForward,
		ln:       ln,
		gate:     gate,
		pipes:    make(map[*pipe]struct{}),
	}
	p.wg.Add(1)
	go p.acceptLoop(ln)
	return p, nil
}

// Addr returns the address clients dial, "127.0.0.1:PORT". It does not
// change for the life of the proxy, even across Refuse and Forward.
func (p *Proxy) Addr() string { return p.addr }

// Upstream returns the address the proxy forwards to.
func (p *Proxy) Upstream() string { return p.upstream }

// Mode returns the current mode: "forward", "refuse", "blackhole" or
// "closed".
func (p *Proxy) Mode() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode.String()
}

// Forward makes the proxy forward traffic normally. Coming from Refuse it
// listens again on the same port; coming from Blackhole it resumes copying
// on stalled connections, delivering the bytes held meanwhile in order, and
// connects the connections accepted meanwhile to the upstream.
//
// Forward returns an error only if the port could not be listened on again,
// or if the proxy is closed.
func (p *Proxy) Forward() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.listenLocked(); err != nil {
		return err
	}
	p.mode = modeForward
	p.openGateLocked()
	return nil
}

// Refuse simulates the upstream going down: it closes the listener, so
// connection attempts are refused, and resets every open connection, on
// both sides, by closing it with SO_LINGER set to 0.
func (p *Proxy) Refuse() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode == modeClosed {
		return
	}
	p.mode = modeRefuse
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	p.resetAllLocked()
	p.openGateLocked()
}

// Blackhole makes the proxy stop copying on existing connections, in both
// directions, without closing them, and accept new connections without
// connecting them upstream. Nothing is lost: Forward delivers what was held.
// Coming from Refuse it listens again on the same port.
//
// Blackhole returns an error only if the port could not be listened on
// again, or if the proxy is closed.
func (p *Proxy) Blackhole() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.listenLocked(); err != nil {
		return err
	}
	p.mode = modeBlackhole
	select {
	case <-p.gate:
		p.gate = make(chan struct{})
	default:
	}
	return nil
}

// Close stops the proxy: it closes the listener, resets every connection and
// waits for all the proxy's goroutines to return. Close is idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.mode != modeClosed {
		p.mode = modeClosed
		if p.ln != nil {
			p.ln.Close()
			p.ln = nil
		}
		p.resetAllLocked()
		p.openGateLocked()
		p.cancel()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}

// listenLocked makes sure the proxy is listening on its port.
func (p *Proxy) listenLocked() error {
	if p.mode == modeClosed {
		return fmt.Errorf("proxy %s: closed", p.addr)
	}
	if p.ln != nil {
		return nil
	}
	// The port was ours a moment ago and Go sets SO_REUSEADDR, so this
	// normally succeeds at once; retry briefly in case another socket
	// grabbed the port in between and is about to let it go.
	var err error
	for start := time.Now(); ; {
		var ln net.Listener
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			p.ln = ln
			p.wg.Add(1)
			go p.acceptLoop(ln)
			return nil
		}
		if time.Since(start) > relistenTimeout {
			return fmt.Errorf("proxy %s: listen again: %w", p.addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// openGateLocked releases every goroutine held by Blackhole.
func (p *Proxy) openGateLocked() {
	select {
	case <-p.gate:
	default:
		close(p.gate)
	}
}

// resetAllLocked resets every connection, held or forwarded.
func (p *Proxy) resetAllLocked() {
	for pp := range p.pipes {
		p.killLocked(pp)
	}
}

// killLocked resets both sides of pp and forgets it.
func (p *Proxy) killLocked(pp *pipe) {
	if pp.dead {
		return
	}
	pp.dead = true
	close(pp.done)
	reset(pp.client)
	if pp.upstream != nil {
		reset(pp.upstream)
	}
	delete(p.pipes, pp)
}

// reset closes c so that the peer sees a TCP RST rather than a FIN.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

// acceptLoop accepts connections on ln until it is closed.
func (p *Proxy) acceptLoop(ln net.Listener) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			// The listener was closed by Refuse or Close; on any other
			// error, give the port up rather than spin.
			p.mu.Lock()
			if p.ln == ln {
				ln.Close()
				p.ln = nil
			}
			p.mu.Unlock()
			return
		}
		p.mu.Lock()
		if p.ln != ln || p.mode == modeRefuse || p.mode == modeClosed {
			// Accepted just as the listener was being closed.
			p.mu.Unlock()
			reset(c)
			continue
		}
		pp := &pipe{client: c, done: make(chan struct{})}
		p.pipes[pp] = struct{}{}
		p.events = append(p.events, ConnEvent{At: time.Now(), Opened: true})
		p.wg.Add(1)
		p.mu.Unlock()
		go p.handle(pp)
	}
}

// chunk is what one read from a client gave: bytes, then perhaps the end.
type chunk struct {
	data []byte
	err  error
}

// readClient reads everything the client sends on pp, from the moment the
// proxy accepted it, into chunks, and closes chunks after the client's
// end. Reading at once, even while blackholed, is how the proxy sees the
// client give a connection up (ConnEvents); the bytes still wait for the
// gate in forwardClient.
func (p *Proxy) readClient(pp *pipe, chunks chan<- chunk) {
	defer p.wg.Done()
	defer close(chunks)
	for {
		buf := make([]byte, 32*1024)
		n, err := pp.client.Read(buf)
		if err != nil && !p.torn(pp) {
			p.record(false)
		}
		select {
		case chunks <- chunk{buf[:n], err}:
		case <-pp.done:
			return
		}
		if err != nil {
			return
		}
	}
}

// forwardClient writes the client's chunks to up, each once not
// blackholed: bytes in order, then the end (a half-close), or a reset of
// the whole pipe on an error.
func (p *Proxy) forwardClient(pp *pipe, up net.Conn, chunks <-chan chunk) {
	for c := range chunks {
		if !p.waitGate(pp) {
			return
		}
		if len(c.data) > 0 {
			if _, werr := up.Write(c.data); werr != nil {
				p.teardown(pp, false)
				return
			}
		}
		if c.err == io.EOF {
			if tc, ok := up.(*net.TCPConn); ok {
				tc.CloseWrite()
			}
			return
		}
		if c.err != nil {
			p.teardown(pp, true)
			return
		}
	}
}

// handle connects pp to the upstream, once not blackholed, and copies in
// both directions until either side ends.
func (p *Proxy) handle(pp *pipe) {
	defer p.wg.Done()
	chunks := make(chan chunk, 64)
	p.wg.Add(1)
	go p.readClient(pp, chunks)
	if !p.waitGate(pp) {
		return
	}
	d := net.Dialer{Timeout: dialTimeout}
	up, err := d.DialContext(p.ctx, "tcp", p.upstream)
	p.mu.Lock()
	if err != nil {
		// The upstream is unreachable: the client sees its connection reset.
		p.killLocked(pp)
		p.mu.Unlock()
		return
	}
	if pp.dead {
		p.mu.Unlock()
		reset(up)
		return
	}
	pp.upstream = up
	p.mu.Unlock()

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		p.forwardClient(pp, up, chunks)
	}()
	p.copy(pp, pp.client, up)
	wg.Wait()

	p.mu.Lock()
	if !pp.dead {
		pp.dead = true
		close(pp.done)
		pp.client.Close()
		up.Close()
		delete(p.pipes, pp)
	}
	p.mu.Unlock()
}

// waitGate blocks while the proxy is blackholed. It reports false if pp was
// torn down meanwhile.
func (p *Proxy) waitGate(pp *pipe) bool {
	for {
		p.mu.Lock()
		blackholed := p.mode == modeBlackhole
		gate := p.gate
		dead := pp.dead
		p.mu.Unlock()
		if dead {
			return false
		}
		if !blackholed {
			return true
		}
		select {
		case <-gate:
		case <-pp.done:
			return false
		}
	}
}

// copy copies from src (the upstream) to dst, holding each chunk while
// the proxy is blackholed. When src ends cleanly it half-closes dst; on any error it
// tears the whole pipe down, resetting both sides if src was reset.
func (p *Proxy) copy(pp *pipe, dst, src net.Conn) {
	buf := make([]byte, 32*1024)
	for {
		n, rerr := src.Read(buf)
		// Whatever happened, data or end of stream, it must not pass a
		// blackhole.
		if !p.waitGate(pp) {
			return
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				p.teardown(pp, false)
				return
			}
		}
		if rerr == io.EOF {
			if tc, ok := dst.(*net.TCPConn); ok {
				tc.CloseWrite()
			}
			return
		}
		if rerr != nil {
			p.teardown(pp, true)
			return
		}
	}
}

// torn reports whether the proxy has torn pp down (so that a read error
// on it is the proxy's doing, not the client's).
func (p *Proxy) torn(pp *pipe) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return pp.dead
}

// teardown ends pp, resetting both sides if rst is set and closing them
// otherwise.
func (p *Proxy) teardown(pp *pipe, rst bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pp.dead {
		return
	}
	if rst {
		p.killLocked(pp)
		return
	}
	pp.dead = true
	close(pp.done)
	pp.client.Close()
	if pp.upstream != nil {
		pp.upstream.Close()
	}
	delete(p.pipes, pp)
}
