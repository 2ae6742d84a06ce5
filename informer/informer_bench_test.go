package informer

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// benchSource lists pods at version "1" and hands each watch to the
// benchmark through streams.
type benchSource struct {
	pods    []*testPod
	streams chan *WatchStream[*testPod]
}

func newBenchSource(pods []*testPod) *benchSource {
	return &benchSource{pods: pods, streams: make(chan *WatchStream[*testPod], 1)}
}

func (s *benchSource) List(context.Context, ListOptions) (ListPage[*testPod], error) {
	return ListPage[*testPod]{Items: slices.Clone(s.pods), Version: "1"}, nil
}

func (s *benchSource) Watch(ctx context.Context, opts WatchOptions) (Watcher[*testPod], error) {
	if opts.SendInitialEvents {
		return nil, errors.ErrUnsupported
	}
	w := NewWatchStream[*testPod](ctx, 0) // unbuffered, as client-go's fake watcher
	s.streams <- w
	return w, nil
}

func newBenchInformer(b *testing.B, src Source[*testPod]) *SharedInformer[NamespacedKey, *testPod] {
	inf, err := NewSharedInformer(Options[NamespacedKey, *testPod]{Source: src, KeyFunc: podKey, Indexes: testIndexes()})
	if err != nil {
		b.Fatal(err)
	}
	return inf
}

func runBench(inf *SharedInformer[NamespacedKey, *testPod]) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = inf.Run(ctx) })
	return func() { cancel(); wg.Wait() }
}

// countHandler counts calls and signals when a target count is reached.
type countHandler struct {
	n      atomic.Int64
	target atomic.Int64
	done   chan struct{}
}

func newCountHandler() *countHandler { return &countHandler{done: make(chan struct{}, 1)} }

func (h *countHandler) hit() {
	if h.n.Add(1) == h.target.Load() {
		h.done <- struct{}{}
	}
}
func (h *countHandler) OnAdd(*testPod, bool)                       { h.hit() }
func (h *countHandler) OnUpdate(_, _ *testPod)                     { h.hit() }
func (h *countHandler) OnDelete(Deletion[NamespacedKey, *testPod]) { h.hit() }

// BenchmarkInformerSync measures Run → HasSynced (the cache holds the list)
// and → the handler has received every initial add.
func BenchmarkInformerSync(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run("N="+strconv.Itoa(n), func(b *testing.B) {
			pods := benchPods(n)
			b.ReportAllocs()
			var informerSynced, handlerSynced time.Duration
			for b.Loop() {
				src := newBenchSource(pods)
				inf := newBenchInformer(b, src)
				h := newCountHandler()
				h.target.Store(int64(n))
				_, _ = inf.AddHandler(h, HandlerOptions{})
				start := time.Now()
				stop := runBench(inf)
				<-inf.Synced()
				informerSynced += time.Since(start)
				<-h.done
				handlerSynced += time.Since(start)
				b.StopTimer()
				stop()
				b.StartTimer()
			}
			b.ReportMetric(float64(informerSynced.Milliseconds())/float64(b.N), "ms-informer-synced")
			b.ReportMetric(float64(handlerSynced.Milliseconds())/float64(b.N), "ms-handler-synced")
			b.ReportMetric(float64(handlerSynced.Nanoseconds())/float64(b.N)/float64(n), "ns/obj")
		})
	}
}

// BenchmarkInformerEvents sends Modified events back to back over the
// (unbuffered) watch of an informer holding 10k pods; one op is one event
// delivered to every handler.
func BenchmarkInformerEvents(b *testing.B) {
	for _, handlers := range []int{1, 10} {
		b.Run("handlers="+strconv.Itoa(handlers), func(b *testing.B) {
			pods := benchPods(10_000)
			src := newBenchSource(pods)
			inf := newBenchInformer(b, src)
			hs := make([]*countHandler, handlers)
			for i := range hs {
				hs[i] = newCountHandler()
				hs[i].target.Store(int64(len(pods)))
				_, _ = inf.AddHandler(hs[i], HandlerOptions{})
			}
			stop := runBench(inf)
			defer stop()
			w := <-src.streams
			for _, h := range hs {
				<-h.done
			}
			updates := make([]*testPod, len(pods))
			for i, p := range pods {
				c := *p
				c.Version = "2"
				updates[i] = &c
			}
			for _, h := range hs {
				h.n.Store(0)
				h.target.Store(int64(b.N))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				w.Send(Event[*testPod]{Type: EventModified, Object: updates[i%len(updates)], Version: "2"})
			}
			for _, h := range hs {
				<-h.done
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// latencyHandler records the time from an event's send to its OnUpdate.
type latencyHandler struct {
	sent    *atomic.Int64 // UnixNano of the send in flight
	samples []time.Duration
	got     chan struct{}
}

func (h *latencyHandler) OnAdd(*testPod, bool) {}
func (h *latencyHandler) OnUpdate(_, _ *testPod) {
	h.samples = append(h.samples, time.Duration(time.Now().UnixNano()-h.sent.Load()))
	h.got <- struct{}{}
}
func (h *latencyHandler) OnDelete(Deletion[NamespacedKey, *testPod]) {}

// BenchmarkInformerLatency measures watch send → handler for one event in
// flight at a time (ping-pong), and reports p50 and p99.
func BenchmarkInformerLatency(b *testing.B) {
	pods := benchPods(10_000)
	src := newBenchSource(pods)
	inf := newBenchInformer(b, src)
	var sent atomic.Int64
	h := &latencyHandler{sent: &sent, got: make(chan struct{}, 1)}
	reg, _ := inf.AddHandler(h, HandlerOptions{})
	stop := runBench(inf)
	defer stop()
	w := <-src.streams
	<-reg.Synced()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		c := *pods[i%len(pods)]
		c.Version = strconv.Itoa(i)
		sent.Store(time.Now().UnixNano())
		w.Send(Event[*testPod]{Type: EventModified, Object: &c, Version: c.Version})
		<-h.got
	}
	b.StopTimer()
	slices.Sort(h.samples)
	if len(h.samples) > 0 {
		b.ReportMetric(float64(h.samples[len(h.samples)/2].Nanoseconds())/1e3, "µs-p50")
		b.ReportMetric(float64(h.samples[len(h.samples)*99/100].Nanoseconds())/1e3, "µs-p99")
	}
}
