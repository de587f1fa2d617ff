package grpcgo

import (
	"io"
	"net"
	"testing"
)

// A server's wire log has every read and write of each connection, in
// order, with their sizes: what the processing times are measured from.
func TestWireLogRecordsReadsAndWritesPerConnection(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log := &wireLog{}
	tl := timedListener{lis, log}
	defer tl.Close()
	done := make(chan error, 1)
	go func() {
		c, err := tl.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		buf := make([]byte, 5)
		if _, err := io.ReadFull(c, buf); err != nil {
			done <- err
			return
		}
		_, err = c.Write([]byte("response"))
		done <- err
	}()
	c, err := net.Dial("tcp", lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	conns := log.copyConns()
	if len(conns) != 1 {
		t.Fatalf("%d connections logged, want 1", len(conns))
	}
	var read, wrote int
	var last WireEvent
	for _, e := range conns[0] {
		if e.Write {
			wrote += e.Bytes
		} else {
			read += e.Bytes
		}
		if e.At.Before(last.At) {
			t.Errorf("events out of order: %v after %v", e.At, last.At)
		}
		last = e
	}
	if read != 5 || wrote != 8 || !last.Write {
		t.Errorf("read %d bytes, wrote %d, last event %+v; want 5, 8, the write last", read, wrote, last)
	}
}

// The loopback round trips are real ones: as many as asked, each positive.
func TestMeasureLoopbackTimesEachRoundTrip(t *testing.T) {
	rtts, err := MeasureLoopback(50, 300)
	if err != nil {
		t.Fatal(err)
	}
	if len(rtts) != 50 {
		t.Fatalf("%d round trips, want 50", len(rtts))
	}
	for i, d := range rtts {
		if d <= 0 {
			t.Errorf("round trip %d took %v", i, d)
		}
	}
}
