package network_test

import (
	"fmt"
	"time"

	"github.com/xdssim/xdssim/model/network"
	"github.com/xdssim/xdssim/sim"
)

// ExampleChannel feeds a channel its inputs by hand: a refused attempt, the
// backoff timer, a successful attempt, then the transport is lost.
func ExampleChannel() {
	cfg := network.DefaultBackoffConfig()
	ch := network.NewChannel(&cfg, sim.NewStream(1, "client/0"))
	buf := make([]network.Effect, 0, 4)
	show := func(now sim.Time, effects []network.Effect) {
		for _, e := range effects {
			fmt.Println(now, e)
		}
	}
	at := func(d time.Duration) sim.Time { return sim.Time(d) }

	buf = ch.Connect(0, buf[:0])
	show(0, buf)
	buf = ch.ConnectResult(at(100*time.Millisecond), 1, false, buf[:0])
	show(at(100*time.Millisecond), buf)
	timer := buf[len(buf)-1]
	buf = ch.TimerFired(timer.At, timer.Timer, buf[:0])
	show(timer.At, buf)
	p, _ := ch.Pick(timer.At, false, nil)
	fmt.Println("fail-fast pick while reconnecting:", p.Result, p.Status)
	buf = ch.ConnectResult(timer.At+sim.Time(200*time.Millisecond), 2, true, buf[:0])
	show(timer.At+sim.Time(200*time.Millisecond), buf)
	buf = ch.ConnectionLost(at(time.Minute), buf[:0])
	show(at(time.Minute), buf)
	// Output:
	// 0s state-changed IDLE->CONNECTING
	// 0s start-connect-attempt #1 deadline=20s
	// 100ms state-changed CONNECTING->TRANSIENT_FAILURE
	// 100ms arm-timer #1 at=1.1s
	// 1.1s start-connect-attempt #2 deadline=21.1s
	// fail-fast pick while reconnecting: fail Unavailable: connection error: connect: connection refused
	// 1.3s state-changed TRANSIENT_FAILURE->READY
	// 1m0s state-changed READY->IDLE
}
