package informer

import (
	"iter"
	"runtime"

	"github.com/ginformer/ginformer/internal/swmr"
)

// Iteration over an [Indexer], without locks.
//
// An iterator copies up to chunkSize objects into a buffer on its own stack
// and yields the chunk, then copies the next one. It reads the slot array of
// a table or set (swmr.View) by position, so it goes on where it stopped;
// it stays on the array it started on (a table that grows publishes a new
// array and no longer writes the old one), which gives the weak consistency
// of Indexer's documentation: an object present for the whole iteration is
// copied exactly once.
//
// A chunk is copied under seqlock-style checks, and copied again if one
// fails: a relist was being applied (Indexer.relists odd or changed; the
// reader then waits for it under the read lock), and, for an index query,
// the bucket's membership changed (bucket.seq odd or changed) or a copied
// object is newer than the write sequence read before the copy (one of the
// chunk's objects was written meanwhile). A chunk of an index query is thus
// one state of its objects. Writes to other objects do not disturb it.

// chunkSize is the number of objects copied per chunk.
const chunkSize = 64

// chunkTries is how many failed copies of an index chunk a reader makes
// before it yields the CPU between tries (the writer may be descheduled in
// the middle of a change), and chunkLockTries how many before it copies
// under the read lock: writes to the chunk's own objects would have to
// outpace every copy for that long.
const (
	chunkTries     = 4
	chunkLockTries = 64
)

// kv is one copied object.
type kv[K comparable, T any] struct {
	key K
	obj T
}

// copyBuf is an iterator's buffer.
type copyBuf[K comparable, T any] struct {
	buf [chunkSize]kv[K, T]
	n   int
}

func (c *copyBuf[K, T]) reset() {
	clear(c.buf[:c.n])
	c.n = 0
}

// yield yields the chunk and empties it (so that the stack buffer does not
// keep objects alive); it reports whether to go on.
func (c *copyBuf[K, T]) yield(yield func(K, T) bool) bool {
	for i := range c.n {
		if !yield(c.buf[i].key, c.buf[i].obj) {
			c.reset()
			return false
		}
	}
	c.reset()
	return true
}

// add copies e's current object into c; it reports whether that object is
// newer than write seq (the copy is then not one state) and whether c is
// full.
func (c *copyBuf[K, T]) add(e *entry[K, T], rep objRep, seq uint64) (newer, full bool) {
	obj, wseq := e.load(rep)
	c.buf[c.n] = kv[K, T]{e.key, obj}
	c.n++
	return wseq > seq, c.n == chunkSize
}

// fillEntries copies the entries of view from slot pos on into c until c is
// full; it returns the position to go on from (-1 at the end) and whether a
// copied object is newer than write seq.
func fillEntries[K comparable, T any](view swmr.View[entry[K, T]], rep objRep, pos int, seq uint64, c *copyBuf[K, T]) (next int, newer bool) {
	n := view.Slots()
	for i := pos; i < n; i++ {
		if e := view.At(i); e != nil {
			nw, full := c.add(e, rep, seq)
			newer = newer || nw
			if full {
				return i + 1, newer
			}
		}
	}
	return -1, newer
}

// copyEntries copies the chunk of view starting at slot pos (see
// fillEntries), again if a relist overlapped the copy.
func (s *Indexer[K, T]) copyEntries(view swmr.View[entry[K, T]], rep objRep, pos int, c *copyBuf[K, T]) int {
	return s.outsideRelist(func() int { next, _ := fillEntries(view, rep, pos, ^uint64(0), c); return next }, c.reset)
}

// outsideRelist returns what read returns when no relist was applied while
// it ran: it runs read again (after undo, if not nil) when a relist
// overlapped it, and while a relist is being applied runs it under the read
// lock, which waits for the relist's end.
func (s *Indexer[K, T]) outsideRelist(read func() int, undo func()) int {
	for {
		r := s.relists.Load()
		if r&1 != 0 {
			return s.lockedCopy(read)
		}
		n := read()
		if s.relists.Load() == r {
			return n
		}
		if undo != nil {
			undo()
		}
	}
}

// lockedCopy runs fill under the read lock: no write is applied meanwhile.
func (s *Indexer[K, T]) lockedCopy(fill func() int) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return fill()
}

// rangeEntries yields every object of the current state.
func (s *Indexer[K, T]) rangeEntries(yield func(K, T) bool) {
	st := s.st.Load()
	if st == nil {
		return
	}
	view := st.entries.View() // a Replace swaps the state: we finish over this one
	var c copyBuf[K, T]
	for pos := 0; pos >= 0; {
		pos = s.copyEntries(view, st.rep, pos, &c)
		if !c.yield(yield) {
			return
		}
	}
}

// rangeKeys is rangeEntries for keys only.
func (s *Indexer[K, T]) rangeKeys(yield func(K) bool) {
	s.rangeEntries(func(k K, _ T) bool { return yield(k) })
}

// rangeBucket yields the members of the bucket of value in index ord, a
// chunk at a time, each chunk one state of its objects (see copyBucket).
func (s *Indexer[K, T]) rangeBucket(ord int, value string, yield func(K, T) bool) {
	st := s.st.Load()
	if st == nil || ord < 0 || ord >= len(st.indexes) {
		return
	}
	b := st.indexes[ord].Get(value)
	if b == nil {
		return
	}
	var c copyBuf[K, T]
	var view swmr.View[entry[K, T]] // b's set, once the first chunk found one
	for pos := 0; pos >= 0; {
		pos = s.copyBucket(b, st.rep, &view, pos, &c)
		if !c.yield(yield) {
			return
		}
	}
}

// copyBucket copies into c the chunk of b's members starting at slot pos of
// its set; it returns the position to go on from, or -1 at the end. The
// first chunk (view still zero) reads b's single member or takes the view
// of its set. A copy is kept only if no relist was applied, b's membership
// did not change, and no copied object is newer than the write sequence
// read before the copy.
func (s *Indexer[K, T]) copyBucket(b *bucket[K, T], rep objRep, view *swmr.View[entry[K, T]], pos int, c *copyBuf[K, T]) int {
	first := view.Slots() == 0
	fill := func(seq uint64) (int, bool) {
		if first {
			set := b.set.Load()
			if set == nil {
				if e := b.one.Load(); e != nil {
					nw, _ := c.add(e, rep, seq)
					return -1, nw
				}
				return -1, false
			}
			*view = set.View()
		}
		return fillEntries(*view, rep, pos, seq, c)
	}
	for try := 0; ; try++ {
		r := s.relists.Load()
		if r&1 != 0 || try == chunkLockTries {
			return s.lockedCopy(func() int { next, _ := fill(^uint64(0)); return next })
		}
		if try >= chunkTries {
			runtime.Gosched()
		}
		q, seq := b.seq.Load(), s.wseq.Load()
		if q&1 == 0 {
			next, newer := fill(seq)
			if !newer && b.seq.Load() == q && s.relists.Load() == r {
				return next
			}
		}
		c.reset()
		if first {
			*view = swmr.View[entry[K, T]]{}
		}
	}
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
// consistent (see [Indexer]) and takes no lock. The order is not specified;
// the iterator may be reused, each use starting over.
func (s *Indexer[K, T]) All() iter.Seq2[K, T] {
	return s.rangeEntries
}

// Keys returns an iterator over every stored key, with the guarantees of
// [Indexer.All].
func (s *Indexer[K, T]) Keys() iter.Seq[K] {
	return s.rangeKeys
}

// ByIndex returns an iterator over the objects whose values in the named
// index include value, in chunks of at most 64, each a consistent snapshot
// of its part (see [Indexer]). An unknown value yields nothing. The iterator
// allocates nothing per object and takes no lock.
//
// ByIndex is [IndexRef.ByValue] by name, for compatibility layers and tools
// that know indexes only by name: a program that declares its indexes binds
// each once ([Indexer.IndexRef]) and queries with no error to check and no
// allocation (ByIndex costs two small ones per call, for its caller's loop
// body, which escapes because ByIndex returns an error too).
//
// Possible errors: [ErrIndexNotFound]; the iterator returned with it is not
// nil and yields nothing.
func (s *Indexer[K, T]) ByIndex(index, value string) (iter.Seq2[K, T], error) {
	// Kept under the inlining budget so that the closure is built on the
	// caller's stack. Both paths return the same closure (an unknown index
	// has ordinal -1, which rangeBucket treats as empty), which is what
	// keeps it cheap enough.
	ord := s.ordOf(index)
	var err error
	if ord < 0 {
		err = &indexNotFoundError{index}
	}
	return func(yield func(K, T) bool) { s.rangeBucket(ord, value, yield) }, err
}

// IndexKeys is [Indexer.ByIndex] for keys only: [IndexRef.Keys] by name.
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
// reused. It is [IndexRef.Values] by name.
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

// rangeValues yields the values of index ord; nothing for an ordinal out of
// range. It reads the index table's slot array by position (swmr.Table.All):
// a bucket's value never changes, so nothing needs copying.
func (s *Indexer[K, T]) rangeValues(ord int, yield func(string) bool) {
	st := s.st.Load()
	if st == nil || ord < 0 || ord >= len(st.indexes) {
		return
	}
	for b := range st.indexes[ord].All() {
		if !yield(b.value) {
			return
		}
	}
}

// Index returns an iterator over the objects that share at least one of
// obj's values in the named index (client-go's Index), each yielded once,
// with the guarantees of [Indexer.ByIndex] for each value. The index
// function runs on obj when Index is called, outside any lock. It serves
// compatibility layers, by name; with an [IndexRef], range over
// [IndexRef.ByValue] for each value the index's Func gives obj.
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
