package informer

import (
	"reflect"
	"sync/atomic"
	"unsafe"
)

// entry is one stored key. The entries table and the member sets of the
// key's buckets hold the entry, which lives as long as the key is stored.
//
// val is the current object, published by the writer with an atomic store
// so that readers load it without a lock: for a T that is a pointer (as
// nearly every informer's objects are), val holds that pointer itself, and
// an update allocates nothing; for any other T, val points to a box holding
// a copy, allocated per write (see objRep). seq is the number of the write
// that stored val (Indexer.wseq), stored before val: a reader that loads
// val and then seq sees at least that write's number, so it can tell
// whether the object it copied is newer than its copy's start (see
// copyBucket).
//
// refs, written and read by the writer only, are the buckets the entry is a
// member of, ordered by index ordinal, each index's buckets contiguous.
// Because of refs an update or a delete never calls an index function on
// the old object: it compares the new values with refs.
type entry[K comparable, T any] struct {
	key  K
	val  atomic.Pointer[byte]
	seq  atomic.Uint64
	refs []*bucket[K, T]
}

// box holds an object whose type is not a pointer.
type box[T any] struct{ obj T }

// objRep says how entries of a state hold their objects: direct for a
// pointer T (val is the object's own pointer), boxed otherwise.
type objRep bool

const (
	boxed  objRep = false
	direct objRep = true
)

// repOf returns the representation of T's objects.
func repOf[T any]() objRep {
	k := reflect.TypeFor[T]().Kind()
	return objRep(k == reflect.Pointer || k == reflect.UnsafePointer)
}

// store publishes obj as the entry's object, written by write seq. Writer
// only.
func (e *entry[K, T]) store(rep objRep, obj T, seq uint64) {
	e.seq.Store(seq)
	if rep == direct {
		e.val.Store(*(**byte)(unsafe.Pointer(&obj)))
		return
	}
	e.val.Store((*byte)(unsafe.Pointer(&box[T]{obj})))
}

// load returns the entry's object and the number of the write that stored
// it (or a later one's). Lock-free.
func (e *entry[K, T]) load(rep objRep) (obj T, seq uint64) {
	p := e.val.Load()
	seq = e.seq.Load()
	if rep == direct {
		return *(*T)(unsafe.Pointer(&p)), seq
	}
	return (*box[T])(unsafe.Pointer(p)).obj, seq
}

// obj returns the entry's object. Lock-free.
func (e *entry[K, T]) obj(rep objRep) T {
	obj, _ := e.load(rep)
	return obj
}
