package swmr

import (
	"math/rand/v2"
	"testing"
)

// lowMigration makes tables of 8 slots and more grow step by step for the
// rest of the test.
func lowMigration(t *testing.T) {
	old := migrateMinSlots
	migrateMinSlots = 8
	t.Cleanup(func() { migrateMinSlots = old })
}

// checkMigration verifies a growth in progress: the next array holds
// exactly the live elements of the current array's copied slots.
func checkMigration(t testing.TB, tb *Table[key, elem]) {
	t.Helper()
	if m := tb.mig; m != nil {
		checkNext(t, &tb.cur.Load().array, tb.tomb, m.done, m.raw, m.used,
			func(e *elem) bool { j := tb.nextFind(e.k, tb.hashOf(e.k)); return j >= 0 && m.raw[j] == e })
	}
}

// checkSetMigration is checkMigration for a Set.
func checkSetMigration(t testing.TB, s *Set[elem]) {
	t.Helper()
	if m := s.mig; m != nil {
		checkNext(t, s.cur.Load(), s.tomb, m.done, m.raw, m.used, func(e *elem) bool { return s.nextFind(e) >= 0 })
	}
}

// checkNext verifies that next (with used live or tombstone slots) holds
// exactly the live elements of the first done slots of cur, each found by
// holds.
func checkNext(t testing.TB, cur *array[elem], tomb *elem, done int, next []*elem, used int, holds func(*elem) bool) {
	t.Helper()
	copied := 0
	for i := range done {
		e := cur.slots[i].Load()
		if e == nil || e == tomb {
			continue
		}
		copied++
		if !holds(e) {
			t.Fatalf("slot %d (%v) copied, but the next array does not hold it", i, e.k)
		}
	}
	live, n := 0, 0
	for _, e := range next {
		if e != nil {
			n++
			if e != tomb {
				live++
			}
		}
	}
	if live != copied || n != used {
		t.Fatalf("next array: %d live (want %d), %d used (counted %d)", live, copied, n, used)
	}
}

// TestTableModelMigrating is TestTableModel's grow, churn, shrink and reset
// phases with every table of 8 slots or more growing step by step.
func TestTableModelMigrating(t *testing.T) {
	lowMigration(t)
	rng := rand.New(rand.NewPCG(5, 6))
	var ops []op
	phase := func(n, keys int, kinds ...byte) {
		for range n {
			ops = append(ops, op{kind: kinds[rng.IntN(len(kinds))], key: rng.IntN(keys)})
		}
	}
	phase(3000, 12000, 0, 1, 2, 6)       // grow: many migrations
	phase(6000, 300, 0, 1, 4, 5, 6)      // churn
	phase(3000, 12000, 0, 0, 0, 4, 5, 6) // mostly inserts: copies outrun or finished early
	phase(3000, 12000, 4, 5, 6)          // shrink
	phase(3000, 12000, 0, 4, 5, 6, 7, 1) // mixed, with resets
	runModel(t, ops, nil, 7)
}

// TestTableModelMigrationOutrun: with one slot copied per write, inserts
// fill the current array before the copy ends, and the insert that would
// pass 3/4 finishes it.
func TestTableModelMigrationOutrun(t *testing.T) {
	lowMigration(t)
	old := migrateStep
	migrateStep = 1
	t.Cleanup(func() { migrateStep = old })
	rng := rand.New(rand.NewPCG(7, 8))
	var ops []op
	for range 4000 {
		ops = append(ops, op{kind: byte(rng.IntN(7)) % 4 * 2 % 7, key: rng.IntN(20000)}) // Put, Put, Delete, Get
	}
	runModel(t, ops, nil, 5)
}

// TestTableMigrationSteps: a table of at least migrateMinSlots grows by
// copying migrateStep slots per write, not at once, and every element stays
// reachable throughout.
func TestTableMigrationSteps(t *testing.T) {
	tb := New[key, elem](keyOf, nil, 0)
	model := map[key]*elem{}
	steps, maxSteps := 0, 0
	for i := 0; len(tb.cur.Load().slots) < 4*migrateMinSlots; i++ {
		e := mk(i, i)
		tb.Put(e)
		model[e.k] = e
		if tb.mig != nil {
			steps++
			maxSteps = max(maxSteps, steps)
		} else {
			steps = 0
		}
	}
	if maxSteps < migrateMinSlots/migrateStep/2 {
		t.Fatalf("the longest growth took %d writes; a step-by-step one of %d slots takes about %d", maxSteps, migrateMinSlots, migrateMinSlots/migrateStep)
	}
	checkTable(t, tb, model)
}

// TestTableConcurrentReadersMigrating is TestTableConcurrentReaders with
// every table of 8 slots or more growing step by step: readers keep finding
// every stable key, once per iteration, while growths are in progress.
func TestTableConcurrentReadersMigrating(t *testing.T) {
	lowMigration(t)
	TestTableConcurrentReaders(t)
}

// TestSetModelMigrating is TestSetModel with every set of 8 slots or more
// growing step by step.
func TestSetModelMigrating(t *testing.T) {
	lowMigration(t)
	TestSetModel(t)
}

// TestSetConcurrentReadersMigrating is TestSetConcurrentReaders with every
// set of 8 slots or more growing step by step.
func TestSetConcurrentReadersMigrating(t *testing.T) {
	lowMigration(t)
	TestSetConcurrentReaders(t)
}
