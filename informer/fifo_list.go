package informer

import (
	"fmt"
	"slices"
)

// BeginList starts a list that the queue takes page by page: it implements
// [ListReceiver], so a [Reflector] writing into a DeltaFIFO hands it each
// page as it arrives instead of gathering the whole list.
//
// Committing the builder is [DeltaFIFO.Replace] of every object added, with
// one difference when [DeltaFIFOOptions.ObjectVersion] is set: as each page
// is added, an object whose version equals that of the newest state the
// queue holds for its key (its newest queued delta, else its newest
// in-flight delta, else the known object; a Deleted delta holds no state)
// is dropped. Nothing is queued for it and only its key is kept, so that
// Commit does not take it for deleted. Only changed, new and deleted objects
// then reach the consumer, and a list holds, besides the page being added,
// only the changed objects and the unchanged keys.
//
// The comparison is made when the page is added. Between BeginList and
// Commit the queue must not be written to (Add, Update, Delete, Replace,
// Resync) by anyone else; popping is fine. A builder that is never
// committed leaves the queue unchanged. Builders are not safe for
// concurrent use.
func (f *DeltaFIFO[K, T]) BeginList() ListBuilder[T] { return f.newList() }

// fifoList is the builder [DeltaFIFO.BeginList] returns. The informer drives
// it through its unexported methods, to apply its transform between the
// comparison and the queueing.
type fifoList[K comparable, T any] struct {
	f *DeltaFIFO[K, T]
	// compare: versions are compared (the queue has an ObjectVersion and
	// held something, queued, in flight or known, when the list began).
	compare bool
	// fresh: the queue held nothing (queued, in flight or known) when the
	// list began, so it will most likely become the queue's bulk batch
	// (see replace): the keys go straight into items, whose Deltas the
	// commit fills, instead of a key slice copied into items at the end.
	fresh bool
	objs  []T          // the objects to queue
	keys  []K          // their keys (unless fresh)
	items []Item[K, T] // fresh: items[i].Key is the key of objs[i]
	kept  map[K]struct{}
	added int // objects added so far, for error messages

	// Scratch reused between pages.
	pageKeys []K
	cur      []T
	has      []bool
	same     []bool
}

func (f *DeltaFIFO[K, T]) newList() *fifoList[K, T] {
	b := &fifoList[K, T]{f: f}
	f.mu.Lock()
	b.fresh = f.queuedLen() == 0 && !f.popping && f.knownEmptyLocked()
	f.mu.Unlock()
	b.compare = f.objVersion != nil && !b.fresh
	return b
}

// AddPage adds one page of the list. All keys of the page are computed
// first: a key function error refuses the page (the list must then be
// abandoned).
//
// Possible errors: [ErrKeyFunc] (naming the object's index in the list).
func (b *fifoList[K, T]) AddPage(items []T) error {
	keys := b.pageKeys[:0]
	for i, obj := range items {
		k, err := b.f.keyOf(obj)
		if err != nil {
			clear(keys)
			return fmt.Errorf("informer: list: object %d: %w", b.added+i, err)
		}
		keys = append(keys, k)
	}
	b.added += len(items)
	same := b.unchanged(items, keys)
	for i := range items {
		if same == nil || !same[i] {
			b.push(items[i], keys[i])
		}
	}
	clear(keys)
	b.pageKeys = keys[:0]
	return nil
}

// Commit replaces the queue's view with the list, read at version (see
// [DeltaFIFO.BeginList] and [DeltaFIFO.Replace]).
//
// Possible errors: [ErrClosed].
func (b *fifoList[K, T]) Commit(version string) error {
	err := b.f.replace(listed[K, T]{b.objs, b.keys, b.items}, b.kept, version)
	b.objs, b.keys, b.items, b.kept = nil, nil, nil, nil
	return err
}

// push adds obj, whose key is key, to the objects to queue.
func (b *fifoList[K, T]) push(obj T, key K) {
	b.objs = append(b.objs, obj)
	b.pushKey(key)
}

// pushKey adds the key of the object just added to objs.
func (b *fifoList[K, T]) pushKey(key K) {
	if b.fresh {
		b.items = append(b.items, Item[K, T]{Key: key})
	} else {
		b.keys = append(b.keys, key)
	}
}

// growKeys makes room for n more keys.
func (b *fifoList[K, T]) growKeys(n int) {
	if b.fresh {
		b.items = slices.Grow(b.items, n)
	} else {
		b.keys = slices.Grow(b.keys, n)
	}
}

// unchanged compares objs (keyed by keys) with the newest state the queue
// holds for each key and records the keys of those whose version is the
// same as kept. It returns, per object, whether it is unchanged, or nil if
// versions are not compared (none is). The result is valid until the next
// call. The version function runs without the queue's lock held.
func (b *fifoList[K, T]) unchanged(objs []T, keys []K) []bool {
	if !b.compare || len(objs) == 0 {
		return nil
	}
	n := len(objs)
	b.cur = slices.Grow(b.cur[:0], n)[:n]
	b.has = slices.Grow(b.has[:0], n)[:n]
	b.same = slices.Grow(b.same[:0], n)[:n]
	clear(b.same)
	f := b.f
	f.mu.Lock()
	for i, key := range keys {
		b.cur[i], b.has[i] = f.newestLocked(key)
	}
	f.mu.Unlock()
	for i := range objs {
		if !b.has[i] {
			continue
		}
		v := callVersion(f.objVersion, objs[i])
		if v == "" || v != callVersion(f.objVersion, b.cur[i]) {
			continue
		}
		if b.kept == nil {
			b.kept = make(map[K]struct{})
		}
		b.kept[keys[i]] = struct{}{}
		b.same[i] = true
	}
	clear(b.cur) // do not keep the cached objects alive through the scratch
	return b.same
}

// newestLocked returns the newest state the queue holds for key: its newest
// queued delta's object, else its newest in-flight delta's, else the known
// object. A Deleted delta means no state.
func (f *DeltaFIFO[K, T]) newestLocked(key K) (T, bool) {
	var zero T
	if seq, ok := f.seqLocked(key); ok {
		n := f.order.at(seq).newest()
		if n.Type == Deleted {
			return zero, false
		}
		return n.Object, true
	}
	if i := f.inFlightIndexLocked(key); i >= 0 {
		ds := f.batch[i].Deltas
		n := ds[len(ds)-1]
		if n.Type == Deleted {
			return zero, false
		}
		return n.Object, true
	}
	if f.known != nil {
		return f.known.Get(key)
	}
	return zero, false
}

// callVersion runs a user version function; a panic counts as "unknown".
func callVersion[T any](version func(T) string, obj T) (v string) {
	defer func() {
		if recover() != nil {
			v = ""
		}
	}()
	return version(obj)
}
