package informer

import (
	"context"
	"iter"
	"runtime"
	"strconv"
	"syscall"
	"testing"
)

// fifoBenchObj is the FIFO benchmarks' object, keyed by NamespacedKey.
type fifoBenchObj struct {
	Namespace, Name string
	V               int
}

func fifoBenchKey(o *fifoBenchObj) (NamespacedKey, error) {
	return NamespacedKey{Namespace: o.Namespace, Name: o.Name}, nil
}

func fifoBenchObjs(n int) []*fifoBenchObj {
	objs := make([]*fifoBenchObj, n)
	for i := range objs {
		objs[i] = &fifoBenchObj{Namespace: "ns-" + strconv.Itoa(i%10), Name: "pod-" + strconv.Itoa(i)}
	}
	return objs
}

// sliceKnown is a KnownObjects over a fixed slice (benchmarks only).
type sliceKnown []*fifoBenchObj

func (s sliceKnown) Get(key NamespacedKey) (*fifoBenchObj, bool) { return nil, false }
func (s sliceKnown) All() iter.Seq2[NamespacedKey, *fifoBenchObj] {
	return func(yield func(NamespacedKey, *fifoBenchObj) bool) {
		for _, o := range s {
			if !yield(NamespacedKey{Namespace: o.Namespace, Name: o.Name}, o) {
				return
			}
		}
	}
}

func newBenchFIFO(b *testing.B, known KnownObjects[NamespacedKey, *fifoBenchObj]) *DeltaFIFO[NamespacedKey, *fifoBenchObj] {
	f, err := NewDeltaFIFO(DeltaFIFOOptions[NamespacedKey, *fifoBenchObj]{KeyFunc: fifoBenchKey, KnownObjects: known})
	if err != nil {
		b.Fatal(err)
	}
	return f
}

var benchSink int

func drainBatch(b *testing.B, f *DeltaFIFO[NamespacedKey, *fifoBenchObj]) {
	ctx := context.Background()
	for f.Len() > 0 {
		err := f.PopBatch(ctx, 1000, func(batch []Item[NamespacedKey, *fifoBenchObj]) error {
			for i := range batch {
				benchSink += len(batch[i].Deltas)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

func drainSingle(b *testing.B, f *DeltaFIFO[NamespacedKey, *fifoBenchObj]) {
	ctx := context.Background()
	process := func(_ NamespacedKey, ds Deltas[*fifoBenchObj], _ bool) error {
		benchSink += len(ds)
		return nil
	}
	for f.Len() > 0 {
		if err := f.Pop(ctx, process); err != nil {
			b.Fatal(err)
		}
	}
}

// cpuNanos returns the process's user+system CPU time (all threads,
// including the garbage collector's).
func cpuNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// perObj runs body b.N times and reports ns/obj, cpu-ns/obj (CPU time of
// the whole process, GC included: steadier than wall time on a shared
// machine), allocs/obj and B/obj, objs being the number of objects (or
// updates) one run handles.
func perObj(b *testing.B, objs int, body func()) {
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	cpu0 := cpuNanos()
	for i := 0; i < b.N; i++ {
		body()
	}
	cpu := cpuNanos() - cpu0
	b.StopTimer()
	runtime.ReadMemStats(&after)
	total := float64(b.N) * float64(objs)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/total, "ns/obj")
	b.ReportMetric(float64(cpu)/total, "cpu-ns/obj")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/total, "allocs/obj")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/total, "B/obj")
}

func BenchmarkFIFO(b *testing.B) {
	sizes := []struct {
		name string
		n    int
	}{{"N=10k", 10_000}, {"N=100k", 100_000}}
	for _, sz := range sizes {
		objs := fifoBenchObjs(sz.n)
		b.Run("AddPopBatch/"+sz.name, func(b *testing.B) {
			perObj(b, sz.n, func() {
				f := newBenchFIFO(b, nil)
				for _, o := range objs {
					if err := f.Add(o); err != nil {
						b.Fatal(err)
					}
				}
				drainBatch(b, f)
			})
		})
		b.Run("AddPopBatch-warm/"+sz.name, func(b *testing.B) {
			// One queue reused: steady state, its map and buffers grown.
			f := newBenchFIFO(b, nil)
			perObj(b, sz.n, func() {
				for _, o := range objs {
					if err := f.Add(o); err != nil {
						b.Fatal(err)
					}
				}
				drainBatch(b, f)
			})
		})
		b.Run("AddPop/"+sz.name, func(b *testing.B) {
			perObj(b, sz.n, func() {
				f := newBenchFIFO(b, nil)
				for _, o := range objs {
					if err := f.Add(o); err != nil {
						b.Fatal(err)
					}
				}
				drainSingle(b, f)
			})
		})
		b.Run("UpdateHeavy-10perKey/"+sz.name, func(b *testing.B) {
			perObj(b, 10*sz.n, func() {
				f := newBenchFIFO(b, nil)
				for range 10 {
					for _, o := range objs {
						if err := f.Update(o); err != nil {
							b.Fatal(err)
						}
					}
				}
				drainBatch(b, f)
			})
		})
		b.Run("ReplaceDrain/"+sz.name, func(b *testing.B) {
			perObj(b, sz.n, func() {
				f := newBenchFIFO(b, nil)
				if err := f.Replace(objs, "1"); err != nil {
					b.Fatal(err)
				}
				drainBatch(b, f)
				if !f.HasSynced() {
					b.Fatal("not synced")
				}
			})
		})
		b.Run("ResyncDrain/"+sz.name, func(b *testing.B) {
			f := newBenchFIFO(b, sliceKnown(objs))
			perObj(b, sz.n, func() {
				if err := f.Resync(); err != nil {
					b.Fatal(err)
				}
				drainBatch(b, f)
			})
		})
	}
}

// BenchmarkFIFOFloor measures, in the same run, what any keyed queue pays
// at least: inserting N keys into a fresh map and deleting them. Compare the
// FIFO numbers with it when the machine is noisy.
func BenchmarkFIFOFloor(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		objs := fifoBenchObjs(n)
		b.Run("MapInsertDelete/N="+strconv.Itoa(n/1000)+"k", func(b *testing.B) {
			perObj(b, n, func() {
				m := make(map[NamespacedKey]uint64)
				for i, o := range objs {
					k, _ := fifoBenchKey(o)
					if _, ok := m[k]; !ok {
						m[k] = uint64(i)
					}
				}
				for _, o := range objs {
					k, _ := fifoBenchKey(o)
					delete(m, k)
				}
			})
		})
	}
}
