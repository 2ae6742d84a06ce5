package informer

import (
	"hash/maphash"
	"sync/atomic"

	"github.com/ginformer/ginformer/internal/swmr"
)

// IndexFunc appends the index values of obj to dst and returns the extended
// slice, in the style of strconv.AppendInt: the engine passes a reused buffer,
// so an index that reads a string field straight out of the object costs no
// allocation. Returning no values means obj is not in the index; duplicate
// values count once.
//
// It is user code: the engine calls it without holding any internal lock, and
// an error or a panic from it is returned wrapped in [ErrIndexFunc] (naming
// the index and the key); the write that needed it is refused. It must be
// deterministic and must not retain dst.
type IndexFunc[T any] func(dst []string, obj T) ([]string, error)

// Index declares a secondary index: a name, unique within a store, and the
// function giving each object's values in it. A multi-value index (one value
// per label, say) simply appends several values.
type Index[T any] struct {
	Name string
	Func IndexFunc[T]
}

// The index structures behind [Indexer].
//
// Readers take no lock. Every structure a reader reaches is either immutable
// once published (a version, a state) or a swmr.Table, whose readers only do
// atomic loads. The single writer (holding the Indexer's mu) publishes each
// change with atomic stores, in an order that lets every read see each write
// whole; see state.apply.

// version is one stored state of one object, immutable once published.
// The entries table and the member sets of the object's buckets hold the
// same *version, so a reader reaching an object through an index gets its
// key and object with one dereference. refs are the buckets this version is
// a member of, ordered by index ordinal, each index's buckets contiguous;
// consecutive versions of an object share one refs array while its values
// do not change. Because of refs an update or a delete never calls an index
// function on the old object: it compares the new values with refs.
type version[K comparable, T any] struct {
	key  K
	obj  T
	refs []*bucket[K, T]
}

// bucket is the set of objects sharing one value in one index. A bucket
// with a single member keeps it in one and has no set (most values of a
// high-cardinality index, such as a pod-name label, have one member, and a
// set costs far more than a pointer). The second member moves both into a
// set, which is kept until the bucket empties. An empty bucket is removed
// from its index.
//
// seq is odd while the writer changes the bucket's members (join, replace,
// leave): a reader that finds seq even, and unchanged after copying members,
// copied one state of the bucket (see copyBucket).
type bucket[K comparable, T any] struct {
	value string
	one   atomic.Pointer[version[K, T]]
	set   atomic.Pointer[swmr.Table[K, version[K, T]]]
	seq   atomic.Uint32
	ord   int32 // index ordinal in the index set
	n     int32 // members; writer only
	// pending counts, while applyFresh fills a new state, the members the
	// bucket is about to receive, to size its set once. unlisted (-1): a
	// bucket bucketFor created and the writer has not yet put in its index
	// (it does once its first member joined, so that readers never find
	// an empty bucket). Zero otherwise.
	pending int32
}

// join adds v, whose key is not a member yet, to b.
func (b *bucket[K, T]) join(v *version[K, T], h *hasher[K, T]) {
	b.seq.Add(1)
	switch set := b.set.Load(); {
	case set != nil:
		set.Put(v)
	case b.n == 0:
		b.one.Store(v)
	default:
		set = h.newTable(2)
		set.Put(b.one.Load())
		set.Put(v)
		b.set.Store(set)
		b.one.Store(nil)
	}
	b.n++
	b.seq.Add(1)
}

// replace swaps v in for the member with v's key.
func (b *bucket[K, T]) replace(v *version[K, T]) {
	b.seq.Add(1)
	if set := b.set.Load(); set != nil {
		set.Put(v)
	} else {
		b.one.Store(v)
	}
	b.seq.Add(1)
}

// leave removes the member of key k and reports whether b is now empty.
func (b *bucket[K, T]) leave(k K) (empty bool) {
	b.seq.Add(1)
	if set := b.set.Load(); set != nil {
		set.Delete(k)
	} else {
		b.one.Store(nil)
	}
	b.n--
	b.seq.Add(1)
	return b.n == 0
}

// hasher makes the tables of an Indexer (its entries and its buckets'
// member sets), which all hash keys with one seeded function.
type hasher[K comparable, T any] struct {
	fn func(K) uint64
}

func newHasher[K comparable, T any]() *hasher[K, T] {
	seed := maphash.MakeSeed()
	return &hasher[K, T]{fn: func(k K) uint64 { return maphash.Comparable(seed, k) }}
}

// newTable returns an empty table of versions by key, sized for n.
func (h *hasher[K, T]) newTable(n int) *swmr.Table[K, version[K, T]] {
	return swmr.New(versionKey[K, T], h.fn, n)
}

func versionKey[K comparable, T any](v *version[K, T]) K { return v.key }

func bucketValue[K comparable, T any](b *bucket[K, T]) string { return b.value }

func newIndexTable[K comparable, T any](n int) *swmr.Table[string, bucket[K, T]] {
	return swmr.New(bucketValue[K, T], nil, n)
}

// state is the stored set: the versions by key and, parallel to the index
// set (indexDefs.list), one table from value to bucket per index. A state is
// published through Indexer.st; the struct itself is never changed once
// published (its tables are, by the writer). Replace and a first list build
// a whole new state and swap it in, so that readers see the old set or the
// new one; AddIndexes publishes a copy with more index tables.
type state[K comparable, T any] struct {
	h       *hasher[K, T]
	entries *swmr.Table[K, version[K, T]]
	indexes []*swmr.Table[string, bucket[K, T]]
}

// newState returns an empty state for n indexes, sized for about size entries.
func newState[K comparable, T any](h *hasher[K, T], n, size int) *state[K, T] {
	st := &state[K, T]{h: h, entries: h.newTable(size), indexes: make([]*swmr.Table[string, bucket[K, T]], n)}
	for i := range st.indexes {
		st.indexes[i] = newIndexTable[K, T](0)
	}
	return st
}

// unlisted marks a bucket not yet put in its index (bucket.pending).
const unlisted = -1

// bucketFor returns the bucket of value v in index ord. A bucket it
// creates is unlisted: the caller joins members to it, then calls list.
func (st *state[K, T]) bucketFor(ord int, v string) *bucket[K, T] {
	b := st.indexes[ord].Get(v)
	if b == nil {
		b = &bucket[K, T]{value: v, ord: int32(ord), pending: unlisted}
	}
	return b
}

// list puts the buckets of refs that bucketFor created in their indexes.
func (st *state[K, T]) list(refs []*bucket[K, T]) {
	for _, b := range refs {
		if b.pending == unlisted {
			b.pending = 0
			st.indexes[b.ord].Put(b)
		}
	}
}

// leave removes key k from b, dropping b from its index when it empties.
func (st *state[K, T]) leave(b *bucket[K, T], k K) {
	if b.leave(k) {
		st.indexes[b.ord].Delete(b.value)
	}
}

// apply performs one prepared write on st and records the previous object
// in w.old and w.hadOld. It calls no user code.
//
// Each write publishes a new version, and the order of the stores makes it
// appear whole to every read: a new object joins its buckets before it
// enters the entries table; an update replaces the version in the buckets
// it keeps, joins the new ones, replaces it in the entries table, and only
// then leaves the buckets it lost; a delete leaves the entries table first.
// A read that overlaps a write sees the object as it was before the write or
// after it; an index read may see a moving object under its old value or its
// new one (each with the matching version), never a version under a value
// it does not have.
func (st *state[K, T]) apply(w *write[K, T]) {
	old := st.entries.Get(w.key)
	if w.del {
		if old == nil {
			return
		}
		w.old, w.hadOld = old.obj, true
		st.entries.Delete(w.key)
		for _, b := range old.refs {
			st.leave(b, w.key)
		}
		return
	}
	sc := w.sc
	if old == nil {
		v := &version[K, T]{key: w.key, obj: w.obj}
		if sc != nil && len(sc.vals) > 0 {
			v.refs = make([]*bucket[K, T], len(sc.vals))
			start := 0
			for ord, end := range sc.ends {
				for j := start; j < end; j++ {
					v.refs[j] = st.bucketFor(ord, sc.vals[j])
				}
				start = end
			}
			for _, b := range v.refs {
				b.join(v, st.h)
			}
			st.list(v.refs)
		}
		st.entries.Put(v)
		return
	}
	w.old, w.hadOld = old.obj, true
	if st.sameRefs(old.refs, sc) {
		v := &version[K, T]{key: w.key, obj: w.obj, refs: old.refs}
		for _, b := range v.refs {
			b.replace(v)
		}
		st.entries.Put(v)
		return
	}
	st.relink(old, w)
}

// group returns the part of refs, starting at from, that belongs to index ord.
func group[K comparable, T any](refs []*bucket[K, T], from, ord int) []*bucket[K, T] {
	end := from
	for end < len(refs) && int(refs[end].ord) == ord {
		end++
	}
	return refs[from:end]
}

// sameRefs reports whether the values in sc are exactly the buckets refs
// names, index by index (as sets: the order of values does not matter; both
// sides are free of duplicates).
func (st *state[K, T]) sameRefs(refs []*bucket[K, T], sc *scratch[K, T]) bool {
	if sc == nil { // no index
		return len(refs) == 0
	}
	if len(refs) != len(sc.vals) {
		return false
	}
	start := 0
	for ord, end := range sc.ends {
		og := group(refs, start, ord)
		nv := sc.vals[start:end]
		if len(og) != len(nv) {
			return false
		}
		for j, v := range nv {
			if og[j].value == v { // the common case: same order as last time
				continue
			}
			if findBucket(og, v) == nil {
				return false
			}
		}
		start = end
	}
	return true
}

// relink publishes w's object as a new version of old whose values changed:
// kept values keep their bucket (the version is replaced in it), new values
// join theirs, and, once the entries table holds the new version, lost
// values leave theirs.
func (st *state[K, T]) relink(old *version[K, T], w *write[K, T]) {
	v := &version[K, T]{key: w.key, obj: w.obj}
	sc := w.sc
	if sc != nil && len(sc.vals) > 0 {
		v.refs = make([]*bucket[K, T], 0, len(sc.vals))
		ostart, start := 0, 0
		for ord, end := range sc.ends {
			og := group(old.refs, ostart, ord)
			for _, val := range sc.vals[start:end] {
				b := findBucket(og, val)
				if b == nil {
					b = st.bucketFor(ord, val)
				}
				v.refs = append(v.refs, b)
			}
			ostart += len(og)
			start = end
		}
	}
	for _, b := range v.refs {
		if containsBucket(old.refs, b) {
			b.replace(v)
		} else {
			b.join(v, st.h)
		}
	}
	st.list(v.refs)
	st.entries.Put(v)
	for _, b := range old.refs {
		if !containsBucket(v.refs, b) {
			st.leave(b, w.key)
		}
	}
}

// findBucket returns the bucket in g whose value is v, or nil.
func findBucket[K comparable, T any](g []*bucket[K, T], v string) *bucket[K, T] {
	for _, b := range g {
		if b.value == v {
			return b
		}
	}
	return nil
}

func containsBucket[K comparable, T any](refs []*bucket[K, T], b *bucket[K, T]) bool {
	for _, x := range refs {
		if x == b {
			return true
		}
	}
	return false
}

func containsString(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
