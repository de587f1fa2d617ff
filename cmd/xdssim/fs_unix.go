//go:build unix

package main

import (
	"errors"
	"syscall"
)

// nonBlock opens a named pipe without waiting for a writer.
const nonBlock = syscall.O_NONBLOCK

// processAlive reports whether a process of that id runs on this machine.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
