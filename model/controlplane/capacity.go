package controlplane

import (
	"github.com/xdssim/xdssim/sim"
)

// Capacity is a server's processing capacity: how fast it serves
// requests, and how many streams it accepts.
//
// Requests are served first come, first served by Workers identical
// workers, each request taking a ProcessingTime plus a ServiceTime, each
// drawn from its distribution. When a fleet reconnects at once the
// requests queue, and every response waits for its request's turn: its
// latency is the queue wait plus the request's time. A stream's requests
// complete in the order they arrived, as a gRPC stream is read by one
// goroutine.
type Capacity struct {
	// Workers is the number of requests served at once; 0 means no limit
	// (every request starts as it arrives).
	Workers int
	// ProcessingTime is what the server's own code takes per request:
	// gRPC reads and decodes the DiscoveryRequest, go-control-plane's
	// stream loop hands it to the cache and the response is encoded and
	// written (sotw/v3 server.go process, cache CreateWatch). The zero
	// Dist takes no time; scenarios give every server a default measured
	// against go-control-plane.
	ProcessingTime sim.Dist
	// ServiceTime is the time one request takes a worker on top of
	// ProcessingTime: the work of a control plane built on the server
	// (its own callbacks, a store it reads). The zero Dist adds nothing.
	ServiceTime sim.Dist
	// MaxStreams is the number of ADS streams the server accepts at once;
	// the excess is refused with RESOURCE_EXHAUSTED. 0 means no limit.
	MaxStreams int
}

// JobID identifies one queued request. It fits a sim.Event's Arg.
type JobID uint64

// Job is a request the server has queued. The wiring learns from
// [Server.NextCompletion] when to schedule its completion: an event at
// Done, at which it calls [Server.Complete] with ID.
type Job struct {
	ID     JobID    // passed to Server.Complete
	Stream StreamID // the stream the request came on
	Tag    uint64   // the caller's, given to Server.Receive
	// Arrived is when the request reached the server, Start when a
	// worker took it, Done when its responses go out: Start plus the
	// service time, or later if an earlier request of the same stream is
	// still being served.
	Arrived, Start, Done sim.Time
}

// job is a queued request, in 96 bytes: a reconnecting fleet queues
// millions.
type job struct {
	st                   *stream // the stream it came on (its id may be reused later); nil once taken
	arrived, start, done sim.Time
	tag                  uint64
	req                  queued
}

// queued is what the server reads of a queued request, its nonce as a
// number (nonceNumber). The few requests that carry an error detail
// (NACKs), name no type the server knows or quote a nonce the server
// never writes are kept whole in a part of their own.
type queued struct {
	version string
	names   []string
	odd     *Request
	nonce   uint32
	typ     ResourceType
}

// queue returns the queued form of r.
func queue(r Request) queued {
	t, ok := TypeFromURL(r.TypeURL)
	n, canonical := nonceNumber(r.Nonce)
	if !ok || r.ErrorDetail != nil || !canonical || r.nonce != 0 {
		odd := r // a copy taken here: &r would move every request to the heap
		return queued{odd: &odd}
	}
	return queued{version: r.Version, nonce: n, names: r.Names, typ: t}
}

// request returns the request q stands for.
func (q *queued) request() Request {
	if q.odd != nil {
		return *q.odd
	}
	return Request{TypeURL: q.typ.TypeURL(), Version: q.version, Names: q.names, nonce: q.nonce}
}

// workQueue is a FIFO multi-server queue. Because requests arrive in
// time order and start in arrival order, a request's start is known when
// it arrives: the earliest time a worker is free, or its arrival. Starts
// are therefore non-decreasing, which makes the queue depth at any time
// the number of queued requests whose start is still ahead.
type workQueue struct {
	cap  Capacity
	rand *sim.Rand

	free []sim.Time // min-heap of the times each worker is next free

	// blocks hold the jobs from the first one not completed on, in
	// blocks of jobBlock: blocks[k][i] has ID base + k·jobBlock + i, and
	// those of blocks[0] before head are completed. A block goes once all
	// its jobs are, so the queue holds about the jobs in it, not the most
	// it ever held (a reconnecting fleet's millions).
	blocks [][]job
	spare  [][]job // emptied blocks, kept for reuse, at most maxSpareBlocks
	head   int
	base   JobID
	nextID JobID

	// The jobs in the order they complete, for next: the jobs from
	// admitted on are in the blocks only; ready holds those admitted
	// before and not yet handed out, handed those handed out and not yet
	// completed. The jobs are admitted in the order they start, and none
	// is done before it starts, so ready needs only the jobs started by
	// the time its first is done: about the busy workers' jobs, not the
	// queue. admitStart is at most the start of every job not admitted.
	admitted   JobID
	admitStart sim.Time
	// waiting is the first job that had not started at the last depth:
	// the jobs from it on that have not started by now are the queue's
	// depth at now.
	waiting JobID
	ready   []Job
	handed  []Job
	// outOfTurn: a job was completed before its turn (not the first
	// handed out), so ready and handed may name completed jobs, which
	// next drops when it comes to them. The fleet never does that.
	outOfTurn bool
}

// completesBefore orders jobs by completion, and jobs done at once by
// arrival.
func completesBefore(a, b *Job) bool { return a.Done < b.Done || a.Done == b.Done && a.ID < b.ID }

// jobBlock is the number of jobs in a block of workQueue.
const jobBlock = 1024

// maxSpareBlocks is the number of emptied blocks a workQueue keeps, about
// 1.4 MB: enough for the requests of a push to 16 000 streams, which come
// back together as ACKs, to find blocks (with 2, fleet-10k's pushes to
// 10 000 streams allocated 36 MB of blocks over the run).
const maxSpareBlocks = 16

func newWorkQueue(c Capacity, r *sim.Rand) *workQueue {
	return &workQueue{cap: c, rand: r, free: make([]sim.Time, max(c.Workers, 0)), base: 1, nextID: 1, admitted: 1, waiting: 1}
}

// enqueue queues req from stream st arriving at now, with the caller's
// tag.
func (q *workQueue) enqueue(now sim.Time, st *stream, req Request, tag uint64) Job {
	start := now
	if len(q.free) > 0 && q.free[0] > now {
		start = q.free[0]
	}
	service := q.cap.ProcessingTime.Sample(q.rand) + q.cap.ServiceTime.Sample(q.rand)
	done := start.Add(service)
	if len(q.free) > 0 {
		q.free[0] = done
		siftDown(q.free)
	}
	// A stream's responses leave in the order its requests came.
	if done < st.lastDone {
		done = st.lastDone
	}
	st.lastDone = done
	j := Job{ID: q.nextID, Stream: st.id, Tag: tag, Arrived: now, Start: start, Done: done}
	q.nextID++
	i := int(j.ID - q.base)
	if i/jobBlock == len(q.blocks) {
		var b []job
		if n := len(q.spare); n > 0 {
			// The list lets go of b, which may later be dropped.
			b, q.spare[n-1], q.spare = q.spare[n-1], nil, q.spare[:n-1]
		} else {
			b = make([]job, jobBlock)
		}
		q.blocks = append(q.blocks, b)
	}
	q.blocks[i/jobBlock][i%jobBlock] = job{st: st, arrived: now, start: start, done: done, tag: tag, req: queue(req)}
	if j.ID == q.admitted {
		q.admitStart = start
	}
	return j
}

// depth returns the number of requests waiting for a worker at now, which
// is not before the now of any earlier call.
func (q *workQueue) depth(now sim.Time) int {
	// A completed job started long ago: its blocks may be gone, and its
	// start reads 0.
	q.waiting = max(q.waiting, q.base+JobID(q.head))
	for q.waiting < q.nextID {
		i := int(q.waiting - q.base)
		if q.blocks[i/jobBlock][i%jobBlock].start > now {
			break
		}
		q.waiting++
	}
	return int(q.nextID - q.waiting)
}

// queued returns job id, or nil if it is unknown or completed.
func (q *workQueue) queued(id JobID) *job {
	if id < q.base+JobID(q.head) || id >= q.nextID {
		return nil
	}
	i := int(id - q.base)
	if j := &q.blocks[i/jobBlock][i%jobBlock]; j.st != nil {
		return j
	}
	return nil
}

// next hands out the queued job that completes first of those not yet
// handed out, if it completes before every job handed out and not yet
// completed; see [Server.NextCompletion].
func (q *workQueue) next() (Job, bool) {
	// Admit jobs until the first of ready is done no later than the next
	// job starts: no job not admitted can then complete before it (a tie
	// goes to the job that came first, which is the admitted one).
	for q.admitted < q.nextID {
		if q.dropCompleted(&q.ready); len(q.ready) > 0 && q.ready[0].Done <= q.admitStart {
			break
		}
		if j := q.queued(q.admitted); j != nil {
			q.ready = pushJob(q.ready, Job{ID: q.admitted, Stream: j.st.id, Tag: j.tag, Arrived: j.arrived, Start: j.start, Done: j.done})
		}
		q.admitted++
		if j := q.queued(q.admitted); j != nil {
			q.admitStart = j.start
		}
	}
	q.dropCompleted(&q.ready)
	q.dropCompleted(&q.handed)
	if len(q.ready) == 0 || len(q.handed) > 0 && !completesBefore(&q.ready[0], &q.handed[0]) {
		return Job{}, false
	}
	j := q.ready[0]
	q.ready = popJob(q.ready)
	q.handed = pushJob(q.handed, j)
	return j, true
}

// dropCompleted removes from the front of the heap h the jobs completed
// already, if any can be.
func (q *workQueue) dropCompleted(h *[]Job) {
	for q.outOfTurn && len(*h) > 0 && q.queued((*h)[0].ID) == nil {
		*h = popJob(*h)
	}
}

// take returns the job id and marks it done; ok is false for an unknown
// or already completed id.
func (q *workQueue) take(id JobID) (job, bool) {
	j := q.queued(id)
	if j == nil {
		return job{}, false
	}
	if len(q.handed) > 0 && q.handed[0].ID == id {
		q.handed = popJob(q.handed)
	} else {
		q.outOfTurn = true
	}
	out := *j
	*j = job{}
	// Completed jobs leave the front; a block whose jobs are all
	// completed goes, cleared for reuse.
	for q.base+JobID(q.head) < q.nextID && q.blocks[0][q.head].st == nil {
		q.head++
		if q.head == jobBlock {
			b := q.blocks[0]
			clear(b)
			if len(q.spare) < maxSpareBlocks {
				q.spare = append(q.spare, b)
			}
			n := copy(q.blocks, q.blocks[1:])
			q.blocks[n] = nil
			q.blocks = q.blocks[:n]
			q.base += jobBlock
			q.head = 0
		}
	}
	return out, true
}

// pushJob adds j to h, a min-heap in the order of completion.
func pushJob(h []Job, j Job) []Job {
	h = append(h, j)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !completesBefore(&h[i], &h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	return h
}

// popJob removes the first job of h, a min-heap in the order of
// completion.
func popJob(h []Job) []Job {
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		m, l := i, 2*i+1
		if l < n && completesBefore(&h[l], &h[m]) {
			m = l
		}
		if r := l + 1; r < n && completesBefore(&h[r], &h[m]) {
			m = r
		}
		if m == i {
			return h
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// siftDown restores the heap property of h after h[0] grew.
func siftDown(h []sim.Time) {
	i := 0
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h[r] < h[l] {
			m = r
		}
		if h[i] <= h[m] {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
