package prefetch

import "unsafe"

// hint issues a prefetch of each line of the n bytes at p (hint_amd64.s).
//
//go:noescape
func hint(p unsafe.Pointer, n uintptr)
