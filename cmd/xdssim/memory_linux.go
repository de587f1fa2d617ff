package main

import (
	"bufio"
	"bytes"
	"os"
	"slices"
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
	m.cgroup = cgroupLimit(os.ReadFile)
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

// cgroupLimit returns the lowest memory limit of this process's cgroup
// and of every cgroup above it, 0 when none is known: the kernel enforces
// each of them. The process's cgroup is in /proc/self/cgroup, "0::PATH"
// for cgroup v2 (memory.max under /sys/fs/cgroup) and "N:...memory...:PATH"
// for v1 (memory.limit_in_bytes under /sys/fs/cgroup/memory, whose "no
// limit" is a huge number, above the machine's memory and so never the
// lowest). Without /proc/self/cgroup, or with a cgroup namespace (PATH
// "/"), it is the root's files.
func cgroupLimit(readFile func(string) ([]byte, error)) int64 {
	v2, v1 := "/", "/"
	if b, err := readFile("/proc/self/cgroup"); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			parts := strings.SplitN(line, ":", 3)
			if len(parts) != 3 {
				continue
			}
			switch {
			case parts[0] == "0" && parts[1] == "":
				v2 = parts[2]
			case slices.Contains(strings.Split(parts[1], ","), "memory"):
				v1 = parts[2]
			}
		}
	}
	var lowest int64
	for _, tree := range []struct{ root, path, file string }{
		{"/sys/fs/cgroup", v2, "memory.max"},
		{"/sys/fs/cgroup/memory", v1, "memory.limit_in_bytes"},
	} {
		for dir := tree.path; ; dir = parentCgroup(dir) {
			if b, err := readFile(tree.root + strings.TrimSuffix(dir, "/") + "/" + tree.file); err == nil {
				if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && (lowest == 0 || n < lowest) {
					lowest = n
				}
			}
			if dir == "/" || dir == "" {
				break
			}
		}
	}
	return lowest
}

// parentCgroup is the cgroup above dir: "/a/b" → "/a" → "/".
func parentCgroup(dir string) string {
	i := strings.LastIndex(strings.TrimSuffix(dir, "/"), "/")
	if i <= 0 {
		return "/"
	}
	return dir[:i]
}
