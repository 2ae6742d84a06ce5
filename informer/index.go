package informer

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

// The index structures behind [Indexer]. Everything below is guarded by the
// owning Indexer's mu (or owned by one goroutine while a Replace builds a
// fresh state outside the lock).

// entry is one stored object. refs caches the buckets the object is a member
// of, ordered by index ordinal, each index's buckets contiguous. Because of
// this cache an update or delete never calls an index function on the old
// object: it compares the new values with the buckets in refs.
type entry[K comparable, T any] struct {
	key  K
	obj  T
	refs []*bucket[K, T]
}

// bucket is the set of entries sharing one value in one index. A bucket with
// a single member keeps it in one and has no map (most values of a
// high-cardinality index, such as a pod-name label, have one member, and an
// empty map costs far more than a pointer). The second member moves both into
// members, and from then on members is used until the bucket empties; it never
// goes back to one, so an iterator ranging members keeps a valid map. An
// empty bucket is removed from its index.
type bucket[K comparable, T any] struct {
	value   string
	one     *entry[K, T]
	members map[*entry[K, T]]struct{}
	ord     int32 // index ordinal in the index set
	// pending counts, while applyFresh fills a new state, the members the
	// bucket is about to receive, to size members once; zero otherwise.
	pending int32
}

// size returns the number of members.
func (b *bucket[K, T]) size() int {
	if b.members != nil {
		return len(b.members)
	}
	if b.one != nil {
		return 1
	}
	return 0
}

// add makes e a member of b.
func (b *bucket[K, T]) add(e *entry[K, T]) {
	switch {
	case b.members != nil:
		b.members[e] = struct{}{}
	case b.one == nil:
		b.one = e
	default:
		b.members = map[*entry[K, T]]struct{}{b.one: {}, e: {}}
		b.one = nil
	}
}

// remove removes e from b and reports whether b is now empty.
func (b *bucket[K, T]) remove(e *entry[K, T]) (empty bool) {
	if b.members == nil {
		if b.one == e {
			b.one = nil
		}
		return b.one == nil
	}
	delete(b.members, e)
	return len(b.members) == 0
}

// slot is the value of the entries map: the entry and, again, its object.
// Keeping the object in the map as well costs 8 bytes per object but lets
// Get, List, All and Keys read the object without dereferencing the entry:
// ranging a large map in its own order while chasing a pointer per slot
// missed the cache on nearly every object (List of 100k objects took about
// 4x as long).
type slot[K comparable, T any] struct {
	e   *entry[K, T]
	obj T
}

// state is the stored set: the entries by key and, parallel to the index set
// (indexDefs.list), one map from value to bucket per index. Replace builds a
// whole new state and swaps it in, so iterators that captured the old maps
// finish over the old set.
type state[K comparable, T any] struct {
	entries map[K]slot[K, T]
	indexes []map[string]*bucket[K, T]
}

// newState returns an empty state for n indexes, sized for about size entries.
func newState[K comparable, T any](n, size int) state[K, T] {
	st := state[K, T]{
		entries: make(map[K]slot[K, T], size),
		indexes: make([]map[string]*bucket[K, T], n),
	}
	for i := range st.indexes {
		st.indexes[i] = make(map[string]*bucket[K, T])
	}
	return st
}

// bucketFor returns the bucket of value v in index ord, creating it.
func (st *state[K, T]) bucketFor(ord int, v string) *bucket[K, T] {
	idx := st.indexes[ord]
	b := idx[v]
	if b == nil {
		b = &bucket[K, T]{value: v, ord: int32(ord)}
		idx[v] = b
	}
	return b
}

// leave removes e from b, dropping b from its index when it empties.
func (st *state[K, T]) leave(b *bucket[K, T], e *entry[K, T]) {
	if b.remove(e) {
		delete(st.indexes[b.ord], b.value)
	}
}

// apply performs one prepared write on st and records the previous object
// in w.old and w.hadOld. It calls no user code.
func (st *state[K, T]) apply(w *write[K, T]) {
	e := st.entries[w.key].e
	if w.del {
		if e == nil {
			return
		}
		w.old, w.hadOld = e.obj, true
		for _, b := range e.refs {
			st.leave(b, e)
		}
		e.refs = nil
		delete(st.entries, w.key)
		return
	}
	sc := w.sc
	if e == nil {
		e = &entry[K, T]{key: w.key, obj: w.obj}
		st.entries[w.key] = slot[K, T]{e, w.obj}
		if sc != nil && len(sc.vals) > 0 {
			e.refs = make([]*bucket[K, T], len(sc.vals))
			start := 0
			for ord, end := range sc.ends {
				for j := start; j < end; j++ {
					b := st.bucketFor(ord, sc.vals[j])
					b.add(e)
					e.refs[j] = b
				}
				start = end
			}
		}
		return
	}
	w.old, w.hadOld = e.obj, true
	e.obj = w.obj
	st.entries[w.key] = slot[K, T]{e, w.obj}
	if !st.sameRefs(e, sc) {
		st.relink(e, sc)
	}
}

// group returns the part of refs, starting at from, that belongs to index ord.
func group[K comparable, T any](refs []*bucket[K, T], from, ord int) []*bucket[K, T] {
	end := from
	for end < len(refs) && int(refs[end].ord) == ord {
		end++
	}
	return refs[from:end]
}

// sameRefs reports whether the values in sc are exactly the buckets e is in,
// index by index (as sets: the order of values does not matter; both sides
// are free of duplicates).
func (st *state[K, T]) sameRefs(e *entry[K, T], sc *scratch[K, T]) bool {
	if sc == nil { // no index
		return len(e.refs) == 0
	}
	if len(e.refs) != len(sc.vals) {
		return false
	}
	start := 0
	for ord, end := range sc.ends {
		og := group(e.refs, start, ord)
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

// relink moves e into the buckets named by sc, touching only the buckets
// that changed: kept values keep their bucket, lost values leave theirs.
func (st *state[K, T]) relink(e *entry[K, T], sc *scratch[K, T]) {
	if sc == nil { // no index: no buckets
		for _, b := range e.refs {
			st.leave(b, e)
		}
		e.refs = nil
		return
	}
	refs := sc.refs[:0]
	ostart, start := 0, 0
	for ord, end := range sc.ends {
		og := group(e.refs, ostart, ord)
		nv := sc.vals[start:end]
		for _, v := range nv {
			b := findBucket(og, v)
			if b == nil {
				b = st.bucketFor(ord, v)
				b.add(e)
			}
			refs = append(refs, b)
		}
		for _, b := range og {
			if !containsString(nv, b.value) {
				st.leave(b, e)
			}
		}
		ostart += len(og)
		start = end
	}
	sc.refs = refs
	if cap(e.refs) >= len(refs) {
		old := len(e.refs)
		e.refs = e.refs[:len(refs)]
		copy(e.refs, refs)
		if old > len(refs) {
			clear(e.refs[len(refs):old])
		}
	} else {
		e.refs = append([]*bucket[K, T](nil), refs...)
	}
	if len(e.refs) == 0 {
		e.refs = nil
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

func containsString(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
