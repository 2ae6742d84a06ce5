package informer

import (
	"fmt"

	"github.com/ginformer/ginformer/internal/safecall"
)

// The write path of [Indexer].
//
// Every write goes through the same two steps:
//
//  1. prepare (no lock held): run the key function and every index function
//     on the new object, recovering panics, and record the results in a
//     write: the key and the index values (deduplicated, grouped by index, in
//     a scratch buffer reused through a sync.Pool). Any error refuses the
//     write; nothing has been touched.
//  2. commit: wait while AddIndexes is rebuilding, re-prepare writes
//     computed against an older index set, and apply each write with
//     state.apply, which only compares the new values with the buckets
//     cached in the entry, and publishes the result for lock-free readers;
//     or build a whole new state with fresh and publish it at once. How a
//     batch is applied (in chunks, atomically, or as a new state) is
//     tryCommit's.
//
// The shared informer uses the unexported batch methods directly: it
// prepares a batch of deltas with prepareKeyed and applies them with
// tryCommit (which also reports each key's previous object); a batch that
// carries a relist is applied atomically. Single writes (Add, Update,
// Delete, DeleteKey) go through commitOne. Replace, used by programs that
// drive an Indexer themselves, prepares every write and builds a whole new
// state with fresh, as a first list does, and swaps it in.

// indexDefs is an immutable index set. AddIndexes replaces it (under mu);
// its pointer identity serves as the index-set generation.
type indexDefs[T any] struct {
	list []Index[T]
	// ord1 maps an index name to its ordinal in list plus one, so that a
	// missing name reads as 0 with a single-value lookup (keeps ordOf cheap
	// enough for ByIndex to inline).
	ord1 map[string]int
}

// scratch holds the prepared index values of one write. vals holds every
// index's values, deduplicated within an index; index i's values are
// vals[ends[i-1]:ends[i]] (ends[-1] being 0). Scratches are recycled through Indexer.pool (those of a
// large batch, see prepareItems, are not: they live in one slab per batch,
// their buffers carved out of the batch's own arrays).
type scratch[K comparable, T any] struct {
	vals []string
	ends []int
}

// pooledScratch is a scratch of the pool with its inline first buffers: a
// fresh one needs no further allocation for a few indexes with a few
// values each; index functions append into vals' spare capacity.
type pooledScratch[K comparable, T any] struct {
	sc      scratch[K, T]
	valsBuf [scratchVals]string
	endsBuf [scratchIndexes]int
}

const (
	scratchVals    = 8
	scratchIndexes = 4
)

// reset empties sc, dropping references to strings.
func (sc *scratch[K, T]) reset() {
	clear(sc.vals)
	sc.vals, sc.ends = sc.vals[:0], sc.ends[:0]
}

// write is one prepared mutation: an upsert of obj under key (with its index
// values in sc, computed against defs; sc is nil when defs has no index),
// or a delete of key (del; sc and defs are nil). tryCommit and commitOne
// fill old and hadOld with the object stored under key before the write.
// (The flags come last, together: a batch holds one write per object, and
// padding after each would cost 8 bytes a write.)
type write[K comparable, T any] struct {
	key  K
	obj  T
	defs *indexDefs[T]
	sc   *scratch[K, T]
	old  T

	del    bool
	hadOld bool
	failed bool // refused by reprepare: tryCommit skips it
	// slab: sc belongs to a large batch's slab (see prepareItems), not to
	// the pool: release does not return it there.
	slab bool
}

// scratchSlab is how many scratches getScratch allocates at once when the
// pool is empty: a batch takes one per write, and one allocation of a slab
// costs far less than as many single allocations.
const scratchSlab = 32

func (s *Indexer[K, T]) getScratch() *scratch[K, T] {
	if sc, ok := s.pool.Get().(*scratch[K, T]); ok {
		return sc
	}
	slab := make([]pooledScratch[K, T], scratchSlab)
	for i := range slab {
		ps := &slab[i]
		ps.sc.vals, ps.sc.ends = ps.valsBuf[:0], ps.endsBuf[:0]
		if i > 0 {
			s.pool.Put(&ps.sc)
		}
	}
	return &slab[0].sc
}

func (s *Indexer[K, T]) putScratch(sc *scratch[K, T]) {
	if sc == nil {
		return
	}
	sc.reset()
	s.pool.Put(sc)
}

// release returns the scratch buffers of ws to the pool (those of a
// batch's slab are dropped with their slab).
func (s *Indexer[K, T]) release(ws []write[K, T]) {
	for i := range ws {
		if !ws[i].slab {
			s.putScratch(ws[i].sc)
		}
		ws[i].sc, ws[i].slab = nil, false
	}
}

// key runs the key function on obj, turning an error or a panic into an
// error wrapping ErrKeyFunc.
func (s *Indexer[K, T]) key(obj T) (k K, err error) {
	if s.keyFunc == nil {
		return k, fmt.Errorf("indexer: no key function (use NewIndexer): %w", ErrInvalidOptions)
	}
	k, err = safecall.Call(s.keyFunc, obj)
	if err != nil {
		return k, fmt.Errorf("%w: %w", ErrKeyFunc, err)
	}
	return k, nil
}

// prepareUpsert fills w for storing obj: key and index values against the
// current index set. No lock is held; user code runs here.
func (s *Indexer[K, T]) prepareUpsert(w *write[K, T], obj T) error {
	k, err := s.key(obj)
	if err != nil {
		return err
	}
	w.key = k
	return s.prepareKeyed(w, obj)
}

// prepareKeyed fills w, whose key is already set, for storing obj under that
// key: index values against the current index set. The informer uses it with
// the key its queue computed, so the key function runs once per object. No
// lock is held; user code runs here.
func (s *Indexer[K, T]) prepareKeyed(w *write[K, T], obj T) error {
	w.obj, w.del = obj, false
	return s.values(w, s.defs.Load())
}

// values (re)computes the index values of w.obj against defs into w.sc.
// With no index, w.sc stays nil (no values): a relist of an indexer
// without indexes then holds no scratch per object until its commit.
func (s *Indexer[K, T]) values(w *write[K, T], defs *indexDefs[T]) error {
	w.defs = defs
	if defs == nil || len(defs.list) == 0 {
		if w.sc != nil {
			w.sc.reset()
		}
		return nil
	}
	if w.sc == nil {
		w.sc = s.getScratch()
	}
	w.sc.reset()
	return appendValues(w.sc, defs.list, w.key, w.obj)
}

// appendValues runs the index functions of indexes on obj, in order,
// appending each one's values to sc.vals without duplicates and closing its
// group in sc.ends. An error or a panic comes back wrapped in ErrIndexFunc,
// naming the index and the key.
func appendValues[K comparable, T any](sc *scratch[K, T], indexes []Index[T], key K, obj T) error {
	for i := range indexes {
		n := len(sc.vals)
		f := indexes[i].Func
		res, err := safecall.Call(func(dst []string) ([]string, error) { return f(dst, obj) }, sc.vals[n:n])
		if err != nil {
			return fmt.Errorf("index %q, key %v: %w: %w", indexes[i].Name, key, ErrIndexFunc, err)
		}
		sc.vals = append(sc.vals[:n], res...)
		// Deduplicate the new group in place (index funcs return few values).
		kept := n
		for j := n; j < len(sc.vals); j++ {
			v := sc.vals[j]
			if containsString(sc.vals[n:kept], v) {
				continue
			}
			sc.vals[kept] = v
			kept++
		}
		clear(sc.vals[kept:])
		sc.vals = sc.vals[:kept]
		sc.ends = append(sc.ends, kept)
	}
	return nil
}

// presizeMin is the batch size from which tryCommit builds a batch into an
// empty store as a new state (see fresh).
const presizeMin = 1024

// commitChunk is the most writes a non-atomic batch applies under one hold
// of the writers' lock. Readers do not take the lock, so this bounds only
// the wait of the few that do: a List, and an index chunk whose objects
// kept being written through chunkLockTries copies. The writer pays one
// Unlock/Lock per chunk.
const commitChunk = 32

// chunkHook is a test hook: if set, tryCommit calls it between two chunks
// of a batch, with the writers' lock released, with the number of writes
// applied so far. Only tests set it, while no other Indexer commits
// batches (the package's tests do not run in parallel).
var chunkHook func(applied int)

// tryCommit applies a batch of prepared writes, in order. It is built for a
// caller holding a lock of its own, under which no user code may run (the
// informer's processBatch): it never re-prepares. It applies ws (skipping
// writes marked failed) and returns nil, or, when some upsert was prepared
// against an index set that AddIndexes has since replaced, applies nothing
// and returns that index set: the caller releases its lock, calls reprepare,
// and tries again. While AddIndexes is rebuilding it waits on a channel, not
// on the lock. On return every applied write holds in old/hadOld the object
// its key had just before it. tryCommit does not release the scratch
// buffers of ws; the caller does (release).
//
// Readers see each write as soon as it is applied. With atomic set (the
// informer commits a relist so), the batch is applied under one hold of the
// writers' lock with s.relists odd: iterators wait for it, so that none of
// their chunks sees part of it (Get, which reads one object, does not
// wait). A batch into an empty store of more than presizeMin writes is built
// as a new state and published at once. Otherwise the batch is applied in
// chunks of commitChunk writes, releasing the lock between chunks. No
// Replace, AddIndexes or other batch runs between the chunks of a batch
// (they all take wmu); single writes from other goroutines may.
func (s *Indexer[K, T]) tryCommit(ws []write[K, T], atomic bool) *indexDefs[T] {
	chunk := len(ws)
	if !atomic && len(ws) > commitChunk {
		chunk = commitChunk
		// With wmu held, AddIndexes cannot run, so the index set cannot
		// change between the chunks.
		s.wmu.Lock()
		defer s.wmu.Unlock()
	}
	defs := s.lockSettled()
	for i := range ws {
		if !ws[i].del && !ws[i].failed && ws[i].defs != defs {
			s.mu.Unlock()
			return defs
		}
	}
	st := s.st.Load()
	if st.entries.Len() == 0 && len(ws) > presizeMin {
		// A first list into an empty store: build a new state sized once
		// (growing the tables through every doubling rehashes every object
		// about once more), out of the readers' sight, and publish it
		// whole.
		s.st.Store(fresh(ws, len(defs.list)))
		s.mu.Unlock()
		return nil
	}
	if atomic {
		s.relists.Add(1) // odd: chunks copied meanwhile are taken again
	}
	for i := range ws {
		if i > 0 && i%chunk == 0 {
			s.mu.Unlock()
			if chunkHook != nil {
				chunkHook(i)
			}
			s.lock()
		}
		if !ws[i].failed {
			st.apply(&ws[i], s.nextSeq())
		}
	}
	if atomic {
		s.relists.Add(1)
	}
	s.mu.Unlock()
	return nil
}

// relistBatch reports whether a batch popped from the DeltaFIFO carries (part
// of) a relist: a Replaced delta, or a deletion the relist inferred. The
// informer commits such a batch atomically, so that readers see the old list
// or the new one, never a mix.
func relistBatch[K comparable, T any](batch []Item[K, T]) bool {
	for _, it := range batch {
		for _, d := range it.Deltas {
			if d.Type == Replaced || d.FinalStateUnknown {
				return true
			}
		}
	}
	return false
}

// reprepare recomputes, without any lock, the index values of the upserts
// in ws prepared against another index set than defs. A write whose values
// now fail is marked failed and its error appended to errs.
func (s *Indexer[K, T]) reprepare(ws []write[K, T], defs *indexDefs[T], errs []error) []error {
	for i := range ws {
		w := &ws[i]
		if w.del || w.failed || w.defs == defs {
			continue
		}
		if err := s.values(w, defs); err != nil {
			w.failed = true
			errs = append(errs, err)
		}
	}
	return errs
}

// upsert is Add and Update.
func (s *Indexer[K, T]) upsert(obj T) error {
	var ws [1]write[K, T]
	defer s.release(ws[:])
	if err := s.prepareUpsert(&ws[0], obj); err != nil {
		return err
	}
	return s.commitOne(&ws[0])
}

// deleteKey deletes key and returns what was stored under it.
func (s *Indexer[K, T]) deleteKey(key K) (T, bool) {
	w := write[K, T]{key: key, del: true}
	_ = s.commitOne(&w) // deletes need no values: commit cannot fail
	return w.old, w.hadOld
}

// nextSeq announces the next write to readers and returns its number
// (see Indexer.wseq). The writer calls it holding mu.
func (s *Indexer[K, T]) nextSeq() uint64 {
	n := s.wseq.Load() + 1
	s.wseq.Store(n)
	return n
}

// lockSettled takes the write lock at a moment when no AddIndexes is
// rebuilding (waiting for a rebuild on its channel, not on the lock), and
// returns the index set then current.
func (s *Indexer[K, T]) lockSettled() *indexDefs[T] {
	for {
		s.lock()
		ch := s.rebuilding
		if ch == nil {
			return s.defs.Load()
		}
		s.mu.Unlock()
		<-ch
	}
}

// commitOne is tryCommit for a single write, re-preparing it itself (it
// holds no lock of its caller's). It is separate from tryCommit so that a
// single write stays on its caller's stack: tryCommit may hand its batch to
// fresh (store_fresh.go), which splits a large first list over a second
// goroutine, and that makes the batch escape.
func (s *Indexer[K, T]) commitOne(w *write[K, T]) error {
	for {
		defs := s.lockSettled()
		if !w.del && w.defs != defs {
			s.mu.Unlock()
			if err := s.values(w, defs); err != nil {
				return err
			}
			continue
		}
		if st := s.st.Load(); st != nil { // nil: a zero Indexer, which holds nothing
			st.apply(w, s.nextSeq())
		}
		s.mu.Unlock()
		return nil
	}
}
