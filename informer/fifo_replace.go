package informer

import (
	"fmt"

	"github.com/ginformer/ginformer/internal/distinct"
)

// Replace tells the queue that objs is the complete current collection, as
// of version. It:
//
//  1. queues a Replaced delta for each listed object, in list order (a key
//     listed twice gets two deltas in its one entry, as in client-go);
//  2. for every present key (queued, in flight or known) absent from objs,
//     queues a Deleted delta with FinalStateUnknown set, carrying the newest
//     state the queue has: the newest queued delta's object if the key is
//     queued, else the newest in-flight delta's, else the known object. No
//     such tombstone is added when that newest delta is already a Deleted.
//     Tombstoned keys not queued yet join the tail: in-flight ones first,
//     then known ones in KnownObjects.All order.
//
// The first Replace, if no Add, Update or Delete came before it, fixes the
// initial population for [DeltaFIFO.HasSynced]: the keys it queued (listed
// or tombstoned). LastVersion returns version afterwards.
//
// All keys are computed before anything changes: a key function error
// refuses the whole call and leaves the queue unchanged.
//
// Replace queues every listed object. To queue only those that changed,
// list through [DeltaFIFO.BeginList] with [DeltaFIFOOptions.ObjectVersion].
//
// Possible errors: [ErrKeyFunc] (naming the object's index in objs),
// [ErrClosed].
func (f *DeltaFIFO[K, T]) Replace(objs []T, version string) error {
	keys := make([]K, len(objs))
	for i, obj := range objs {
		k, err := f.keyOf(obj)
		if err != nil {
			return fmt.Errorf("informer: Replace: object %d: %w", i, err)
		}
		keys[i] = k
	}
	return f.replace(listed[K, T]{objs: objs, keys: keys}, nil, version)
}

// listed is the listed objects replace takes: objs, keyed either by keys
// (keys[i] is the key of objs[i]) or by items (items[i].Key; see fifoList:
// the items are then the queue's own, to become its bulk batch).
type listed[K comparable, T any] struct {
	objs  []T
	keys  []K
	items []Item[K, T]
}

func (l listed[K, T]) key(i int) K {
	if l.items != nil {
		return l.items[i].Key
	}
	return l.keys[i]
}

// replace is Replace with the keys already computed (see listed) and, in
// kept, keys that are listed too but whose objects were
// dropped because the queue already holds them unchanged (see
// [DeltaFIFO.BeginList]): nothing is queued for them and they are not
// tombstoned.
func (f *DeltaFIFO[K, T]) replace(l listed[K, T], kept map[K]struct{}, version string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	if f.bulk != nil {
		f.unbulkLocked() // under the generation that listed it
	}
	f.gen++
	if f.gen == 0 { // wrapped: 0 is what a fresh slot carries
		f.gen = 1
	}
	gen := f.gen
	first := !f.populated
	f.populated = true
	mark := func(s *deltaSlot[T]) {
		if first && !s.initial {
			s.initial = true
			f.initialLeft++
		}
	}

	if len(kept) == 0 && f.queuedLen() == 0 && !f.popping && f.knownEmptyLocked() && distinct.Keys(len(l.objs), l.key) {
		// Nothing queued, in flight or known (a first list, typically):
		// nothing to merge with and nothing to tombstone, and no key listed
		// twice (distinct.Keys, a fraction of what items would cost). The
		// list is kept as the batch PopBatch will hand out, its keys never
		// going through items (see bulk). A list that names a key twice
		// takes the general path, which merges the listings into one entry.
		if n := len(l.objs); n > 0 {
			var bulk []Item[K, T]
			if l.items != nil {
				bulk = l.items[:n:n]
			} else {
				bulk = make([]Item[K, T], n)
				for i, key := range l.keys {
					bulk[i].Key = key
				}
			}
			arena := make([]Delta[T], n)
			for i, obj := range l.objs {
				arena[i] = Delta[T]{Type: Replaced, Object: obj}
				bulk[i].Deltas, bulk[i].IsInInitialList = arena[i:i+1:i+1], first
			}
			if first {
				f.initialLeft += n
			}
			f.bulk = bulk
			f.order.renumber(f.order.tail + uint64(n))
			f.peak = max(f.peak, n)
			f.signalLocked()
		}
	} else {
		f.replaceMergeLocked(l, kept, gen, mark)
	}
	f.lastVersion = version
	f.replaceEnd, f.replacePending = f.order.tail, true
	f.maybeSyncedLocked()
	return nil
}

// replaceMergeLocked is the general case of replace: listed keys join their
// queued entries, unlisted present keys are tombstoned.
func (f *DeltaFIFO[K, T]) replaceMergeLocked(l listed[K, T], kept map[K]struct{}, gen uint32, mark func(*deltaSlot[T])) {
	if f.order.len() == 0 && len(f.items) == 0 && len(l.objs) > 64 {
		f.items = make(map[K]uint64, len(l.objs)) // presized: no growth steps
	}
	for i, obj := range l.objs {
		key := l.key(i)
		d := Delta[T]{Type: Replaced, Object: obj}
		if e := f.entryLocked(key); e != nil {
			e.add(d)
			e.gen = gen
			mark(&e.deltaSlot)
			continue
		}
		s := deltaSlot[T]{first: d, gen: gen}
		mark(&s)
		f.pushLocked(key, s)
	}
	isKept := func(key K) bool {
		_, ok := kept[key]
		return ok
	}
	// Queued keys not listed, in queue order.
	for seq := f.order.head; seq < f.order.tail; seq++ {
		e := f.order.at(seq)
		if e.gen == gen || isKept(e.key) {
			continue
		}
		n := e.newest()
		if n.Type == Deleted {
			continue
		}
		e.add(Delta[T]{Type: Deleted, Object: n.Object, FinalStateUnknown: true})
		mark(&e.deltaSlot)
	}
	// In-flight keys not queued (so not listed, unless kept).
	if f.popping {
		for i := range f.batch {
			it := &f.batch[i]
			if _, queued := f.seqLocked(it.Key); queued || isKept(it.Key) {
				continue
			}
			n := it.Deltas[len(it.Deltas)-1]
			if n.Type == Deleted {
				continue
			}
			s := deltaSlot[T]{first: Delta[T]{Type: Deleted, Object: n.Object, FinalStateUnknown: true}}
			mark(&s)
			f.pushLocked(it.Key, s)
		}
	}
	// Known keys neither kept, queued nor in flight (so neither listed nor
	// handled above: an in-flight key whose newest delta is a Deleted was
	// skipped on purpose, it must not be tombstoned here either).
	if f.known != nil {
		for key, obj := range f.known.All() {
			if isKept(key) {
				continue
			}
			if _, queued := f.seqLocked(key); queued || f.inFlightLocked(key) {
				continue
			}
			s := deltaSlot[T]{first: Delta[T]{Type: Deleted, Object: obj, FinalStateUnknown: true}}
			mark(&s)
			f.pushLocked(key, s)
		}
	}
}

// knownEmptyLocked reports whether KnownObjects holds nothing (or is nil).
func (f *DeltaFIFO[K, T]) knownEmptyLocked() bool {
	if f.known == nil {
		return true
	}
	for range f.known.All() {
		return false
	}
	return true
}

// Resync queues a Sync delta, carrying the known object, for every known key
// that is neither queued nor in flight, in KnownObjects.All order. Without
// KnownObjects it does nothing.
//
// Possible errors: [ErrClosed].
func (f *DeltaFIFO[K, T]) Resync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	if f.known == nil {
		return nil
	}
	for key, obj := range f.known.All() {
		if _, queued := f.seqLocked(key); queued || f.inFlightLocked(key) {
			continue
		}
		f.pushLocked(key, deltaSlot[T]{first: Delta[T]{Type: Sync, Object: obj}})
	}
	return nil
}
