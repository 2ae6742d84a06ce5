package swmr

import (
	"hash/maphash"
	"iter"
	"sync/atomic"
)

// Table is a hash table of *E keyed by K, where every element carries its
// own key (keyOf). It holds no nil element, and at most one element per key.
//
// Concurrency: Put, Delete and Reset are writes and must be serialized by
// the caller (one writer at a time, e.g. under the caller's mutex). Get,
// All and Len are lock-free reads: any number of goroutines may call them
// concurrently with the writer and with each other; they only do atomic
// loads and never wait. See the package documentation for the iteration
// guarantee.
//
// The zero value is not usable; create tables with [New].
type Table[K comparable, E any] struct {
	cur   atomic.Pointer[tagged[E]] // the published slot array and its tags
	n     atomic.Int64              // live elements, stored by the writer after each write
	keyOf func(*E) K
	hash  func(K) uint64 // nil: maphash.Comparable with seed
	seed  maphash.Seed
	tomb  *E
	used  int           // writer only: live + tombstone slots of cur
	mig   *migration[E] // writer only: growth in progress (migrate.go), or nil
}

// New returns an empty table that holds sizeHint elements without growing.
//
// keyOf returns the key of an element; it must be cheap, must not be
// affected by the writer, and must return the same key for an element
// for as long as the element is in the table. hash hashes a key; nil
// selects maphash.Comparable with a seed drawn for this table. A supplied
// hash must mix all its bits: the high bits pick the slot, the low byte is
// the slot's tag.
func New[K comparable, E any](keyOf func(*E) K, hash func(K) uint64, sizeHint int) *Table[K, E] {
	t := &Table[K, E]{keyOf: keyOf, hash: hash, tomb: tombstone[E]()}
	if hash == nil {
		t.seed = maphash.MakeSeed()
	}
	t.cur.Store(newTagged[E](hintSlots(sizeHint)))
	return t
}

func (t *Table[K, E]) hashOf(k K) uint64 {
	if t.hash != nil {
		return t.hash(k)
	}
	return maphash.Comparable(t.seed, k)
}

// Get returns the element of key k, or nil if there is none. It is
// lock-free and may run concurrently with the writer: it returns an element
// that was in the table at some moment during the call (for a key not
// concurrently deleted and put again, the latest one put before that moment).
func (t *Table[K, E]) Get(k K) *E {
	a := t.cur.Load()
	s, tags := a.slots, a.tags
	h := t.hashOf(k)
	tag := tagOf(h)
	for i := a.home(h); ; {
		switch tagAt(tags, i) {
		case 0:
			return nil
		case tag:
			e := s[i].Load()
			if e == nil {
				return nil
			}
			if e != t.tomb && t.keyOf(e) == k {
				return e
			}
		}
		if i++; i == len(s) {
			i = 0
		}
	}
}

// Len returns the number of elements. It is lock-free; it is exact when no
// write is in progress, and otherwise the count before or after the write.
func (t *Table[K, E]) Len() int { return int(t.n.Load()) }

// All returns an iterator over the elements, in no specified order. It is
// lock-free and may run concurrently with the writer: the iteration runs on
// the slot array current when it starts, and yields every element present
// for the whole iteration exactly once (see the package documentation for
// elements put or deleted meanwhile). The iterator may be reused; each use
// starts over.
func (t *Table[K, E]) All() iter.Seq[*E] {
	return func(yield func(*E) bool) { all(&t.cur.Load().array, t.tomb, yield) }
}

// Put stores e (not nil) under its key and returns the element it replaced,
// or nil. A replaced element's slot receives e, so a concurrent iteration
// yields one of them. Put is a write: callers serialize it with other
// writes. It allocates only when it rebuilds the slot array.
func (t *Table[K, E]) Put(e *E) (old *E) {
	k := t.keyOf(e)
	h := t.hashOf(k)
	tag := tagOf(h)
	a := t.cur.Load()
	s, tags := a.slots, a.tags
	free := -1
	i := a.home(h)
	for {
		tg := tagAt(tags, i)
		if tg == 0 {
			break
		}
		x := s[i].Load()
		if x == t.tomb {
			if free < 0 {
				free = i
			}
		} else if tg == tag && t.keyOf(x) == k {
			s[i].Store(e)
			if t.mig != nil {
				if t.migrated(i) {
					t.nextPut(e, k, h)
				}
				t.migrate(migrateStep)
			}
			return x
		}
		if i++; i == len(s) {
			i = 0
		}
	}
	at := free
	switch {
	case free >= 0:
		setTag(tags, free, tag)
		s[free].Store(e)
	case overloaded(t.used+1, len(s)):
		if t.mig != nil { // inserts outran the copy: finish it, then insert
			t.migrate(len(s))
			return t.Put(e)
		}
		t.rebuild(rebuildSlots(t.Len()+1), e)
		at = -1
	default:
		setTag(tags, i, tag)
		s[i].Store(e)
		t.used++
		at = i
	}
	t.n.Add(1)
	switch {
	case t.mig != nil:
		if t.migrated(at) {
			t.nextPut(e, k, h)
		}
		t.migrate(migrateStep)
	case at >= 0 && growthDue(t.used, len(s)):
		t.startMigration(t.Len())
		t.migrate(migrateStep)
	}
	return nil
}

// Delete removes the element of key k and returns it, or nil if there is
// none. Delete is a write: callers serialize it with other writes. It
// allocates only when it shrinks the slot array.
func (t *Table[K, E]) Delete(k K) (old *E) {
	a := t.cur.Load()
	s, tags := a.slots, a.tags
	h := t.hashOf(k)
	tag := tagOf(h)
	for i := a.home(h); ; {
		tg := tagAt(tags, i)
		if tg == 0 {
			return nil
		}
		if x := s[i].Load(); tg == tag && x != t.tomb && t.keyOf(x) == k {
			t.used += erase(&a.array, tags, i, t.tomb)
			live := t.n.Add(-1)
			if t.mig != nil {
				if t.migrated(i) {
					t.nextDelete(k, h)
				}
				t.migrate(migrateStep)
			} else if len(s) > shrinkMinSlots && live*8 < int64(len(s)) {
				t.rebuild(rebuildSlots(int(live)), nil)
			}
			return x
		}
		if i++; i == len(s) {
			i = 0
		}
	}
}

// Reset replaces the contents of the table with elems (no nil; for
// duplicate keys the last one wins) in one step: it fills a new slot array
// sized for elems, with no intermediate growth, and publishes it with one
// atomic store, so a concurrent reader sees the old contents or the new,
// never a mix. Reset(nil) empties the table. To build a table from a slice,
// call New with sizeHint 0 and then Reset. Reset is a write: callers
// serialize it with other writes. It does not keep elems.
func (t *Table[K, E]) Reset(elems []*E) {
	a := newTagged[E](bulkSlots(len(elems)))
	raw, tags := a.raw(), a.rawTags()
	n := 0
	for _, e := range elems {
		k := t.keyOf(e)
		h := t.hashOf(k)
		tag := uint64(tagOf(h))
		i := a.home(h)
		for raw[i] != nil && (tags[i>>3]>>(uint(i&7)*8)&0xff != tag || t.keyOf(raw[i]) != k) {
			if i++; i == len(raw) {
				i = 0
			}
		}
		if raw[i] == nil {
			n++
			tags[i>>3] |= tag << (uint(i&7) * 8)
		}
		raw[i] = e
	}
	t.used = n
	t.mig = nil
	t.n.Store(int64(n))
	t.cur.Store(a)
}

// rebuild publishes a new array of n slots holding the live elements and,
// if not nil, extra (whose key is not in the table).
func (t *Table[K, E]) rebuild(n int, extra *E) {
	old := t.cur.Load()
	a := newTagged[E](n)
	raw, tags := a.raw(), a.rawTags()
	used := 0
	for i := range old.slots {
		e := old.slots[i].Load()
		if e == nil || e == t.tomb {
			continue
		}
		h := t.hashOf(t.keyOf(e))
		placeTagged(raw, tags, a.home(h), tagOf(h), e)
		used++
	}
	if extra != nil {
		h := t.hashOf(t.keyOf(extra))
		placeTagged(raw, tags, a.home(h), tagOf(h), extra)
		used++
	}
	t.used = used
	t.cur.Store(a)
}
