//go:build !linux

package main

// machineMemory is unknown here: --max-memory has no default.
func machineMemory() (int64, string) { return 0, "" }
