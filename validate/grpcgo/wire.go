package grpcgo

import (
	"net"
	"sync"
	"time"
)

// WireEvent is one read or write a ManagementServer made on a client's
// connection: when, which way, how many bytes. A read is timed when it
// returns, a write when it is called: the server's time per request runs
// from the read that brought the request to the write of the response.
type WireEvent struct {
	At    time.Time
	Write bool
	Bytes int
}

// wireLog collects the WireEvents of a server's connections.
type wireLog struct {
	mu    sync.Mutex
	conns [][]WireEvent
}

// copyConns returns a copy of every connection's events, in the order the
// connections were accepted.
func (l *wireLog) copyConns() [][]WireEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([][]WireEvent, len(l.conns))
	for i, c := range l.conns {
		out[i] = append([]WireEvent(nil), c...)
	}
	return out
}

func (l *wireLog) add(conn int, e WireEvent) {
	l.mu.Lock()
	l.conns[conn] = append(l.conns[conn], e)
	l.mu.Unlock()
}

// timedListener accepts connections whose reads and writes go into log.
type timedListener struct {
	net.Listener
	log *wireLog
}

func (l timedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	l.log.mu.Lock()
	id := len(l.log.conns)
	l.log.conns = append(l.log.conns, nil)
	l.log.mu.Unlock()
	return &timedConn{Conn: c, log: l.log, id: id}, nil
}

// timedConn is a connection that logs its reads and writes.
type timedConn struct {
	net.Conn
	log *wireLog
	id  int
}

func (c *timedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.log.add(c.id, WireEvent{At: time.Now(), Bytes: n})
	}
	return n, err
}

func (c *timedConn) Write(b []byte) (int, error) {
	c.log.add(c.id, WireEvent{At: time.Now(), Write: true, Bytes: len(b)})
	return c.Conn.Write(b)
}
