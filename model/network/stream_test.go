package network

import (
	"slices"
	"testing"
	"time"

	"github.com/xdssim/xdssim/sim"
)

// streamWorld delivers the messages of one stream on the sim kernel and
// records the order and times in which they arrive.
type streamWorld struct {
	st       Stream
	inflight []int // payloads in flight, FIFO (one direction)
	arrived  []int
	times    []sim.Time
	dropped  int
}

func (w *streamWorld) HandleEvent(k *sim.Kernel, ev sim.Event) {
	if !w.st.Deliver(k.Now(), StreamIDFromArg(ev.Arg), ServerToClient) {
		w.dropped++
		return
	}
	w.arrived = append(w.arrived, w.inflight[0])
	w.inflight = w.inflight[1:]
	w.times = append(w.times, k.Now())
}

// TestStreamMessagesArriveInOrderWithLinkLatency checks that messages on a
// stream arrive in the order they were sent, each no earlier than its own
// latency after it left, even when the link's log-normal latency would
// reorder them.
func TestStreamMessagesArriveInOrderWithLinkLatency(t *testing.T) {
	w := &streamWorld{}
	k := sim.NewKernel(w)
	link := LinkConfig{Latency: sim.LogNormal(ms(5), ms(200))}
	r := sim.NewStream(1, "client/0")
	id := w.st.Begin(0, 7, false)
	if !w.st.Start(0, id) {
		t.Fatal("Start failed")
	}
	reordered := 0
	var prevRaw sim.Time
	for i := range 1000 {
		now := sim.Time(i) * msT
		lat := link.OneWay(r)
		if now.Add(lat) < prevRaw {
			reordered++ // raw latencies alone would have reordered this one
		}
		prevRaw = max(prevRaw, now.Add(lat))
		at, res := w.st.Send(now, id, ServerToClient, lat, Delivery{})
		if res != SendScheduled || at < now.Add(lat) {
			t.Fatalf("message %d: %v at %v, want scheduled no earlier than %v", i, res, at, now.Add(lat))
		}
		w.inflight = append(w.inflight, i)
		k.Schedule(sim.Event{At: at, Arg: id.Arg()})
		k.Run(now)
	}
	k.Run(sim.Time(time.Hour))
	if reordered == 0 {
		t.Fatal("the latencies never tried to reorder: the test proves nothing")
	}
	want := make([]int, 1000)
	for i := range want {
		want[i] = i
	}
	if !slices.Equal(w.arrived, want) || !slices.IsSorted(w.times) {
		t.Errorf("arrival order %v..., want send order", w.arrived[:10])
	}
	if !w.st.Received() || w.st.LastRead() != w.times[len(w.times)-1] {
		t.Errorf("Received %v, LastRead %v; want true, %v", w.st.Received(), w.st.LastRead(), w.times[len(w.times)-1])
	}
	// Reference: RFC 9113 §5 (HTTP/2 frames of a stream arrive in order over one
	// TCP connection).
}

// TestLateMessageForDeadStreamIsDropped checks that a message of an earlier
// generation is dropped, even after the slot was reused.
func TestLateMessageForDeadStreamIsDropped(t *testing.T) {
	var st Stream
	old := st.Begin(0, 3, false)
	st.Start(0, old)
	at, _ := st.Send(0, old, ServerToClient, ms(50), Delivery{})
	if !st.Close(old) {
		t.Fatal("Close of a live stream returned false")
	}
	if st.Close(old) {
		t.Error("second Close returned true")
	}
	if st.Deliver(at, old, ServerToClient) {
		t.Error("message delivered on a closed stream")
	}
	cur := st.Begin(sec, 3, false)
	st.Start(sec, cur)
	if cur == old || cur.Slot != old.Slot {
		t.Fatalf("new generation %v, old %v", cur, old)
	}
	if st.Deliver(at, old, ServerToClient) || st.Received() {
		t.Error("late message of the old generation reached the new one")
	}
	if _, res := st.Send(sec, old, ClientToServer, ms(1), Delivery{}); res != SendDropped {
		t.Errorf("Send on the old generation: %v, want dropped", res)
	}
	if st.Close(old) || st.State() != StreamOpen {
		t.Error("Close of the old generation closed the new one")
	}
	if got := StreamIDFromArg(cur.Arg()); got != cur {
		t.Errorf("StreamIDFromArg(Arg()) = %v, want %v", got, cur)
	}
	// Reference: docs/architecture.md, Performance rules ("Timers cancel lazily (generation
	// counters)"); issue #4 (stream id + generation).
}

// TestStalledMessagesArriveWhenTheBlackholeClears checks that a message
// sent into a blackhole arrives, in order, once it clears, and that one
// sent into an endless blackhole never does, nor does anything after it.
func TestStalledMessagesArriveWhenTheBlackholeClears(t *testing.T) {
	c := NewClientRef(0, "client/0")
	f := mustFaults(t, 1, Fault{Kind: Blackhole, Start: 10 * sec, Duration: 20 * time.Second})
	var st Stream
	id := st.Begin(0, 0, false)
	st.Start(0, id)
	send := func(now sim.Time) (sim.Time, SendResult) {
		return st.Send(now, id, ClientToServer, ms(50), f.Delivery(now, c, 0))
	}
	for _, tt := range []struct {
		now     sim.Time
		wantAt  sim.Time
		wantRes SendResult
	}{
		{5 * sec, 5*sec + 50*msT, SendScheduled},
		{12 * sec, 30*sec + 50*msT, SendScheduled}, // held until 30 s
		{29 * sec, 30*sec + 50*msT, SendScheduled}, // same
		{30 * sec, 30*sec + 50*msT, SendScheduled}, // after it clears, behind the others
		{31 * sec, 31*sec + 50*msT, SendScheduled},
	} {
		if at, res := send(tt.now); at != tt.wantAt || res != tt.wantRes {
			t.Errorf("send at %v: %v %v, want %v %v", tt.now, at, res, tt.wantAt, tt.wantRes)
		}
	}

	forever := mustFaults(t, 1, Fault{Kind: Blackhole, Start: 10 * sec, Duration: Forever})
	id = st.Begin(0, 0, false)
	st.Start(0, id)
	if _, res := st.Send(11*sec, id, ServerToClient, ms(50), forever.Delivery(11*sec, c, 0)); res != SendHeld {
		t.Errorf("send into an endless blackhole: %v, want held", res)
	}
	if _, res := st.Send(12*sec, id, ServerToClient, ms(50), Delivery{}); res != SendHeld {
		t.Errorf("send behind a held message: %v, want held", res)
	}
	if _, res := st.Send(12*sec, id, ClientToServer, ms(50), Delivery{}); res != SendScheduled {
		t.Errorf("the other direction: %v, want scheduled", res)
	}
	// Reference: docs/scenario-reference.md, [[fault]] (blackhole: open streams
	// stall; nothing tells the client until keepalive); RFC 6298 (TCP retransmits until the path heals).
}

// TestLostMessageFailsTheStream checks a MessageLoss fault: the message is
// not delivered and the stream fails when it would have arrived.
func TestLostMessageFailsTheStream(t *testing.T) {
	c := NewClientRef(0, "client/0")
	f := mustFaults(t, 1, Fault{Kind: MessageLoss, Start: 10 * sec, Duration: time.Second})
	var st Stream
	id := st.Begin(0, 0, false)
	st.Start(0, id)
	at, res := st.Send(10*sec, id, ServerToClient, ms(50), f.Delivery(10*sec, c, 0))
	if res != SendLost || at != 10*sec+50*msT {
		t.Fatalf("Send = %v %v, want lost at 10.05s", at, res)
	}
	if !st.Close(id) {
		t.Fatal("the loss did not close the stream")
	}
	if st.Deliver(at, id, ServerToClient) {
		t.Error("a lost message was delivered")
	}
	if StatusMessageLost.Code.String() != "Unavailable" {
		t.Errorf("loss status %v, want UNAVAILABLE", StatusMessageLost)
	}
	// Reference: docs/scenario-reference.md, [[fault]] (message loss fails the
	// stream with UNAVAILABLE).
}

// TestGoAwayDrainsThenClosesOnlyDrainedStreams drives a channel and its
// stream through a GOAWAY with a 10 s grace period: the channel goes IDLE
// at once and the next stream's pick reconnects it; the old stream runs on
// until the grace period ends and is then closed; the new one is not.
func TestGoAwayDrainsThenClosesOnlyDrainedStreams(t *testing.T) {
	cfg := DefaultBackoffConfig()
	ch := NewChannel(&cfg, sim.NewStream(1, "client/0"))
	f := mustFaults(t, 1, Fault{Kind: GoAway, Start: 100 * sec, Duration: 10 * time.Second})
	buf := ch.Connect(0, nil)
	buf = ch.ConnectResult(200*msT, buf[1].Attempt, true, buf[:0])

	var old, cur Stream
	oldID := old.Begin(sec, 0, false)
	if p, _ := ch.Pick(sec, false, nil); p.Result != PickProceed || !old.Start(sec, oldID) {
		t.Fatal("stream did not start on a READY channel")
	}
	at, _ := old.Send(2*sec, oldID, ServerToClient, ms(50), Delivery{})
	old.Deliver(at, oldID, ServerToClient)

	for _, e := range f.Edges() {
		switch e.Action() {
		case ActionDrain:
			buf = ch.ConnectionLost(e.At, buf[:0])
			if ch.State() != Idle || !old.Drain(oldID) {
				t.Fatalf("after GOAWAY: channel %v, stream draining %v", ch.State(), old.Draining())
			}
			// The XdsClient keeps its stream; something else starts a new one.
			curID := cur.Begin(e.At, 1, false)
			p, eff := ch.Pick(e.At, false, buf[:0])
			if p.Result != PickQueue || len(eff) != 2 || eff[1].Kind != StartConnectAttempt {
				t.Fatalf("pick after GOAWAY: %v %v, want queue and a connect", p, eff)
			}
			ch.ConnectResult(e.At+200*msT, eff[1].Attempt, true, nil)
			if p, _ := ch.Pick(e.At+200*msT, false, nil); p.Result != PickProceed || !cur.Start(e.At+200*msT, curID) {
				t.Fatal("new stream did not start after the reconnect")
			}
			// The draining stream still delivers.
			at, res := old.Send(e.At+sec, oldID, ServerToClient, ms(50), Delivery{})
			if res != SendScheduled || !old.Deliver(at, oldID, ServerToClient) {
				t.Error("the draining stream stopped delivering before the close")
			}
		case ActionCloseDrained:
			for _, st := range []*Stream{&old, &cur} {
				if st.Draining() {
					st.Close(st.ID())
				}
			}
		}
	}
	if old.State() != StreamClosed || !old.Received() {
		t.Errorf("old stream: %v, received %v; want closed after a response (not an error, A57)", old.State(), old.Received())
	}
	if cur.State() != StreamOpen || cur.Draining() {
		t.Errorf("new stream: %v, draining %v; want open", cur.State(), cur.Draining())
	}
	// Reference: grpc-go internal/transport/http2_client.go handleGoAway and
	// clientconn.go onClose (channel IDLE at the GOAWAY); gRFC A9 (grace period);
	// gRFC A57, Handling ADS Stream Termination.
}

// TestServerRestartResetsStreamsAndRefusesUntilBack drives a READY channel
// and its stream through a 5 s restart: at the start the stream fails and
// the channel goes IDLE; the reconnect is refused until the server is back.
func TestServerRestartResetsStreamsAndRefusesUntilBack(t *testing.T) {
	cfg := DefaultBackoffConfig()
	link := LinkConfig{Latency: sim.Constant(ms(50))}
	h := newHarness(t, cfg, link, []Fault{{Kind: ServerRestart, Start: 60 * sec, Duration: 5 * time.Second}})
	h.run(30 * sec)
	if h.ch.State() != Ready {
		t.Fatalf("channel %v before the restart, want READY", h.ch.State())
	}
	var st Stream
	id := st.Begin(sec, 0, false)
	st.Start(sec, id)
	e := h.faults.Edges()[0]
	if e.Action() != ActionReset {
		t.Fatalf("first edge %+v, want a reset", e)
	}
	h.k.Run(e.At)
	h.buf = h.ch.ConnectionLost(e.At, h.buf[:0])
	h.apply(e.At)
	if !st.Close(id) {
		t.Fatal("reset did not close the stream")
	}
	// The XdsClient restarts its stream at once: the pick leaves IDLE.
	st.Begin(e.At, 0, false)
	var p Pick
	p, h.buf = h.ch.Pick(e.At, false, h.buf[:0])
	h.apply(e.At)
	h.k.Run(2 * 60 * sec)
	// Attempts: 60 s refused at 60.1 s, + 1 s: 61.1 s refused at 61.2, + draw1
	// 1.781681406 s: 62.981681406 refused, + draw2 2.974781381 s:
	// 66.056462787 s, after the restart: READY at 66.256462787 s.
	wantAttempts := []sim.Time{0, 60 * sec, 61_100_000_000, 62_981_681_406, 66_056_462_787}
	if p.Result != PickQueue || !slices.Equal(h.attempts, wantAttempts) {
		t.Errorf("pick %v; attempts %v, want queue; %v", p.Result, h.attempts, wantAttempts)
	}
	wantStates := []stateChange{
		{0, Idle, Connecting}, {200 * msT, Connecting, Ready},
		{60 * sec, Ready, Idle}, {60 * sec, Idle, Connecting},
		{60*sec + 100*msT, Connecting, TransientFailure},
		{66_256_462_787, TransientFailure, Ready},
	}
	if !slices.Equal(h.states, wantStates) {
		t.Errorf("states:\n got %v\nwant %v", h.states, wantStates)
	}
	// Reference: docs/scenario-reference.md, [[fault]] (restart: streams reset
	// with UNAVAILABLE, refused until back); grpc-go clientconn.go (IDLE, then backoff from index 0).
}
