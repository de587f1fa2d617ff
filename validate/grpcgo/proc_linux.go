package grpcgo

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal makes the kernel kill the child if this process dies
// first, so that no client outlives a crashed test.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
