package xdsclient

import (
	"testing"
	"time"
)

// BenchmarkFourResourceUpdate measures one client handling an update of
// LDS+RDS+CDS+EDS: four pre-decoded responses (one per type, as ADS SotW
// sends them), each ACKed and written, each watcher notified and, under ADS
// flow control, each notification answered with WatcherDone so the next
// response can be read. The resources alternate between two versions so
// every update changes the cache. The machine's own work should not
// allocate.
func BenchmarkFourResourceUpdate(b *testing.B) {
	c, err := New(Config{Target: "xds:///bench", Bootstrap: Bootstrap{Servers: []ServerConfig{{URI: "cp"}}}, Profile: GRPCGo()})
	if err != nil {
		b.Fatal(err)
	}
	var now time.Duration
	c.Watch(now, LDS, "L1", 1)
	c.Watch(now, RDS, "R1", 2)
	c.Watch(now, CDS, "C1", 3)
	c.Watch(now, EDS, "E1", 4)
	c.ConnectivityChanged(now, 0, Ready)
	for i := 0; i < 4; i++ {
		c.StreamOpened(now, 0)
		c.SendDone(now, 0)
	}
	mk := func(v, nonce string, d *Decoded) *DecodedResponse {
		return &DecodedResponse{TypeURL: d.Type.TypeURL(), Version: v, Nonce: nonce, Resources: []*Decoded{d}}
	}
	var updates [2][4]*DecodedResponse
	for i, v := range []string{"1", "2"} {
		ep := "10.0.0.1:80"
		if i == 1 {
			ep = "10.0.0.2:80"
		}
		updates[i] = [4]*DecodedResponse{
			mk(v, "n"+v+"l", MustDecoded(LDS, testListener("L1", "R1-"+v, "", false, false))),
			mk(v, "n"+v+"r", MustDecoded(RDS, testRoute("R1", "C1-"+v, false, false))),
			mk(v, "n"+v+"c", MustDecoded(CDS, testCluster("C1", "E1-"+v, "", ""))),
			mk(v, "n"+v+"e", MustDecoded(EDS, testEndpoints("E1", []string{ep}, false))),
		}
		for _, u := range updates[i] {
			if u.Resources[0].Err != nil {
				b.Fatal(u.Resources[0].Err)
			}
		}
	}
	// apply delivers one response and answers its notifications, as a
	// caller with instant watchers would.
	var dones [8]DoneHandle
	apply := func(u *DecodedResponse) (notified int) {
		n := 0
		for _, e := range c.DecodedResponseReceived(now, 0, u) {
			if e.Kind == Notify {
				notified++
				if e.Notification.Done.Waits() {
					dones[n] = e.Notification.Done
					n++
				}
			}
		}
		c.SendDone(now, 0)
		for _, d := range dones[:n] {
			c.WatcherDone(now, d)
		}
		return notified
	}
	// Warm up: both versions once, so every slice has its capacity.
	for i := 0; i < 2; i++ {
		for _, u := range updates[i] {
			apply(u)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	notified := 0
	for i := 0; i < b.N; i++ {
		for _, u := range updates[i&1] {
			now += time.Millisecond
			notified += apply(u)
		}
	}
	b.StopTimer()
	if notified != 4*b.N {
		b.Fatalf("got %d notifications, want %d", notified, 4*b.N)
	}
	if c.ReadPaused(0) {
		b.Fatal("reads still paused after every WatcherDone")
	}
}

// BenchmarkDecodeResponse measures decoding and validating the same four
// resources, which the wiring does once per (server, type, name, version).
func BenchmarkDecodeResponse(b *testing.B) {
	ls := MustDecoded(LDS, testListener("L1", "R1", "", false, false)).Raw
	rs := MustDecoded(RDS, testRoute("R1", "C1", false, false)).Raw
	cs := MustDecoded(CDS, testCluster("C1", "E1", "", "")).Raw
	es := MustDecoded(EDS, testEndpoints("E1", []string{"10.0.0.1:80"}, false)).Raw
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		Decode(LDS, ls)
		Decode(RDS, rs)
		Decode(CDS, cs)
		Decode(EDS, es)
	}
}
