package informer

// Applying a first list into an empty store on two goroutines.
//
// An informer's first list reaches the Indexer as one atomic batch of new
// keys (tens of thousands to millions). Applying it is the longest single
// step of a sync, and it runs while nothing else can: the handlers wait for
// its notifications. Its parts are independent: the entries map and each
// index's buckets are separate maps, and each entry's refs are written one
// slot per index value. applyFresh runs them as tasks on the calling
// goroutine and one helper, still under the write lock (readers see nothing
// of the batch until it is whole), and waits for the helper before it
// returns.

// freshMin is the smallest batch applyFresh splits over two goroutines.
const freshMin = 4096

// applyFresh applies ws to the empty state st. Every write must be an upsert
// or a delete (a delete of an absent key changes nothing); writes marked
// failed are skipped. It reports false, with st empty again, if two writes
// have the same key (the caller then applies ws one by one).
func (st *state[K, T]) applyFresh(ws []write[K, T], nIndexes int) bool {
	ents := make([]*entry[K, T], len(ws))
	n := 0
	for i := range ws {
		w := &ws[i]
		w.old, w.hadOld = *new(T), false
		if w.failed || w.del {
			continue
		}
		e := &entry[K, T]{key: w.key, obj: w.obj}
		if w.sc != nil && len(w.sc.vals) > 0 {
			e.refs = make([]*bucket[K, T], len(w.sc.vals))
		}
		ents[i] = e
		n++
	}
	st.entries = make(map[K]slot[K, T], n)

	// Tasks: -1 is the entries map, ord >= 0 an index. Split them over two
	// workers by their number of inserts.
	weights := make([]int, nIndexes)
	for i := range ws {
		if ents[i] == nil || ws[i].sc == nil {
			continue
		}
		start := 0
		for ord, end := range ws[i].sc.ends {
			weights[ord] += end - start
			start = end
		}
	}
	var mine, theirs []int
	wMine, wTheirs := n, 0
	mine = append(mine, -1)
	for ord := range weights {
		if wTheirs <= wMine {
			theirs, wTheirs = append(theirs, ord), wTheirs+weights[ord]
		} else {
			mine, wMine = append(mine, ord), wMine+weights[ord]
		}
	}
	run := func(tasks []int) {
		for _, t := range tasks {
			if t < 0 {
				for i, e := range ents {
					if e != nil {
						st.entries[e.key] = slot[K, T]{e, ws[i].obj}
					}
				}
				continue
			}
			st.indexBatch(ws, ents, t)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(theirs)
	}()
	run(mine)
	<-done
	if len(st.entries) != n { // a key twice: start over, one by one
		*st = newState[K, T](nIndexes, len(ws))
		return false
	}
	return true
}

// indexBatch adds the new entries ents (nil for writes that store nothing)
// to the buckets of index ord named by their writes' values. A first pass
// finds (or creates) each bucket, remembering it in the entry's refs, and
// counts its new members; the second creates each member set at its final
// size (growing a set of 10,000 members one doubling at a time rehashes
// every member about once more) and adds the members.
func (st *state[K, T]) indexBatch(ws []write[K, T], ents []*entry[K, T], ord int) {
	for i, e := range ents {
		if e == nil || ws[i].sc == nil {
			continue
		}
		start, end := groupBounds(ws[i].sc, ord)
		for j := start; j < end; j++ {
			b := st.bucketFor(ord, ws[i].sc.vals[j])
			b.pending++
			e.refs[j] = b
		}
	}
	for i, e := range ents {
		if e == nil || ws[i].sc == nil {
			continue
		}
		start, end := groupBounds(ws[i].sc, ord)
		for _, b := range e.refs[start:end] {
			if b.pending > 1 && b.members == nil {
				b.members = make(map[*entry[K, T]]struct{}, b.pending)
			}
			b.pending = 0
			b.add(e)
		}
	}
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
