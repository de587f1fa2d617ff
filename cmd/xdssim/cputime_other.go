//go:build !unix

package main

import "time"

// processCPU cannot be read here: --max-cpu is refused.
func processCPU() (time.Duration, bool) { return 0, false }
