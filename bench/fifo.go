package bench

import (
	"context"
	"fmt"

	"github.com/ginformer/ginformer/informer"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// FIFO workloads. client-go's side is the FIFO its informer actually uses in
// v0.37 (RealFIFO with AtomicEvents and UnlockWhileProcessing, drained with
// PopBatch); its DeltaFIFO is measured too, being the structural counterpart
// of ginformer's DeltaFIFO. The consumer only counts deltas. Every
// repetition builds a fresh queue, as client-go's own benchmarks do.

const popBatch = 1000 // client-go's PopBatch takes at most 1000 keys

func newRealFIFO() *cache.RealFIFO {
	return cache.NewRealFIFOWithOptions(cache.RealFIFOOptions{
		KeyFunction:           cache.MetaNamespaceKeyFunc,
		AtomicEvents:          true,
		UnlockWhileProcessing: true,
	})
}

func newCGDeltaFIFO() *cache.DeltaFIFO {
	return cache.NewDeltaFIFOWithOptions(cache.DeltaFIFOOptions{
		KeyFunction:           cache.MetaNamespaceKeyFunc,
		EmitDeltaTypeReplaced: true,
	})
}

func newGIFIFO() *informer.DeltaFIFO[informer.NamespacedKey, *corev1.Pod] {
	f, err := informer.NewDeltaFIFO(informer.DeltaFIFOOptions[informer.NamespacedKey, *corev1.Pod]{KeyFunc: giKey})
	if err != nil {
		panic(err)
	}
	return f
}

// drainRealFIFO pops batches until want deltas have been seen.
func drainRealFIFO(f *cache.RealFIFO, want int) {
	got := 0
	for got < want {
		err := f.PopBatch(func(ds []cache.Delta, _ bool) error {
			got += len(ds)
			return nil
		}, func(obj interface{}, _ bool) error {
			got += len(obj.(cache.Deltas))
			return nil
		})
		if err != nil {
			panic(err)
		}
	}
}

func drainCGDeltaFIFO(f *cache.DeltaFIFO, want int) {
	got := 0
	for got < want {
		_, err := f.Pop(func(obj interface{}, _ bool) error {
			got += len(obj.(cache.Deltas))
			return nil
		})
		if err != nil {
			panic(err)
		}
	}
}

func drainGIFIFO(f *informer.DeltaFIFO[informer.NamespacedKey, *corev1.Pod], want int) {
	ctx := context.Background()
	got := 0
	for got < want {
		err := f.PopBatch(ctx, popBatch, func(b []informer.Item[informer.NamespacedKey, *corev1.Pod]) error {
			for i := range b {
				got += len(b[i].Deltas)
			}
			return nil
		})
		if err != nil {
			panic(err)
		}
	}
}

// fifoWorkloads: add N distinct objects then drain; N updates over N/10 keys
// then drain.
func fifoWorkloads(cfg Config, n int) []Workload {
	var ws []Workload
	{
		pods := NewPods(Small, n, 1)
		// Update-heavy: n updates spread over n/10 keys (10 per key).
		upd := make([]*corev1.Pod, n)
		for i := range upd {
			upd[i] = NewPod(Small, i%(n/10), 2+i)
		}
		for _, vsDelta := range []bool{false, true} {
			cgName := "RealFIFO"
			if vsDelta {
				cgName = "DeltaFIFO"
			}
			ws = append(ws, Workload{
				Metrics: []Metric{
					{Group: "FIFO", Name: fmt.Sprintf("add+drain N=%s (vs %s)", kfmt(n), cgName), Unit: "ns/obj", Target: Target{Better, 5}, Chart: !vsDelta},
					{Group: "FIFO", Name: fmt.Sprintf("add+drain N=%s (vs %s)", kfmt(n), cgName), Unit: "allocs/obj"},
				},
				Run: func(s Side) []float64 {
					ns, al := loop(cfg.MinTime, nil, func() int {
						switch {
						case s == Ginformer:
							f := newGIFIFO()
							for _, p := range pods {
								_ = f.Add(p)
							}
							drainGIFIFO(f, n)
						case vsDelta:
							f := newCGDeltaFIFO()
							for _, p := range pods {
								_ = f.Add(p)
							}
							drainCGDeltaFIFO(f, n)
						default:
							f := newRealFIFO()
							for _, p := range pods {
								_ = f.Add(p)
							}
							drainRealFIFO(f, n)
						}
						return n
					})
					return []float64{ns, al}
				},
			})
			ws = append(ws, Workload{
				Metrics: []Metric{
					{Group: "FIFO", Name: fmt.Sprintf("update-heavy 10/key N=%s (vs %s)", kfmt(n), cgName), Unit: "ns/update", Target: Target{Better, 5}, Chart: !vsDelta},
					{Group: "FIFO", Name: fmt.Sprintf("update-heavy 10/key N=%s (vs %s)", kfmt(n), cgName), Unit: "allocs/update"},
				},
				Run: func(s Side) []float64 {
					ns, al := loop(cfg.MinTime, nil, func() int {
						switch {
						case s == Ginformer:
							f := newGIFIFO()
							for _, p := range upd {
								_ = f.Update(p)
							}
							drainGIFIFO(f, n)
						case vsDelta:
							f := newCGDeltaFIFO()
							for _, p := range upd {
								_ = f.Update(p)
							}
							drainCGDeltaFIFO(f, n)
						default:
							f := newRealFIFO()
							for _, p := range upd {
								_ = f.Update(p)
							}
							drainRealFIFO(f, n)
						}
						return n
					})
					return []float64{ns, al}
				},
			})
		}
	}
	return ws
}

// kfmt renders 10000 as "10k".
func kfmt(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}
