package wire

import (
	"unsafe"

	"github.com/ginformer/ginformer/internal/slicehdr"
)

// Spec subtrees shared byte for byte, in JSON as in protobuf (pbshare.go):
// within an object's spec, a field that is a pointer to a struct (a probe,
// a security context), a slice of structs (a container's env, ports or
// volume mounts, the tolerations) or a map of non-strings (a container's
// resource requests and limits), and the object's own labels, annotations
// and owner references, is looked up in the field's table by its exact JSON
// bytes; the first object's decoded value is shared by the
// next ones that repeat it. The tables, their generations, the admission of
// a value the second time it is seen, and the budget are pbshare.go's.

// sharesSubtree reports whether a field of plan t in a spec has a table.
func sharesSubtree(t *jsType) bool {
	switch t.kind {
	case jsPtr, jsSlice:
		return t.elem.kind == jsStruct
	case jsMap:
		return !t.strMap
	}
	return false
}

// sharesMetadata reports whether field name of an object's own metadata,
// of plan t, has a table: the labels, annotations and owner references, as
// in protobuf (sharedSubtree).
func sharesMetadata(name string, t *jsType) bool {
	switch name {
	case "Labels", "Annotations":
		return t.kind == jsMap && t.strMap
	case "OwnerReferences":
		return t.kind == jsSlice && t.elem.kind == jsStruct
	}
	return false
}

// shared decodes the value of field f (at d.off) into at through the
// field's table. ok is false when it is not shared here (then nothing is
// consumed): null, a value over maxSharedSpan. A field that already holds a
// value (a key repeated) is refused with ErrSharedMerge, whatever the
// value's size: encoding/json would merge into it, and a shared value is
// never written.
func (d *jsonDec) shared(f *jsField, at unsafe.Pointer) (ok bool, err error) {
	var empty bool
	if f.t.kind == jsSlice {
		empty = (*slicehdr.Header)(at).Data == nil
	} else {
		empty = *(*unsafe.Pointer)(at) == nil
	}
	start := d.off
	span, err := d.skip()
	if err != nil {
		return false, err
	}
	switch {
	case span[0] == 'n': // sets the field to nil
		d.off = start
		return false, nil
	case !empty:
		return false, ErrSharedMerge
	case len(span) > maxSharedSpan:
		d.off = start
		return false, nil
	}
	if c := f.table.get(span); c != nil {
		f.assign(at, c)
		return true, nil
	}
	sub := jsonDec{data: span, depth: d.depth}
	if err := sub.value(f.t, at, f.share); err != nil {
		return false, err
	}
	if !f.table.admit(span) {
		return true, nil
	}
	var canon unsafe.Pointer
	if f.t.kind == jsSlice {
		h := *(*slicehdr.Header)(at)
		h.Cap = h.Len
		*(*slicehdr.Header)(at) = h
		canon = unsafe.Pointer(&h)
	} else {
		canon = *(*unsafe.Pointer)(at)
	}
	f.table.put(span, canon)
	return true, nil
}

// assign stores the canonical value c (as the table holds it) into at.
func (f *jsField) assign(at, c unsafe.Pointer) {
	if f.t.kind == jsSlice {
		*(*slicehdr.Header)(at) = *(*slicehdr.Header)(c)
	} else {
		*(*unsafe.Pointer)(at) = c
	}
}
