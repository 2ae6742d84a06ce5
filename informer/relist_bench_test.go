package informer

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// relistSource serves n pods in pages, decoding (allocating) a fresh copy of
// each listed pod per List call as a client would. After Change, pods
// 0..changed-1 have version "2". It knows its objects' versions.
type relistSource struct {
	n       int
	changed atomic.Int64
	streams chan *WatchStream[*testPod]
	// atLastPage, if set, runs when the last page of a list is served.
	atLastPage func()
}

func (s *relistSource) pod(i int) *testPod {
	p := benchPod(i)
	if i < int(s.changed.Load()) {
		p.Version = "2"
	}
	return p
}

func (s *relistSource) List(_ context.Context, opts ListOptions) (ListPage[*testPod], error) {
	start := 0
	if opts.Continue != "" {
		start, _ = strconv.Atoi(opts.Continue)
	}
	end := s.n
	if opts.Limit > 0 {
		end = min(s.n, start+opts.Limit)
	}
	items := make([]*testPod, 0, end-start)
	for i := start; i < end; i++ {
		items = append(items, s.pod(i))
	}
	page := ListPage[*testPod]{Items: items, Version: "v" + strconv.FormatInt(s.changed.Load(), 10)}
	if end < s.n {
		page.Continue = strconv.Itoa(end)
	} else if s.atLastPage != nil {
		s.atLastPage()
	}
	return page, nil
}

func (s *relistSource) Watch(ctx context.Context, opts WatchOptions) (Watcher[*testPod], error) {
	if opts.SendInitialEvents {
		return nil, errors.ErrUnsupported
	}
	w := NewWatchStream[*testPod](ctx, 0)
	s.streams <- w
	return w, nil
}

func (s *relistSource) ObjectVersion(p *testPod) string { return p.Version }

// liveHeap returns the live heap after two collections (the second frees
// what sync.Pool victim caches held through the first).
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func heapObjectBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// relistNotes counts the notifications after the initial sync; at the first
// one of the relist it measures the live heap (the relist's batch is then
// held by the processing loop).
type relistNotes struct {
	n        atomic.Int64
	target   atomic.Int64
	done     chan struct{}
	measure  atomic.Bool
	liveMu   sync.Mutex
	livePeak uint64
}

func (h *relistNotes) hit() {
	if h.measure.CompareAndSwap(true, false) {
		v := liveHeap()
		h.liveMu.Lock()
		h.livePeak = max(h.livePeak, v)
		h.liveMu.Unlock()
	}
	if h.n.Add(1) == h.target.Load() {
		h.done <- struct{}{}
	}
}
func (h *relistNotes) OnAdd(*testPod, bool)                       { h.hit() }
func (h *relistNotes) OnUpdate(_, _ *testPod)                     { h.hit() }
func (h *relistNotes) OnDelete(Deletion[NamespacedKey, *testPod]) { h.hit() }

// BenchmarkInformerRelist: an informer synced with 100k pods relists (the
// watch fails with an expired version) a paged source that decodes fresh
// copies, 1% of them changed. With the source's ObjectVersion only the
// changed pods are delivered; with ObjectVersion turned off, every pod is
// (as in client-go). Reported: notifications delivered, the live heap at the
// relist's high points (end of the list; its batch being processed) over
// the steady live heap (objects + informer), the same with the sampled heap
// (/memory/classes/heap/objects:bytes every ms, garbage included, as
// bench/cmd/compare measures), and the relist's duration.
func BenchmarkInformerRelist(b *testing.B) {
	for _, versioned := range []bool{true, false} {
		b.Run(fmt.Sprintf("N=100k/changed=1%%/versioned=%v", versioned), func(b *testing.B) {
			const n, changed = 100_000, 1_000
			var notes, livePeak, sampledPeak, steadySum, relistNs float64
			for b.Loop() {
				b.StopTimer()
				r := relistOnce(b, n, changed, versioned)
				notes += r.notes
				livePeak += r.livePeak
				sampledPeak += r.sampledPeak
				steadySum += r.steady
				relistNs += r.ns
				b.StartTimer()
			}
			k := float64(b.N)
			b.ReportMetric(notes/k, "notifications")
			b.ReportMetric(livePeak/k, "peak-live/steady")
			b.ReportMetric(sampledPeak/k, "peak-sampled/steady")
			b.ReportMetric(steadySum/k/1e6, "steady-MB")
			b.ReportMetric(relistNs/k/1e6, "ms-relist")
		})
	}
}

type relistResult struct {
	notes, livePeak, sampledPeak, steady, ns float64
}

// relistOnce syncs an informer over a relistSource, then times one relist
// (not under the benchmark's timer: the caller stops it; the figures are
// reported as metrics). Everything it builds is garbage when it returns, so
// the next run's baseline is clean.
func relistOnce(b *testing.B, n, changed int, versioned bool) relistResult {
	src := &relistSource{n: n, streams: make(chan *WatchStream[*testPod], 4)}
	opts := Options[NamespacedKey, *testPod]{Source: src, KeyFunc: podKey, Indexes: testIndexes(),
		ListWatch:    ListWatchOptions{Backoff: Backoff{Initial: time.Millisecond, Max: time.Millisecond}},
		ErrorHandler: func(context.Context, error) {}}
	if !versioned {
		opts.ObjectVersion = func(*testPod) string { return "" }
	}
	base := liveHeap()
	inf, err := NewSharedInformer(opts)
	if err != nil {
		b.Fatal(err)
	}
	h := &relistNotes{done: make(chan struct{}, 1)}
	h.target.Store(int64(n))
	if _, err := inf.AddHandler(h, HandlerOptions{}); err != nil {
		b.Fatal(err)
	}
	stop := runBench(inf)
	defer stop()
	<-h.done
	w := <-src.streams
	// One event through: the processing loop and the handler are done with
	// the initial list's buffers.
	h.n.Store(0)
	h.target.Store(1)
	w.Send(Event[*testPod]{Type: EventModified, Object: src.pod(0), Version: "v0"})
	<-h.done
	steady := float64(liveHeap()) - float64(base)

	want := int64(changed)
	if !versioned {
		want = int64(n)
	}
	h.n.Store(0)
	h.target.Store(want)
	var lastPageLive atomic.Uint64
	src.atLastPage = func() { lastPageLive.Store(liveHeap()) }
	src.changed.Store(int64(changed))
	h.measure.Store(true)
	sampled := heapObjectBytes()
	stopSampling := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-t.C:
				sampled = max(sampled, heapObjectBytes())
			}
		}
	})
	start := time.Now()
	w.Send(Event[*testPod]{Type: EventError, Err: fmt.Errorf("bench: %w", ErrExpired)})
	<-h.done
	ns := float64(time.Since(start).Nanoseconds())
	close(stopSampling)
	sampler.Wait()
	h.liveMu.Lock()
	peak := max(h.livePeak, lastPageLive.Load())
	h.liveMu.Unlock()
	return relistResult{
		notes:       float64(h.n.Load()),
		livePeak:    (float64(peak) - float64(base)) / steady,
		sampledPeak: (float64(sampled) - float64(base)) / steady,
		steady:      steady,
		ns:          ns,
	}
}
