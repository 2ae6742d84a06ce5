package slicehdr

import (
	"testing"
	"unsafe"
)

// TestHeaderIsTheSliceLayout checks Header against the runtime's own view
// of a slice, so that a change of the layout fails here and not as memory
// corruption in a decoder.
func TestHeaderIsTheSliceLayout(t *testing.T) {
	s := make([]int64, 3, 7)
	h := (*Header)(unsafe.Pointer(&s))
	if h.Data != unsafe.Pointer(unsafe.SliceData(s)) || h.Len != 3 || h.Cap != 7 {
		t.Fatalf("Header %+v does not match the slice (data %p, len 3, cap 7)", *h, unsafe.SliceData(s))
	}
	if unsafe.Sizeof(Header{}) != unsafe.Sizeof(s) {
		t.Fatalf("Header is %d bytes, a slice %d", unsafe.Sizeof(Header{}), unsafe.Sizeof(s))
	}
}
