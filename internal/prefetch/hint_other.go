//go:build !amd64

package prefetch

import "unsafe"

// hint does nothing where the package has no prefetch instruction: a
// hint changes only when memory arrives.
func hint(p unsafe.Pointer, n uintptr) {}
