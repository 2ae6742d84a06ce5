package swmr

import (
	"math/rand/v2"
	"testing"
)

// op is one step of a model run, decoded from two bytes.
type op struct {
	kind byte // 0-3 Put, 4-5 Delete, 6 Get, 7 Reset (rare)
	key  int
}

// runModel applies ops to a Table and to a Go map, checking after each step.
// It checks the whole table every so many steps, and at the end.
func runModel(t testing.TB, ops []op, hash func(key) uint64, every int) {
	tb := New[key, elem](keyOf, hash, 0)
	model := map[key]*elem{}
	for step, o := range ops {
		switch {
		case o.kind < 4:
			e := mk(o.key, step)
			if old := tb.Put(e); old != model[e.k] {
				t.Fatalf("step %d: Put(%v) replaced %p, want %p", step, e.k, old, model[e.k])
			}
			model[e.k] = e
		case o.kind < 6:
			k := mk(o.key, 0).k
			if old := tb.Delete(k); old != model[k] {
				t.Fatalf("step %d: Delete(%v) = %p, want %p", step, k, old, model[k])
			}
			delete(model, k)
		case o.kind < 7:
			k := mk(o.key, 0).k
			if got := tb.Get(k); got != model[k] {
				t.Fatalf("step %d: Get(%v) = %p, want %p", step, k, got, model[k])
			}
		default:
			var es []*elem
			for k := range model {
				if o.key%2 == 0 {
					e := &elem{k: k, v: step}
					model[k] = e
					es = append(es, e)
				} else {
					delete(model, k)
				}
			}
			tb.Reset(es)
		}
		if step%every == 0 {
			checkTable(t, tb, model)
		}
	}
	checkTable(t, tb, model)
}

// TestTableModel runs random operations against a Go map, in phases that
// grow, churn (tombstones, same-size rebuilds) and shrink the table, with
// the default hash and with a poor one that forces long clusters.
func TestTableModel(t *testing.T) {
	hashes := map[string]func(key) uint64{
		"maphash": nil,
		"poor":    func(k key) uint64 { return uint64(len(k.name)+len(k.ns)) * 0x9E3779B97F4A7C15 },
	}
	for name, hash := range hashes {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			var ops []op
			phase := func(n, keys int, kinds ...byte) {
				for range n {
					ops = append(ops, op{kind: kinds[rng.IntN(len(kinds))], key: rng.IntN(keys)})
				}
			}
			steps, every := 3000, 64
			if name == "poor" {
				steps, every = 300, 16
			}
			phase(steps, 4*steps, 0, 1, 2, 6)          // grow
			phase(4*steps, 200, 0, 1, 4, 5, 6)         // churn on a small key space
			phase(steps, 4*steps, 4, 5, 6)             // shrink
			phase(steps, 4*steps, 0, 4, 5, 6, 7, 1, 2) // mixed, with resets
			runModel(t, ops, hash, every)
		})
	}
}

// TestSetModel runs random Add/Remove/Has/Reset against a Go map.
func TestSetModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	pool := make([]*elem, 3000)
	for i := range pool {
		pool[i] = &elem{v: i}
	}
	var s Set[elem]
	model := map[*elem]bool{}
	for step := range 30_000 {
		keys := len(pool)
		if step/5000%2 == 1 {
			keys = 50 // churn on a few members
		}
		p := pool[rng.IntN(keys)]
		switch r := rng.IntN(100); {
		case r < 45:
			if s.Add(p) == model[p] {
				t.Fatalf("step %d: Add disagrees", step)
			}
			model[p] = true
		case r < 90:
			if s.Remove(p) != model[p] {
				t.Fatalf("step %d: Remove disagrees", step)
			}
			delete(model, p)
		case r < 99:
			if s.Has(p) != model[p] {
				t.Fatalf("step %d: Has disagrees", step)
			}
		default:
			var ps []*elem
			for p := range model {
				ps = append(ps, p)
			}
			s.Reset(ps)
		}
		if step%50 == 0 {
			checkSet(t, &s, model)
		}
	}
	checkSet(t, &s, model)
}

// FuzzTable decodes the input as operations (two bytes each: kind and key
// over a small key space) and checks them against a Go map after every step.
func FuzzTable(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 4, 1, 6, 1, 6, 2})
	f.Add([]byte{0, 1, 0, 1, 4, 1, 4, 1, 0, 1, 7, 0})
	f.Add([]byte{0, 0, 1, 1, 2, 2, 3, 3, 0, 4, 1, 5, 4, 0, 4, 1, 4, 2, 5, 3, 0, 9, 7, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		var ops []op
		for i := 0; i+1 < len(data); i += 2 {
			ops = append(ops, op{kind: data[i] % 8, key: int(data[i+1] % 64)})
		}
		runModel(t, ops, nil, 1)
		runModel(t, ops, func(k key) uint64 { return uint64(len(k.name)) << 62 }, 1)
	})
}
