//go:build !linux

package main

import (
	"os"
	"syscall"
)

// forwardedSignals are passed on to the supervised child.
var forwardedSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

func childAttr() *syscall.SysProcAttr { return nil }

// quitSignal is not forwarded here.
var quitSignal os.Signal = nil
