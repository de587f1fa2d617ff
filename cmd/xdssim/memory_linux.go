package main

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// readMemory returns what bounds this process's memory: the machine's,
// its cgroup's limit, and its RLIMIT_AS with the address space it has
// already mapped.
func readMemory() memoryFacts {
	var m memoryFacts
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err == nil {
		m.machine = int64(si.Totalram) * int64(si.Unit)
	}
	// cgroup v2, then v1 (whose "no limit" is a huge number, above the
	// machine's memory, and so never the lowest).
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 {
			m.cgroup = n
		}
		break
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &rl); err == nil && rl.Cur <= 1<<62 { // RLIM_INFINITY is all ones
		m.addressSpace = int64(rl.Cur)
		m.mapped, m.resident = procStatus()
	}
	return m
}

// procStatus returns this process's mapped address space (VmSize) and
// resident memory (VmRSS), from /proc/self/status; 0 when unknown.
func procStatus() (mapped, resident int64) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmSize" && k != "VmRSS") {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		if err != nil {
			continue
		}
		if k == "VmSize" {
			mapped = n << 10
		} else {
			resident = n << 10
		}
	}
	return mapped, resident
}
