//go:build !linux

package main

// readMemory knows nothing here: --max-memory has no default, and only
// the flag bounds a run.
func readMemory() memoryFacts { return memoryFacts{} }
