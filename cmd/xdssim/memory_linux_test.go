package main

import (
	"os"
	"testing"
)

// TestTheCgroupLimitIsTheLowestOnThePathToTheRoot: the kernel enforces
// the memory limit of the process's own cgroup and of every cgroup above
// it, so the bound is the lowest of them, found from /proc/self/cgroup,
// for cgroup v2 and v1; a cgroup namespace ("/") reads the root's files.
func TestTheCgroupLimitIsTheLowestOnThePathToTheRoot(t *testing.T) {
	const huge = "9223372036854771712\n" // v1's "no limit"
	for _, tt := range []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{"v2, limit on the process's own cgroup", map[string]string{
			"/proc/self/cgroup": "0::/system.slice/run-u7.service\n",
			"/sys/fs/cgroup/system.slice/run-u7.service/memory.max": "1073741824\n",
			"/sys/fs/cgroup/system.slice/memory.max":                "max\n",
		}, 1 << 30},
		{"v2, limit on a parent slice", map[string]string{
			"/proc/self/cgroup": "0::/user.slice/user-1000.slice/session-3.scope\n",
			"/sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope/memory.max": "max\n",
			"/sys/fs/cgroup/user.slice/user-1000.slice/memory.max":                 "2147483648\n",
			"/sys/fs/cgroup/user.slice/memory.max":                                 "4294967296\n",
		}, 2 << 30},
		{"v2 in a cgroup namespace", map[string]string{
			"/proc/self/cgroup":         "0::/\n",
			"/sys/fs/cgroup/memory.max": "536870912\n",
		}, 512 << 20},
		{"v1, limit on the process's own cgroup", map[string]string{
			"/proc/self/cgroup": "4:memory:/process_api/abc\n3:cpuset:/\n0::/\n",
			"/sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes": "3221225472\n",
			"/sys/fs/cgroup/memory/process_api/memory.limit_in_bytes":     huge,
			"/sys/fs/cgroup/memory/memory.limit_in_bytes":                 huge,
		}, 3 << 30},
		{"v1 without a limit", map[string]string{
			"/proc/self/cgroup":                           "4:memory:/process_api/abc\n",
			"/sys/fs/cgroup/memory/memory.limit_in_bytes": huge,
		}, 9223372036854771712},
		{"no /proc/self/cgroup: the root's files", map[string]string{
			"/sys/fs/cgroup/memory.max": "1073741824\n",
		}, 1 << 30},
		{"nothing known", map[string]string{}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			read := func(name string) ([]byte, error) {
				if b, ok := tt.files[name]; ok {
					return []byte(b), nil
				}
				return nil, os.ErrNotExist
			}
			if got := cgroupLimit(read); got != tt.want {
				t.Errorf("cgroupLimit = %d, want %d", got, tt.want)
			}
		})
	}
}
