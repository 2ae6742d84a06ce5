package swmr

import "unsafe"

// hashPointer hashes an address by Fibonacci multiplication: the high bits,
// which pick the slot, mix all the bits of the address. Go's garbage
// collector does not move heap objects, and an element stored in a Set
// lives on the heap (it escapes), so its address is a stable key.
func hashPointer[E any](p *E) uint64 {
	return uint64(uintptr(unsafe.Pointer(p))) * 0x9E3779B97F4A7C15
}
