package informer

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/ginformer/ginformer/internal/swmr"
)

// IndexerOptions configures [NewIndexer]. The Indexes slice is copied; the
// caller may reuse it.
type IndexerOptions[K comparable, T any] struct {
	// KeyFunc names each stored object. Required: there is no default.
	KeyFunc KeyFunc[K, T]

	// Indexes are the secondary indexes, maintained on every write. Names
	// must be non-empty and unique, and every Func non-nil. Zero value: no
	// index (more can be added later with [Indexer.AddIndexes]).
	Indexes []Index[T]
}

// Indexer is a typed, concurrency-safe store of objects of type T, keyed by
// K, with secondary indexes: client-go's Indexer (thread-safe store) without
// interface{}.
//
// All methods are safe for concurrent use. Writes are serialized; user code
// (the key function and the index functions) runs outside any internal lock,
// before the write takes the lock, so a slow or panicking index function
// cannot block or corrupt the store. A write whose key or index function
// fails changes nothing.
//
// Reads take no lock and do not wait for writers, and writers do not wait
// for them: a read only does atomic loads of structures the writer
// publishes whole. The exceptions are [Indexer.List], which copies the whole
// store under the read side of the writers' lock (a consistent snapshot, at
// the price of holding writers off for the copy), and [Indexer.Len] and
// iterators that meet a relist being applied (an atomic batch of the
// informer), which wait for it so that no count or chunk mixes the old list
// and the new one.
//
// Every read sees each write whole: an object as it was before the write or
// after it, and, through an index, only under a value that object has.
// [Indexer.Get] returns an object stored at some moment during the call.
//
// Iterators copy at most 64 objects at a time and yield them, so user code
// never runs inside a read. Index queries ([Indexer.ByIndex],
// [IndexRef.ByValue], [Indexer.IndexKeys], [Indexer.Index]) copy each chunk
// as one state of its objects: a copy during which one of them was written,
// or the bucket's membership changed, is taken again; writes to other
// objects do not disturb it. A query matching at most 64 objects therefore
// yields one state of all of them. Iterators over the whole store
// ([Indexer.All], [Indexer.Keys], [Indexer.IndexValues]) are weakly
// consistent: an object stored (and, for index queries, matching) for the
// whole iteration is yielded exactly once; objects added, removed or moved
// between index values during the iteration may or may not be yielded, and
// each yielded object is one stored during the iteration. An iteration that
// overlaps a [Indexer.Replace] finishes over the set it started on.
// Iterators may be reused: each use starts over. Their order is not
// specified.
//
// Stored objects are shared with callers: treat them as read-only.
//
// The zero Indexer is an empty store that cannot be written: every write
// returns an error wrapping [ErrInvalidOptions] and index queries return
// [ErrIndexNotFound]. Construct one with [NewIndexer]. An Indexer must not
// be copied after first use.
type Indexer[K comparable, T any] struct {
	keyFunc KeyFunc[K, T]

	// defs is the current index set. It is only replaced, by AddIndexes while
	// holding mu; writers load it without the lock to prepare their values,
	// and queries to resolve index names.
	defs atomic.Pointer[indexDefs[T]]

	// pool recycles *scratch[K, T] buffers of prepared index values.
	pool sync.Pool

	// wmu serializes the operations that must not run between the chunks
	// of a batch commit (see tryCommit): chunked batches, Replace and
	// AddIndexes. It is taken before mu, never while holding mu. Single
	// writes do not take it.
	wmu sync.Mutex

	// mu serializes the writers: it is held (locked) by every write to st,
	// the tables reachable from it, and rebuilding. Readers take its read
	// side only for List, to copy a chunk while a relist is being applied
	// (waiting for its end; see outsideRelist and copyBucket), and, rarely,
	// to copy an index chunk that writes kept changing chunkLockTries times
	// in a row (see copyBucket).
	mu sync.RWMutex
	// st is the current state; readers load it without any lock.
	st atomic.Pointer[state[K, T]]
	// relists is odd while the writer applies a batch that must be atomic
	// for readers (a relist): chunks copied meanwhile are taken again.
	relists atomic.Uint32
	// wseq numbers the writes: the writer stores the next number before it
	// publishes the write's object (entry.seq). Readers load it to tell
	// whether an object they copied is newer than their copy's start.
	wseq atomic.Uint64
	// rebuilding is non-nil while AddIndexes computes the new indexes
	// outside the lock; writers wait for it to be closed, then re-prepare.
	rebuilding chan struct{}
}

// NewIndexer returns an empty Indexer with the given key function and
// indexes.
//
// Possible errors: [ErrInvalidOptions] (nil KeyFunc, an index with an empty
// name or a nil Func), [ErrIndexExists] (two indexes with the same name).
func NewIndexer[K comparable, T any](opts IndexerOptions[K, T]) (*Indexer[K, T], error) {
	if opts.KeyFunc == nil {
		return nil, fmt.Errorf("indexer options: KeyFunc is nil: %w", ErrInvalidOptions)
	}
	defs, err := (*indexDefs[T])(nil).with(opts.Indexes)
	if err != nil {
		return nil, fmt.Errorf("indexer options: %w", err)
	}
	s := &Indexer[K, T]{keyFunc: opts.KeyFunc}
	s.defs.Store(defs)
	s.st.Store(newState[K, T](len(defs.list), 0))
	return s, nil
}

// with returns a new index set: d's indexes followed by more, after
// validating more.
func (d *indexDefs[T]) with(more []Index[T]) (*indexDefs[T], error) {
	nd := &indexDefs[T]{ord1: make(map[string]int)}
	if d != nil {
		nd.list = append(nd.list, d.list...)
		for name, o := range d.ord1 {
			nd.ord1[name] = o
		}
	}
	for _, ix := range more {
		switch {
		case ix.Name == "":
			return nil, fmt.Errorf("index with an empty name: %w", ErrInvalidOptions)
		case ix.Func == nil:
			return nil, fmt.Errorf("index %q: nil Func: %w", ix.Name, ErrInvalidOptions)
		}
		if nd.ord1[ix.Name] != 0 {
			return nil, fmt.Errorf("index %q: %w", ix.Name, ErrIndexExists)
		}
		nd.ord1[ix.Name] = len(nd.list) + 1
		nd.list = append(nd.list, ix)
	}
	return nd, nil
}

// Add stores obj under its key, replacing any object stored there (Add and
// Update are the same upsert, as in client-go's Store), and updates every
// index. It is safe for concurrent use.
//
// Possible errors: [ErrKeyFunc], [ErrIndexFunc] (the store is unchanged),
// [ErrInvalidOptions] (zero Indexer).
func (s *Indexer[K, T]) Add(obj T) error { return s.upsert(obj) }

// Update is [Indexer.Add]: it stores obj under its key, replacing any object
// stored there. Index buckets whose values did not change are not touched.
//
// Possible errors: [ErrKeyFunc], [ErrIndexFunc] (the store is unchanged),
// [ErrInvalidOptions] (zero Indexer).
func (s *Indexer[K, T]) Update(obj T) error { return s.upsert(obj) }

// Delete removes the object stored under obj's key (whatever its content)
// from the store and every index. Deleting an absent key is not an error.
//
// Possible errors: [ErrKeyFunc], [ErrInvalidOptions] (zero Indexer).
func (s *Indexer[K, T]) Delete(obj T) error {
	k, err := s.key(obj)
	if err != nil {
		return err
	}
	s.deleteKey(k)
	return nil
}

// DeleteKey removes the object stored under key and returns it; ok is false
// if there was none. It calls no user code and cannot fail.
func (s *Indexer[K, T]) DeleteKey(key K) (old T, ok bool) { return s.deleteKey(key) }

// Replace swaps the whole content for objs (a later object with the same key
// as an earlier one wins). Keys and index values are computed first, without
// any lock; readers then see the old set or the new one, never a mix. An
// iteration in progress finishes over the old set.
//
// Possible errors: [ErrKeyFunc], [ErrIndexFunc] (the whole Replace is refused
// and the store is unchanged), [ErrInvalidOptions] (zero Indexer).
func (s *Indexer[K, T]) Replace(objs []T) error {
	if s.keyFunc == nil {
		_, err := s.key(*new(T))
		return err
	}
	ws := make([]write[K, T], len(objs))
	defer s.release(ws)
	for i, obj := range objs {
		if err := s.prepareUpsert(&ws[i], obj); err != nil {
			return err
		}
	}
	var defs *indexDefs[T]
	for {
		s.wmu.Lock() // AddIndexes takes it too: while it is held, the index set stays
		defs = s.defs.Load()
		if !slices.ContainsFunc(ws, func(w write[K, T]) bool { return w.defs != defs }) {
			break
		}
		s.wmu.Unlock()
		if errs := s.reprepare(ws, defs, nil); len(errs) > 0 {
			return errs[0]
		}
	}
	defer s.wmu.Unlock()
	st := fresh(ws, len(defs.list)) // private until published: no lock needed
	s.lock()
	s.st.Store(st) // the state it replaces stays as it was, for iterations in progress
	s.mu.Unlock()
	return nil
}

// AddIndexes adds indexes and indexes every object already stored. The index
// functions run without any internal lock: meanwhile readers proceed and
// writers wait (on a channel) until the new indexes are in place, then
// compute their values with them. Concurrent AddIndexes calls are
// serialized. Queries on the new indexes return [ErrIndexNotFound] until
// AddIndexes has returned.
//
// Index functions (new or existing) must not write to the Indexer: a write
// made from inside AddIndexes' computation would wait for AddIndexes, which
// waits for the index function.
//
// Possible errors: [ErrIndexExists] (a name already used, or repeated),
// [ErrInvalidOptions] (empty name, nil Func, zero Indexer), [ErrIndexFunc]
// (an index function failed on a stored object: no index is added).
func (s *Indexer[K, T]) AddIndexes(indexes ...Index[T]) error {
	if s.keyFunc == nil {
		_, err := s.key(*new(T))
		return err
	}
	s.wmu.Lock() // not between the chunks of a batch commit
	defer s.wmu.Unlock()
	s.lock()
	for s.rebuilding != nil {
		ch := s.rebuilding
		s.mu.Unlock()
		<-ch
		s.lock()
	}
	old := s.defs.Load()
	defs, err := old.with(indexes)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	done := make(chan struct{})
	s.rebuilding = done
	// Writers are held off from here on, so the entries cannot change.
	cur := s.st.Load()
	entries := make([]*entry[K, T], 0, cur.entries.Len())
	objs := make([]T, 0, cur.entries.Len())
	for e := range cur.entries.All() {
		entries = append(entries, e)
		objs = append(objs, e.obj(cur.rep))
	}
	s.mu.Unlock()

	finish := func() {
		s.rebuilding = nil
		s.mu.Unlock()
		close(done)
	}
	// Compute the new indexes' values of every entry, outside the lock.
	first := len(old.list)
	vals := make([][]string, len(entries))
	counts := make([][]int, len(entries))
	sc := s.getScratch()
	for i, e := range entries {
		sc.reset()
		if err := appendValues(sc, defs.list[first:], e.key, objs[i]); err != nil {
			s.putScratch(sc)
			s.lock()
			finish()
			return err
		}
		vals[i] = append([]string(nil), sc.vals...)
		counts[i] = append([]int(nil), sc.ends...)
	}
	s.putScratch(sc)

	s.lock()
	// A copy of the state with the new (empty) index tables, published once
	// they are filled: until then readers know nothing of them.
	st := &state[K, T]{rep: cur.rep, entries: cur.entries, indexes: append(cur.indexes[:len(cur.indexes):len(cur.indexes)], make([]*swmr.Table[string, bucket[K, T]], len(indexes))...)}
	for j := first; j < len(defs.list); j++ {
		st.indexes[j] = newIndexTable[K, T](0)
	}
	for i, e := range entries {
		if len(vals[i]) == 0 {
			continue
		}
		refs := make([]*bucket[K, T], len(e.refs), len(e.refs)+len(vals[i]))
		copy(refs, e.refs)
		start := 0
		for g, end := range counts[i] {
			for _, val := range vals[i][start:end] {
				b := st.bucketFor(first+g, val)
				b.join(e)
				refs = append(refs, b)
			}
			start = end
		}
		st.list(refs[len(e.refs):])
		e.refs = refs
	}
	s.st.Store(st)
	s.defs.Store(defs)
	finish()
	return nil
}

// Get returns the object stored under key; ok is false if there is none.
// It takes no lock.
func (s *Indexer[K, T]) Get(key K) (obj T, ok bool) {
	if st := s.st.Load(); st != nil {
		if e := st.entries.Get(key); e != nil {
			return e.obj(st.rep), true
		}
	}
	return obj, false
}

// Len returns the number of stored objects. It takes no lock, except while
// a relist is being applied: then it waits for it, so that the count is
// the old list's or the new one's.
func (s *Indexer[K, T]) Len() int {
	return s.outsideRelist(func() int {
		if st := s.st.Load(); st != nil {
			return st.entries.Len()
		}
		return 0
	}, nil)
}

// List returns a new slice with every stored object: a consistent snapshot,
// copied under the read side of the writers' lock (so it holds writers off
// for the whole copy; prefer [Indexer.All] for large stores). The order is
// not specified.
func (s *Indexer[K, T]) List() []T {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := s.st.Load()
	if st == nil {
		return []T{}
	}
	out := make([]T, 0, st.entries.Len())
	for e := range st.entries.All() {
		out = append(out, e.obj(st.rep))
	}
	return out
}

// indexNotFoundError is the error of a query naming an unknown index. It
// wraps [ErrIndexNotFound]; being a plain composite literal (no call), it
// keeps [Indexer.ByIndex] small enough to inline.
type indexNotFoundError struct{ index string }

func (e *indexNotFoundError) Error() string {
	return "index " + strconv.Quote(e.index) + ": " + ErrIndexNotFound.Error()
}

func (e *indexNotFoundError) Unwrap() error { return ErrIndexNotFound }
