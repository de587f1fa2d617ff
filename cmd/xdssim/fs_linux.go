package main

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// exchangeDirs swaps the names a and b in one step: renameat2 with
// RENAME_EXCHANGE (Linux 3.15; ext4, xfs, btrfs, tmpfs and most local file
// systems). A file system that cannot gives errNoExchange.
func exchangeDirs(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return errNoExchange
	}
	if err != nil {
		return &os.LinkError{Op: "renameat2", Old: a, New: b, Err: err}
	}
	return nil
}

// mountPoint reports whether the directory path (absolute, symlinks
// resolved) is a mount point: a file system of its own, or a bind mount,
// as /proc/self/mountinfo lists them. Such a directory cannot be renamed.
func mountPoint(path string) bool {
	if differentDevice(path) {
		return true
	}
	fh, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// ID parent major:minor root MOUNT-POINT options ...
		f := strings.Fields(sc.Text())
		if len(f) > 4 && unescapeMount(f[4]) == path {
			return true
		}
	}
	return false
}

// differentDevice reports whether path is on another device than its
// parent.
func differentDevice(path string) bool {
	var a, b syscall.Stat_t
	if syscall.Stat(path, &a) != nil || syscall.Stat(filepath.Dir(path), &b) != nil {
		return false
	}
	return a.Dev != b.Dev
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
