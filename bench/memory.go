package bench

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// heapAfterGC returns the live heap after two collections.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// heapSampler tracks the peak of /memory/classes/heap/objects:bytes, sampled
// every 5 ms on its own goroutine (as in the client-go baseline), plus
// explicit samples taken by the caller.
type heapSampler struct {
	mu   sync.Mutex
	peak uint64
	stop chan struct{}
	done chan struct{}
}

func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func startSampler() *heapSampler {
	h := &heapSampler{stop: make(chan struct{}), done: make(chan struct{})}
	h.sample()
	go func() {
		defer close(h.done)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-t.C:
				h.sample()
			}
		}
	}()
	return h
}

func (h *heapSampler) sample() {
	v := heapObjects()
	h.mu.Lock()
	h.peak = max(h.peak, v)
	h.mu.Unlock()
}

// Stop ends sampling and returns the peak.
func (h *heapSampler) Stop() uint64 {
	h.sample()
	close(h.stop)
	<-h.done
	return h.peak
}

// memoryWorkload: indexer bytes per object beyond the objects themselves,
// after GC, for 100k small pods with both indexes.
func memoryWorkload(cfg Config) Workload {
	n := cfg.n(100_000, 100_000)
	return Workload{
		Metrics: []Metric{
			{Group: "Memory", Name: "store overhead per object (2 indexes), N=" + kfmt(n), Unit: "B/obj", Target: Target{RatioAtMost, 1.0 / 3}, Chart: true},
			{Group: "Memory", Name: "store overhead per object (no index), N=" + kfmt(n), Unit: "B/obj"},
		},
		Run: func(s Side) []float64 {
			pods := NewPods(Small, n, 1)
			base := heapAfterGC()
			var out []float64
			for _, indexed := range []bool{true, false} {
				var keep any
				if s == Ginformer {
					gi := newGIIndexer()
					if !indexed {
						gi = newGIIndexerNoIndex()
					}
					for _, p := range pods {
						_ = gi.Add(p)
					}
					keep = gi
				} else {
					cg := newCGIndexer()
					if !indexed {
						cg = newCGIndexerNoIndex()
					}
					for _, p := range pods {
						_ = cg.Add(p)
					}
					keep = cg
				}
				h := heapAfterGC()
				runtime.KeepAlive(keep)
				out = append(out, (float64(h)-float64(base))/float64(n))
				keep = nil
				runtime.KeepAlive(keep)
			}
			runtime.KeepAlive(pods)
			return out
		},
	}
}

func runtime_GC() { runtime.GC() }

// liveProbe measures the peak of live heap during a relist at points both
// libraries reach: every 20th list page served (client-go asks for the
// whole list as one page on a relist) and the first and every 10,000th
// handler callback. At each point it collects garbage twice and reads
// HeapAlloc, so the figure is data held at once (the relist's old and new
// objects, queues, maps), not garbage awaiting a collector that had no
// reason to run yet. The collections stall the informer while they run, so
// a probed relist is never the one timed.
type liveProbe struct {
	mu    sync.Mutex
	peak  uint64
	pages atomic.Int64
	calls atomic.Int64
}

const (
	probeEveryPages = 20
	probeEveryCalls = 10_000
)

func (p *liveProbe) page() {
	if (p.pages.Add(1)-1)%probeEveryPages == 0 {
		p.point()
	}
}

func (p *liveProbe) callback() {
	if (p.calls.Add(1)-1)%probeEveryCalls == 0 {
		p.point()
	}
}

func (p *liveProbe) point() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.peak = max(p.peak, heapAfterGC())
}

// Peak returns the largest HeapAlloc read at a probe point.
func (p *liveProbe) Peak() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peak
}
