package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// machineMemory returns the memory this process may use: the machine's,
// or its cgroup's limit when that is lower; and what it is.
func machineMemory() (int64, string) {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return 0, ""
	}
	total, what := int64(si.Totalram)*int64(si.Unit), "this machine"
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && n < total {
			total, what = n, "the cgroup"
		}
		break
	}
	return total, what
}
