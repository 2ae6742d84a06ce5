package swmr

// View is the slot array of a [Table] at one moment, read by position: it
// lets a reader iterate in pieces (copy some elements, stop, go on later
// from where it stopped) without a callback. Like [Table.All], a view stays
// on the array it was taken from: an element present in the table from
// the moment the view is taken to the moment its slot is read is read
// exactly once over all positions. The zero View has no slots.
type View[E any] struct {
	a    *array[E]
	tomb *E
}

// View returns the table's current slot array. It is lock-free.
func (t *Table[K, E]) View() View[E] { return View[E]{a: &t.cur.Load().array, tomb: t.tomb} }

// View returns the set's current slot array (no slots before the first
// Add). It is lock-free.
func (s *Set[E]) View() View[E] { return View[E]{a: s.cur.Load(), tomb: s.tomb} }

// Slots returns the number of positions, 0 for the zero View.
func (v View[E]) Slots() int {
	if v.a == nil {
		return 0
	}
	return len(v.a.slots)
}

// At returns the element in slot i, or nil if the slot is empty or was
// deleted. It is lock-free.
func (v View[E]) At(i int) *E {
	e := v.a.slots[i].Load()
	if e == v.tomb { // nil stays nil
		return nil
	}
	return e
}
