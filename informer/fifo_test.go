package informer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newTestFIFO(t *testing.T, known KnownObjects[string, fifoObj]) *DeltaFIFO[string, fifoObj] {
	t.Helper()
	f, err := NewDeltaFIFO(DeltaFIFOOptions[string, fifoObj]{KeyFunc: fifoKey, KnownObjects: known})
	require.NoError(t, err)
	return f
}

func o(name string, v int) fifoObj { return fifoObj{Name: name, V: v} }

func add(o fifoObj) Delta[fifoObj]  { return Delta[fifoObj]{Type: Added, Object: o} }
func upd(o fifoObj) Delta[fifoObj]  { return Delta[fifoObj]{Type: Updated, Object: o} }
func del(o fifoObj) Delta[fifoObj]  { return Delta[fifoObj]{Type: Deleted, Object: o} }
func repl(o fifoObj) Delta[fifoObj] { return Delta[fifoObj]{Type: Replaced, Object: o} }
func syn(o fifoObj) Delta[fifoObj]  { return Delta[fifoObj]{Type: Sync, Object: o} }
func tomb(o fifoObj) Delta[fifoObj] {
	return Delta[fifoObj]{Type: Deleted, Object: o, FinalStateUnknown: true}
}

type popped struct {
	key     string
	deltas  Deltas[fifoObj]
	initial bool
}

// popOne pops one key (the queue must not be empty) and returns a copy.
func popOne(t *testing.T, f *DeltaFIFO[string, fifoObj]) popped {
	t.Helper()
	var p popped
	err := f.Pop(context.Background(), func(key string, ds Deltas[fifoObj], initial bool) error {
		p = popped{key, append(Deltas[fifoObj]{}, ds...), initial}
		return nil
	})
	require.NoError(t, err)
	return p
}

func TestNewDeltaFIFOInvalid(t *testing.T) {
	_, err := NewDeltaFIFO(DeltaFIFOOptions[string, fifoObj]{})
	require.ErrorIs(t, err, ErrInvalidOptions)
}

func TestDeltaTypeString(t *testing.T) {
	for typ, want := range map[DeltaType]string{Added: "Added", Updated: "Updated", Deleted: "Deleted",
		Replaced: "Replaced", Sync: "Sync", 0: "DeltaType(0)", 42: "DeltaType(42)"} {
		assert.Equal(t, want, typ.String())
	}
}

func TestDeltasOldestNewest(t *testing.T) {
	var empty Deltas[fifoObj]
	_, ok := empty.Oldest()
	require.False(t, ok)
	_, ok = empty.Newest()
	require.False(t, ok)
	ds := Deltas[fifoObj]{add(o("a", 1)), upd(o("a", 2))}
	d, ok := ds.Oldest()
	require.True(t, ok)
	require.Equal(t, add(o("a", 1)), d)
	d, ok = ds.Newest()
	require.True(t, ok)
	require.Equal(t, upd(o("a", 2)), d)
}

func TestDeltaFIFOBasicOrderAndAccumulation(t *testing.T) {
	f := newTestFIFO(t, nil)
	require.NoError(t, f.Add(o("a", 1)))
	require.NoError(t, f.Add(o("b", 1)))
	require.NoError(t, f.Update(o("a", 2)))
	require.NoError(t, f.Add(o("c", 1)))
	require.NoError(t, f.Update(o("b", 2)))
	require.Equal(t, 3, f.Len())
	require.Equal(t, popped{"a", Deltas[fifoObj]{add(o("a", 1)), upd(o("a", 2))}, false}, popOne(t, f))
	require.Equal(t, popped{"b", Deltas[fifoObj]{add(o("b", 1)), upd(o("b", 2))}, false}, popOne(t, f))
	require.Equal(t, popped{"c", Deltas[fifoObj]{add(o("c", 1))}, false}, popOne(t, f))
	require.Equal(t, 0, f.Len())
}

func TestDeltaFIFOKeyFuncErrors(t *testing.T) {
	f := newTestFIFO(t, nil)
	require.NoError(t, f.Add(o("a", 1)))
	for _, name := range []string{"bad", "panic"} {
		err := f.Add(o(name, 1))
		require.ErrorIs(t, err, ErrKeyFunc)
		err = f.Replace([]fifoObj{o("x", 1), o(name, 1)}, "v9")
		require.ErrorIs(t, err, ErrKeyFunc)
	}
	require.ErrorIs(t, f.Add(o("bad", 1)), errBadKey)
	order, items, _ := f.queueSnapshot()
	require.Equal(t, []string{"a"}, order)
	require.Equal(t, Deltas[fifoObj]{add(o("a", 1))}, items["a"])
	require.Equal(t, "", f.LastVersion())
}

func TestDeltaFIFODeleteDedup(t *testing.T) {
	a1, a2, a3 := o("a", 1), o("a", 2), o("a", 3)
	tests := []struct {
		name string
		ops  func(f *DeltaFIFO[string, fifoObj])
		want Deltas[fifoObj]
	}{
		{"two deletes keep newer", func(f *DeltaFIFO[string, fifoObj]) {
			_ = f.Add(a1)
			_ = f.Delete(a2)
			_ = f.Delete(a3)
		}, Deltas[fifoObj]{add(a1), del(a3)}},
		{"observed delete beats tombstone", func(f *DeltaFIFO[string, fifoObj]) {
			_ = f.Add(a1)
			_ = f.Delete(a2)
			_ = f.Replace(nil, "1") // would add a tombstone: skipped, newest is Deleted
		}, Deltas[fifoObj]{add(a1), del(a2)}},
		{"update between deletes", func(f *DeltaFIFO[string, fifoObj]) {
			_ = f.Add(a1)
			_ = f.Delete(a1)
			_ = f.Update(a2)
			_ = f.Delete(a3)
		}, Deltas[fifoObj]{add(a1), del(a1), upd(a2), del(a3)}},
		{"tombstone then observed delete keeps observed", func(f *DeltaFIFO[string, fifoObj]) {
			_ = f.Add(a1)
			_ = f.Replace(nil, "1")
			_ = f.Delete(a2)
		}, Deltas[fifoObj]{add(a1), del(a2)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newTestFIFO(t, nil)
			tt.ops(f)
			_, items, _ := f.queueSnapshot()
			require.Equal(t, tt.want, items["a"])
		})
	}
}

func TestDeltaFIFODeleteUnknownIgnored(t *testing.T) {
	f := newTestFIFO(t, nil)
	require.NoError(t, f.Delete(o("a", 1)))
	require.Equal(t, 0, f.Len())
	require.True(t, f.HasSynced(), "Delete before any Replace populates")

	f = newTestFIFO(t, newFakeKnown(o("k", 1)))
	require.NoError(t, f.Delete(o("a", 1)))
	require.Equal(t, 0, f.Len())
	require.NoError(t, f.Delete(o("k", 2)))
	require.Equal(t, popped{"k", Deltas[fifoObj]{del(o("k", 2))}, false}, popOne(t, f))
}

func TestDeltaFIFOReplaceTombstones(t *testing.T) {
	known := newFakeKnown(o("a", 1), o("b", 1), o("c", 1))
	f := newTestFIFO(t, known)
	require.NoError(t, f.Update(o("b", 2)))
	require.NoError(t, f.Add(o("q", 1))) // only queued, not known
	require.NoError(t, f.Replace([]fifoObj{o("a", 3)}, "v1"))
	require.Equal(t, "v1", f.LastVersion())
	order, items, _ := f.queueSnapshot()
	require.Equal(t, []string{"b", "q", "a", "c"}, order)
	require.Equal(t, map[string]Deltas[fifoObj]{
		"a": {repl(o("a", 3))},
		"b": {upd(o("b", 2)), tomb(o("b", 2))}, // newest queued state, not the known one
		"q": {add(o("q", 1)), tomb(o("q", 1))},
		"c": {tomb(o("c", 1))},
	}, items)
}

func TestDeltaFIFOReplaceNoKnownDeletesQueuedOnly(t *testing.T) {
	f := newTestFIFO(t, nil)
	require.NoError(t, f.Add(o("a", 1)))
	require.NoError(t, f.Add(o("b", 1)))
	require.NoError(t, f.Replace([]fifoObj{o("a", 2), o("z", 1)}, "v2"))
	order, items, _ := f.queueSnapshot()
	require.Equal(t, []string{"a", "b", "z"}, order)
	require.Equal(t, Deltas[fifoObj]{add(o("a", 1)), repl(o("a", 2))}, items["a"])
	require.Equal(t, Deltas[fifoObj]{add(o("b", 1)), tomb(o("b", 1))}, items["b"])
	require.Equal(t, Deltas[fifoObj]{repl(o("z", 1))}, items["z"])
}

func TestDeltaFIFOResync(t *testing.T) {
	f := newTestFIFO(t, nil)
	require.NoError(t, f.Resync()) // no known objects: nothing
	require.Equal(t, 0, f.Len())

	f = newTestFIFO(t, newFakeKnown(o("a", 1), o("b", 1)))
	require.NoError(t, f.Update(o("a", 2)))
	require.NoError(t, f.Resync())
	order, items, _ := f.queueSnapshot()
	require.Equal(t, []string{"a", "b"}, order)
	require.Equal(t, Deltas[fifoObj]{upd(o("a", 2))}, items["a"], "queued key not resynced")
	require.Equal(t, Deltas[fifoObj]{syn(o("b", 1))}, items["b"])

	f = newTestFIFO(t, newFakeKnown(o("a", 1)))
	require.NoError(t, f.Resync())
	require.False(t, f.HasSynced(), "Resync does not populate")
}

func TestDeltaFIFOHasSynced(t *testing.T) {
	tests := []struct {
		name  string
		known *fakeKnown
		ops   func(f *DeltaFIFO[string, fifoObj])
		pops  []bool // HasSynced expected after each successive Pop
		want  bool   // before any pop
	}{
		{name: "new", ops: func(f *DeltaFIFO[string, fifoObj]) {}, want: false},
		{name: "add first", ops: func(f *DeltaFIFO[string, fifoObj]) { _ = f.Add(o("a", 1)) }, want: true},
		{name: "update first", ops: func(f *DeltaFIFO[string, fifoObj]) { _ = f.Update(o("a", 1)) }, want: true},
		{name: "empty replace", ops: func(f *DeltaFIFO[string, fifoObj]) { _ = f.Replace(nil, "1") }, want: true},
		{name: "replace then pops", ops: func(f *DeltaFIFO[string, fifoObj]) {
			_ = f.Replace([]fifoObj{o("a", 1), o("b", 1)}, "1")
			_ = f.Add(o("c", 1))
		}, pops: []bool{false, true, true}},
		{name: "duplicate keys count once", known: newFakeKnown(o("a", 0)), ops: func(f *DeltaFIFO[string, fifoObj]) {
			_ = f.Replace([]fifoObj{o("a", 1), o("a", 2)}, "1")
		}, pops: []bool{true}},
		{name: "duplicate keys into an empty queue count once", ops: func(f *DeltaFIFO[string, fifoObj]) {
			_ = f.Replace([]fifoObj{o("a", 1), o("a", 2)}, "1")
		}, pops: []bool{true}},
		{name: "tombstones count", known: newFakeKnown(o("k", 1)), ops: func(f *DeltaFIFO[string, fifoObj]) {
			_ = f.Replace([]fifoObj{o("a", 1)}, "1")
		}, pops: []bool{false, true}},
		{name: "second replace does not reset", ops: func(f *DeltaFIFO[string, fifoObj]) {
			_ = f.Replace([]fifoObj{o("a", 1)}, "1")
			_ = f.Replace([]fifoObj{o("b", 1)}, "2")
		}, pops: []bool{true, true}},
		{name: "add before replace", ops: func(f *DeltaFIFO[string, fifoObj]) {
			_ = f.Add(o("x", 1))
			_ = f.Replace([]fifoObj{o("a", 1)}, "1")
		}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var known KnownObjects[string, fifoObj]
			if tt.known != nil {
				known = tt.known
			}
			f := newTestFIFO(t, known)
			tt.ops(f)
			require.Equal(t, tt.want, f.HasSynced())
			for i, want := range tt.pops {
				popOne(t, f)
				require.Equal(t, want, f.HasSynced(), "after pop %d", i)
				select {
				case <-f.Synced():
					require.True(t, want)
				default:
					require.False(t, want)
				}
			}
		})
	}
}

func TestDeltaFIFOIsInInitialList(t *testing.T) {
	f := newTestFIFO(t, nil)
	require.NoError(t, f.Replace([]fifoObj{o("a", 1)}, "1"))
	require.NoError(t, f.Add(o("b", 1)))
	require.NoError(t, f.Update(o("a", 2)))
	require.Equal(t, popped{"a", Deltas[fifoObj]{repl(o("a", 1)), upd(o("a", 2))}, true}, popOne(t, f))
	require.Equal(t, popped{"b", Deltas[fifoObj]{add(o("b", 1))}, false}, popOne(t, f))
}

func TestDeltaFIFORequeue(t *testing.T) {
	f := newTestFIFO(t, nil)
	require.NoError(t, f.Replace([]fifoObj{o("a", 1), o("b", 1)}, "1"))
	// Requeue a while newer deltas arrive for it: ahead of them, place kept by the new entry.
	err := f.Pop(context.Background(), func(key string, ds Deltas[fifoObj], initial bool) error {
		require.Equal(t, "a", key)
		require.NoError(t, f.Update(o("a", 2))) // no lock held: calling back is fine
		return fmt.Errorf("later: %w", ErrRequeue)
	})
	require.ErrorIs(t, err, ErrRequeue)
	require.False(t, f.HasSynced())
	require.Equal(t, popped{"b", Deltas[fifoObj]{repl(o("b", 1))}, true}, popOne(t, f))
	require.False(t, f.HasSynced(), "requeued initial item not processed yet")
	require.Equal(t, popped{"a", Deltas[fifoObj]{repl(o("a", 1)), upd(o("a", 2))}, true}, popOne(t, f))
	require.True(t, f.HasSynced())

	// Requeue of a key not queued again: to the tail.
	require.NoError(t, f.Add(o("x", 1)))
	require.NoError(t, f.Add(o("y", 1)))
	err = f.Pop(context.Background(), func(string, Deltas[fifoObj], bool) error { return ErrRequeue })
	require.ErrorIs(t, err, ErrRequeue)
	order, _, _ := f.queueSnapshot()
	require.Equal(t, []string{"y", "x"}, order)

	// Other errors: returned, deltas consumed.
	boom := errors.New("boom")
	err = f.Pop(context.Background(), func(string, Deltas[fifoObj], bool) error { return boom })
	require.ErrorIs(t, err, boom)
	require.Equal(t, 1, f.Len())
}

func TestDeltaFIFOProcessPanicRequeues(t *testing.T) {
	f := newTestFIFO(t, nil)
	require.NoError(t, f.Add(o("a", 1)))
	require.Panics(t, func() {
		_ = f.Pop(context.Background(), func(string, Deltas[fifoObj], bool) error { panic("x") })
	})
	require.Equal(t, popped{"a", Deltas[fifoObj]{add(o("a", 1))}, false}, popOne(t, f))
}

func TestDeltaFIFOInFlight(t *testing.T) {
	f := newTestFIFO(t, nil)
	require.NoError(t, f.Add(o("a", 1)))
	require.NoError(t, f.Add(o("b", 1)))
	err := f.Pop(context.Background(), func(key string, _ Deltas[fifoObj], _ bool) error {
		// a is in flight: a Delete of it is not ignored, and Replace tombstones it.
		require.NoError(t, f.Replace([]fifoObj{o("b", 2)}, "1"))
		require.NoError(t, f.Delete(o("a", 9)))
		return nil
	})
	require.NoError(t, err)
	order, items, _ := f.queueSnapshot()
	require.Equal(t, []string{"b", "a"}, order)
	require.Equal(t, Deltas[fifoObj]{del(o("a", 9))}, items["a"], "observed delete replaces the tombstone")
}

func TestDeltaFIFOPopBatch(t *testing.T) {
	f := newTestFIFO(t, nil)
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		require.NoError(t, f.Add(o(n, 1)))
	}
	require.NoError(t, f.Update(o("b", 2)))
	var keys []string
	err := f.PopBatch(context.Background(), 3, func(batch []Item[string, fifoObj]) error {
		for _, it := range batch {
			keys = append(keys, it.Key)
		}
		require.Equal(t, Deltas[fifoObj]{add(o("b", 1)), upd(o("b", 2))}, batch[1].Deltas)
		return ErrRequeue
	})
	require.ErrorIs(t, err, ErrRequeue)
	require.Equal(t, []string{"a", "b", "c"}, keys)
	order, _, _ := f.queueSnapshot()
	require.Equal(t, []string{"d", "e", "a", "b", "c"}, order)
	err = f.PopBatch(context.Background(), 0, func(batch []Item[string, fifoObj]) error {
		require.Len(t, batch, 1)
		return nil
	})
	require.NoError(t, err)
	err = f.PopBatch(context.Background(), 100, func(batch []Item[string, fifoObj]) error {
		require.Len(t, batch, 4)
		require.Equal(t, Deltas[fifoObj]{add(o("b", 1)), upd(o("b", 2))}, batch[2].Deltas)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 0, f.Len())
}

func TestDeltaFIFOCloseWakesPop(t *testing.T) {
	f := newTestFIFO(t, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		wg.Go(func() {
			errs <- f.Pop(context.Background(), func(string, Deltas[fifoObj], bool) error { return nil })
		})
	}
	f.Close()
	wg.Wait()
	require.ErrorIs(t, <-errs, ErrClosed)
	require.ErrorIs(t, <-errs, ErrClosed)
}

func TestDeltaFIFOCloseKeepsQueuedItems(t *testing.T) {
	f := newTestFIFO(t, nil)
	require.NoError(t, f.Add(o("a", 1)))
	f.Close()
	f.Close() // idempotent
	require.ErrorIs(t, f.Add(o("b", 1)), ErrClosed)
	require.ErrorIs(t, f.Replace(nil, "1"), ErrClosed)
	require.ErrorIs(t, f.Resync(), ErrClosed)
	require.Equal(t, popped{"a", Deltas[fifoObj]{add(o("a", 1))}, false}, popOne(t, f))
	err := f.PopBatch(context.Background(), 10, func([]Item[string, fifoObj]) error { return nil })
	require.ErrorIs(t, err, ErrClosed)
}

func TestDeltaFIFOPopContext(t *testing.T) {
	f := newTestFIFO(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- f.Pop(ctx, func(string, Deltas[fifoObj], bool) error { return nil })
	}()
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	// An already-cancelled context pops nothing even if items are queued.
	require.NoError(t, f.Add(o("a", 1)))
	require.ErrorIs(t, f.Pop(ctx, func(string, Deltas[fifoObj], bool) error { return nil }), context.Canceled)
	require.Equal(t, 1, f.Len())
}

func TestDeltaFIFOPopsSerialized(t *testing.T) {
	f := newTestFIFO(t, nil)
	require.NoError(t, f.Add(o("a", 1)))
	require.NoError(t, f.Add(o("b", 1)))
	var active, maxActive atomic.Int32
	release := make(chan struct{})
	entered := make(chan struct{}, 2)
	process := func(string, Deltas[fifoObj], bool) error {
		n := active.Add(1)
		if n > maxActive.Load() {
			maxActive.Store(n)
		}
		entered <- struct{}{}
		<-release
		active.Add(-1)
		return nil
	}
	var wg sync.WaitGroup
	wg.Go(func() { assert.NoError(t, f.Pop(context.Background(), process)) })
	<-entered
	wg.Go(func() { assert.NoError(t, f.Pop(context.Background(), process)) })
	close(release)
	wg.Wait()
	require.Equal(t, int32(1), maxActive.Load())
	require.Equal(t, 0, f.Len())
}

// TestDeltaFIFOConcurrent runs producers and a consumer under -race and checks
// that every key's final state reaches the consumer's store.
func TestDeltaFIFOConcurrent(t *testing.T) {
	known := newFakeKnown()
	f := newTestFIFO(t, known)
	const producers, perProducer = 4, 500
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var consumer, prod sync.WaitGroup
	consumer.Go(func() {
		for {
			err := f.PopBatch(ctx, 16, func(batch []Item[string, fifoObj]) error {
				for _, it := range batch {
					known.apply(it.Key, it.Deltas)
				}
				return nil
			})
			if errors.Is(err, ErrClosed) {
				return
			}
			assert.NoError(t, err)
		}
	})
	for p := range producers {
		prod.Go(func() {
			for i := range perProducer {
				name := fmt.Sprintf("p%d-%d", p, i%50)
				assert.NoError(t, f.Update(o(name, i)))
				if i%7 == 0 {
					assert.NoError(t, f.Delete(o(name, i)))
				}
				if i%100 == 0 {
					assert.NoError(t, f.Resync())
				}
			}
		})
	}
	prod.Wait()
	f.Close()
	consumer.Wait()
	require.Equal(t, 0, f.Len())
	for p := range producers {
		for k := range 50 {
			name := fmt.Sprintf("p%d-%d", p, k)
			// Last op on key k: i = 450+k (Update), then Delete if i%7==0.
			last := 450 + k
			got, ok := known.Get(name)
			if last%7 == 0 {
				require.False(t, ok, name)
			} else {
				require.True(t, ok, name)
				require.Equal(t, last, got.V, name)
			}
		}
	}
}

func TestDeltaFIFOPopBatchNeverSplitsAReplace(t *testing.T) {
	known := newFakeKnown(o("gone", 1))
	f := newTestFIFO(t, known)
	require.NoError(t, f.Add(o("before", 1)))
	require.NoError(t, f.Replace([]fifoObj{o("a", 1), o("b", 1), o("c", 1), o("before", 2)}, "7"))
	require.NoError(t, f.Add(o("after", 1)))
	var keys []string
	require.NoError(t, f.PopBatch(t.Context(), 2, func(batch []Item[string, fifoObj]) error {
		for _, it := range batch {
			keys = append(keys, it.Key)
		}
		return nil
	}))
	assert.Equal(t, []string{"before", "a", "b", "c", "gone"}, keys, "the whole relist, and what was ahead of it, in one batch")
	keys = keys[:0]
	require.NoError(t, f.PopBatch(t.Context(), 2, func(batch []Item[string, fifoObj]) error {
		for _, it := range batch {
			keys = append(keys, it.Key)
		}
		return nil
	}))
	assert.Equal(t, []string{"after"}, keys, "later batches obey maxKeys again")
}

// Regression: a key whose in-flight delta is already a Deleted (and which the
// consumer still knows, because the batch has not been applied yet) must not
// get a second, FinalStateUnknown, delete from a Replace that omits it.
func TestDeltaFIFOReplaceDoesNotTombstoneAnInFlightDelete(t *testing.T) {
	known := newFakeKnown(o("a", 1), o("b", 1))
	f := newTestFIFO(t, known)
	require.NoError(t, f.Delete(o("a", 1)))
	err := f.Pop(context.Background(), func(key string, ds Deltas[fifoObj], _ bool) error {
		require.Equal(t, "a", key)
		require.Equal(t, Deltas[fifoObj]{del(o("a", 1))}, ds)
		// "a" is in flight as a Deleted and still known: the relist that
		// omits it must not delete it again.
		return f.Replace([]fifoObj{o("b", 2)}, "2")
	})
	require.NoError(t, err)
	require.Equal(t, 1, f.Len(), "only b is queued")
	p := popOne(t, f)
	assert.Equal(t, "b", p.key)
	assert.Equal(t, Deltas[fifoObj]{repl(o("b", 2))}, p.deltas)
}
