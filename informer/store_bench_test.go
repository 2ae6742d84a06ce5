package informer

import (
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Benchmarks of the Indexer on small pods (see testobjects_test.go): key
// NamespacedKey, a namespace index (10 namespaces) and a multi-value labels
// index (app=app-<i/100>, tier=tier-<i%10>, pod=<name>).

var benchSizes = []int{10_000, 100_000}

func benchIndexer(b *testing.B, pods []*testPod) *Indexer[NamespacedKey, *testPod] {
	b.Helper()
	s := newTestIndexer(testIndexes()...)
	if err := s.Replace(pods); err != nil {
		b.Fatal(err)
	}
	return s
}

// withVersion returns copies of pods with another Version (same labels) or,
// if move, with the tier label changed too.
func withVersion(pods []*testPod, move bool) []*testPod {
	out := make([]*testPod, len(pods))
	for i, p := range pods {
		q := *p
		q.Version = "2"
		q.Labels = map[string]string{"app": p.Labels["app"], "tier": p.Labels["tier"], "pod": p.Name}
		if move {
			q.Labels["tier"] = "moved-" + strconv.Itoa(i%7)
		}
		out[i] = &q
	}
	return out
}

// BenchmarkIndexer measures one write per op (so ns/op is per object) on a
// store of about N objects.
func BenchmarkIndexer(b *testing.B) {
	for _, n := range benchSizes {
		pods := benchPods(n)
		b.Run("Add/N="+strconv.Itoa(n/1000)+"k", func(b *testing.B) {
			b.ReportAllocs()
			s := newTestIndexer(testIndexes()...)
			for i := 0; i < b.N; i++ {
				if i%n == 0 && i > 0 {
					b.StopTimer()
					s = newTestIndexer(testIndexes()...)
					b.StartTimer()
				}
				if err := s.Add(pods[i%n]); err != nil {
					b.Fatal(err)
				}
			}
		})
		for _, tc := range []struct {
			name string
			move bool
		}{{"Update", false}, {"UpdateMove", true}} {
			b.Run(tc.name+"/N="+strconv.Itoa(n/1000)+"k", func(b *testing.B) {
				b.ReportAllocs()
				s := benchIndexer(b, pods)
				versions := [2][]*testPod{withVersion(pods, tc.move), pods}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := s.Update(versions[(i/n)%2][i%n]); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		// The engine's own cost: the namespace index allocates nothing, so
		// this is an update with no user allocations.
		b.Run("Update-nsIndexOnly/N="+strconv.Itoa(n/1000)+"k", func(b *testing.B) {
			b.ReportAllocs()
			s := newTestIndexer(testIndexes()[0])
			if err := s.Replace(pods); err != nil {
				b.Fatal(err)
			}
			versions := [2][]*testPod{withVersion(pods, false), pods}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := s.Update(versions[(i/n)%2][i%n]); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("Delete/N="+strconv.Itoa(n/1000)+"k", func(b *testing.B) {
			b.ReportAllocs()
			s := benchIndexer(b, pods)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i%n == 0 && i > 0 {
					b.StopTimer()
					s = benchIndexer(b, pods)
					b.StartTimer()
				}
				if err := s.Delete(pods[i%n]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

var (
	sinkKey NamespacedKey
	sinkPod *testPod
	sinkN   int
)

// BenchmarkIndexerByIndex iterates the matches of one value among 100k
// objects.
func BenchmarkIndexerByIndex(b *testing.B) {
	s := benchIndexer(b, benchPods(100_000))
	for _, tc := range []struct{ name, index, value string }{
		{"matches=1", labelsIndex, "pod=pod-12345"},
		{"matches=100", labelsIndex, "app=app-123"},
		{"matches=10k", labelsIndex, "tier=tier-3"},
		{"matches=10k/namespace", nsIndex, "ns-3"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			// Not b.Loop: it keeps seq alive through an opaque use, which
			// stops the compiler from seeing which closure the range calls.
			for i := 0; i < b.N; i++ {
				seq, err := s.ByIndex(tc.index, tc.value)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for k, p := range seq {
					sinkKey, sinkPod = k, p
					n++
				}
				sinkN = n
			}
		})
	}
}

// BenchmarkIndexerIndexRef is BenchmarkIndexerByIndex through a resolved
// IndexRef, whose query allocates nothing.
func BenchmarkIndexerIndexRef(b *testing.B) {
	s := benchIndexer(b, benchPods(100_000))
	labels, err := s.IndexRef(NewIndex(labelsIndex, labelsIndexFunc))
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct{ name, value string }{
		{"matches=1", "pod=pod-12345"},
		{"matches=100", "app=app-123"},
		{"matches=10k", "tier=tier-3"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				n := 0
				for k, p := range labels.ByValue(tc.value) {
					sinkKey, sinkPod = k, p
					n++
				}
				sinkN = n
			}
		})
	}
}

func BenchmarkIndexerList(b *testing.B) {
	s := benchIndexer(b, benchPods(100_000))
	b.Run("N=100k", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkN = len(s.List())
		}
	})
	b.Run("All/N=100k", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for k, p := range s.All() {
				sinkKey, sinkPod = k, p
			}
		}
	})
}

func BenchmarkIndexerGet(b *testing.B) {
	for _, n := range benchSizes {
		pods := benchPods(n)
		s := benchIndexer(b, pods)
		keys := make([]NamespacedKey, n)
		for i, p := range pods {
			keys[i] = NamespacedKey{p.Namespace, p.Name}
		}
		b.Run("N="+strconv.Itoa(n/1000)+"k", func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				sinkPod, _ = s.Get(keys[i%n])
				i += 7919 // a prime stride: no cache-friendly pattern
			}
		})
	}
}

// BenchmarkIndexerWritesWithListers: 10k objects, 10 goroutines listing one
// namespace (1k objects) by index in a loop, one writer updating objects
// (one op = one write). It reports the writer's rate in writes/s and the
// readers' rate in lists/s.
func BenchmarkIndexerWritesWithListers(b *testing.B) {
	const n, listers = 10_000, 10
	pods := benchPods(n)
	s := benchIndexer(b, pods)
	versions := [2][]*testPod{withVersion(pods, false), pods}
	b.ReportAllocs()
	var stop atomic.Bool
	var lists atomic.Int64
	var wg sync.WaitGroup
	for r := range listers {
		wg.Go(func() {
			ns := "ns-" + strconv.Itoa(r%10)
			for !stop.Load() {
				seq, _ := s.ByIndex(nsIndex, ns)
				c := 0
				for range seq {
					c++
				}
				if c != n/10 {
					panic("lister saw " + strconv.Itoa(c) + " objects")
				}
				lists.Add(1)
			}
		})
	}
	b.ResetTimer()
	start := time.Now()
	lists.Store(0)
	for i := 0; i < b.N; i++ {
		if err := s.Update(versions[(i/n)%2][i%n]); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	l := lists.Load()
	stop.Store(true)
	wg.Wait()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "writes/s")
	b.ReportMetric(float64(l)/elapsed.Seconds(), "lists/s")
}

// heapInUse returns the live heap after a full collection.
func heapInUse() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkIndexerMemory reports the store's memory overhead per object for
// 100k small pods: the live heap with the pods stored minus the live heap of
// the pods alone (B/obj), also without indexes (store-B/obj).
func BenchmarkIndexerMemory(b *testing.B) {
	const n = 100_000
	b.ReportAllocs()
	for b.Loop() {
		pods := benchPods(n)
		base := heapInUse()
		s := newTestIndexer()
		if err := s.Replace(pods); err != nil {
			b.Fatal(err)
		}
		store := heapInUse()
		runtime.KeepAlive(s)
		s = nil
		s2 := newTestIndexer(testIndexes()...)
		for _, p := range pods { // grown by Adds, as an informer's store is
			if err := s2.Add(p); err != nil {
				b.Fatal(err)
			}
		}
		full := heapInUse()
		runtime.KeepAlive(s2)
		runtime.KeepAlive(pods)
		b.ReportMetric(float64(int64(full)-int64(base))/n, "B/obj")
		b.ReportMetric(float64(int64(store)-int64(base))/n, "store-B/obj")
	}
}
