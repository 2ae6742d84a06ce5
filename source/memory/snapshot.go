package memory

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/ginformer/ginformer/informer"
)

// snapshot is the sorted state of the store at one revision. It is
// immutable once built, so pages of one list share it without copying.
type snapshot[T any] struct {
	rev   int64
	items []T
}

// snapshotCache keeps the few most recent snapshots, so the pages of a list
// are cut from one snapshot. The zero value is empty.
type snapshotCache[T any] struct {
	slots [4]*snapshot[T]
	next  int
}

func (c *snapshotCache[T]) get(rev int64) *snapshot[T] {
	for _, s := range c.slots {
		if s != nil && s.rev == rev {
			return s
		}
	}
	return nil
}

func (c *snapshotCache[T]) put(s *snapshot[T]) {
	if c.get(s.rev) != nil {
		return
	}
	c.slots[c.next] = s
	c.next = (c.next + 1) % len(c.slots)
}

// dropOlder forgets the snapshots of revisions older than rev (compacted).
func (c *snapshotCache[T]) dropOlder(rev int64) {
	for i, s := range c.slots {
		if s != nil && s.rev < rev {
			c.slots[i] = nil
		}
	}
}

// item is an object being sorted into a snapshot.
type item[K comparable, T any] struct {
	key     K
	sortKey string
	obj     T
	e       *entry[K, T] // the live entry, for the order cache; nil if historical
}

// snapshotAt returns the sorted state at rev.
//
// Possible errors: [informer.ErrExpired], [informer.ErrVersionTooLarge].
func (s *Store[K, T]) snapshotAt(rev int64) (*snapshot[T], error) {
	s.mu.Lock()
	if err := s.checkReadableLocked(rev); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	if snap := s.snaps.get(rev); snap != nil {
		s.mu.Unlock()
		return snap, nil
	}
	if rev == s.rev && s.orderGen == s.structGen && len(s.order) == len(s.objects) {
		// Fast path: only updates since the order was cached.
		snap := &snapshot[T]{rev: rev, items: make([]T, len(s.order))}
		for i, e := range s.order {
			snap.items[i] = e.obj
		}
		s.snaps.put(snap)
		s.mu.Unlock()
		return snap, nil
	}
	if rev == s.rev && s.order != nil && !s.createdOverflow {
		return s.mergeSnapshotLocked(rev) // unlocks
	}
	items := make([]item[K, T], 0, len(s.objects))
	for _, e := range s.objects {
		items = append(items, item[K, T]{key: e.key, sortKey: e.sortKey, obj: e.obj, e: e})
	}
	var undo []record[K, T]
	if n := s.rev - rev; n > 0 {
		first := s.hist.len() - int(n)
		undo = make([]record[K, T], n)
		for i := range undo {
			undo[i] = *s.hist.at(first + i)
		}
	}
	gen := s.structGen
	s.mu.Unlock()

	if len(undo) > 0 {
		items = rewind(items, undo)
	}
	s.sortItems(items) // user code (Compare): outside the lock
	return s.install(rev, items, len(undo) == 0, gen), nil
}

// mergeSnapshotLocked builds the current snapshot from the cached order,
// less the deleted entries, merged with the entries created since, sorted
// outside the lock. It is called with s.mu held and unlocks it.
func (s *Store[K, T]) mergeSnapshotLocked(rev int64) (*snapshot[T], error) {
	kept := make([]item[K, T], 0, len(s.objects))
	for _, e := range s.order {
		if !e.deleted {
			kept = append(kept, item[K, T]{key: e.key, sortKey: e.sortKey, obj: e.obj, e: e})
		}
	}
	var added []item[K, T]
	for _, e := range s.created {
		if !e.deleted {
			added = append(added, item[K, T]{key: e.key, sortKey: e.sortKey, obj: e.obj, e: e})
		}
	}
	gen := s.structGen
	s.mu.Unlock()

	s.sortItems(added)
	items := make([]item[K, T], 0, len(kept)+len(added))
	i, j := 0, 0
	for i < len(kept) && j < len(added) {
		if s.compareItems(added[j], kept[i]) < 0 {
			items = append(items, added[j])
			j++
		} else {
			items = append(items, kept[i])
			i++
		}
	}
	items = append(append(items, kept[i:]...), added[j:]...)
	return s.install(rev, items, true, gen), nil
}

// install turns sorted items into a cached snapshot at rev. current says the
// items are the live entries as of structGen gen: if no create or delete
// happened since, they also become the cached key order.
func (s *Store[K, T]) install(rev int64, items []item[K, T], current bool, gen uint64) *snapshot[T] {
	snap := &snapshot[T]{rev: rev, items: make([]T, len(items))}
	for i := range items {
		snap.items[i] = items[i].obj
	}
	s.mu.Lock()
	if current && s.structGen == gen {
		order := make([]*entry[K, T], len(items))
		for i := range items {
			order[i] = items[i].e
		}
		s.order, s.orderGen = order, gen
		s.created, s.createdOverflow = nil, false
	}
	if rev >= s.compactRev {
		s.snaps.put(snap)
	}
	s.mu.Unlock()
	return snap
}

// checkReadableLocked says whether the state at rev can be read.
func (s *Store[K, T]) checkReadableLocked(rev int64) error {
	if rev > s.rev {
		return fmt.Errorf("memory: version %d, current %d: %w", rev, s.rev, informer.ErrVersionTooLarge)
	}
	if rev < s.compactRev {
		return fmt.Errorf("memory: version %d, oldest %d: %w", rev, s.compactRev, informer.ErrExpired)
	}
	return nil
}

// rewind turns the current items into the items before the changes in undo
// (consecutive records, oldest first), undoing them newest first.
func rewind[K comparable, T any](items []item[K, T], undo []record[K, T]) []item[K, T] {
	state := make(map[K]item[K, T], len(items))
	for _, it := range items {
		it.e = nil
		state[it.key] = it
	}
	for i := len(undo) - 1; i >= 0; i-- {
		r := &undo[i]
		if r.hadPrev {
			state[r.key] = item[K, T]{key: r.key, sortKey: r.sortKey, obj: r.prev}
		} else {
			delete(state, r.key)
		}
	}
	items = items[:0]
	for _, it := range state {
		items = append(items, it)
	}
	return items
}

// sortItems orders items by key.
func (s *Store[K, T]) sortItems(items []item[K, T]) {
	slices.SortFunc(items, s.compareItems)
}

// compareItems orders two items by key: Options.Compare or the sort keys.
func (s *Store[K, T]) compareItems(a, b item[K, T]) int {
	if c := s.opts.Compare; c != nil {
		return c(a.key, b.key)
	}
	return cmp.Compare(a.sortKey, b.sortKey)
}
