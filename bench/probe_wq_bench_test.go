package bench

import (
	"testing"

	"github.com/ginformer/ginformer/informer"
)

// BenchmarkProbeWQ: the work queue workloads as Go benchmarks, for
// profiling one side at a time.
func BenchmarkProbeWQ(b *testing.B) {
	const n = 100_000
	keys, _ := wqKeys(n)
	for _, s := range []Side{ClientGo, Ginformer} {
		b.Run("fill/"+s.String(), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				q := newWQ(s)
				for _, k := range keys {
					q.Add(k)
				}
				b.StopTimer()
				q.ShutDown()
				b.StartTimer()
			}
			b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "adds/s")
		})
		b.Run("drain8/"+s.String(), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				b.StopTimer()
				q := newWQ(s)
				for _, k := range keys {
					q.Add(k)
				}
				each, all := countTo(n)
				b.StartTimer()
				finish := startWorkers(q, wqWorkers, each)
				<-all
				b.StopTimer()
				finish()
				b.StartTimer()
			}
			b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "gets/s")
		})
	}
}

// BenchmarkProbeWQDups: 100 adds per key over 1000 keys while 8 workers
// drain (the deduplicating workload).
func BenchmarkProbeWQDups(b *testing.B) {
	const n, dups = 100_000, 100
	keys, _ := wqKeys(n / dups)
	for _, s := range []Side{ClientGo, Ginformer} {
		b.Run(s.String(), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				q := newWQ(s)
				finish := startWorkers(q, wqWorkers, func(informer.NamespacedKey) {})
				for i := range n {
					q.Add(keys[i%len(keys)])
				}
				finish()
			}
			b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "adds/s")
		})
	}
}

// BenchmarkProbeWQConcurrent: 100k distinct keys added while 8 workers
// drain.
func BenchmarkProbeWQConcurrent(b *testing.B) {
	const n = 100_000
	keys, _ := wqKeys(n)
	for _, s := range []Side{ClientGo, Ginformer} {
		b.Run(s.String(), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				q := newWQ(s)
				finish := startWorkers(q, wqWorkers, func(informer.NamespacedKey) {})
				for _, k := range keys {
					q.Add(k)
				}
				finish()
			}
			b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "adds/s")
		})
	}
}
