package consistency

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ginformer/ginformer/informer"
)

func v(n uint64) version { return version{rv: fmt.Sprint(n), n: n} }

func key(name string) informer.NamespacedKey {
	return informer.NamespacedKey{Namespace: "ns", Name: name}
}

// The record holds only what the cache has not passed: versions in any
// order of recording are all dropped once seen passes them, and the queue
// does not grow with the number of writes.
func TestRecordPrunes(t *testing.T) {
	present := map[informer.NamespacedKey]types.UID{}
	r := newRecord(func(k informer.NamespacedKey, uid types.UID) bool { return present[k] != uid })
	var next uint64
	for round := range 100 {
		ns := make([]uint64, 50)
		for i := range ns {
			next++
			ns[i] = next
		}
		// Writes return out of order (concurrent writers).
		rand.Shuffle(len(ns), func(i, j int) { ns[i], ns[j] = ns[j], ns[i] })
		for i, n := range ns {
			r.wrote(key(fmt.Sprint(i%7)), v(n))
		}
		versions, _, order := r.size()
		require.LessOrEqual(t, versions, 7)
		require.LessOrEqual(t, order, 50+64, "round %d", round)
		r.observe(next - 10) // the cache is a little behind
		versions, _, _ = r.size()
		require.LessOrEqual(t, versions, 7)
	}
	r.observe(next)
	versions, deletes, order := r.size()
	require.Zero(t, versions)
	require.Zero(t, deletes)
	require.Zero(t, order)
	require.Zero(t, r.stale)
	require.Zero(t, r.front.Load())
}

// One key written many times while the cache does not advance costs one
// entry, not one per write.
func TestRecordOneKeyManyWrites(t *testing.T) {
	r := newRecord(func(informer.NamespacedKey, types.UID) bool { return true })
	for n := uint64(1); n <= 10_000; n++ {
		r.wrote(key(fmt.Sprint(n%3)), v(n))
		versions, _, order := r.size()
		require.LessOrEqual(t, versions, 3)
		require.LessOrEqual(t, order, 2*3+65, "after %d writes", n)
	}
	r.observe(10_000)
	versions, _, order := r.size()
	require.Zero(t, versions)
	require.Zero(t, order)
	require.Zero(t, r.stale)
}

// A delete stays recorded until the cache has dropped the object, whatever
// the versions seen; a later write of the key replaces it.
func TestRecordDeletes(t *testing.T) {
	present := map[informer.NamespacedKey]types.UID{key("a"): "u1", key("b"): "u2"}
	r := newRecord(func(k informer.NamespacedKey, uid types.UID) bool { return present[k] != uid })
	r.deleted(key("a"), "u1", v(5))
	r.deleted(key("b"), "u2", v(6))
	r.observe(10)
	_, deletes, _ := r.size()
	require.Equal(t, 2, deletes, "the cache still holds both")
	_, d, ok := r.forKey(key("a"))
	require.True(t, ok)
	require.Equal(t, types.UID("u1"), d.uid)

	delete(present, key("a"))
	r.touched(key("a"))
	_, deletes, _ = r.size()
	require.Equal(t, 1, deletes)

	r.wrote(key("b"), v(11)) // recreated through the writer
	_, deletes, _ = r.size()
	require.Zero(t, deletes)
	require.Zero(t, r.deleting.Load())

	// Applied before it was recorded: not recorded.
	r.deleted(key("c"), "u3", v(7))
	_, deletes, _ = r.size()
	require.Zero(t, deletes)

	got, ds := r.forAll()
	require.Equal(t, uint64(11), got.n)
	require.Empty(t, ds)
	r.observe(11)
	got, _ = r.forAll()
	require.Zero(t, got.n)
}

// touched wakes the waiters for deletes.
func TestRecordWakes(t *testing.T) {
	present := map[informer.NamespacedKey]types.UID{key("a"): "u1"}
	r := newRecord(func(k informer.NamespacedKey, uid types.UID) bool { return present[k] != uid })
	r.deleted(key("a"), "u1", v(1))
	ch := r.changes()
	r.touched(key("other"))
	select {
	case <-ch:
	default:
		t.Fatal("not woken by a change while a delete is pending")
	}
	require.Equal(t, int64(1), r.deleting.Load())
}

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		rv string
		ok bool
	}{{"1", true}, {"123456789012", true}, {"", false}, {"0", false}, {"abc", false}, {"-1", false}} {
		_, ok := parseVersion(tc.rv)
		require.Equal(t, tc.ok, ok, tc.rv)
	}
}

// Random writes, deletes, cache changes and advances, checked against a
// plain model: the record never forgets a version the cache has not seen
// nor a delete the cache has not applied, and holds no more than it must.
func TestRecordModel(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		cache := map[informer.NamespacedKey]types.UID{} // what the cache holds
		r := newRecord(func(k informer.NamespacedKey, uid types.UID) bool { return cache[k] != uid })
		owed := map[informer.NamespacedKey]uint64{}       // highest version written per key
		pending := map[informer.NamespacedKey]types.UID{} // deletes recorded and not superseded
		var next, seen uint64
		keys := []informer.NamespacedKey{key("a"), key("b"), key("c"), key("d")}
		for step := range 2000 {
			k := keys[rng.IntN(len(keys))]
			switch op := rng.IntN(10); {
			case op < 4: // a write returns; its version is newer than any seen
				next++
				r.wrote(k, v(next))
				owed[k] = max(owed[k], next)
				delete(pending, k)
			case op < 5: // a delete of what the cache holds (or of what it has not got yet)
				uid := cache[k]
				if uid == "" {
					uid = types.UID(fmt.Sprint("u", step))
				}
				r.deleted(k, uid, v(max(owed[k], 1)))
				owed[k] = max(owed[k], 1)
				pending[k] = uid
			case op < 7: // the cache applies a change to k, then the handler is told
				if rng.IntN(2) == 0 {
					delete(cache, k)
				} else {
					cache[k] = types.UID(fmt.Sprint("u", step))
				}
				seen = max(seen, min(next, seen+uint64(rng.IntN(5))))
				r.observe(seen)
				r.touched(k)
			case op < 9: // the cache advances
				seen = max(seen, min(next, seen+uint64(rng.IntN(8))))
				r.observe(seen)
			default: // a read saw the delete applied
				if uid, ok := pending[k]; ok && cache[k] != uid {
					r.deleteDone(k, uid)
				}
			}
			for _, k := range keys {
				got, d, deleting := r.forKey(k)
				if owed[k] > seen && got.n < owed[k] {
					t.Fatalf("seed %d step %d: %v owes version %d, the record has %d (seen %d)", seed, step, k, owed[k], got.n, seen)
				}
				if uid, ok := pending[k]; ok && cache[k] == uid && (!deleting || d.uid != uid) {
					t.Fatalf("seed %d step %d: %v: delete of %s forgotten while the cache holds it", seed, step, k, uid)
				}
			}
			versions, deletes, order := r.size()
			if versions > len(keys) || deletes > len(keys) || order > 2*len(keys)+65 {
				t.Fatalf("seed %d step %d: holds %d versions, %d deletes, %d queued", seed, step, versions, deletes, order)
			}
			if hv, _ := r.forAll(); hv.n != 0 && hv.n <= seen {
				t.Fatalf("seed %d step %d: List would wait for %d, seen %d", seed, step, hv.n, seen)
			}
		}
		// The cache catches up and drops what was deleted.
		for _, k := range keys {
			if uid, ok := pending[k]; ok && cache[k] == uid {
				delete(cache, k)
			}
			r.observe(next)
			r.touched(k)
		}
		versions, deletes, order := r.size()
		require.Zero(t, versions, "seed %d", seed)
		require.Zero(t, order, "seed %d", seed)
		require.Zero(t, deletes, "seed %d", seed)
	}
}
