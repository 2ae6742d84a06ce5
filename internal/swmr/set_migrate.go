package swmr

// Step-by-step growth of a large Set, as for a Table (see migrate.go): from
// a load of 5/8 on, every write also copies migrateStep slots of the current
// array into the next one, a write to a slot already copied is applied to
// both, and the next array is published whole once every slot is copied.

// setMigration is a Set's growth in progress.
type setMigration[E any] struct {
	next *array[E]
	raw  []*E
	done int // slots of the current array copied
	used int // live + tombstone slots of next
}

// migrated reports whether slot i of the current array has been copied.
func (s *Set[E]) migrated(i int) bool { return s.mig != nil && i < s.mig.done }

// startMigration begins growing to an array sized for live members, at
// least as large as the current one (see Table.startMigration).
func (s *Set[E]) startMigration(live int) {
	next := newArray[E](nextSlots(live, len(s.cur.Load().slots)))
	s.mig = &setMigration[E]{next: next, raw: next.raw()}
}

// migrate copies up to n more slots into the next array and publishes it
// once every slot is copied.
func (s *Set[E]) migrate(n int) {
	m := s.mig
	done := copyLive(s.cur.Load(), s.tomb, &m.done, n, func(e *E) {
		place(m.raw, m.next.home(hashPointer(e)), e)
		m.used++
	})
	if done {
		s.used = m.used
		s.mig = nil
		s.cur.Store(m.next)
	}
}

// nextFind returns the slot of p in the next array, or -1.
func (s *Set[E]) nextFind(p *E) int {
	m := s.mig
	for i := m.next.home(hashPointer(p)); m.raw[i] != nil; {
		if m.raw[i] == p {
			return i
		}
		if i++; i == len(m.raw) {
			i = 0
		}
	}
	return -1
}

// nextAdd applies to the next array an Add of p that the current array
// applied to a slot already copied.
func (s *Set[E]) nextAdd(p *E) {
	m := s.mig
	if s.nextFind(p) < 0 {
		place(m.raw, m.next.home(hashPointer(p)), p)
		m.used++
	}
}

// nextRemove applies to the next array a Remove of p from a slot already
// copied: its slot becomes a tombstone.
func (s *Set[E]) nextRemove(p *E) {
	if i := s.nextFind(p); i >= 0 {
		s.mig.raw[i] = s.tomb
	}
}
