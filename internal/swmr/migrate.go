package swmr

// Incremental growth of a large Table.
//
// Rebuilding a slot array reads every element's key in random order, about
// 0.2 µs per element: growing a table of a million elements at once would
// stall its writer for a few hundred milliseconds. A table of at least
// migrateMinSlots slots therefore grows step by step: once its used slots
// pass 5/8 of the array (growth is due at 3/4), the writer allocates the
// next array and, with every later write, copies migrateStep more slots of
// the current array into it. Writes keep going to the current array, which
// readers keep reading; a write to a slot already copied is applied to the
// next array as well. When every slot is copied, the next array is
// published with one atomic store, as a whole rebuild would publish it. The
// 1/8 of the array left between 5/8 and 3/4 takes at least n/8 inserts to
// fill, and the copy needs n/migrateStep writes, so it ends first; if it
// did not (a caller that only inserts, with a small step), an insert that
// would pass 3/4 finishes the copy at once.
//
// The next array is the writer's alone until it is published: it is
// written with plain stores (raw views), and the atomic store that
// publishes it orders them before any reader's load.

// migrateMinSlots is the smallest array that grows step by step (a variable
// so that tests can exercise migration on small tables).
var migrateMinSlots = 1 << 14

// migrateStep is the number of slots copied per write (a variable so that
// tests can make inserts outrun the copy).
var migrateStep = 16

// migration is a Table's growth in progress.
type migration[E any] struct {
	next *tagged[E]
	raw  []*E
	tags []uint64
	done int // slots of the current array copied
	used int // live + tombstone slots of next
}

// migrated reports whether slot i of the current array has been copied,
// so that a write to it must also be applied to the next array.
func (t *Table[K, E]) migrated(i int) bool { return t.mig != nil && i < t.mig.done }

// startMigration begins growing to an array sized for live elements, and
// at least as large as the current one: live may be far below used (many
// tombstones), and until the copy ends the current array can come to hold
// up to 3/4 of its slots live, every one of which the next array must take
// (plus a tombstone per mirrored delete, at most one per write of the copy).
func (t *Table[K, E]) startMigration(live int) {
	next := newTagged[E](nextSlots(live, len(t.cur.Load().slots)))
	t.mig = &migration[E]{next: next, raw: next.raw(), tags: next.rawTags()}
}

// migrate copies up to n more slots of the current array into the next one
// and publishes it once every slot is copied.
func (t *Table[K, E]) migrate(n int) {
	m := t.mig
	done := copyLive(&t.cur.Load().array, t.tomb, &m.done, n, func(e *E) {
		h := t.hashOf(t.keyOf(e))
		placeTagged(m.raw, m.tags, m.next.home(h), tagOf(h), e)
		m.used++
	})
	if done {
		t.used = m.used
		t.mig = nil
		t.cur.Store(m.next)
	}
}

// growthDue reports whether an array of slots slots with used of them used
// starts a step-by-step growth (Table and Set alike).
func growthDue(used, slots int) bool { return slots >= migrateMinSlots && used*8 > slots*5 }

// nextSlots is the size of the next array of a growth from an array of cur
// slots holding live elements (see Table.startMigration).
func nextSlots(live, cur int) int { return max(rebuildSlots(live), cur) }

// copyLive hands place the live elements of the next n slots of cur from
// slot *done on, advancing *done past them; it reports whether every slot
// of cur is now copied.
func copyLive[E any](cur *array[E], tomb *E, done *int, n int, place func(*E)) bool {
	for end := min(*done+n, len(cur.slots)); *done < end; *done++ {
		if e := cur.slots[*done].Load(); e != nil && e != tomb {
			place(e)
		}
	}
	return *done == len(cur.slots)
}

// nextFind returns the slot of key k (hash h) in the next array, or -1.
func (t *Table[K, E]) nextFind(k K, h uint64) int {
	m := t.mig
	tag := uint64(tagOf(h))
	for i := m.next.home(h); m.raw[i] != nil; {
		if e := m.raw[i]; e != t.tomb && m.tags[i>>3]>>(uint(i&7)*8)&0xff == tag && t.keyOf(e) == k {
			return i
		}
		if i++; i == len(m.raw) {
			i = 0
		}
	}
	return -1
}

// nextPut applies to the next array a Put of e (key k, hash h) that the
// current array applied to a slot already copied.
func (t *Table[K, E]) nextPut(e *E, k K, h uint64) {
	m := t.mig
	if i := t.nextFind(k, h); i >= 0 {
		m.raw[i] = e
		return
	}
	placeTagged(m.raw, m.tags, m.next.home(h), tagOf(h), e)
	m.used++
}

// nextDelete applies to the next array a Delete of key k (hash h) from a
// slot already copied: the slot becomes a tombstone (its tag stays).
func (t *Table[K, E]) nextDelete(k K, h uint64) {
	m := t.mig
	if i := t.nextFind(k, h); i >= 0 {
		m.raw[i] = t.tomb
	}
}
