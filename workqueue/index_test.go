package workqueue

import (
	"math/rand/v2"
	"testing"
)

// TestKeyIndexModel inserts and removes random keys against a plain map,
// checking after every step that every key present is found at its slot and
// no key absent is found: growth, wrap-around at the end of the table and
// backward-shift removal included.
func TestKeyIndexModel(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var ix keyIndex
		var entries slab[int]
		model := map[int]int32{}
		universe := 50 + rng.IntN(400)
		for step := range 3000 {
			k := rng.IntN(universe)
			if slot, ok := model[k]; ok && rng.IntN(2) == 0 {
				ix.remove(entries.at(slot).hash, slot)
				entries.release(slot)
				delete(model, k)
			} else if !ok {
				ix.ensureRoom()
				h := hashKey(k)
				pos, found := find(&ix, &entries, k, h)
				if found {
					t.Fatalf("seed %d step %d: absent key %d found", seed, step, k)
				}
				slot := entries.alloc()
				*entries.at(slot) = entry[int]{key: k, hash: h}
				ix.insertAt(pos, h, slot)
				model[k] = slot
			}
			if ix.n != len(model) {
				t.Fatalf("seed %d step %d: %d keys, model %d", seed, step, ix.n, len(model))
			}
			if step%50 != 0 {
				continue
			}
			for k := range universe {
				got, ok := lookup(&ix, &entries, k, hashKey(k))
				want, wok := model[k]
				if ok != wok || ok && got != want {
					t.Fatalf("seed %d step %d: key %d → %d, %v; model %d, %v", seed, step, k, got, ok, want, wok)
				}
			}
		}
	}
}
