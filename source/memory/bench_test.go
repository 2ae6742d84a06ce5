package memory_test

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/memory"
)

// BenchmarkStorePut measures write throughput while watchers consume every
// event. Writers are not slowed by watchers, so the writer waits (timed)
// whenever a watcher lags by more than half the history: the result is the
// throughput the watchers sustain, not the writer alone.
func BenchmarkStorePut(b *testing.B) {
	const history, slack = 100_000, 50_000
	for _, watchers := range []int{0, 1, 10} {
		b.Run(fmt.Sprintf("watchers=%d", watchers), func(b *testing.B) {
			s := newStore(b, memory.Options[string, *obj]{HistorySize: history, WatchBuffer: 1000})
			objs := make([]*obj, 1000)
			for i := range objs {
				objs[i] = &obj{Name: fmt.Sprintf("obj-%04d", i)}
			}
			var wg sync.WaitGroup
			var expired atomic.Int64
			seen := make([]atomic.Int64, watchers)
			for i := range watchers {
				w, err := s.Watch(b.Context(), informer.WatchOptions{Version: s.Version()})
				if err != nil {
					b.Fatal(err)
				}
				wg.Go(func() {
					defer w.Stop()
					for ev := range w.Events() {
						switch {
						case ev.Type == informer.EventError:
							expired.Add(1) // fell more than the history behind
							return
						case ev.Object.Name == "zz-end":
							return
						}
						seen[i].Add(1)
					}
				})
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if _, err := s.Put(objs[i%len(objs)]); err != nil {
					b.Fatal(err)
				}
				if i%10_000 == 0 {
					for w := range seen {
						for int64(i)-seen[w].Load() > slack {
							runtime.Gosched()
						}
					}
				}
			}
			s.Put(&obj{Name: "zz-end"})
			wg.Wait() // every watcher received every event
			b.StopTimer()
			if expired.Load() > 0 {
				b.Fatalf("%d watchers fell behind the history", expired.Load())
			}
		})
	}
}

// BenchmarkList100k measures a full list of 100k objects: "cached" with no
// write since the previous list, "updated" after an update (the key order is
// reused), "created" after a create (the order is rebuilt), and paged by 500.
func BenchmarkList100k(b *testing.B) {
	const n = 100_000
	s := newStore(b, memory.Options[string, *obj]{})
	for i := range n {
		put(b, s, fmt.Sprintf("obj-%06d", i), 1)
	}
	ctx := b.Context()
	list := func(b *testing.B) {
		page, err := s.List(ctx, informer.ListOptions{})
		if err != nil || len(page.Items) < n {
			b.Fatal(err, len(page.Items))
		}
	}
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			list(b)
		}
	})
	b.Run("updated", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			put(b, s, "obj-000007", 2)
			list(b)
		}
	})
	created := 0 // sub-benchmarks run -count times on the same store
	b.Run("created", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			created++
			put(b, s, fmt.Sprintf("new-%d", created), 1)
			list(b)
		}
	})
	b.Run("paged500", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			opts := informer.ListOptions{Limit: 500}
			for {
				page, err := s.List(ctx, opts)
				if err != nil {
					b.Fatal(err)
				}
				if page.Continue == "" {
					break
				}
				opts.Continue = page.Continue
			}
		}
	})
}
