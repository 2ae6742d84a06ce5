package swmr

import (
	"iter"
	"sync/atomic"
)

// Set is a set of *E with pointer identity as the key. It holds no nil.
//
// Concurrency: Add, Remove and Reset are writes and must be serialized by
// the caller (one writer at a time). Has, All and Len are lock-free reads:
// any number of goroutines may call them concurrently with the writer and
// with each other. All has the iteration guarantee of [Table.All].
//
// The zero value is an empty set ready to use; it allocates its slot array
// on the first Add.
type Set[E any] struct {
	cur  atomic.Pointer[array[E]] // nil until the first Add or Reset
	n    atomic.Int64             // members, stored by the writer
	tomb *E                       // set with cur
	used int                      // writer only: live + tombstone slots of cur
	mig  *setMigration[E]         // writer only: growth in progress (set_migrate.go), or nil
}

// NewSet returns an empty set that holds sizeHint members without growing.
func NewSet[E any](sizeHint int) *Set[E] {
	s := &Set[E]{tomb: tombstone[E]()}
	s.cur.Store(newArray[E](hintSlots(sizeHint)))
	return s
}

// Has reports whether p is a member. It is lock-free and may run
// concurrently with the writer.
func (s *Set[E]) Has(p *E) bool {
	a := s.cur.Load()
	return a != nil && p != nil && slotOf(a, p) >= 0
}

// slotOf returns the slot of p (not nil) in a, or -1.
func slotOf[E any](a *array[E], p *E) int {
	sl := a.slots
	for i := a.home(hashPointer(p)); ; {
		switch sl[i].Load() {
		case p:
			return i
		case nil:
			return -1
		}
		if i++; i == len(sl) {
			i = 0
		}
	}
}

// Len returns the number of members. It is lock-free; it is exact when no
// write is in progress.
func (s *Set[E]) Len() int { return int(s.n.Load()) }

// All returns an iterator over the members, in no specified order, with
// the guarantee of [Table.All]. It is lock-free; the iterator may be reused.
func (s *Set[E]) All() iter.Seq[*E] {
	return func(yield func(*E) bool) {
		if a := s.cur.Load(); a != nil {
			all(a, s.tomb, yield)
		}
	}
}

// Add inserts p and reports whether it was not a member yet (Add(nil)
// does nothing and reports false). Add is a write; it allocates only when
// it (re)builds the slot array.
func (s *Set[E]) Add(p *E) bool {
	a := s.cur.Load()
	if a == nil {
		s.tomb = tombstone[E]()
		a = newArray[E](minSlots)
		s.cur.Store(a)
	}
	sl := a.slots
	free := -1
	i := a.home(hashPointer(p))
	for {
		x := sl[i].Load()
		if x == p {
			return false
		}
		if x == nil {
			break
		}
		if x == s.tomb && free < 0 {
			free = i
		}
		if i++; i == len(sl) {
			i = 0
		}
	}
	at := free
	switch {
	case free >= 0:
		sl[free].Store(p)
	case overloaded(s.used+1, len(sl)):
		if s.mig != nil { // adds outran the copy: finish it, then add
			s.migrate(len(sl))
			return s.Add(p)
		}
		s.rebuild(rebuildSlots(s.Len()+1), p)
		at = -1
	default:
		sl[i].Store(p)
		s.used++
		at = i
	}
	s.n.Add(1)
	switch {
	case s.mig != nil:
		if s.migrated(at) {
			s.nextAdd(p)
		}
		s.migrate(migrateStep)
	case at >= 0 && growthDue(s.used, len(sl)):
		s.startMigration(s.Len())
		s.migrate(migrateStep)
	}
	return true
}

// Remove deletes p and reports whether it was a member. Remove is a write;
// it allocates only when it shrinks the slot array.
func (s *Set[E]) Remove(p *E) bool {
	a := s.cur.Load()
	if a == nil || p == nil {
		return false
	}
	i := slotOf(a, p)
	if i < 0 {
		return false
	}
	s.used += erase(a, nil, i, s.tomb)
	live := s.n.Add(-1)
	if s.mig != nil {
		if s.migrated(i) {
			s.nextRemove(p)
		}
		s.migrate(migrateStep)
	} else if len(a.slots) > shrinkMinSlots && live*8 < int64(len(a.slots)) {
		s.rebuild(rebuildSlots(int(live)), nil)
	}
	return true
}

// Reset replaces the members with those of elems (no nil; duplicates count
// once) in one step: a concurrent reader sees the old members or the new,
// never a mix. Reset(nil) empties the set. Reset is a write; it does not
// keep elems.
func (s *Set[E]) Reset(elems []*E) {
	if s.tomb == nil {
		s.tomb = tombstone[E]()
	}
	a := newArray[E](bulkSlots(len(elems)))
	raw := a.raw()
	n := 0
	for _, p := range elems {
		i := a.home(hashPointer(p))
		for raw[i] != nil && raw[i] != p {
			if i++; i == len(raw) {
				i = 0
			}
		}
		if raw[i] == nil {
			raw[i] = p
			n++
		}
	}
	s.used = n
	s.mig = nil
	s.n.Store(int64(n))
	s.cur.Store(a)
}

// rebuild publishes a new array of n slots holding the members and, if not
// nil, extra (not a member).
func (s *Set[E]) rebuild(n int, extra *E) {
	old := s.cur.Load()
	a := newArray[E](n)
	raw := a.raw()
	used := 0
	for i := range old.slots {
		e := old.slots[i].Load()
		if e == nil || e == s.tomb {
			continue
		}
		place(raw, a.home(hashPointer(e)), e)
		used++
	}
	if extra != nil {
		place(raw, a.home(hashPointer(extra)), extra)
		used++
	}
	s.used = used
	s.cur.Store(a)
}
