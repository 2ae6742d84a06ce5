package swmr

import (
	"sync/atomic"
	"testing"
	"unsafe"
)

func TestTablePutGetDelete(t *testing.T) {
	tb := New[key, elem](keyOf, nil, 0)
	model := map[key]*elem{}
	checkTable(t, tb, model)
	if tb.Get(key{"a", "b"}) != nil || tb.Delete(key{"a", "b"}) != nil {
		t.Fatal("empty table finds a key")
	}
	for i := range 100 {
		e := mk(i, 0)
		if old := tb.Put(e); old != nil {
			t.Fatalf("Put(%d) replaced %p", i, old)
		}
		model[e.k] = e
		checkTable(t, tb, model)
	}
	for i := 0; i < 100; i += 3 {
		k := mk(i, 0).k
		if old := tb.Delete(k); old != model[k] {
			t.Fatalf("Delete(%v) = %p, want %p", k, old, model[k])
		}
		delete(model, k)
		if tb.Delete(k) != nil {
			t.Fatalf("second Delete(%v) finds it", k)
		}
		checkTable(t, tb, model)
	}
}

func TestTableReplaceKeepsSlot(t *testing.T) {
	tb := New[key, elem](keyOf, nil, 0)
	for i := range 50 {
		tb.Put(mk(i, 0))
	}
	a := tb.cur.Load()
	for i := range 50 {
		e := mk(i, 1)
		old := tb.Put(e)
		if old == nil || old.k != e.k || old.v != 0 {
			t.Fatalf("Put(%v) replaced %v", e.k, old)
		}
		if tb.cur.Load() != a {
			t.Fatal("replacing rebuilt the array")
		}
	}
	if tb.Len() != 50 {
		t.Fatalf("Len = %d after replacing, want 50", tb.Len())
	}
	for e := range tb.All() {
		if e.v != 1 {
			t.Fatalf("%v kept its old element", e.k)
		}
	}
}

func TestTableGrowAndShrink(t *testing.T) {
	tb := New[key, elem](keyOf, nil, 0)
	if got := len(tb.cur.Load().slots); got != minSlots {
		t.Fatalf("new table has %d slots, want %d", got, minSlots)
	}
	model := map[key]*elem{}
	for i := range 10_000 {
		e := mk(i, i)
		tb.Put(e)
		model[e.k] = e
	}
	checkTable(t, tb, model)
	grown := len(tb.cur.Load().slots)
	if grown < 10_000*4/3 || grown > 10_000*2+2 {
		t.Fatalf("10k elements in %d slots", grown)
	}
	for i := range 9_990 {
		k := mk(i, 0).k
		tb.Delete(k)
		delete(model, k)
	}
	checkTable(t, tb, model)
	if got := len(tb.cur.Load().slots); got > shrinkMinSlots {
		t.Fatalf("10 elements left in %d slots, want a shrink to at most %d", got, shrinkMinSlots)
	}
}

func TestTableSizeHint(t *testing.T) {
	for _, n := range []int{0, 1, 3, 4, 100, 1000} {
		tb := New[key, elem](keyOf, nil, n)
		a := tb.cur.Load()
		for i := range n {
			tb.Put(mk(i, 0))
		}
		if tb.cur.Load() != a {
			t.Fatalf("sizeHint %d: table grew before holding %d elements", n, n)
		}
	}
}

func TestTableTombstoneReuse(t *testing.T) {
	// All keys share one hash, so they form one cluster: deleting a key in
	// the middle leaves a tombstone, and the next new key takes it.
	tb := New[key, elem](keyOf, func(key) uint64 { return 0 }, 8)
	var es []*elem
	for i := range 5 {
		es = append(es, mk(i, 0))
		tb.Put(es[i])
	}
	a := tb.cur.Load()
	tb.Delete(es[1].k)
	if a.slots[1].Load() != tb.tomb {
		t.Fatal("deleting inside a cluster left no tombstone")
	}
	used := tb.used
	e := mk(9, 0)
	tb.Put(e)
	if a.slots[1].Load() != e || tb.used != used || tb.cur.Load() != a {
		t.Fatal("the new key did not take the tombstone")
	}
	// Deleting the end of the cluster empties its slot and the tombstones
	// before it.
	tb.Delete(es[3].k)
	tb.Delete(es[2].k)
	if a.slots[2].Load() != tb.tomb {
		t.Fatal("want a tombstone at slot 2")
	}
	tb.Delete(es[4].k)
	for i := 2; i < 5; i++ {
		if a.slots[i].Load() != nil {
			t.Fatalf("slot %d not emptied", i)
		}
	}
	if tb.used != 2 {
		t.Fatalf("used = %d, want 2", tb.used)
	}
	checkTable(t, tb, map[key]*elem{es[0].k: es[0], e.k: e})
}

func TestTableTombstoneRebuild(t *testing.T) {
	// Churn in one cluster piles up tombstones until a same-size rebuild.
	tb := New[key, elem](keyOf, func(key) uint64 { return 0 }, 0)
	model := map[key]*elem{}
	for i := range 2_000 {
		e := mk(i, 0)
		tb.Put(e)
		model[e.k] = e
		if i >= 3 {
			k := mk(i-3, 0).k
			tb.Delete(k)
			delete(model, k)
		}
		checkTable(t, tb, model)
	}
	if got := len(tb.cur.Load().slots); got > 16 {
		t.Fatalf("3 live elements in %d slots", got)
	}
}

func TestTableReset(t *testing.T) {
	tb := New[key, elem](keyOf, nil, 0)
	tb.Put(mk(-1, 0))
	var es []*elem
	model := map[key]*elem{}
	for i := range 1000 {
		e := mk(i, 0)
		es = append(es, e)
		model[e.k] = e
	}
	dup := mk(7, 1) // same key as es[7]: the last one wins
	es = append(es, dup)
	model[dup.k] = dup
	tb.Reset(es)
	checkTable(t, tb, model)
	if got := len(tb.cur.Load().slots); got != bulkSlots(1001) {
		t.Fatalf("Reset of 1001 elements made %d slots, want %d", got, bulkSlots(1001))
	}
	tb.Reset(nil)
	checkTable(t, tb, map[key]*elem{})
}

func TestTableCustomHash(t *testing.T) {
	hashes := map[string]func(key) uint64{
		"few-homes": func(k key) uint64 { return uint64(len(k.name)) << 60 },
		// Every home is the last slot, so every probe wraps around.
		"last-slot": func(k key) uint64 { return ^uint64(0) - uint64(len(k.name)) },
	}
	for name, hash := range hashes {
		t.Run(name, func(t *testing.T) {
			tb := New[key, elem](keyOf, hash, 0)
			model := map[key]*elem{}
			for i := range 300 {
				e := mk(i, 0)
				tb.Put(e)
				model[e.k] = e
				if i%3 == 0 {
					k := mk(i/2, 0).k
					tb.Delete(k)
					delete(model, k)
				}
			}
			checkTable(t, tb, model)
		})
	}
}

func TestTombstonePerType(t *testing.T) {
	if a, b := tombstone[elem](), tombstone[elem](); a != b {
		t.Fatal("two tombstones for one type")
	}
	if a, b := tombstone[struct{}](), tombstone[struct{}](); a == b && a == new(struct{}) {
		t.Fatal("zero-size tombstone shares the zero-size address")
	}
	tb := New[struct{}, struct{}](func(*struct{}) struct{} { return struct{}{} }, nil, 0)
	e := new(struct{})
	tb.Put(e)
	if tb.Get(struct{}{}) != e || tb.Len() != 1 {
		t.Fatal("zero-size element lost")
	}
	tb.Delete(struct{}{})
	if tb.Len() != 0 || tb.Get(struct{}{}) != nil {
		t.Fatal("zero-size element not deleted")
	}
}

// memBytes returns the memory tb itself holds, in bytes: its header and its
// current slot array with its tags (not the elements).
func memBytes[K comparable, E any](tb *Table[K, E]) int {
	n := len(tb.cur.Load().slots)
	return int(unsafe.Sizeof(*tb)) + int(unsafe.Sizeof(tagged[struct{}]{})) + n*8 + (n+7)/8*8
}

func TestMemBytes(t *testing.T) {
	tb := New[key, elem](keyOf, nil, 0)
	for i := range 1000 {
		tb.Put(mk(i, 0))
	}
	if per := float64(memBytes(tb)) / 1000; per < 8 || per > 17 {
		t.Fatalf("%.1f bytes per element", per)
	}
}

// TestRawLayout pins what the raw views of fresh arrays assume: an
// atomic.Pointer and an atomic.Uint64 are one plain word each.
func TestRawLayout(t *testing.T) {
	if unsafe.Sizeof(atomic.Pointer[elem]{}) != unsafe.Sizeof((*elem)(nil)) ||
		unsafe.Sizeof(atomic.Uint64{}) != unsafe.Sizeof(uint64(0)) {
		t.Fatal("atomic.Pointer or atomic.Uint64 is not a single word")
	}
	a := newTagged[elem](10)
	e := &elem{}
	a.raw()[3] = e
	a.rawTags()[0] |= 7 << 24
	if a.slots[3].Load() != e || tagAt(a.tags, 3) != 7 {
		t.Fatal("raw views do not alias the atomic slots and tags")
	}
}

// TestNoAllocs checks that reads never allocate, and writes only when they
// rebuild the slot array.
func TestNoAllocs(t *testing.T) {
	tb := New[key, elem](keyOf, nil, 100)
	var s Set[elem]
	es := make([]*elem, 100)
	for i := range es {
		es[i] = mk(i, 0)
		tb.Put(es[i])
		s.Add(es[i])
	}
	absent := mk(1000, 0)
	for name, f := range map[string]func(){
		"Table.Get":     func() { tb.Get(es[7].k); tb.Get(absent.k) },
		"Table.Len":     func() { tb.Len() },
		"Table.Put":     func() { tb.Put(es[9]) },
		"Table.Delete":  func() { tb.Delete(es[5].k); tb.Put(es[5]) },
		"Set.Has":       func() { s.Has(es[7]); s.Has(absent) },
		"Set.AddRemove": func() { s.Remove(es[5]); s.Add(es[5]) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocations per run", name, n)
		}
	}
}
