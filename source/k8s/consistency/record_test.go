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
