package ringbuf

import "testing"

func BenchmarkRing(b *testing.B) {
	b.Run("PushPop-steady", func(b *testing.B) {
		b.ReportAllocs()
		var r Ring[string]
		for range 64 {
			r.Push("x")
		}
		for b.Loop() {
			r.Push("x")
			r.Pop()
		}
	})
	b.Run("Burst-100k", func(b *testing.B) {
		b.ReportAllocs()
		const n = 100_000
		var r Ring[string]
		for b.Loop() {
			for range n {
				r.Push("x")
			}
			for range n {
				r.Pop()
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/item")
	})
}
