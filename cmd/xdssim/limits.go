package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/xdssim/xdssim/scenarios"
)

// Exit code of a run stopped at --max-events: incomplete, no outputs.
const exitEventLimit = 4

// defaultMaxEvents is --max-events when it is not given: about an hour of
// CPU at the kernel's slowest measured rate, far past every reference
// scenario (fleet-1m-rpc handles 95 M), so that only a run caught in a loop
// reaches it.
const defaultMaxEvents = 1_000_000_000

// memoryShare is the share of the machine's memory (or of the cgroup's
// limit, when lower) that --max-memory defaults to.
const memoryShare = 0.75

// farPast is how many times its estimate a run's event count must reach
// for run to warn, while it runs, that it may be in a loop.
const farPast = 100

// eventLimitError is a run stopped at --max-events: exit 4.
type eventLimitError struct {
	limit   uint64
	at, end time.Duration
	est     int64
}

func (e eventLimitError) Error() string {
	return fmt.Sprintf("stopped at --max-events %d, at %s of %s of virtual time (the estimate was %s events): the run is incomplete and wrote no outputs; raise --max-events, or 0 for no bound",
		e.limit, e.at, e.end, formatCount(e.est))
}

// limits are the bounds a run is checked against before it starts.
type limits struct {
	memory    int64         // bytes; 0: no bound
	memoryWhy string        // where the bound comes from
	events    uint64        // 0: no bound
	cpu       time.Duration // 0: no bound
	force     bool
}

// memoryFacts are what bounds this process's memory, as the kernel tells
// it; each 0 where unknown or unlimited.
type memoryFacts struct {
	machine      int64 // the machine's physical memory
	cgroup       int64 // the cgroup's limit (memory.max)
	addressSpace int64 // RLIMIT_AS (ulimit -v)
	mapped       int64 // the address space mapped now (VmSize)
	resident     int64 // the memory resident now (VmRSS)
}

// The address space a run needs beside its resident memory: Go's runtime
// maps its heap in 64 MiB arenas, keeps pages it has returned to the
// kernel mapped, and lets the heap grow to twice its live part before it
// collects (GOGC=100); so each byte the run adds to its resident memory
// takes up to asPerResident bytes of address space, and asSlack more goes
// to the arena being filled and the stacks of new threads.
const (
	asPerResident = 2
	asSlack       = 128 << 20
)

// addressSpaceBound is the peak resident memory a run may reach under
// RLIMIT_AS: what is resident now, and the part of the address space not
// yet mapped, less asSlack, over asPerResident. It is 0 when there is no
// RLIMIT_AS, and at least 1 byte (every run refused) when the runtime has
// already mapped it all.
func (m memoryFacts) addressSpaceBound() int64 {
	if m.addressSpace <= 0 {
		return 0
	}
	left := max(m.addressSpace-m.mapped-asSlack, 0)
	return max(m.resident+left/asPerResident, 1)
}

// parseLimits reads --max-memory, --max-events, --max-cpu and --force,
// with what the kernel says of this process's memory. The watch of
// --max-cpu started earlier (startCPUWatch).
func parseLimits(f *runFlags) (limits, error) {
	return parseLimitsWith(f, readMemory())
}

// startCPUWatch starts the watch of --max-cpu when given (value v) as
// soon as the flags are parsed: it bounds the whole command, loading a
// scenario and planning a grid included.
func startCPUWatch(given bool, v string) error {
	if !given {
		return nil
	}
	d, err := parseMaxCPU(v)
	if err == nil && d > 0 {
		watchCPU(d)
	}
	return err
}

// parseMaxCPU reads a --max-cpu value: a duration of CPU time, 0 for no
// bound.
func parseMaxCPU(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, badInput("--max-cpu %q: expected a duration of CPU time such as 90s or 10m, 0 for no bound", v)
	}
	if _, ok := processCPU(); !ok && d > 0 {
		return 0, badInput("--max-cpu: this system does not tell a process its CPU time")
	}
	return d, nil
}

// parseLimitsWith reads the flags against the memory facts m. The memory
// bound is the lowest of --max-memory (by default memoryShare of the
// machine's memory or of the cgroup's limit, whichever is lower), the
// cgroup's limit, and what fits in RLIMIT_AS: a run above any of them
// would die, killed by the kernel or out of memory in Go's runtime, as a
// crash. --max-memory 0 lifts only the flag's own bound.
func parseLimitsWith(f *runFlags, m memoryFacts) (limits, error) {
	l := limits{events: defaultMaxEvents, force: f.force}
	if f.given["max-memory"] {
		n, err := parseBytes(f.maxMemory)
		if err != nil {
			return l, badInput("--max-memory %q: %v", f.maxMemory, err)
		}
		l.memory, l.memoryWhy = n, "--max-memory"
	} else if total, what := m.machine, "this machine"; total > 0 || m.cgroup > 0 {
		if m.cgroup > 0 && (total == 0 || m.cgroup < total) {
			total, what = m.cgroup, "the cgroup"
		}
		l.memory = int64(float64(total) * memoryShare)
		l.memoryWhy = fmt.Sprintf("%.0f%% of %s's %s; set --max-memory", memoryShare*100, what, formatBytes(uint64(total)))
	}
	lower := func(n int64, why string) {
		if n > 0 && (l.memory == 0 || n < l.memory) {
			l.memory, l.memoryWhy = n, why
		}
	}
	lower(m.cgroup, "the cgroup's memory limit, memory.max")
	if b := m.addressSpaceBound(); b > 0 {
		lower(b, fmt.Sprintf("what fits in this process's address-space limit, RLIMIT_AS (ulimit -v) of %s, beside the %s Go's runtime has mapped already",
			formatBytes(uint64(m.addressSpace)), formatBytes(uint64(m.mapped))))
	}
	if f.given["max-events"] {
		n, err := strconv.ParseUint(f.maxEvents, 10, 64)
		if err != nil {
			return l, badInput("--max-events %q: expected a number of events, 0 for no bound", f.maxEvents)
		}
		l.events = n
	}
	if f.given["max-cpu"] {
		d, err := parseMaxCPU(f.maxCPU)
		if err != nil {
			return l, err
		}
		l.cpu = d
	}
	return l, nil
}

// check refuses a run whose estimate exceeds the limits, naming the keys
// that drive the cost; --force lets it run.
func (l limits) check(est scenarios.Estimate) error {
	if l.force {
		return nil
	}
	if l.memory > 0 && est.Memory > l.memory {
		return badInput("the run would need about %s of memory at its peak, more than %s (%s). Most of it: %s. Lower them, or pass --force to run it anyway",
			formatBytes(uint64(est.Memory)), formatBytes(uint64(l.memory)), l.memoryWhy, est.Main(est.Drivers, 3))
	}
	if l.events > 0 && est.Events > 0 && uint64(est.Events) > l.events {
		return badInput("the run would handle about %s events, more than --max-events %d. Most of them: %s. Lower them, raise --max-events, or pass --force to run it anyway",
			formatCount(est.Events), l.events, est.Main(est.EventDrivers, 3))
	}
	return nil
}

// printEstimate says what the run will cost, and against which limits.
func printEstimate(w io.Writer, est scenarios.Estimate, l limits) {
	mem, ev := "no bound", "no bound"
	if l.memory > 0 {
		mem = formatBytes(uint64(l.memory))
	}
	if l.events > 0 {
		ev = formatCount(int64(min(l.events, math.MaxInt64)))
	}
	fmt.Fprintf(w, "xdssim: estimate: peak memory about %s (limit %s), about %s events (limit %s)\n",
		formatBytes(uint64(est.Memory)), mem, formatCount(est.Events), ev)
}

// eventWatch warns, once, when a run's event count heads far past its
// estimate.
type eventWatch struct {
	w      io.Writer
	est    int64
	warned bool
}

func (e *eventWatch) update(n uint64, now, end time.Duration) {
	if e.warned || e.est <= 0 || n < uint64(e.est)*farPast {
		return
	}
	e.warned = true
	fmt.Fprintf(e.w, "xdssim: warning: %s events at %s of %s of virtual time, %d× the estimate of %s: the run may be caught in a loop (reconnecting or NACKing without end); --max-events N stops it\n",
		formatCount(int64(n)), now, end, n/uint64(e.est), formatCount(e.est))
}

// parseBytes reads a size: "8GiB", "512MB", "2G", "1e9", or 0.
func parseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   float64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
		{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40}, {"B", 1},
	}
	mult := 1.0
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	x, err := strconv.ParseFloat(t, 64)
	if err != nil || !(x >= 0) || x*mult > math.MaxInt64 {
		return 0, fmt.Errorf("expected a size such as 8GiB or 512MB (0: no bound)")
	}
	return int64(x * mult), nil
}

// formatCount writes a count with a unit: 27.1 k, 57.8 M.
func formatCount(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1f G", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f M", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f k", float64(n)/1e3)
	}
	return strconv.FormatInt(n, 10)
}
