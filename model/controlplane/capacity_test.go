package controlplane_test

import (
	"cmp"
	"errors"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	cp "github.com/xdssim/xdssim/model/controlplane"
	"github.com/xdssim/xdssim/sim"
)

// TestBurstQueuesOnWorkers: 1 000 streams each send their first request
// at the same instant to a server with 4 workers and a 10 ms service
// time. The queue drains 4 requests per 10 ms, so the last response
// leaves 1000/4 × 10 ms = 2.5 s later, and responses are delayed by
// their place in the queue.
func TestBurstQueuesOnWorkers(t *testing.T) {
	s := mustNew(t, cp.Config{Name: "p", Services: twoServices(),
		Capacity: cp.Capacity{Workers: 4, ServiceTime: sim.Constant(10 * time.Millisecond)}})
	const n = 1000
	var jobs []cp.Job
	for id := cp.StreamID(1); id <= n; id++ {
		c := newClient(t, s, id)
		c.names[cp.LDS] = []string{"a"}
		j, err := s.Receive(0, id, cp.RequestOf(c.request(cp.LDS, nil)), 0)
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	if d := s.QueueDepth(0); d != n-4 {
		t.Errorf("queue depth at 0 = %d, want %d", d, n-4)
	}
	last := jobs[n-1]
	if last.Start != sim.Time(2490*time.Millisecond) || last.Done != sim.Time(2500*time.Millisecond) {
		t.Errorf("last job starts %v, done %v; want 2.49s, 2.5s", last.Start, last.Done)
	}
	// Complete in time order, as the kernel would.
	responses := 0
	checked := false
	for _, j := range jobs {
		if !checked && j.Done > sim.Time(time.Second) {
			// 400 requests were served by 1 s, 4 are in service.
			if d := s.QueueDepth(sim.Time(time.Second)); d != n-4-400 {
				t.Errorf("queue depth at 1s = %d, want %d", d, n-4-400)
			}
			checked = true
		}
		rs, err := s.Complete(j.Done, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		responses += len(rs)
	}
	if responses != n {
		t.Errorf("%d responses, want %d", responses, n)
	}
	smp := s.Sample(sim.Time(2500 * time.Millisecond))
	if smp.Completed != n || smp.LatencyP50 != 1250*time.Millisecond || smp.LatencyP99 != 2480*time.Millisecond || smp.Max != 2500*time.Millisecond {
		t.Errorf("latency: %+v", smp)
	}
	if smp.RequestsPerSec != n/2.5 || smp.NewStreamsPerSec != n/2.5 || smp.QueueDepth != 0 {
		t.Errorf("rates: %+v", smp)
	}
	tot := s.Totals()
	if tot.PeakQueueDepth != n-4 || tot.PeakOpenStreams != n || tot.StreamsOpened != n || tot.Requests != n || tot.Responses != n {
		t.Errorf("totals = %+v", tot)
	}
	if _, err := s.Complete(sim.Time(3*time.Second), last.ID); err == nil {
		t.Error("a job completed twice")
	}
}

// TestStreamRequestsStayInOrder: with several workers and random service
// times, a stream's responses still leave in the order its requests came.
func TestStreamRequestsStayInOrder(t *testing.T) {
	s := mustNew(t, cp.Config{Name: "p", Services: twoServices(), Rand: sim.NewStream(1, "cp"),
		Capacity: cp.Capacity{Workers: 8, ServiceTime: sim.Exponential(10 * time.Millisecond)}})
	c := newClient(t, s, 1)
	var prev sim.Time
	for i := 0; i < 200; i++ {
		c.names[cp.EDS] = []string{"a-cluster"}
		j, err := s.Receive(sim.Time(i)*sim.Time(time.Millisecond), 1, cp.RequestOf(c.request(cp.EDS, nil)), 0)
		if err != nil {
			t.Fatal(err)
		}
		if j.Done < prev || j.Done < j.Start || j.Start < j.Arrived {
			t.Fatalf("job %d: %+v after done %v", i, j, prev)
		}
		prev = j.Done
	}
}

// TestClosedStreamDropsQueuedRequests: a request still queued when its
// stream closes is dropped, even if a new stream reuses the id.
func TestClosedStreamDropsQueuedRequests(t *testing.T) {
	s := mustNew(t, cp.Config{Name: "p", Services: twoServices(),
		Capacity: cp.Capacity{Workers: 1, ServiceTime: sim.Constant(time.Second)}})
	c := newClient(t, s, 1)
	c.names[cp.LDS] = []string{"a"}
	j, _ := s.Receive(0, 1, cp.RequestOf(c.request(cp.LDS, nil)), 0)
	s.CloseStream(sim.Time(time.Millisecond), 1)
	if err := s.OpenStream(sim.Time(2*time.Millisecond), 1); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Complete(j.Done, j.ID)
	if err != nil || len(rs) != 0 {
		t.Errorf("dropped request: %v %v", summarize(rs), err)
	}
}

// TestMaxStreamsRejectsExcess: streams beyond MaxStreams are refused with
// RESOURCE_EXHAUSTED; closing one makes room.
func TestMaxStreamsRejectsExcess(t *testing.T) {
	s := mustNew(t, cp.Config{Name: "p", Capacity: cp.Capacity{MaxStreams: 2}})
	for id := cp.StreamID(1); id <= 2; id++ {
		if err := s.OpenStream(0, id); err != nil {
			t.Fatal(err)
		}
	}
	err := s.OpenStream(0, 3)
	var se *cp.StreamError
	if !errors.As(err, &se) || se.Status.Code != codes.ResourceExhausted || se.Stream != 3 {
		t.Fatalf("third stream: %v", err)
	}
	s.CloseStream(0, 1)
	if err := s.OpenStream(0, 3); err != nil {
		t.Errorf("after a close: %v", err)
	}
	tot := s.Totals()
	if tot.StreamsRejected != 1 || tot.StreamsOpened != 3 || tot.PeakOpenStreams != 2 {
		t.Errorf("totals = %+v", tot)
	}
}

// TestUnlimitedWorkers: without workers every request starts when it
// arrives and takes its service time.
func TestUnlimitedWorkers(t *testing.T) {
	s := mustNew(t, cp.Config{Name: "p", Capacity: cp.Capacity{ServiceTime: sim.Constant(5 * time.Millisecond)}})
	for id := cp.StreamID(1); id <= 10; id++ {
		c := newClient(t, s, id)
		j, _ := s.Receive(0, id, cp.RequestOf(c.request(cp.LDS, nil)), 0)
		if j.Start != 0 || j.Done != sim.Time(5*time.Millisecond) {
			t.Errorf("job %+v", j)
		}
	}
	if s.Totals().PeakQueueDepth != 0 {
		t.Errorf("peak queue depth = %d", s.Totals().PeakQueueDepth)
	}
}

// TestProcessingTimeAddsToTheServiceTime: a request takes the server's
// own processing time plus the control plane's service time, and holds
// its worker for both: with one worker, the second request of the same
// instant starts when the first is done.
func TestProcessingTimeAddsToTheServiceTime(t *testing.T) {
	for _, tt := range []struct {
		name       string
		workers    int
		start, end time.Duration // of the second request
	}{
		{"no worker limit", 0, 0, 7 * time.Millisecond},
		{"one worker", 1, 7 * time.Millisecond, 14 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := mustNew(t, cp.Config{Name: "p", Services: twoServices(), Capacity: cp.Capacity{Workers: tt.workers,
				ProcessingTime: sim.Constant(2 * time.Millisecond), ServiceTime: sim.Constant(5 * time.Millisecond)}})
			var jobs []cp.Job
			for id := cp.StreamID(1); id <= 2; id++ {
				c := newClient(t, s, id)
				c.names[cp.LDS] = []string{"a"}
				j, err := s.Receive(0, id, cp.RequestOf(c.request(cp.LDS, nil)), 0)
				if err != nil {
					t.Fatal(err)
				}
				jobs = append(jobs, j)
			}
			if jobs[0].Done != sim.Time(7*time.Millisecond) {
				t.Errorf("first request done at %v, want 7ms (2 ms processing + 5 ms service)", jobs[0].Done)
			}
			if jobs[1].Start != sim.Time(tt.start) || jobs[1].Done != sim.Time(tt.end) {
				t.Errorf("second request %v .. %v, want %v .. %v", jobs[1].Start, jobs[1].Done, tt.start, tt.end)
			}
		})
	}
}

// TestTimeNeverGoesBack: an input before the previous one is a wiring bug.
func TestTimeNeverGoesBack(t *testing.T) {
	s := mustNew(t, cp.Config{Name: "p"})
	if err := s.OpenStream(sim.Time(time.Second), 1); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	s.CloseStream(0, 1)
}

// TestSampleIsPerInterval: a sample reports the activity since the
// previous one and the state at its time.
func TestSampleIsPerInterval(t *testing.T) {
	s := mustNew(t, cp.Config{Name: "p", Services: twoServices()})
	c := newClient(t, s, 1)
	c.ackAll(c.subscribe(cp.CDS, "a-cluster"))
	newClient(t, s, 2)
	smp := s.Sample(sim.Time(2 * time.Second))
	if smp.OpenStreams != 2 || smp.NewStreamsPerSec != 1 || smp.RequestsPerSec != 1 || smp.ResponsesPerSec != 0.5 ||
		smp.ACKs != 1 || smp.NACKs != 0 || smp.Completed != 2 {
		t.Errorf("first sample: %+v", smp)
	}
	s.CloseStream(sim.Time(3*time.Second), 2)
	smp = s.Sample(sim.Time(4 * time.Second))
	if smp.OpenStreams != 1 || smp.NewStreamsPerSec != 0 || smp.RequestsPerSec != 0 || smp.ACKs != 0 || smp.Completed != 0 || smp.LatencyP99 != 0 {
		t.Errorf("second sample: %+v", smp)
	}
}

// TestCompletionsAreHandedOutInOrderEachOnce drives a server as the fleet
// does, with one event per job NextCompletion hands out: every job is
// handed out once, before it is due, and they complete in the order of
// their Done, ties in the order they came, while few are handed out at
// a time however many are queued.
func TestCompletionsAreHandedOutInOrderEachOnce(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name     string
		capacity cp.Capacity
		most     int // jobs handed out and not completed, at most; 0: no bound
	}{
		{"one worker", cp.Capacity{Workers: 1, ServiceTime: sim.Constant(ms)}, 1},
		{"eight workers, drawn times", cp.Capacity{Workers: 8, ServiceTime: sim.LogNormal(ms, 10*ms)}, 8},
		{"no time: every job done at a worker's start", cp.Capacity{Workers: 2}, 2},
		{"no limit on workers", cp.Capacity{ServiceTime: sim.LogNormal(ms, 10*ms)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustNew(t, cp.Config{Name: "p", Services: twoServices(), Capacity: tt.capacity})
			const streams, requests = 20, 4000
			var clients []*client
			for id := cp.StreamID(1); id <= streams; id++ {
				c := newClient(t, s, id)
				c.names[cp.LDS] = []string{"a"}
				clients = append(clients, c)
			}
			r := sim.NewStream(1, "arrivals")
			var handed []cp.Job // the wiring's events, in no order
			hand := func() {
				if j, ok := s.NextCompletion(); ok {
					handed = append(handed, j)
				}
			}
			var jobs, done []cp.Job
			queued, most := 0, 0
			now := sim.Time(0)
			for len(jobs) < requests || len(handed) > 0 {
				// The earliest event: a completion, or the next arrival
				// (every fourth at the same instant as the one before).
				first := -1
				for i, j := range handed {
					if first < 0 || j.Done < handed[first].Done || j.Done == handed[first].Done && j.ID < handed[first].ID {
						first = i
					}
				}
				next := now
				if len(jobs)%4 != 0 {
					next = now.Add(time.Duration(r.Float64() * float64(200*time.Microsecond)))
				}
				if len(jobs) < requests && (first < 0 || next < handed[first].Done) {
					now = next
					c := clients[r.IntN(streams)]
					j, err := s.Receive(now, c.id, cp.RequestOf(c.request(cp.LDS, nil)), uint64(len(jobs)))
					if err != nil {
						t.Fatal(err)
					}
					if j.Tag != uint64(len(jobs)) {
						t.Fatalf("job %d has tag %d, want %d", j.ID, j.Tag, len(jobs))
					}
					jobs = append(jobs, j)
					queued++
					hand()
				} else {
					j := handed[first]
					handed = append(handed[:first], handed[first+1:]...)
					if j.Done < now {
						t.Fatalf("job %d handed out at %v, after it was due at %v", j.ID, now, j.Done)
					}
					now = j.Done
					if _, err := s.Complete(now, j.ID); err != nil {
						t.Fatal(err)
					}
					done = append(done, j)
					queued--
					hand()
				}
				most = max(most, len(handed))
				if queued > 0 && len(handed) == 0 {
					t.Fatalf("at %v: %d jobs queued, none handed out", now, queued)
				}
			}
			want := slices.Clone(jobs)
			slices.SortStableFunc(want, func(a, b cp.Job) int { return cmp.Compare(a.Done, b.Done) })
			if !slices.Equal(done, want) {
				for i := range done {
					if i >= len(want) || done[i] != want[i] {
						t.Fatalf("completion %d of %d is %+v, want %+v", i, len(done), done[i], want[i])
					}
				}
				t.Fatalf("%d completions, want %d", len(done), len(want))
			}
			if tt.most > 0 && most > tt.most {
				t.Errorf("%d jobs handed out at once, want at most %d", most, tt.most)
			}
			t.Logf("at most %d of the jobs handed out at once", most)
		})
	}
}

// TestNextCompletionSkipsJobsCompletedOutOfTurn: a caller may complete a
// due job that NextCompletion did not hand out, or not first; the jobs
// handed out after are the rest, in order.
func TestNextCompletionSkipsJobsCompletedOutOfTurn(t *testing.T) {
	const ms = time.Millisecond
	s := mustNew(t, cp.Config{Name: "p", Services: twoServices(),
		Capacity: cp.Capacity{Workers: 2, ServiceTime: sim.Constant(ms)}})
	c := newClient(t, s, 1)
	c.names[cp.LDS] = []string{"a"}
	var jobs []cp.Job
	for i := range 8 {
		j, err := s.Receive(0, c.id, cp.RequestOf(c.request(cp.LDS, nil)), uint64(i))
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	now := sim.Time(0)
	complete := func(j cp.Job) {
		t.Helper()
		now = max(now, j.Done)
		if _, err := s.Complete(now, j.ID); err != nil {
			t.Fatal(err)
		}
	}
	next := func() cp.Job {
		t.Helper()
		j, ok := s.NextCompletion()
		if !ok {
			t.Fatal("NextCompletion handed out nothing")
		}
		return j
	}
	// Two workers: jobs 2i and 2i+1 are done at i+1 ms. Jobs 0 and 1
	// complete before anything is handed out; then job 2 is handed out
	// (and 3 is next in line), but 3 and 2 complete in that order.
	complete(jobs[0])
	complete(jobs[1])
	if j := next(); j.ID != jobs[2].ID {
		t.Fatalf("handed out job %d, want %d", j.ID, jobs[2].ID)
	}
	complete(jobs[3])
	complete(jobs[2])
	var got []cp.JobID
	for {
		j, ok := s.NextCompletion()
		if !ok {
			break
		}
		got = append(got, j.ID)
		complete(j)
	}
	if want := []cp.JobID{jobs[4].ID, jobs[5].ID, jobs[6].ID, jobs[7].ID}; !slices.Equal(got, want) {
		t.Errorf("handed out %v after, want %v", got, want)
	}
}
