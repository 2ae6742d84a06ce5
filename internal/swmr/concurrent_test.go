package swmr

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

const (
	stableKeys = 50   // put before the readers start, replaced but never deleted
	churnKeys  = 3000 // put and deleted by the writer while readers run
	readers    = 4
	// writerSteps is the length of a writer's run: waves of waveSteps steps
	// that grow, churn and shrink the table.
	writerSteps = 150_000
	waveSteps   = 1500
)

// TestTableConcurrentReaders runs one writer (replacing stable keys,
// putting and deleting churn keys in waves that grow, churn and shrink the
// table, and now and then a Reset) against readers that Get stable keys
// and iterate, checking that a stable key is always found with an element
// of its own key and never older than the one the reader found before, and
// that every iteration yields each stable key exactly once.
func TestTableConcurrentReaders(t *testing.T) {
	tb := New[key, elem](keyOf, nil, 0)
	keys := make([]key, stableKeys+churnKeys)
	for i := range keys {
		keys[i] = mk(i, 0).k
	}
	index := make(map[key]int, len(keys))
	for i, k := range keys {
		index[k] = i
	}
	for i := range stableKeys {
		tb.Put(mk(i, 0))
	}

	var done atomic.Bool
	var wg sync.WaitGroup
	var gets, iterations atomic.Int64
	errs := make(chan string, readers)
	for r := range readers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(r), 7))
			seen := make([]int, len(keys))
			last := make([]int, stableKeys) // version last read per stable key
			for round := 0; !done.Load() || round < 10; round++ {
				for range 50 {
					i := rng.IntN(stableKeys)
					e := tb.Get(keys[i])
					if e == nil || e.k != keys[i] {
						errs <- "Get of a stable key returned " + describe(e)
						return
					}
					if e.v < last[i] {
						errs <- "Get of a stable key went back to an older element"
						return
					}
					last[i] = e.v
					gets.Add(1)
				}
				clear(seen)
				for e := range tb.All() {
					seen[index[e.k]]++
				}
				for i, n := range seen {
					if i < stableKeys && n != 1 {
						errs <- "an iteration yielded a stable key " + string(rune('0'+min(n, 9))) + " times"
						return
					}
				}
				iterations.Add(1)
			}
		})
	}

	rng := rand.New(rand.NewPCG(9, 9))
	live := map[int]bool{}
	rebuilds := 0
	for step := range writerSteps {
		before := tb.cur.Load()
		switch wave := step / waveSteps % 3; {
		case step%50_000 == 49_999:
			es := make([]*elem, 0, stableKeys+len(live))
			for i := range stableKeys {
				es = append(es, mk(i, step))
			}
			for i := range live {
				es = append(es, mk(i, step))
			}
			tb.Reset(es)
		case rng.IntN(4) == 0:
			tb.Put(mk(rng.IntN(stableKeys), step))
		case wave == 0 || (wave == 1 && rng.IntN(2) == 0):
			i := stableKeys + rng.IntN(churnKeys)
			tb.Put(mk(i, step))
			live[i] = true
		default:
			i := stableKeys + rng.IntN(churnKeys)
			for j := range live { // a live key, if any (map order is random)
				i = j
				break
			}
			tb.Delete(keys[i])
			delete(live, i)
		}
		if tb.cur.Load() != before {
			rebuilds++
		}
	}
	done.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if tb.Len() != stableKeys+len(live) {
		t.Errorf("Len = %d, want %d", tb.Len(), stableKeys+len(live))
	}
	t.Logf("%d writes, %d array rebuilds, %d gets, %d iterations", writerSteps, rebuilds, gets.Load(), iterations.Load())
}

// TestSetConcurrentReaders is TestTableConcurrentReaders for a Set: stable
// members are always found and yielded exactly once per iteration while the
// writer adds and removes others.
func TestSetConcurrentReaders(t *testing.T) {
	pool := make([]*elem, stableKeys+churnKeys)
	index := make(map[*elem]int, len(pool))
	for i := range pool {
		pool[i] = &elem{v: i}
		index[pool[i]] = i
	}
	var s Set[elem]
	for _, p := range pool[:stableKeys] {
		s.Add(p)
	}
	var done atomic.Bool
	var wg sync.WaitGroup
	var failures atomic.Int64
	for r := range readers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(r), 8))
			seen := make([]int, len(pool))
			for round := 0; !done.Load() || round < 10; round++ {
				for range 50 {
					if !s.Has(pool[rng.IntN(stableKeys)]) {
						failures.Add(1)
					}
				}
				clear(seen)
				for p := range s.All() {
					seen[index[p]]++
				}
				for i := range stableKeys {
					if seen[i] != 1 {
						failures.Add(1)
					}
				}
			}
		})
	}
	rng := rand.New(rand.NewPCG(5, 5))
	rebuilds := 0
	live := map[*elem]bool{}
	for step := range writerSteps {
		before := s.cur.Load()
		p := pool[stableKeys+rng.IntN(churnKeys)]
		if step%50_000 == 49_999 {
			var members []*elem
			for m := range s.All() {
				members = append(members, m)
			}
			s.Reset(members)
		} else if step/waveSteps%3 == 0 || (step/waveSteps%3 == 1 && rng.IntN(2) == 0) {
			s.Add(p)
			live[p] = true
		} else {
			for q := range live { // a churn member, if any (map order is random)
				p = q
				break
			}
			s.Remove(p)
			delete(live, p)
		}
		if s.cur.Load() != before {
			rebuilds++
		}
	}
	t.Logf("%d writes, %d array rebuilds", writerSteps, rebuilds)
	done.Store(true)
	wg.Wait()
	if n := failures.Load(); n > 0 {
		t.Fatalf("%d stable members missed or yielded twice", n)
	}
	if s.Len() != stableKeys+len(live) {
		t.Fatalf("Len = %d, want %d", s.Len(), stableKeys+len(live))
	}
}

func describe(e *elem) string {
	if e == nil {
		return "nil"
	}
	return e.k.ns + "/" + e.k.name
}
