package main

import (
	"os"
	"syscall"
)

// forwardedSignals are passed on to the supervised child.
var forwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// childAttr makes the kernel kill the child when the parent dies, so a
// kill -9 of xdssim does not leave its child running.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// quitSignal asks the Go runtime for its goroutine dump.
var quitSignal os.Signal = syscall.SIGQUIT
