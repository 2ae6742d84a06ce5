package informer

import (
	"iter"

	"github.com/ginformer/ginformer/internal/swmr"
)

// Applying a first list into an empty store.
//
// An informer's first list reaches the Indexer as one atomic batch of new
// keys (tens of thousands to millions). Applying it is the longest single
// step of a sync, and it runs while nothing else can: the handlers wait for
// its notifications. fresh builds a whole new state out of the readers'
// sight and the caller publishes it with one atomic store. Its parts are
// independent: the entries table and each index's buckets are separate
// tables, and each entry's refs are written one slot per index value, so
// a large batch is split into tasks run on the calling goroutine and one
// helper (each table has one writer), which fresh waits for. Indexer.Replace
// builds its new state here too.

// freshMin is the smallest batch fresh splits over two goroutines.
const freshMin = 4096

// fresh returns a new state holding the upserts of ws, applied to an empty
// store; writes marked failed and deletes (of keys an empty store does not
// hold) change nothing. Each write's old and hadOld are zeroed. The state is
// published whole, so its objects carry write number 0.
func fresh[K comparable, T any](ws []write[K, T], nIndexes int) *state[K, T] {
	st := newState[K, T](nIndexes, 0)
	es := make([]*entry[K, T], 0, len(ws))
	for i := range ws {
		w := &ws[i]
		w.old, w.hadOld = *new(T), false
		if w.failed || w.del {
			continue
		}
		e := &entry[K, T]{key: w.key}
		e.store(st.rep, w.obj, 0)
		if w.sc != nil && len(w.sc.vals) > 0 {
			e.refs = make([]*bucket[K, T], len(w.sc.vals))
		}
		es = append(es, e)
	}
	st.entries.Reset(es)
	if st.entries.Len() != len(es) { // a key twice: one by one
		st = newState[K, T](nIndexes, len(es))
		for i := range ws {
			if !ws[i].failed {
				st.apply(&ws[i], 0)
			}
		}
		return st
	}
	// Index tasks, split over two workers by their number of inserts (the
	// entries table is filled already).
	weights := make([]int, nIndexes)
	for i := range ws {
		if ws[i].failed || ws[i].del || ws[i].sc == nil {
			continue
		}
		start := 0
		for ord, end := range ws[i].sc.ends {
			weights[ord] += end - start
			start = end
		}
	}
	var mine, theirs []int
	wMine, wTheirs := 0, 0
	for ord := range weights {
		if wTheirs <= wMine {
			theirs, wTheirs = append(theirs, ord), wTheirs+weights[ord]
		} else {
			mine, wMine = append(mine, ord), wMine+weights[ord]
		}
	}
	run := func(tasks []int) {
		for _, ord := range tasks {
			st.indexBatch(ws, es, ord)
		}
	}
	if len(es) < freshMin || len(mine) == 0 {
		run(append(mine, theirs...))
		return st
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(theirs)
	}()
	run(mine)
	<-done
	return st
}

// indexBatch adds the entries es (one per write of ws that stores
// something, in order) to the buckets of index ord named by their writes'
// values. A first pass finds (or creates) each bucket, remembering it in
// the entry's refs, and counts its new members; the second creates each
// member set at its final size (growing a set of 10,000 members one
// doubling at a time rehashes every member about once more) and adds the
// members. The state is not published yet: no reader sees any of this.
func (st *state[K, T]) indexBatch(ws []write[K, T], es []*entry[K, T], ord int) {
	idx := st.indexes[ord]
	for w, e := range withValues(ws, es) {
		start, end := groupBounds(w.sc, ord)
		for k := start; k < end; k++ {
			val := w.sc.vals[k]
			b := idx.Get(val)
			if b == nil {
				b = &bucket[K, T]{value: val, ord: int32(ord)}
				idx.Put(b)
			}
			b.pending++
			e.refs[k] = b
		}
	}
	for w, e := range withValues(ws, es) {
		start, end := groupBounds(w.sc, ord)
		for _, b := range e.refs[start:end] {
			b.joinFresh(e)
		}
	}
}

// withValues yields the writes of ws that store an object with index
// values, each with its entry: es holds one entry per write that stores
// something, in order.
func withValues[K comparable, T any](ws []write[K, T], es []*entry[K, T]) iter.Seq2[*write[K, T], *entry[K, T]] {
	return func(yield func(*write[K, T], *entry[K, T]) bool) {
		j := 0
		for i := range ws {
			w := &ws[i]
			if w.failed || w.del {
				continue
			}
			e := es[j]
			j++
			if w.sc != nil && len(w.sc.vals) > 0 && !yield(w, e) {
				return
			}
		}
	}
}

// joinFresh adds e to b, a bucket of a state not yet published, creating
// its set at the size pending announced.
func (b *bucket[K, T]) joinFresh(e *entry[K, T]) {
	set := b.set.Load()
	if set == nil && b.pending > 1 {
		set = swmr.NewSet[entry[K, T]](int(b.pending))
		b.set.Store(set)
	}
	b.pending = 0
	if set != nil {
		set.Add(e)
	} else {
		b.one.Store(e)
	}
	b.n++
}

// groupBounds returns the range of sc.vals holding index ord's values.
func groupBounds[K comparable, T any](sc *scratch[K, T], ord int) (start, end int) {
	if ord > 0 {
		start = sc.ends[ord-1]
	}
	return start, sc.ends[ord]
}

// prepareParMin is the smallest batch prepareItems splits over two
// goroutines.
const prepareParMin = 4096

// Sizes of the arrays prepareItems carves the index values of a large
// batch out of: values are appended into a chunk of valsChunk strings, and
// a new chunk is started when fewer than valsChunkMin remain (an object
// with more values than remain simply gets an array of its own).
const (
	valsChunk    = 1 << 12
	valsChunkMin = 2 * scratchVals
)

// preparedItems holds the upserts prepareItems computed for a batch: for
// item i whose newest delta is not a deletion, take(i) gives what
// prepareKeyed gives for it. It holds, per item, only a scratch in one
// slab (none without indexes): the rest of the write comes from the item.
type preparedItems[K comparable, T any] struct {
	batch []Item[K, T]
	defs  *indexDefs[T]
	scs   []scratch[K, T] // per item; nil when defs has no index
	errs  map[int]error   // by item; nil when none failed
}

// take returns item i's prepared upsert and its error. Its scratch belongs
// to the slab (write.slab): release drops it rather than pooling it.
func (p *preparedItems[K, T]) take(i int) (write[K, T], error) {
	ds := p.batch[i].Deltas
	if len(ds) == 0 || ds[len(ds)-1].Type == Deleted {
		return write[K, T]{}, nil
	}
	w := write[K, T]{key: p.batch[i].Key, obj: ds[len(ds)-1].Object, defs: p.defs}
	if p.scs != nil {
		w.sc, w.slab = &p.scs[i], true
	}
	return w, p.errs[i]
}

// prepareItems prepares the upsert of the newest object of every item of a
// large batch (a list) whose newest delta is not a deletion, half of them on
// a second goroutine: computing index values is the largest part of
// applying a first list after the commit itself, and nothing else runs
// meanwhile. Index functions may run concurrently anyway (writes from
// several goroutines do). It returns nil for a batch smaller than
// prepareParMin (the caller prepares each item itself).
//
// A list of a million objects is prepared at once, so what it allocates
// per object counts: the scratches are one slab, each one's values are
// carved out of shared chunks and its group ends out of one array per
// goroutine, and the rest of each write is rebuilt from its item by take.
func (s *Indexer[K, T]) prepareItems(batch []Item[K, T]) *preparedItems[K, T] {
	if len(batch) < prepareParMin {
		return nil
	}
	defs := s.defs.Load()
	p := &preparedItems[K, T]{batch: batch, defs: defs}
	if defs == nil || len(defs.list) == 0 {
		return p // no values to compute: writes carry no scratch
	}
	p.scs = make([]scratch[K, T], len(batch))
	type failure struct {
		i   int
		err error
	}
	run := func(lo, hi int) (failed []failure) {
		nIdx := len(defs.list)
		ends := make([]int, (hi-lo)*nIdx)
		var chunk []string
		pos := 0
		for i := lo; i < hi; i++ {
			ds := batch[i].Deltas
			if len(ds) == 0 || ds[len(ds)-1].Type == Deleted {
				continue
			}
			if len(chunk)-pos < valsChunkMin {
				chunk, pos = make([]string, valsChunk), 0
			}
			sc := &p.scs[i]
			sc.vals = chunk[pos:pos:len(chunk)]
			e := (i - lo) * nIdx
			sc.ends = ends[e:e:(e + nIdx)]
			if err := appendValues(sc, defs.list, batch[i].Key, ds[len(ds)-1].Object); err != nil {
				failed = append(failed, failure{i, err})
			}
			if n := len(sc.vals); n > 0 && &sc.vals[0] == &chunk[pos] {
				pos += n // the values stayed in the chunk
			}
			// Capacity ends with the values: a later reprepare appends
			// into an array of its own, never over the next object's.
			sc.vals = sc.vals[:len(sc.vals):len(sc.vals)]
		}
		return failed
	}
	half := len(batch) / 2
	var theirs []failure
	done := make(chan struct{})
	go func() {
		defer close(done)
		theirs = run(half, len(batch))
	}()
	mine := run(0, half)
	<-done
	for _, f := range append(mine, theirs...) {
		if p.errs == nil {
			p.errs = make(map[int]error)
		}
		p.errs[f.i] = f.err
	}
	return p
}
