package informer

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chunkBatch prepares upserts of n new pods, all in namespace ns.
func chunkBatch(t *testing.T, s *Indexer[NamespacedKey, *testPod], ns string, n int) []write[NamespacedKey, *testPod] {
	t.Helper()
	ws := make([]write[NamespacedKey, *testPod], n)
	for i := range ws {
		require.NoError(t, s.prepareUpsert(&ws[i], pod(ns, "p"+strconv.Itoa(i), "app=a")))
	}
	t.Cleanup(func() { s.release(ws) })
	return ws
}

// setChunkHook sets chunkHook to f for the rest of the test.
func setChunkHook(t *testing.T, f func(applied int)) {
	t.Helper()
	chunkHook = f
	t.Cleanup(func() { chunkHook = nil })
}

// TestIndexerCommitChunks: a batch larger than commitChunk is applied in
// chunks, with the lock released between them, so a reader does not wait for
// the whole batch: from inside the commit (between its first two chunks),
// another goroutine's reads complete and see exactly the first chunk, each
// read consistent.
func TestIndexerCommitChunks(t *testing.T) {
	s := newTestIndexer(testIndexes()...)
	n := 3*commitChunk + 5
	ws := chunkBatch(t, s, "ns", n)

	type seen struct {
		first, last bool
		byIndex     int
		list        int
	}
	var applied []int
	setChunkHook(t, func(done int) {
		applied = append(applied, done)
		if len(applied) > 1 {
			return
		}
		// The lock is released here: a reader on another goroutine must
		// complete while the writer waits for it.
		ch := make(chan seen, 1)
		go func() {
			var r seen
			_, r.first = s.Get(ws[0].key)
			_, r.last = s.Get(ws[n-1].key)
			seq, err := s.ByIndex(nsIndex, "ns")
			if err == nil {
				for range seq {
					r.byIndex++
				}
			}
			r.list = len(s.List())
			ch <- r
		}()
		select {
		case r := <-ch:
			assert.Equal(t, seen{first: true, last: false, byIndex: commitChunk, list: commitChunk}, r)
		case <-time.After(10 * time.Second):
			t.Error("a reader waited for the whole batch")
		}
	})
	require.NoError(t, s.commit(ws))
	assert.Equal(t, []int{commitChunk, 2 * commitChunk, 3 * commitChunk}, applied)
	assert.Equal(t, n, s.Len())

	// An atomic batch (a relist) and a batch of at most one chunk are
	// applied under one lock.
	applied = nil
	ws2 := chunkBatch(t, s, "ns2", n)
	require.Nil(t, s.tryCommit(ws2, true))
	ws3 := chunkBatch(t, s, "ns3", commitChunk)
	require.Nil(t, s.tryCommit(ws3, false))
	assert.Empty(t, applied)
	assert.Equal(t, 3*n-(n-commitChunk), s.Len())
}

// TestIndexerCommitChunksAddIndexes: AddIndexes started between two chunks of
// a batch waits for the batch to end (it does not index half a batch and
// leave the rest prepared against the old index set), so every object of the
// batch ends up in the new index.
func TestIndexerCommitChunksAddIndexes(t *testing.T) {
	s := newTestIndexer(Index[*testPod]{Name: nsIndex, Func: nsIndexFunc})
	n := 2*commitChunk + 1
	ws := chunkBatch(t, s, "ns", n)
	added := make(chan error, 1)
	started := false
	setChunkHook(t, func(int) {
		if !started {
			started = true
			go func() { added <- s.AddIndexes(Index[*testPod]{Name: labelsIndex, Func: labelsIndexFunc}) }()
		}
	})
	require.NoError(t, s.commit(ws))
	require.NoError(t, <-added)
	seq, err := s.ByIndex(labelsIndex, "app=a")
	require.NoError(t, err)
	c := 0
	for range seq {
		c++
	}
	assert.Equal(t, n, c)
	model := map[NamespacedKey]*testPod{}
	for i := range ws {
		model[ws[i].key] = ws[i].obj
	}
	checkIndexer(t, s, model, testIndexes())
}

// TestRelistBatch: the informer commits a batch atomically when it carries a
// relist (a Replaced delta or an inferred deletion), else in chunks.
func TestRelistBatch(t *testing.T) {
	p := pod("ns", "a")
	watch := []Item[NamespacedKey, *testPod]{{Deltas: Deltas[*testPod]{{Type: Added, Object: p}, {Type: Updated, Object: p}}}, {Deltas: Deltas[*testPod]{{Type: Deleted, Object: p}}}}
	assert.False(t, relistBatch(watch))
	assert.True(t, relistBatch(append(watch, Item[NamespacedKey, *testPod]{Deltas: Deltas[*testPod]{{Type: Updated, Object: p}, {Type: Replaced, Object: p}}})))
	assert.True(t, relistBatch(append(watch, Item[NamespacedKey, *testPod]{Deltas: Deltas[*testPod]{{Type: Deleted, Object: p, FinalStateUnknown: true}}})))
}

// TestIndexerApplyFresh: a large atomic batch into an empty store (an
// informer's first list) is applied on two goroutines; the result is the
// same as one write after the other, also when a key comes twice (the later
// write wins) and with deletes and failed writes in the batch.
func TestIndexerApplyFresh(t *testing.T) {
	for _, dup := range []bool{false, true} {
		s := newTestIndexer(testIndexes()...)
		n := freshMin + 10
		pods := benchPods(n)
		ws := make([]write[NamespacedKey, *testPod], n)
		model := map[NamespacedKey]*testPod{}
		for i, p := range pods {
			if dup && i == n-1 {
				p = pod(pods[0].Namespace, pods[0].Name, "app=again")
			}
			require.NoError(t, s.prepareUpsert(&ws[i], p))
			model[ws[i].key] = p
		}
		ws[1] = write[NamespacedKey, *testPod]{key: ws[1].key, del: true}
		delete(model, ws[1].key)
		ws[2].failed = true
		delete(model, ws[2].key)
		t.Cleanup(func() { s.release(ws) })
		require.Nil(t, s.tryCommit(ws, true))
		for i := range ws[:n-1] {
			assert.False(t, ws[i].hadOld)
		}
		assert.Equal(t, dup, ws[n-1].hadOld) // the second write of the key saw the first
		if dup {
			assert.Same(t, pods[0], ws[n-1].old)
		}
		checkIndexer(t, s, model, testIndexes())
	}
}

// TestIndexerPrepareItems: a large batch is prepared on two goroutines with
// the same result, item by item, as prepareKeyed: values for upserts,
// nothing for deletions and empty items, the index function's error for an
// object it refuses.
func TestIndexerPrepareItems(t *testing.T) {
	s := newTestIndexer(nsIndexOnly(), failingIndex)
	require.Nil(t, s.prepareItems(make([]Item[NamespacedKey, *testPod], prepareParMin-1)))
	batch := make([]Item[NamespacedKey, *testPod], prepareParMin+1)
	for i := range batch {
		p := benchPod(i)
		batch[i] = Item[NamespacedKey, *testPod]{Key: NamespacedKey{p.Namespace, p.Name}, Deltas: Deltas[*testPod]{{Type: Added, Object: p}}}
	}
	bad := pod("ns", "bad", "bad=error")
	batch[len(batch)-1].Deltas = append(batch[len(batch)-1].Deltas, Delta[*testPod]{Type: Updated, Object: bad})
	batch[1].Deltas = append(batch[1].Deltas, Delta[*testPod]{Type: Deleted, Object: batch[1].Deltas[0].Object})
	batch[2].Deltas = nil
	pre := s.prepareItems(batch)
	require.NotNil(t, pre)
	for i, it := range batch {
		w, err := pre.take(i)
		switch i {
		case 1, 2:
			assert.Nil(t, w.sc)
			assert.NoError(t, err)
		case len(batch) - 1:
			assert.ErrorIs(t, err, ErrIndexFunc)
		default:
			require.NoError(t, err)
			assert.Equal(t, it.Key, w.key)
			assert.Same(t, it.Deltas[0].Object, w.obj)
			assert.Equal(t, []string{it.Key.Namespace, it.Key.Namespace}, w.sc.vals)
			assert.True(t, w.slab)
		}
		s.release([]write[NamespacedKey, *testPod]{w})
	}
}

func nsIndexOnly() Index[*testPod] { return Index[*testPod]{Name: nsIndex, Func: nsIndexFunc} }

// TestIndexerPrepareItemsShared: the values of a large batch are carved out
// of shared arrays; objects with many values (more than a chunk has left)
// get arrays of their own, and recomputing a write's values after
// AddIndexes (reprepare) never writes over its neighbours'.
func TestIndexerPrepareItemsShared(t *testing.T) {
	// many gives pod i one value, or 3*valsChunkMin for every 97th pod.
	many := Index[*testPod]{Name: "many", Func: func(dst []string, p *testPod) ([]string, error) {
		i, _ := strconv.Atoi(p.Name[len("pod-"):])
		n := 1
		if i%97 == 0 {
			n = 3 * valsChunkMin
		}
		for j := range n {
			dst = append(dst, p.Name+"/"+strconv.Itoa(j))
		}
		return dst, nil
	}}
	s := newTestIndexer(nsIndexOnly(), many)
	n := 2*valsChunk + 3
	batch := make([]Item[NamespacedKey, *testPod], n)
	for i := range batch {
		p := benchPod(i)
		batch[i] = Item[NamespacedKey, *testPod]{Key: NamespacedKey{p.Namespace, p.Name}, Deltas: Deltas[*testPod]{{Type: Added, Object: p}}}
	}
	// want returns what prepareKeyed computes for item i, one by one.
	want := func(i int) ([]string, []int) {
		var w write[NamespacedKey, *testPod]
		w.key = batch[i].Key
		require.NoError(t, s.prepareKeyed(&w, batch[i].Deltas[0].Object))
		defer s.release([]write[NamespacedKey, *testPod]{w})
		return append([]string(nil), w.sc.vals...), append([]int(nil), w.sc.ends...)
	}
	pre := s.prepareItems(batch)
	require.NotNil(t, pre)
	ws := make([]write[NamespacedKey, *testPod], n)
	for i := range ws {
		var err error
		ws[i], err = pre.take(i)
		require.NoError(t, err)
	}
	defer s.release(ws)
	check := func() {
		t.Helper()
		for i := range ws {
			vals, ends := want(i)
			require.Equal(t, vals, ws[i].sc.vals, "item %d", i)
			require.Equal(t, ends, ws[i].sc.ends, "item %d", i)
		}
	}
	check()
	require.NoError(t, s.AddIndexes(Index[*testPod]{Name: "again", Func: many.Func}))
	require.Empty(t, s.reprepare(ws, s.defs.Load(), nil))
	check()
}
