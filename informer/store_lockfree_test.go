package informer

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestIndexerReadsTakeNoLock: with the writers' lock held (as by a writer
// in the middle of a chunk of writes), every read completes.
func TestIndexerReadsTakeNoLock(t *testing.T) {
	s := newTestIndexer(testIndexes()...)
	for i := range 200 {
		require.NoError(t, s.Add(pod("ns", fmt.Sprintf("p%03d", i), "app=a", "tier="+strconv.Itoa(i%3))))
	}
	ref, err := s.IndexRef(NewIndex(labelsIndex, labelsIndexFunc))
	require.NoError(t, err)
	s.mu.Lock()
	defer s.mu.Unlock()
	done := make(chan int)
	go func() {
		n := 0
		if _, ok := s.Get(NamespacedKey{"ns", "p007"}); ok {
			n++
		}
		n += s.Len()
		for range s.All() {
			n++
		}
		for range s.Keys() {
			n++
		}
		seq, _ := s.ByIndex(labelsIndex, "app=a")
		for range seq {
			n++
		}
		keys, _ := s.IndexKeys(nsIndex, "ns")
		for range keys {
			n++
		}
		vals, _ := s.IndexValues(labelsIndex)
		for range vals {
			n++
		}
		idx, _ := s.Index(labelsIndex, pod("x", "y", "tier=1"))
		for range idx {
			n++
		}
		for range ref.ByValue("tier=2") {
			n++
		}
		done <- n
	}()
	select {
	case n := <-done:
		require.Equal(t, 1+200*5+4+67+66, n)
	case <-time.After(10 * time.Second):
		t.Fatal("a read waited for the writers' lock")
	}
}

// TestIndexerIndexChunkIsOneState: a writer updates the 40 members of one
// bucket round-robin, each write carrying its round; every query of the
// bucket (one chunk) must see one state: the members written in the
// current round a prefix of the write order, the rest one round behind.
// Meanwhile the writer moves other pods between two values of another
// index: a query of either value yields only pods that have it.
func TestIndexerIndexChunkIsOneState(t *testing.T) {
	const members, rounds = 40, 300
	s := newTestIndexer(testIndexes()...)
	name := func(i int) string { return fmt.Sprintf("m%02d", i) }
	for i := range members {
		p := pod("a", name(i))
		p.Version = "0"
		require.NoError(t, s.Add(p))
	}
	for i := range members {
		require.NoError(t, s.Add(pod("b", "mv"+strconv.Itoa(i), "tier=x")))
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		defer stop.Store(true)
		for r := 1; r <= rounds; r++ {
			for i := range members {
				p := pod("a", name(i))
				p.Version = strconv.Itoa(r)
				if err := s.Update(p); err != nil {
					t.Error(err)
					return
				}
				tier := "x"
				if (r+i)%2 == 0 {
					tier = "y"
				}
				if err := s.Update(pod("b", "mv"+strconv.Itoa(i), "tier="+tier)); err != nil {
					t.Error(err)
					return
				}
			}
		}
	})
	for range 3 {
		wg.Go(func() {
			var got [members]int
			for q := 0; !stop.Load() || q < 10; q++ {
				seq, _ := s.ByIndex(nsIndex, "a")
				n := 0
				for k, p := range seq {
					i, err := strconv.Atoi(k.Name[1:])
					if err != nil || p.Name != k.Name {
						t.Errorf("yielded %v for %v", p, k)
						return
					}
					got[i], _ = strconv.Atoi(p.Version)
					n++
				}
				if n != members {
					t.Errorf("query %d yielded %d members", q, n)
					return
				}
				// One state: rounds non-increasing in write order, by at most one.
				for i := 1; i < members; i++ {
					if got[i] > got[i-1] || got[0]-got[i] > 1 {
						t.Errorf("query %d saw rounds %v: not one state", q, got)
						return
					}
				}
				for _, tier := range []string{"x", "y"} {
					seq, _ := s.ByIndex(labelsIndex, "tier="+tier)
					for k, p := range seq {
						if p.Labels["tier"] != tier {
							t.Errorf("tier=%s yielded %v with tier=%s", tier, k, p.Labels["tier"])
							return
						}
					}
				}
			}
		})
	}
	wg.Wait()
}

// TestIndexerValueTypeConcurrent: objects of a non-pointer type are boxed
// (one allocation per write); readers racing a writer that moves them
// between index values see each object whole, under a value it has.
func TestIndexerValueTypeConcurrent(t *testing.T) {
	type obj struct{ key, group, payload string }
	s, err := NewIndexer(IndexerOptions[string, obj]{
		KeyFunc: func(o obj) (string, error) { return o.key, nil },
		Indexes: []Index[obj]{{Name: "group", Func: func(dst []string, o obj) ([]string, error) {
			return append(dst, o.group), nil
		}}},
	})
	require.NoError(t, err)
	const keys, writes = 50, 20000
	mk := func(i, w int) obj {
		g := strconv.Itoa((i + w) % 3)
		return obj{key: "k" + strconv.Itoa(i), group: g, payload: g + "/" + strconv.Itoa(w)}
	}
	for i := range keys {
		require.NoError(t, s.Add(mk(i, 0)))
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		defer stop.Store(true)
		for w := range writes {
			if err := s.Update(mk(w%keys, w)); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for range 2 {
		wg.Go(func() {
			for q := 0; !stop.Load() || q < 10; q++ {
				for _, g := range []string{"0", "1", "2"} {
					seq, _ := s.ByIndex("group", g)
					for k, o := range seq {
						if o.key != k || o.group != g || o.payload[:1] != g {
							t.Errorf("group %s yielded %v under %s", g, o, k)
							return
						}
					}
				}
				if o, ok := s.Get("k7"); !ok || o.payload[:1] != o.group {
					t.Errorf("Get(k7) = %v, %v", o, ok)
					return
				}
			}
		})
	}
	wg.Wait()
	require.Equal(t, keys, s.Len())
}
