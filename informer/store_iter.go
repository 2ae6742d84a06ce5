package informer

import "iter"

// Iteration over an [Indexer] in chunks.
//
// An iterator copies up to chunkSize entries into a buffer on its own stack
// while holding the read lock, releases the lock, yields the chunk, re-takes
// the lock and continues the same map range. Modifying a map during a range
// is legal in Go and mu serializes those modifications with the range, so a
// writer waits for at most one chunk copy per reader. The Go map iteration
// rules give the documented consistency: an entry present for the whole range
// is produced exactly once, an entry removed before it is reached is not
// produced, an entry added during the range may or may not be.

// chunkSize is the number of entries copied per read-lock hold.
const chunkSize = 64

// kv is one copied entry.
type kv[K comparable, T any] struct {
	key K
	obj T
}

// rangeEntries yields every entry of the current state's entries map.
func (s *Indexer[K, T]) rangeEntries(yield func(K, T) bool) {
	var buf [chunkSize]kv[K, T]
	n := 0
	s.rlock()
	m := s.st.entries // a Replace swaps the map: we finish over this one
	for k, sl := range m {
		buf[n] = kv[K, T]{k, sl.obj}
		n++
		if n < chunkSize {
			continue
		}
		s.mu.RUnlock()
		if !yieldChunk(buf[:], yield) {
			return
		}
		n = 0
		s.rlockAgain()
	}
	s.mu.RUnlock()
	yieldChunk(buf[:n], yield)
}

// rangeKeys is rangeEntries for keys only.
func (s *Indexer[K, T]) rangeKeys(yield func(K) bool) {
	var buf [chunkSize]K
	n := 0
	s.rlock()
	m := s.st.entries
	for k := range m {
		buf[n] = k
		n++
		if n < chunkSize {
			continue
		}
		s.mu.RUnlock()
		for i := range buf {
			if !yield(buf[i]) {
				return
			}
		}
		clear(buf[:])
		n = 0
		s.rlockAgain()
	}
	s.mu.RUnlock()
	for i := range n {
		if !yield(buf[i]) {
			return
		}
	}
}

// yieldChunk yields the chunk and zeroes it (so that the stack buffer does not
// keep objects alive); it reports whether to go on.
func yieldChunk[K comparable, T any](c []kv[K, T], yield func(K, T) bool) bool {
	for i := range c {
		if !yield(c[i].key, c[i].obj) {
			clear(c)
			return false
		}
	}
	clear(c)
	return true
}

// rangeBucket yields the members of the bucket of value in index ord.
func (s *Indexer[K, T]) rangeBucket(ord int, value string, yield func(K, T) bool) {
	s.rlock()
	b := s.bucketLocked(ord, value)
	if b == nil {
		s.mu.RUnlock()
		return
	}
	if b.members == nil { // one member (or none)
		e := b.one
		if e == nil {
			s.mu.RUnlock()
			return
		}
		k, obj := e.key, e.obj
		s.mu.RUnlock()
		yield(k, obj)
		return
	}
	var buf [chunkSize]kv[K, T]
	n := 0
	// members is never replaced once set; if the bucket empties and leaves
	// the index, the range simply ends.
	for e := range b.members {
		buf[n] = kv[K, T]{e.key, e.obj}
		n++
		if n < chunkSize {
			continue
		}
		s.mu.RUnlock()
		if !yieldChunk(buf[:], yield) {
			return
		}
		n = 0
		s.rlockAgain()
	}
	s.mu.RUnlock()
	yieldChunk(buf[:n], yield)
}

// bucketLocked returns the bucket of value in index ord, or nil.
func (s *Indexer[K, T]) bucketLocked(ord int, value string) *bucket[K, T] {
	if ord < 0 || ord >= len(s.st.indexes) {
		return nil
	}
	return s.st.indexes[ord][value]
}

// ordOf resolves an index name; it returns -1 for an unknown index (which
// rangeBucket treats as empty).
func (s *Indexer[K, T]) ordOf(index string) int {
	if d := s.defs.Load(); d != nil {
		return d.ord1[index] - 1
	}
	return -1
}

// ord resolves an index name.
func (s *Indexer[K, T]) ord(index string) (int, bool) {
	o := s.ordOf(index)
	return o, o >= 0
}

// All returns an iterator over every stored key and object. It is weakly
// consistent (see [Indexer]): it holds the read lock only while copying a
// chunk, never while yielding. The order is not specified; the iterator may
// be reused, each use starting over.
func (s *Indexer[K, T]) All() iter.Seq2[K, T] {
	return s.rangeEntries
}

// Keys returns an iterator over every stored key, with the guarantees of
// [Indexer.All].
func (s *Indexer[K, T]) Keys() iter.Seq[K] {
	return s.rangeKeys
}

// ByIndex returns an iterator over the objects whose values in the named
// index include value, with the guarantees of [Indexer.All]. An unknown
// value yields nothing. The iterator allocates nothing per object.
//
// Possible errors: [ErrIndexNotFound]; the iterator returned with it is not
// nil and yields nothing.
func (s *Indexer[K, T]) ByIndex(index, value string) (iter.Seq2[K, T], error) {
	// Kept under the inlining budget (cost 73 of 80) so that the closure is
	// built on the caller's stack. Both paths return the same closure (an
	// unknown index has ordinal -1, which rangeBucket treats as empty), which
	// is what keeps it cheap enough.
	ord := s.ordOf(index)
	var err error
	if ord < 0 {
		err = &indexNotFoundError{index}
	}
	return func(yield func(K, T) bool) { s.rangeBucket(ord, value, yield) }, err
}

// IndexKeys is [Indexer.ByIndex] for keys only.
//
// Possible errors: [ErrIndexNotFound]; the iterator returned with it is not
// nil and yields nothing.
func (s *Indexer[K, T]) IndexKeys(index, value string) (iter.Seq[K], error) {
	ord := s.ordOf(index) // -1 for an unknown index: rangeBucket yields nothing
	var err error
	if ord < 0 {
		err = &indexNotFoundError{index}
	}
	return func(yield func(K) bool) {
		s.rangeBucket(ord, value, func(k K, _ T) bool { return yield(k) })
	}, err
}

// IndexValues returns an iterator over the values present in the named
// index: those with at least one object (client-go's ListIndexFuncValues).
// It is weakly consistent like [Indexer.All]: a value present for the whole
// iteration is yielded once. The order is not specified; the iterator may be
// reused.
//
// Possible errors: [ErrIndexNotFound]; the iterator returned with it is not
// nil and yields nothing.
func (s *Indexer[K, T]) IndexValues(index string) (iter.Seq[string], error) {
	ord := s.ordOf(index) // -1 for an unknown index: rangeValues yields nothing
	var err error
	if ord < 0 {
		err = &indexNotFoundError{index}
	}
	return func(yield func(string) bool) { s.rangeValues(ord, yield) }, err
}

// rangeValues yields the values of index ord, in chunks; nothing for an
// ordinal out of range.
func (s *Indexer[K, T]) rangeValues(ord int, yield func(string) bool) {
	var buf [chunkSize]string
	n := 0
	s.rlock()
	if ord < 0 || ord >= len(s.st.indexes) {
		s.mu.RUnlock()
		return
	}
	m := s.st.indexes[ord]
	for v := range m {
		buf[n] = v
		n++
		if n < chunkSize {
			continue
		}
		s.mu.RUnlock()
		for i := range buf {
			if !yield(buf[i]) {
				return
			}
		}
		n = 0
		s.rlockAgain()
	}
	s.mu.RUnlock()
	for i := range n {
		if !yield(buf[i]) {
			return
		}
	}
}

// Index returns an iterator over the objects that share at least one of
// obj's values in the named index (client-go's Index), each yielded once,
// with the guarantees of [Indexer.All]. The index function runs on obj when
// Index is called, outside any lock.
//
// Possible errors: [ErrIndexNotFound], [ErrIndexFunc] (the function failed
// on obj); the iterator returned with either is not nil and yields nothing.
func (s *Indexer[K, T]) Index(index string, obj T) (iter.Seq2[K, T], error) {
	d := s.defs.Load()
	ord, ok := s.ord(index)
	if !ok {
		return emptySeq2[K, T], &indexNotFoundError{index}
	}
	sc := new(scratch[K, T])
	key, _ := s.key(obj) // only to name obj in an error
	if err := appendValues(sc, d.list[ord:ord+1], key, obj); err != nil {
		return emptySeq2[K, T], err
	}
	vals := sc.vals
	return func(yield func(K, T) bool) {
		if len(vals) == 1 {
			s.rangeBucket(ord, vals[0], yield)
			return
		}
		seen := make(map[K]struct{})
		for _, v := range vals {
			ok := true
			s.rangeBucket(ord, v, func(k K, o T) bool {
				if _, dup := seen[k]; dup {
					return true
				}
				seen[k] = struct{}{}
				ok = yield(k, o)
				return ok
			})
			if !ok {
				return
			}
		}
	}, nil
}

// emptySeq2 is the iterator that yields nothing, returned with an error.
func emptySeq2[K, V any](func(K, V) bool) {}
