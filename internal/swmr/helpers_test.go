package swmr

import (
	"fmt"
	"testing"
)

type key struct{ ns, name string }

type elem struct {
	k key
	v int
}

func keyOf(e *elem) key { return e.k }

func mk(i, v int) *elem {
	return &elem{k: key{ns: fmt.Sprintf("ns%d", i%7), name: fmt.Sprintf("n%d", i)}, v: v}
}

// checkTable verifies the table against model (key → element) and the
// writer's bookkeeping against the slot array.
func checkTable(t testing.TB, tb *Table[key, elem], model map[key]*elem) {
	t.Helper()
	if tb.Len() != len(model) {
		t.Fatalf("Len = %d, model has %d", tb.Len(), len(model))
	}
	for k, e := range model {
		if got := tb.Get(k); got != e {
			t.Fatalf("Get(%v) = %p, want %p", k, got, e)
		}
	}
	seen := make(map[key]bool, len(model))
	for e := range tb.All() {
		if seen[e.k] {
			t.Fatalf("All yields %v twice", e.k)
		}
		seen[e.k] = true
		if model[e.k] != e {
			t.Fatalf("All yields %v = %p, model has %p", e.k, e, model[e.k])
		}
	}
	if len(seen) != len(model) {
		t.Fatalf("All yields %d elements, model has %d", len(seen), len(model))
	}
	checkMigration(t, tb)
	a := tb.cur.Load()
	checkArray(t, &a.array, tb.tomb, tb.used, len(model))
	for i := range a.slots {
		e, tag := a.slots[i].Load(), tagAt(a.tags, i)
		if (e == nil) != (tag == 0) {
			t.Fatalf("slot %d: element %p with tag %d", i, e, tag)
		}
		if e != nil && e != tb.tomb && tag != tagOf(tb.hashOf(e.k)) {
			t.Fatalf("slot %d: tag %d, want %d", i, tag, tagOf(tb.hashOf(e.k)))
		}
	}
}

// checkArray verifies the used count and the load bound of a.
func checkArray[E any](t testing.TB, a *array[E], tomb *E, used, live int) {
	t.Helper()
	nonNil, alive := 0, 0
	for i := range a.slots {
		switch e := a.slots[i].Load(); {
		case e == nil:
		case e == tomb:
			nonNil++
		default:
			nonNil++
			alive++
		}
	}
	if nonNil != used || alive != live {
		t.Fatalf("array holds %d used slots (%d live), writer counts %d (%d live)", nonNil, alive, used, live)
	}
	if overloaded(used, len(a.slots)) {
		t.Fatalf("%d used slots of %d pass the maximum load", used, len(a.slots))
	}
}
