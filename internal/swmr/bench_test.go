package swmr

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const benchN = 100_000

// benchElems returns n elements keyed like Kubernetes objects (100
// namespaces), in random order, and their keys in another random order.
func benchElems(n int) ([]*elem, []key) {
	es := make([]*elem, n)
	for i := range es {
		es[i] = &elem{k: key{ns: fmt.Sprintf("namespace-%d", i%100), name: fmt.Sprintf("object-name-%d", i)}, v: i}
	}
	rng := rand.New(rand.NewPCG(1, 1))
	rng.Shuffle(n, func(i, j int) { es[i], es[j] = es[j], es[i] })
	ks := make([]key, n)
	for i, e := range es {
		ks[i] = e.k
	}
	rng.Shuffle(n, func(i, j int) { ks[i], ks[j] = ks[j], ks[i] })
	return es, ks
}

func missKeys(n int) []key {
	ks := make([]key, n)
	for i := range ks {
		ks[i] = key{ns: fmt.Sprintf("namespace-%d", i%100), name: fmt.Sprintf("absent-name-%d", i)}
	}
	return ks
}

// use reads a field of a found element, as a caller of Get does (the
// table reads the element's key anyway, a map does not), and panics if a
// hit is missing.
func use(e *elem, kind string) int {
	if e == nil {
		if kind == "hit" {
			panic("miss")
		}
		return 0
	}
	return e.v
}

// BenchmarkGet looks up 100k keys in random order (hits: keys present;
// misses: keys absent), reading a field of each element found.
func BenchmarkGet(b *testing.B) {
	var sink int
	defer func() { _ = sink }()
	es, hits := benchElems(benchN)
	tb := New[key, elem](keyOf, nil, 0)
	m := make(map[key]*elem)
	for _, e := range es {
		tb.Put(e)
		m[e.k] = e
	}
	var mu sync.RWMutex
	for _, c := range []struct {
		name string
		keys []key
	}{{"hit", hits}, {"miss", missKeys(benchN)}} {
		ks := c.keys
		b.Run(c.name+"/swmr", func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				sink += use(tb.Get(ks[i%benchN]), c.name)
			}
		})
		b.Run(c.name+"/map", func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				sink += use(m[ks[i%benchN]], c.name)
			}
		})
		b.Run(c.name+"/map-rwmutex", func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				mu.RLock()
				e := m[ks[i%benchN]]
				mu.RUnlock()
				sink += use(e, c.name)
			}
		})
	}
}

// BenchmarkGetUnderWrites runs Gets on 4×GOMAXPROCS goroutines while one
// goroutine replaces elements as fast as it can (taking a mutex per Put, as
// an informer's writer does): with an RWMutex, readers park behind the
// writer. Every 16th Get is timed, and the percentiles of those are reported.
func BenchmarkGetUnderWrites(b *testing.B) {
	es, ks := benchElems(benchN)
	tb := New[key, elem](keyOf, nil, 0)
	tb.Reset(es)
	m := make(map[key]*elem)
	for _, e := range es {
		m[e.k] = e
	}
	var mu sync.RWMutex
	run := func(b *testing.B, get func(key) *elem, put func(*elem)) {
		var stop atomic.Bool
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				put(es[i%benchN])
			}
		})
		var lmu sync.Mutex
		var lat []time.Duration
		b.SetParallelism(4)
		b.RunParallel(func(pb *testing.PB) {
			var mine []time.Duration
			for i := rand.IntN(benchN); pb.Next(); i++ {
				if i%16 != 0 {
					if get(ks[i%benchN]) == nil {
						panic("miss")
					}
					continue
				}
				start := time.Now()
				e := get(ks[i%benchN])
				mine = append(mine, time.Since(start))
				if e == nil {
					panic("miss")
				}
			}
			lmu.Lock()
			lat = append(lat, mine...)
			lmu.Unlock()
		})
		stop.Store(true)
		wg.Wait()
		slices.Sort(lat)
		if len(lat) > 0 {
			for _, q := range []struct {
				name string
				f    float64
			}{{"p50-ns", 0.5}, {"p99-ns", 0.99}, {"p999-ns", 0.999}, {"max-ns", 1}} {
				b.ReportMetric(float64(lat[int(q.f*float64(len(lat)-1))].Nanoseconds()), q.name)
			}
		}
	}
	b.Run("swmr", func(b *testing.B) {
		var wmu sync.Mutex
		run(b, tb.Get, func(e *elem) { wmu.Lock(); tb.Put(e); wmu.Unlock() })
	})
	b.Run("map-rwmutex", func(b *testing.B) {
		run(b, func(k key) *elem { mu.RLock(); defer mu.RUnlock(); return m[k] },
			func(e *elem) { mu.Lock(); m[e.k] = e; mu.Unlock() })
	})
}

func BenchmarkPutReplace(b *testing.B) {
	es, _ := benchElems(benchN)
	b.Run("swmr", func(b *testing.B) {
		tb := New[key, elem](keyOf, nil, 0)
		tb.Reset(es)
		for i := 0; b.Loop(); i++ {
			tb.Put(es[i%benchN])
		}
	})
	b.Run("map", func(b *testing.B) {
		m := make(map[key]*elem)
		for _, e := range es {
			m[e.k] = e
		}
		for i := 0; b.Loop(); i++ {
			e := es[i%benchN]
			m[e.k] = e
		}
	})
}

// BenchmarkChurn deletes an element and puts another in, at 100k elements
// (one op is a Delete and a Put).
func BenchmarkChurn(b *testing.B) {
	es, _ := benchElems(2 * benchN)
	b.Run("swmr", func(b *testing.B) {
		tb := New[key, elem](keyOf, nil, 0)
		tb.Reset(es[:benchN])
		for i := 0; b.Loop(); i++ {
			tb.Delete(es[i%(2*benchN)].k)
			tb.Put(es[(i+benchN)%(2*benchN)])
		}
	})
	b.Run("map", func(b *testing.B) {
		m := make(map[key]*elem)
		for _, e := range es[:benchN] {
			m[e.k] = e
		}
		for i := 0; b.Loop(); i++ {
			delete(m, es[i%(2*benchN)].k)
			e := es[(i+benchN)%(2*benchN)]
			m[e.k] = e
		}
	})
}

func BenchmarkAll(b *testing.B) {
	es, _ := benchElems(benchN)
	b.Run("swmr", func(b *testing.B) {
		tb := New[key, elem](keyOf, nil, 0)
		for _, e := range es {
			tb.Put(e)
		}
		for b.Loop() {
			n := 0
			for range tb.All() {
				n++
			}
			if n != benchN {
				b.Fatal(n)
			}
		}
	})
	b.Run("map", func(b *testing.B) {
		m := make(map[key]*elem)
		for _, e := range es {
			m[e.k] = e
		}
		for b.Loop() {
			n := 0
			for range m {
				n++
			}
			if n != benchN {
				b.Fatal(n)
			}
		}
	})
}

// BenchmarkFill builds a table of 100k elements: Reset (one pass) vs Puts.
func BenchmarkFill(b *testing.B) {
	es, _ := benchElems(benchN)
	b.Run("swmr-reset", func(b *testing.B) {
		for b.Loop() {
			New[key, elem](keyOf, nil, 0).Reset(es)
		}
	})
	b.Run("swmr-put", func(b *testing.B) {
		for b.Loop() {
			tb := New[key, elem](keyOf, nil, 0)
			for _, e := range es {
				tb.Put(e)
			}
		}
	})
	b.Run("map", func(b *testing.B) {
		for b.Loop() {
			m := make(map[key]*elem, benchN)
			for _, e := range es {
				m[e.k] = e
			}
		}
	})
}

func BenchmarkSet(b *testing.B) {
	for _, n := range []int{2, 40, benchN} {
		ps := make([]*elem, 2*n)
		for i := range ps {
			ps[i] = &elem{v: i}
		}
		b.Run(fmt.Sprintf("has/%d/swmr", n), func(b *testing.B) {
			s := NewSet[elem](0)
			s.Reset(ps[:n])
			for i := 0; b.Loop(); i++ {
				if !s.Has(ps[i%n]) {
					b.Fatal("miss")
				}
			}
		})
		b.Run(fmt.Sprintf("has/%d/map", n), func(b *testing.B) {
			m := make(map[*elem]struct{})
			for _, p := range ps[:n] {
				m[p] = struct{}{}
			}
			for i := 0; b.Loop(); i++ {
				if _, ok := m[ps[i%n]]; !ok {
					b.Fatal("miss")
				}
			}
		})
		// One op removes a member and adds a non-member.
		b.Run(fmt.Sprintf("churn/%d/swmr", n), func(b *testing.B) {
			s := NewSet[elem](0)
			s.Reset(ps[:n])
			for i := 0; b.Loop(); i++ {
				s.Remove(ps[i%(2*n)])
				s.Add(ps[(i+n)%(2*n)])
			}
		})
		b.Run(fmt.Sprintf("churn/%d/map", n), func(b *testing.B) {
			m := make(map[*elem]struct{})
			for _, p := range ps[:n] {
				m[p] = struct{}{}
			}
			for i := 0; b.Loop(); i++ {
				delete(m, ps[i%(2*n)])
				m[ps[(i+n)%(2*n)]] = struct{}{}
			}
		})
	}
}

// BenchmarkPointerHash compares the Set's pointer hash with maphash.Comparable.
func BenchmarkPointerHash(b *testing.B) {
	ps := make([]*elem, 1024)
	for i := range ps {
		ps[i] = &elem{}
	}
	var sink uint64
	b.Run("fibonacci", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			sink += hashPointer(ps[i&1023])
		}
	})
	b.Run("maphash.Comparable", func(b *testing.B) {
		seed := maphash.MakeSeed()
		for i := 0; b.Loop(); i++ {
			sink += maphash.Comparable(seed, ps[i&1023])
		}
	})
	_ = sink
}

// BenchmarkMemory reports the bytes per element a 100k-element container
// holds (heap growth after GC, elements excluded), filled by Puts.
func BenchmarkMemory(b *testing.B) {
	es, _ := benchElems(benchN)
	measure := func(b *testing.B, build func() any) {
		var keep any
		var perElem float64
		for b.Loop() {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			keep = build()
			runtime.GC()
			runtime.ReadMemStats(&after)
			perElem = float64(after.HeapAlloc-before.HeapAlloc) / benchN
		}
		runtime.KeepAlive(keep)
		b.ReportMetric(perElem, "B/elem")
	}
	b.Run("table/swmr-put", func(b *testing.B) {
		measure(b, func() any {
			tb := New[key, elem](keyOf, nil, 0)
			for _, e := range es {
				tb.Put(e)
			}
			return tb
		})
	})
	b.Run("table/swmr-reset", func(b *testing.B) {
		measure(b, func() any { tb := New[key, elem](keyOf, nil, 0); tb.Reset(es); return tb })
	})
	b.Run("table/map", func(b *testing.B) {
		measure(b, func() any {
			m := make(map[key]*elem)
			for _, e := range es {
				m[e.k] = e
			}
			return m
		})
	})
	b.Run("set/swmr", func(b *testing.B) {
		measure(b, func() any {
			var s Set[elem]
			for _, e := range es {
				s.Add(e)
			}
			return &s
		})
	})
	b.Run("set/map", func(b *testing.B) {
		measure(b, func() any {
			m := make(map[*elem]struct{})
			for _, e := range es {
				m[e] = struct{}{}
			}
			return m
		})
	})
}

// BenchmarkGrowStall fills a table with 1M elements by Put and reports the
// longest single Put (tables of 16k slots and more grow step by step, see
// migrate.go) beside the time of one Reset of the same elements.
func BenchmarkGrowStall(b *testing.B) {
	es, _ := benchElems(10 * benchN)
	var longest, reset time.Duration
	for b.Loop() {
		tb := New[key, elem](keyOf, nil, 0)
		longest = 0
		for _, e := range es {
			start := time.Now()
			tb.Put(e)
			longest = max(longest, time.Since(start))
		}
		start := time.Now()
		tb.Reset(es)
		reset = time.Since(start)
	}
	b.ReportMetric(float64(longest.Microseconds())/1000, "max-put-ms")
	b.ReportMetric(float64(reset.Microseconds())/1000, "reset-ms")
}
