package informer

import (
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
//
// An Index is also the handle its queries go through. Declare it once, as a
// variable (see [NewIndex]); give it to the cache ([Options].Indexes,
// [IndexerOptions].Indexes or AddIndexes); bind it to the cache's [Lister]
// with [Lister.IndexRef], the one step that can fail (the index is not
// declared there), once, at setup. The [IndexRef] it returns queries with
// no error to check, no lock and no allocation:
//
//	byRegion := informer.NewIndex("region", func(dst []string, s *Service) ([]string, error) {
//		return append(dst, s.Region), nil
//	})
//	inf, err := informer.NewSharedInformer(informer.Options[string, *Service]{
//		// Source, KeyFunc...
//		Indexes: []informer.Index[*Service]{byRegion},
//	})
//	region, err := inf.Lister().IndexRef(byRegion)
//	for name, s := range region.ByValue("eu-west") { ... }
//
// The Lister's methods that take an index by name ([Lister.ByIndex] and
// the others) serve compatibility layers and tools that know indexes only
// by name.
type Index[T any] struct {
	// Name identifies the index in its store, in errors and on the debug
	// page (Inspector.IndexStats). Required.
	Name string
	// Func computes an object's values. Required.
	Func IndexFunc[T]
}

// NewIndex returns the declaration of the index name whose values f
// computes: Index[T]{Name: name, Func: f}, with T inferred from f.
func NewIndex[T any](name string, f IndexFunc[T]) Index[T] {
	return Index[T]{Name: name, Func: f}
}

// The index structures behind [Indexer].
//
// Readers take no lock. Every structure a reader reaches is either immutable
// once published (a state) or written with atomic stores (an entry's object,
// a bucket's single member) or a table or set of internal/swmr,
// whose readers only do atomic loads. The single writer (holding the
// Indexer's mu) publishes each change with atomic stores, in an order that
// lets every read see each write whole; see state.apply.

// bucket is the set of entries sharing one value in one index. A bucket
// with a single member keeps it in one and has no set (most values of a
// high-cardinality index, such as a pod-name label, have one member, and a
// set costs far more than a pointer). The second member moves both into a
// set, which is kept until the bucket empties. An empty bucket is removed
// from its index.
//
// seq is odd while the writer changes the bucket's membership (join,
// leave): a reader that finds seq even, and unchanged after copying members,
// copied one membership of the bucket.
type bucket[K comparable, T any] struct {
	value string
	one   atomic.Pointer[entry[K, T]]
	set   atomic.Pointer[swmr.Set[entry[K, T]]]
	seq   atomic.Uint32
	ord   int32 // index ordinal in the index set
	n     int32 // members; writer only
	// pending counts, while a new state is filled (fresh), the members the
	// bucket is about to receive, to size its set once. unlisted (-1): a
	// bucket bucketFor created and the writer has not yet put in its index
	// (it does once its first member joined, so that readers never find an
	// empty bucket). Zero otherwise.
	pending int32
}

// join adds e, not a member yet, to b.
func (b *bucket[K, T]) join(e *entry[K, T]) {
	b.seq.Add(1)
	switch set := b.set.Load(); {
	case set != nil:
		set.Add(e)
	case b.n == 0:
		b.one.Store(e)
	default:
		set = swmr.NewSet[entry[K, T]](2)
		set.Add(b.one.Load())
		set.Add(e)
		b.set.Store(set)
		b.one.Store(nil)
	}
	b.n++
	b.seq.Add(1)
}

// leave removes e from b and reports whether b is now empty.
func (b *bucket[K, T]) leave(e *entry[K, T]) (empty bool) {
	b.seq.Add(1)
	if set := b.set.Load(); set != nil {
		set.Remove(e)
	} else {
		b.one.Store(nil)
	}
	b.n--
	b.seq.Add(1)
	return b.n == 0
}

func entryKey[K comparable, T any](e *entry[K, T]) K { return e.key }

func bucketValue[K comparable, T any](b *bucket[K, T]) string { return b.value }

func newIndexTable[K comparable, T any](n int) *swmr.Table[string, bucket[K, T]] {
	return swmr.New(bucketValue[K, T], nil, n)
}

// state is the stored set: the entries by key and, parallel to the index
// set (indexDefs.list), one table from value to bucket per index. A state is
// published through Indexer.st; the struct itself is never changed once
// published (its tables are, by the writer). Replace and a first list build
// a whole new state and swap it in, so that readers see the old set or the
// new one; AddIndexes publishes a copy with more index tables.
type state[K comparable, T any] struct {
	rep     objRep // how entries hold their objects
	entries *swmr.Table[K, entry[K, T]]
	indexes []*swmr.Table[string, bucket[K, T]]
}

// newState returns an empty state for n indexes, sized for about size entries.
func newState[K comparable, T any](n, size int) *state[K, T] {
	st := &state[K, T]{rep: repOf[T](), entries: swmr.New(entryKey[K, T], nil, size), indexes: make([]*swmr.Table[string, bucket[K, T]], n)}
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

// leave removes e from b, dropping b from its index when it empties.
func (st *state[K, T]) leave(b *bucket[K, T], e *entry[K, T]) {
	if b.leave(e) {
		st.indexes[b.ord].Delete(b.value)
	}
}

// apply performs one prepared write on st, as write number seq, and
// records the previous object in w.old and w.hadOld. It calls no user code.
//
// The order of the stores makes each write appear whole to every read. A
// new key's entry gets its object, joins its buckets, then enters the
// entries table. An update whose values are unchanged only stores the new
// object. One whose values changed first leaves the buckets it loses, then
// stores the new object, then joins the new buckets: an index read finds
// the entry under a value only while its current object has that value (for
// a moment it is under neither, like an object moved during an iteration).
// A delete leaves the entries table and the buckets.
func (st *state[K, T]) apply(w *write[K, T], seq uint64) {
	e := st.entries.Get(w.key)
	if w.del {
		if e == nil {
			return
		}
		w.old, w.hadOld = e.obj(st.rep), true
		st.entries.Delete(w.key)
		for _, b := range e.refs {
			st.leave(b, e)
		}
		e.refs = nil
		return
	}
	sc := w.sc
	if e == nil {
		e = &entry[K, T]{key: w.key}
		e.store(st.rep, w.obj, seq)
		if sc != nil && len(sc.vals) > 0 {
			e.refs = make([]*bucket[K, T], len(sc.vals))
			start := 0
			for ord, end := range sc.ends {
				for j := start; j < end; j++ {
					b := st.bucketFor(ord, sc.vals[j])
					b.join(e)
					e.refs[j] = b
				}
				start = end
			}
			st.list(e.refs)
		}
		st.entries.Put(e)
		return
	}
	w.old, w.hadOld = e.obj(st.rep), true
	if sameRefs(e.refs, sc) {
		e.store(st.rep, w.obj, seq)
		return
	}
	st.relink(e, w.obj, seq, sc)
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
func sameRefs[K comparable, T any](refs []*bucket[K, T], sc *scratch[K, T]) bool {
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

// relink publishes obj (write seq) for e, whose values changed to those in
// sc: lost values leave their buckets first, then obj is stored, then new
// values join theirs; kept values keep their bucket untouched.
func (st *state[K, T]) relink(e *entry[K, T], obj T, seq uint64, sc *scratch[K, T]) {
	var refs []*bucket[K, T]
	if sc != nil && len(sc.vals) > 0 {
		refs = make([]*bucket[K, T], 0, len(sc.vals))
		ostart, start := 0, 0
		for ord, end := range sc.ends {
			og := group(e.refs, ostart, ord)
			for _, val := range sc.vals[start:end] {
				b := findBucket(og, val)
				if b == nil {
					b = st.bucketFor(ord, val)
				}
				refs = append(refs, b)
			}
			ostart += len(og)
			start = end
		}
	}
	for _, b := range e.refs {
		if !containsBucket(refs, b) {
			st.leave(b, e)
		}
	}
	e.store(st.rep, obj, seq)
	for _, b := range refs {
		if !containsBucket(e.refs, b) {
			b.join(e)
		}
	}
	st.list(refs)
	e.refs = refs
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
