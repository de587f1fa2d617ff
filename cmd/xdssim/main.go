// Command xdssim runs deterministic simulations of gRPC XdsClient fleets.
//
// Usage:
//
//	xdssim run [FILE|NAME] [flags]    run a scenario and write its report
//	xdssim validate FILE|NAME [flags] check a scenario, print it resolved
//	xdssim list [--long]              list the embedded scenario library
//	xdssim explain NAME               explain a library scenario
//	xdssim trace FILE|NAME --client C tell what a client did, and why
//	xdssim csds FILE|NAME --client C --at T  a client's cache at a moment
//	xdssim shrink FILE|NAME           a smaller scenario that still breaches
//	xdssim schema                     the scenario format's JSON Schema
//	xdssim completion bash|zsh        a shell completion script
//	xdssim version [--json]           print the build: version, revision, Go
//
// 'xdssim help CMD' or 'xdssim CMD --help' prints a command's flags. Flags
// may stand before or after the scenario. Exit codes: 0 ok, 1 internal
// error, 2 invalid input (scenario or flags), 3 an expectation in the
// scenario was breached, 4 a run stopped at --max-events or --max-cpu.
package main

import (
	"os"
)

func main() {
	if code, ok := supervise(os.Args[1:]); ok {
		os.Exit(code)
	}
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}
