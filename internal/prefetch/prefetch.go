// Package prefetch brings a value's memory into the processor's caches
// before the code that needs it reads it.
//
// A large fleet's per-client state does not fit in the caches, and an
// event reads a client's state field by field: each first read of a
// cache line waits for memory in turn, since the next read is only
// issued once the program gets to it. Of reads that depend on nothing,
// the processor has many in flight at once: reading one word of every
// line of a value first makes its lines arrive together, in about the
// time of one miss rather than one per line.
//
// Of makes the code that calls it wait for the lines, as every load that
// misses does once the processor runs out of room for the instructions
// after it. Hint does not: it asks for the lines with the processor's
// prefetch instruction (PREFETCHT0 on amd64, in assembly: Go has no
// other way to issue one; elsewhere Hint does nothing), which loads
// nothing into a register, so the code goes on. It suits state needed
// by the next event rather than the current one.
package prefetch

import "unsafe"

// LineSize is the cache line size assumed: that of amd64 and arm64
// processors alike.
const LineSize = 64

// Of reads one word of each cache line of *p and returns their sum,
// which the caller must keep (add it to a field), so that the reads are
// not optimised away. *p must be at least 8 bytes.
func Of[T any](p *T) uint64 {
	return lines(unsafe.Pointer(p), unsafe.Sizeof(*p))
}

// Slice reads one word of each cache line of s's elements, up to max
// lines from its start, and returns their sum, as Of does.
func Slice[T any](s []T, max int) uint64 {
	n := uintptr(len(s)) * unsafe.Sizeof(*new(T))
	if n < 8 {
		return 0
	}
	n = min(n, uintptr(max)*LineSize)
	return lines(unsafe.Pointer(unsafe.SliceData(s)), n)
}

// lines reads a word of each line of the n bytes at p, and the last word.
func lines(p unsafe.Pointer, n uintptr) uint64 {
	var x uint64
	for off := uintptr(0); off+8 <= n; off += LineSize {
		x += *(*uint64)(unsafe.Add(p, off))
	}
	return x + *(*uint64)(unsafe.Add(p, n&^7-8))
}

// Hint asks the processor to bring each cache line of *p into its
// caches, without waiting for them and without reading *p: a hint may
// name memory that is being written, or that is gone.
func Hint[T any](p *T) {
	hint(unsafe.Pointer(p), unsafe.Sizeof(*p))
}

// HintAs is Hint of a T whose first field is *p (the T is allocated
// whole): it asks for the T's lines without reading *p to find the T.
func HintAs[T, P any](p *P) {
	hint(unsafe.Pointer(p), unsafe.Sizeof(*new(T)))
}

// HintSlice is Hint of s's elements, at most max lines from its start.
func HintSlice[T any](s []T, max int) {
	if n := min(uintptr(len(s))*unsafe.Sizeof(*new(T)), uintptr(max)*LineSize); n > 0 {
		hint(unsafe.Pointer(unsafe.SliceData(s)), n)
	}
}
