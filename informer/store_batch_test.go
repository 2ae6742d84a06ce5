package informer

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// commit applies ws (not atomically) the way the informer's processBatch
// does: tryCommit, and while some writes were prepared against an older
// index set, reprepare (outside the lock) and try again; unlike
// processBatch, if a re-prepare fails, nothing is applied and its error is
// returned.
func (s *Indexer[K, T]) commit(ws []write[K, T]) error {
	for {
		defs := s.tryCommit(ws, false)
		if defs == nil {
			return nil
		}
		if errs := s.reprepare(ws, defs, nil); len(errs) > 0 {
			return errs[0]
		}
	}
}

// TestIndexerCommitBatch covers the informer's entry points: a batch of
// prepared writes applied under one lock, reporting previous objects, and
// re-prepared when AddIndexes ran in between.
func TestIndexerCommitBatch(t *testing.T) {
	s := newTestIndexer(Index[*testPod]{Name: nsIndex, Func: nsIndexFunc})
	a1, b1 := pod("ns", "a", "app=1"), pod("ns", "b", "app=1")
	require.NoError(t, s.Add(a1))
	require.NoError(t, s.Add(b1))

	a2, c1 := pod("ns", "a", "app=2"), pod("other", "c", "app=3")
	ws := make([]write[NamespacedKey, *testPod], 3)
	require.NoError(t, s.prepareUpsert(&ws[0], a2))
	require.NoError(t, s.prepareUpsert(&ws[1], c1))
	ws[2] = write[NamespacedKey, *testPod]{key: NamespacedKey{"ns", "b"}, del: true}
	defer s.release(ws)

	// The index set changes after the batch was prepared: commit recomputes.
	require.NoError(t, s.AddIndexes(Index[*testPod]{Name: labelsIndex, Func: labelsIndexFunc}))
	require.NoError(t, s.commit(ws))

	assert.True(t, ws[0].hadOld)
	assert.Same(t, a1, ws[0].old)
	assert.False(t, ws[1].hadOld)
	assert.True(t, ws[2].hadOld)
	assert.Same(t, b1, ws[2].old)
	checkIndexer(t, s, map[NamespacedKey]*testPod{{"ns", "a"}: a2, {"other", "c"}: c1}, testIndexes())

	// A re-prepare that now fails refuses the whole batch.
	bad := []write[NamespacedKey, *testPod]{{}, {}}
	require.NoError(t, s.prepareUpsert(&bad[0], pod("ns", "z")))
	require.NoError(t, s.prepareUpsert(&bad[1], pod("ns", "y", "bad=error")))
	defer s.release(bad)
	require.NoError(t, s.AddIndexes(failingIndex))
	require.ErrorIs(t, s.commit(bad), ErrIndexFunc)
	checkIndexer(t, s, map[NamespacedKey]*testPod{{"ns", "a"}: a2, {"other", "c"}: c1}, append(testIndexes(), failingIndex))
}

// TestIndexerReplaceState: Replace swaps the whole state and leaves the old
// one unchanged, for iterations in progress.
func TestIndexerReplaceState(t *testing.T) {
	s := newTestIndexer(testIndexes()...)
	old := benchPods(10)
	require.NoError(t, s.Replace(old))
	next := benchPods(5)
	prev := s.st.Load()
	require.NoError(t, s.Replace(next))
	assert.Equal(t, 10, prev.entries.Len())
	for _, p := range old {
		assert.Same(t, p, prev.entries.Get(NamespacedKey{p.Namespace, p.Name}).obj(prev.rep))
	}
	model := map[NamespacedKey]*testPod{}
	for _, p := range next {
		model[NamespacedKey{p.Namespace, p.Name}] = p
	}
	checkIndexer(t, s, model, testIndexes())
}

// TestIndexerReplaceReprepares: an AddIndexes that lands between Replace's
// prepare and its swap makes Replace compute the new index's values, or
// refuse the whole Replace if one of them fails.
func TestIndexerReplaceReprepares(t *testing.T) {
	for _, tc := range []struct {
		name    string
		added   Index[*testPod]
		wantErr error
	}{
		{"ok", Index[*testPod]{Name: labelsIndex, Func: labelsIndexFunc}, nil},
		{"fails", failingIndex, ErrIndexFunc},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s *Indexer[NamespacedKey, *testPod]
			added := false
			ns := Index[*testPod]{Name: nsIndex, Func: func(dst []string, p *testPod) ([]string, error) {
				if p.Name == "trigger" && !added {
					added = true // Replace prepares without any lock: AddIndexes runs now
					assert.NoError(t, s.AddIndexes(tc.added))
				}
				return nsIndexFunc(dst, p)
			}}
			s = newTestIndexer(ns)
			before := pod("ns", "a")
			require.NoError(t, s.Replace([]*testPod{before}))
			next := []*testPod{pod("ns", "trigger"), pod("other", "b", "bad=error")}
			err := s.Replace(next)
			indexes := []Index[*testPod]{ns, tc.added}
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				checkIndexer(t, s, map[NamespacedKey]*testPod{{"ns", "a"}: before}, indexes)
				return
			}
			require.NoError(t, err)
			checkIndexer(t, s, map[NamespacedKey]*testPod{{"ns", "trigger"}: next[0], {"other", "b"}: next[1]}, indexes)
		})
	}
}
