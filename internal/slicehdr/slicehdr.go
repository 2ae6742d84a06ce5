// Package slicehdr is the runtime layout of a slice, for the code that
// reads and writes slices through unsafe.Pointer (internal/valuecodec and
// the Kubernetes source's planned decoder). It imports nothing of ours.
package slicehdr

import "unsafe"

// Header is the layout of every Go slice: a pointer to its first element,
// its length and its capacity. A *Header may be converted to and from the
// address of any slice variable.
type Header struct {
	Data unsafe.Pointer
	Len  int
	Cap  int
}
