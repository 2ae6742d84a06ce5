package swmr

import (
	"sync/atomic"
	"unsafe"
)

// A Table keeps one tag byte per slot beside its slot array, eight to an
// atomic word: 0 for an empty slot, else a byte of the hash of the key that
// is or was (tombstone) in the slot, never 0. A probe reads the tag first
// and dereferences an element only on a tag match, so collisions and misses
// cost no element (and key) loads, for one byte per slot.
//
// The writer keeps tag 0 exactly on the empty slots: it stores the tag of a
// new key before the pointer, and empties a slot's pointer before its tag.
// So a reader that reads tag 0 read it while the slot was empty, and a
// reader that reads another key's tag read it while the slot did not hold
// its key: ending or skipping there is as correct as reading the pointer
// at that moment.

// tagged is a Table's slot array and its tags.
type tagged[E any] struct {
	array[E]
	tags []atomic.Uint64
}

func newTagged[E any](n int) *tagged[E] {
	return &tagged[E]{
		array: array[E]{slots: make([]atomic.Pointer[E], n)},
		tags:  make([]atomic.Uint64, (n+7)/8),
	}
}

// tagOf returns the tag of hash h: its low byte, or 1 for 0.
func tagOf(h uint64) uint8 {
	if t := uint8(h); t != 0 {
		return t
	}
	return 1
}

// tagAt returns the tag of slot i.
func tagAt(tags []atomic.Uint64, i int) uint8 {
	return uint8(tags[i>>3].Load() >> (uint(i&7) * 8))
}

// setTag stores the tag of slot i; writer only (load and store, no CAS).
func setTag(tags []atomic.Uint64, i int, tag uint8) {
	w := &tags[i>>3]
	sh := uint(i&7) * 8
	w.Store(w.Load()&^(0xff<<sh) | uint64(tag)<<sh)
}

// rawTags views the tag words of an array nobody else can see yet as plain
// words (atomic.Uint64 is a single word).
func (a *tagged[E]) rawTags() []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(a.tags))), len(a.tags))
}

// placeTagged stores e, whose key is in no slot yet, with its tag in the
// first empty slot from its home in an array that is not published yet.
func placeTagged[E any](raw []*E, tags []uint64, home int, tag uint8, e *E) {
	i := home
	for raw[i] != nil {
		if i++; i == len(raw) {
			i = 0
		}
	}
	raw[i] = e
	tags[i>>3] |= uint64(tag) << (uint(i&7) * 8)
}
