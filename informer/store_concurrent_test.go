package informer

import (
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIndexerConcurrent runs writers (on disjoint keys, so each writer's
// final state is known), readers iterating every kind of query, and
// AddIndexes calls at once; run it with -race. The final state must equal the
// model and every index must match it.
func TestIndexerConcurrent(t *testing.T) {
	const writers, readers, keysPerWriter, opsPerWriter = 4, 3, 50, 1000
	s := newTestIndexer(Index[*testPod]{Name: nsIndex, Func: nsIndexFunc})
	models := make([]map[NamespacedKey]*testPod, writers)
	var wg sync.WaitGroup
	for w := range writers {
		models[w] = map[NamespacedKey]*testPod{}
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			m := models[w]
			for i := range opsPerWriter {
				p := &testPod{
					Namespace: "ns-" + strconv.Itoa(w),
					Name:      "p-" + strconv.Itoa(rng.IntN(keysPerWriter)),
					Version:   strconv.Itoa(i),
					Labels:    map[string]string{"app": "a" + strconv.Itoa(rng.IntN(5)), "w": strconv.Itoa(w)},
				}
				k := NamespacedKey{p.Namespace, p.Name}
				switch rng.IntN(4) {
				case 0:
					if _, ok := s.DeleteKey(k); ok != (m[k] != nil) {
						t.Errorf("DeleteKey(%v) ok=%v, model has %v", k, ok, m[k])
					}
					delete(m, k)
				default:
					if err := s.Update(p); err != nil {
						t.Errorf("Update: %v", err)
					}
					m[k] = p
				}
			}
		})
	}
	var stop atomic.Bool
	var readerWG sync.WaitGroup
	for r := range readers {
		readerWG.Go(func() {
			// Readers stop with the writers, but do at least a few rounds.
			for i := 0; i < 5 || !stop.Load(); i++ {
				for k, p := range s.All() {
					if p == nil || p.Name != k.Name || p.Namespace != k.Namespace {
						t.Errorf("All yielded %v for %v", p, k)
					}
				}
				ns := "ns-" + strconv.Itoa(r%writers)
				seq, _ := s.ByIndex(nsIndex, ns)
				for _, p := range seq {
					if p.Namespace != ns {
						t.Errorf("ByIndex(%s) yielded %s", ns, p.Namespace)
					}
				}
				if seq, err := s.Index(labelsIndex, pod("", "", "app=a1", "app=a2")); err == nil {
					for range seq {
					}
				}
				if vals, err := s.IndexValues(nsIndex); err == nil {
					for range vals {
					}
				}
				_ = s.List()
			}
		})
	}
	require.NoError(t, s.AddIndexes(Index[*testPod]{Name: labelsIndex, Func: labelsIndexFunc}))
	require.NoError(t, s.AddIndexes(modelIndexes[3]))
	wg.Wait()
	stop.Store(true)
	readerWG.Wait()

	model := map[NamespacedKey]*testPod{}
	for _, m := range models {
		for k, p := range m {
			model[k] = p
		}
	}
	checkIndexer(t, s, model, []Index[*testPod]{{Name: nsIndex, Func: nsIndexFunc}, {Name: labelsIndex, Func: labelsIndexFunc}, modelIndexes[3]})
}

// TestIndexerConcurrentReplace: Replace and batch commits racing with
// readers; readers only ever see whole sets.
func TestIndexerConcurrentReplace(t *testing.T) {
	s := newTestIndexer(testIndexes()...)
	setA, setB := benchPods(300), benchPods(300)
	for _, p := range setB {
		p.Version = "B"
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; !stop.Load() || i < 50; i++ {
			set := setA
			if i%2 == 1 {
				set = setB
			}
			if err := s.Replace(set); err != nil {
				t.Errorf("Replace: %v", err)
			}
		}
	})
	for range 200 {
		list := s.List()
		if len(list) == 0 {
			continue
		}
		v := list[0].Version
		for _, p := range list {
			if p.Version != v {
				t.Fatalf("List mixed sets: %q and %q", v, p.Version)
			}
		}
		// A chunked iterator finishes over the set it started on.
		n := 0
		for range s.All() {
			n++
		}
		if n != 300 {
			t.Fatalf("All yielded %d objects, want 300", n)
		}
	}
	stop.Store(true)
	wg.Wait()
}
