package bench

import (
	"fmt"
	"testing"
)

func BenchmarkProbeSync(b *testing.B) {
	n := 100_000
	tmpl := NewPods(Full, n, 1)
	for _, s := range []Side{ClientGo, Ginformer} {
		b.Run(s.String(), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				b.StopTimer()
				h := newHarness(s, harnessOptions{handlers: 1})
				h.setList(tmpl, "1")
				b.StartTimer()
				h.start()
				h.waitAll(int64(n))
				b.StopTimer()
				h.stop()
			}
		})
	}
}

func BenchmarkProbeEvents(b *testing.B) {
	n := 10_000
	tmpl := NewPods(Full, n, 1)
	ps := pool(10_000, n)
	for _, s := range []Side{ClientGo, Ginformer} {
		for _, handlers := range []int{1, 10} {
			b.Run(fmt.Sprintf("%s/handlers=%d", s, handlers), func(b *testing.B) {
				h := syncedHarness(s, harnessOptions{handlers: handlers}, tmpl)
				b.ReportAllocs()
				b.ResetTimer()
				c0 := cpuTime()
				for i := range b.N {
					h.send(ps[i%len(ps)])
				}
				h.waitAll(int64(n + b.N))
				b.StopTimer()
				// CPU time of the whole process per event: steadier than
				// wall time on a shared machine.
				b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
				h.stop()
			})
		}
	}
}
