package main

import (
	"fmt"
	"os"
	"sync"
	"time"
)

// --max-cpu bounds the CPU time of the whole command, every thread and
// every run of it, as the kernel counts it (getrusage). A watch outside
// the simulation reads it every cpuPoll; once it reaches the bound before
// any output is written, the command stops at once with exit 4 and writes
// nothing, whatever it is doing: loading, building a world, in the middle
// of an event. The runs themselves are never touched, so a run that ends
// in time is the same as without the bound.

// cpuPoll is how often the CPU time is read: the command stops at most
// this long (in wall time) after it reaches --max-cpu.
const cpuPoll = 100 * time.Millisecond

// cpuWatch is the process's one watch of --max-cpu.
var cpuWatch struct {
	mu      sync.Mutex
	started bool
	// writing is set once the command writes its outputs: the watch then
	// lets it finish (outputs are all or nothing, and a set half
	// published is not a stopped run).
	writing bool
}

// watchCPU stops the process, with exit code 4 and the error on stderr,
// once it has used limit of CPU time, unless it has begun writing its
// outputs. Only the first call starts the watch.
func watchCPU(limit time.Duration) {
	cpuWatch.mu.Lock()
	defer cpuWatch.mu.Unlock()
	if cpuWatch.started {
		return
	}
	cpuWatch.started = true
	go func() {
		t := time.NewTicker(cpuPoll)
		defer t.Stop()
		for range t.C {
			used, _ := processCPU()
			if used < limit {
				continue
			}
			cpuWatch.mu.Lock()
			if cpuWatch.writing {
				cpuWatch.mu.Unlock()
				return
			}
			// Holding the lock, so that no output starts: the parent
			// removes any temporary a profile left (supervise.go).
			fmt.Fprintf(os.Stderr, "xdssim: stopped at --max-cpu %s, having used %s of CPU time: the run is incomplete and wrote no outputs; raise --max-cpu, or 0 for no bound\n",
				limit, used.Round(time.Millisecond))
			os.Exit(exitEventLimit)
		}
	}()
}

// beginWriting tells the --max-cpu watch that the command writes its
// outputs from now on: it no longer stops it.
func beginWriting() {
	cpuWatch.mu.Lock()
	cpuWatch.writing = true
	cpuWatch.mu.Unlock()
}
