package informer

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fifoObjVersion(o fifoObj) string {
	if o.V == 0 {
		return ""
	}
	return strconv.Itoa(o.V)
}

func newVersionedFIFO(t *testing.T, known KnownObjects[string, fifoObj]) *DeltaFIFO[string, fifoObj] {
	t.Helper()
	f, err := NewDeltaFIFO(DeltaFIFOOptions[string, fifoObj]{KeyFunc: fifoKey, KnownObjects: known, ObjectVersion: fifoObjVersion})
	require.NoError(t, err)
	return f
}

// drainAll pops every queued key, in batches, and returns copies.
func drainAll(t *testing.T, f *DeltaFIFO[string, fifoObj]) []popped {
	t.Helper()
	var out []popped
	for f.Len() > 0 {
		require.NoError(t, f.PopBatch(context.Background(), 100, func(b []Item[string, fifoObj]) error {
			for _, it := range b {
				out = append(out, popped{it.Key, append(Deltas[fifoObj]{}, it.Deltas...), it.IsInInitialList})
			}
			return nil
		}))
	}
	return out
}

// TestDeltaFIFOListDropsUnchanged: objects listed at the version of the
// newest state the queue holds (queued, else known) are dropped; changed,
// new and deleted ones are queued as Replace would.
func TestDeltaFIFOListDropsUnchanged(t *testing.T) {
	known := newFakeKnown(o("a", 1), o("b", 1), o("c", 1), o("d", 1), o("x", 1), o("z", 0))
	f := newVersionedFIFO(t, known)
	require.NoError(t, f.Update(o("b", 2))) // queued: b's newest state is 2
	require.NoError(t, f.Delete(o("x", 1))) // queued deletion: x has no state
	l := f.BeginList()
	require.NoError(t, l.AddPage([]fifoObj{o("a", 1), o("b", 2), o("x", 1)}))
	require.NoError(t, l.AddPage([]fifoObj{o("c", 2), o("e", 1), o("z", 0)}))
	require.NoError(t, l.Commit("9"))
	assert.Equal(t, "9", f.LastVersion())
	assert.Equal(t, []popped{
		{key: "b", deltas: Deltas[fifoObj]{upd(o("b", 2))}},                  // unchanged since its queued update
		{key: "x", deltas: Deltas[fifoObj]{del(o("x", 1)), repl(o("x", 1))}}, // back after its deletion
		{key: "c", deltas: Deltas[fifoObj]{repl(o("c", 2))}},
		{key: "e", deltas: Deltas[fifoObj]{repl(o("e", 1))}},
		{key: "z", deltas: Deltas[fifoObj]{repl(o("z", 0))}}, // "" equals nothing
		{key: "d", deltas: Deltas[fifoObj]{tomb(o("d", 1))}},
	}, drainAll(t, f), "a is dropped and not tombstoned")
}

// TestDeltaFIFOListComparesInFlight: a key in flight is compared with its
// newest in-flight delta.
func TestDeltaFIFOListComparesInFlight(t *testing.T) {
	known := newFakeKnown(o("a", 1))
	f := newVersionedFIFO(t, known)
	require.NoError(t, f.Update(o("a", 2)))
	var got []popped
	require.NoError(t, f.PopBatch(context.Background(), 10, func([]Item[string, fifoObj]) error {
		l := f.BeginList()
		require.NoError(t, l.AddPage([]fifoObj{o("a", 2), o("b", 1)}))
		require.NoError(t, l.Commit("5"))
		return nil
	}))
	got = drainAll(t, f)
	assert.Equal(t, []popped{{key: "b", deltas: Deltas[fifoObj]{repl(o("b", 1))}}}, got,
		"a (in flight at version 2) is neither queued again nor tombstoned")
}

// TestDeltaFIFOListWithoutObjectVersion: without ObjectVersion a list is a
// Replace.
func TestDeltaFIFOListWithoutObjectVersion(t *testing.T) {
	f := newTestFIFO(t, newFakeKnown(o("a", 1), o("b", 1)))
	l := f.BeginList()
	require.NoError(t, l.AddPage([]fifoObj{o("a", 1)}))
	require.NoError(t, l.Commit("2"))
	assert.Equal(t, []popped{
		{key: "a", deltas: Deltas[fifoObj]{repl(o("a", 1))}, initial: true},
		{key: "b", deltas: Deltas[fifoObj]{tomb(o("b", 1))}, initial: true},
	}, drainAll(t, f))
}

// TestDeltaFIFOListKeyError: a key error refuses the page; an abandoned
// builder changes nothing.
func TestDeltaFIFOListKeyError(t *testing.T) {
	f := newVersionedFIFO(t, newFakeKnown(o("a", 1)))
	l := f.BeginList()
	require.NoError(t, l.AddPage([]fifoObj{o("a", 2)}))
	err := l.AddPage([]fifoObj{o("b", 1), o("bad", 1)})
	require.ErrorIs(t, err, ErrKeyFunc)
	assert.Contains(t, err.Error(), "object 2")
	assert.Zero(t, f.Len())
	assert.False(t, f.HasSynced())
}

// TestDeltaFIFOReplaceEmptyDuplicates: a Replace into an empty queue queues
// a key listed twice once, as client-go's DeltaFIFO does: one entry, at the
// place of its first listing, with a Replaced delta per listing in list
// order; a change arriving before the pop joins it; the key counts once for
// HasSynced.
func TestDeltaFIFOReplaceEmptyDuplicates(t *testing.T) {
	f := newTestFIFO(t, nil)
	require.NoError(t, f.Replace([]fifoObj{o("a", 1), o("b", 1), o("a", 2)}, "1"))
	require.NoError(t, f.Update(o("a", 3)))
	require.NoError(t, f.Add(o("c", 1)))
	assert.Equal(t, 3, f.Len())
	assert.Equal(t, popped{key: "a", deltas: Deltas[fifoObj]{repl(o("a", 1)), repl(o("a", 2)), upd(o("a", 3))}, initial: true}, popOne(t, f))
	assert.False(t, f.HasSynced(), "b is left")
	assert.Equal(t, popped{key: "b", deltas: Deltas[fifoObj]{repl(o("b", 1))}, initial: true}, popOne(t, f))
	assert.True(t, f.HasSynced(), "two keys, two pops")
	assert.Equal(t, []popped{{key: "c", deltas: Deltas[fifoObj]{add(o("c", 1))}}}, drainAll(t, f))
	// Popped keys are not queued any more, though items may still map them.
	require.NoError(t, f.Delete(o("b", 1)))
	assert.Zero(t, f.Len(), "b is neither queued, in flight nor known: its delete is ignored")
}

// TestDeltaFIFOReplaceEmptyDuplicatesBatch: one PopBatch of a first list
// that names a key twice hands the key out once, with both deltas.
func TestDeltaFIFOReplaceEmptyDuplicatesBatch(t *testing.T) {
	f := newTestFIFO(t, nil)
	require.NoError(t, f.Replace([]fifoObj{o("a", 1), o("b", 1), o("a", 2), o("a", 3)}, "1"))
	err := f.PopBatch(context.Background(), 10, func(b []Item[string, fifoObj]) error {
		require.Len(t, b, 2)
		assert.Equal(t, Item[string, fifoObj]{Key: "a", Deltas: Deltas[fifoObj]{repl(o("a", 1)), repl(o("a", 2)), repl(o("a", 3))}, IsInInitialList: true}, b[0])
		assert.Equal(t, Item[string, fifoObj]{Key: "b", Deltas: Deltas[fifoObj]{repl(o("b", 1))}, IsInInitialList: true}, b[1])
		return nil
	})
	require.NoError(t, err)
	assert.True(t, f.HasSynced())
	assert.Zero(t, f.Len())
}

// TestDeltaFIFOStaleMappingsAreSwept: the key map does not grow without
// bound when the queue never empties.
func TestDeltaFIFOStaleMappingsAreSwept(t *testing.T) {
	f := newTestFIFO(t, nil)
	require.NoError(t, f.Add(o("keep", 0)))
	for i := range 20_000 {
		require.NoError(t, f.Add(o("k"+strconv.Itoa(i), i)))
		popOne(t, f) // the queue holds one key after each pop
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	assert.LessOrEqual(t, len(f.items), 2*f.peak+sweepMin+1)
}

// TestDeltaFIFOReplaceEmptyDuplicatesRequeue: requeueing the batch of a
// first list that names a key twice puts the key back once, its deltas in
// list order, counted once for HasSynced.
func TestDeltaFIFOReplaceEmptyDuplicatesRequeue(t *testing.T) {
	f := newTestFIFO(t, nil)
	require.NoError(t, f.Replace([]fifoObj{o("a", 1), o("b", 1), o("a", 2)}, "1"))
	err := f.PopBatch(context.Background(), 10, func(b []Item[string, fifoObj]) error {
		require.Len(t, b, 2)
		return ErrRequeue
	})
	require.ErrorIs(t, err, ErrRequeue)
	assert.False(t, f.HasSynced())
	assert.Equal(t, []popped{
		{key: "a", deltas: Deltas[fifoObj]{repl(o("a", 1)), repl(o("a", 2))}, initial: true},
		{key: "b", deltas: Deltas[fifoObj]{repl(o("b", 1))}, initial: true},
	}, drainAll(t, f))
	assert.True(t, f.HasSynced())
}

// TestDeltaFIFOListFresh: a list begun on an empty queue keeps its keys as
// the items of the queue's bulk batch, page after page, a key listed twice
// (on two pages) as one item; if the queue is no longer empty at the commit (here the
// known objects gained a key), the list is merged as Replace would.
func TestDeltaFIFOListFresh(t *testing.T) {
	f := newVersionedFIFO(t, newFakeKnown())
	l := f.BeginList()
	require.NoError(t, l.AddPage([]fifoObj{o("a", 1), o("b", 1)}))
	require.NoError(t, l.AddPage([]fifoObj{o("a", 2)}))
	require.NoError(t, l.Commit("1"))
	assert.Equal(t, []popped{
		{key: "a", deltas: Deltas[fifoObj]{repl(o("a", 1)), repl(o("a", 2))}, initial: true},
		{key: "b", deltas: Deltas[fifoObj]{repl(o("b", 1))}, initial: true},
	}, drainAll(t, f))
	assert.True(t, f.HasSynced())

	known := newFakeKnown()
	f = newVersionedFIFO(t, known)
	l = f.BeginList()
	require.NoError(t, l.AddPage([]fifoObj{o("a", 1), o("b", 1)}))
	known.apply("z", Deltas[fifoObj]{add(o("z", 1))})
	require.NoError(t, l.AddPage([]fifoObj{o("c", 1)}))
	require.NoError(t, l.Commit("2"))
	assert.Equal(t, "2", f.LastVersion())
	assert.Equal(t, []popped{
		{key: "a", deltas: Deltas[fifoObj]{repl(o("a", 1))}, initial: true},
		{key: "b", deltas: Deltas[fifoObj]{repl(o("b", 1))}, initial: true},
		{key: "c", deltas: Deltas[fifoObj]{repl(o("c", 1))}, initial: true},
		{key: "z", deltas: Deltas[fifoObj]{tomb(o("z", 1))}, initial: true},
	}, drainAll(t, f))
}
