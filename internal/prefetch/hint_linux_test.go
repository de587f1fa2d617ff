package prefetch

import (
	"runtime/debug"
	"syscall"
	"testing"
	"unsafe"
)

var sink uint64

// TestHintReadsNothing: Hint of values on a page that cannot be read,
// which a load would fault on, whatever the value's size and alignment,
// returns, where Of on the same memory faults.
func TestHintReadsNothing(t *testing.T) {
	page := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Skip("mmap:", err)
	}
	defer syscall.Munmap(mem)
	if err := syscall.Mprotect(mem[page:], syscall.PROT_NONE); err != nil {
		t.Skip("mprotect:", err)
	}
	closed := unsafe.Pointer(&mem[page])
	Hint((*byte)(closed))
	Hint((*[3]uint64)(unsafe.Add(closed, 5)))
	Hint((*[1000]byte)(unsafe.Add(closed, 64)))
	Hint((*[0]byte)(closed))
	HintAs[[300]byte]((*uint64)(unsafe.Add(closed, 16)))
	HintSlice(unsafe.Slice((*uint64)(closed), 100), 4)
	HintSlice(unsafe.Slice((*uint64)(closed), 0), 4)
	// The value straddles the readable page and the closed one.
	Hint((*[256]byte)(unsafe.Add(closed, -100)))

	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	faulted := func() (f bool) {
		defer func() { f = recover() != nil }()
		sink += Of((*[3]uint64)(unsafe.Add(closed, 8)))
		return false
	}()
	if !faulted {
		t.Fatal("Of read the closed page: the test shows nothing")
	}
}
