package grpcgo

import (
	"fmt"
	"io"
	"net"
	"time"
)

// MeasureLoopback times n round trips of a message of size bytes from a
// client through a Proxy to an echo server and back, all on loopback: what
// the network of a real run costs a request and its response with no
// processing at either end. Half a round trip is the one-way latency a
// case's link stands for.
func MeasureLoopback(n, size int) ([]time.Duration, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("loopback: listen: %w", err)
	}
	defer lis.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := lis.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, size)
		for {
			k, err := c.Read(buf)
			if k > 0 {
				if _, werr := c.Write(buf[:k]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	proxy, err := NewProxy(lis.Addr().String())
	if err != nil {
		return nil, fmt.Errorf("loopback: %w", err)
	}
	defer proxy.Close()
	c, err := net.Dial("tcp", proxy.Addr())
	if err != nil {
		return nil, fmt.Errorf("loopback: dial: %w", err)
	}
	msg, back := make([]byte, size), make([]byte, size)
	rtts := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		start := time.Now()
		if _, err := c.Write(msg); err != nil {
			c.Close()
			return nil, fmt.Errorf("loopback: write: %w", err)
		}
		if _, err := io.ReadFull(c, back); err != nil {
			c.Close()
			return nil, fmt.Errorf("loopback: read: %w", err)
		}
		rtts = append(rtts, time.Since(start))
	}
	c.Close()
	<-done
	return rtts, nil
}
