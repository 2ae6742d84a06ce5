package swmr

import (
	"testing"
)

func checkSet(t testing.TB, s *Set[elem], model map[*elem]bool) {
	t.Helper()
	if s.Len() != len(model) {
		t.Fatalf("Len = %d, model has %d", s.Len(), len(model))
	}
	for p := range model {
		if !s.Has(p) {
			t.Fatalf("Has(%p) = false", p)
		}
	}
	seen := map[*elem]bool{}
	for p := range s.All() {
		if seen[p] || !model[p] {
			t.Fatalf("All yields %p (seen before: %v, member: %v)", p, seen[p], model[p])
		}
		seen[p] = true
	}
	if len(seen) != len(model) {
		t.Fatalf("All yields %d members, model has %d", len(seen), len(model))
	}
	if a := s.cur.Load(); a != nil {
		checkArray(t, a, s.tomb, s.used, len(model))
	}
	checkSetMigration(t, s)
}

func TestSetZeroValue(t *testing.T) {
	var s Set[elem]
	p := &elem{}
	if s.Has(p) || s.Len() != 0 || s.Remove(p) || s.Has(nil) {
		t.Fatal("zero set is not empty")
	}
	for range s.All() {
		t.Fatal("zero set yields a member")
	}
	if !s.Add(p) || s.Add(p) || !s.Has(p) || s.Len() != 1 {
		t.Fatal("Add on the zero set")
	}
	if !s.Remove(p) || s.Remove(p) || s.Has(p) || s.Len() != 0 {
		t.Fatal("Remove")
	}
	var r Set[elem]
	r.Reset([]*elem{p, p})
	checkSet(t, &r, map[*elem]bool{p: true})
}

func TestSetSizes(t *testing.T) {
	for _, n := range []int{1, 2, 40, 100_000} {
		s := NewSet[elem](0)
		model := map[*elem]bool{}
		ps := make([]*elem, n)
		for i := range ps {
			ps[i] = &elem{v: i}
			if !s.Add(ps[i]) {
				t.Fatalf("n=%d: Add(%d) = false", n, i)
			}
			model[ps[i]] = true
		}
		checkSet(t, s, model)
		if per := float64(8*len(s.cur.Load().slots)) / float64(n); n >= 40 && per > 16 {
			t.Fatalf("n=%d: %.1f slot bytes per member", n, per)
		}
		for i := 0; i < n; i += 2 {
			if !s.Remove(ps[i]) {
				t.Fatalf("n=%d: Remove(%d) = false", n, i)
			}
			delete(model, ps[i])
		}
		checkSet(t, s, model)
		r := NewSet[elem](0)
		r.Reset(ps)
		for i := range ps {
			model[ps[i]] = true
		}
		checkSet(t, r, model)
		for _, p := range ps {
			r.Remove(p)
		}
		checkSet(t, r, map[*elem]bool{})
		if got := len(r.cur.Load().slots); got > shrinkMinSlots {
			t.Fatalf("n=%d: empty set keeps %d slots", n, got)
		}
	}
}
