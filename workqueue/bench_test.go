package workqueue

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ginformer/ginformer/informer"
)

func benchKeys(n int) []informer.NamespacedKey {
	keys := make([]informer.NamespacedKey, n)
	for i := range keys {
		keys[i] = informer.NamespacedKey{Namespace: fmt.Sprint("ns-", i%10), Name: fmt.Sprint("pod-", i)}
	}
	return keys
}

// BenchmarkCycle is one key's life in a warm queue, on one goroutine: Add,
// Get, Forget, Done. It allocates nothing.
func BenchmarkCycle(b *testing.B) {
	keys := benchKeys(1024)
	q, _ := New[informer.NamespacedKey](Options{})
	ctx := context.Background()
	b.ReportAllocs()
	for i := range b.N {
		k := keys[i&1023]
		q.Add(k)
		got, _ := q.Get(ctx)
		q.Forget(got)
		q.Done(got)
	}
}

// BenchmarkAddDedup adds a key that is already queued.
func BenchmarkAddDedup(b *testing.B) {
	keys := benchKeys(1024)
	q, _ := New[informer.NamespacedKey](Options{})
	for _, k := range keys {
		q.Add(k)
	}
	b.ReportAllocs()
	for i := range b.N {
		q.Add(keys[i&1023])
	}
}

// BenchmarkRetry is a failing key's cycle: AddRateLimited, then the
// delayed add, Get, Done; the delay is 1 ns so the timer fires at once, and
// the retry budget is off (the default one would hold the retries to 10 a
// second).
func BenchmarkRetry(b *testing.B) {
	q, _ := New[int](Options{Backoff: Backoff{Base: 1, Max: 1}, RetryBudget: RetryBudget{Disable: true}})
	ctx := context.Background()
	b.ReportAllocs()
	for range b.N {
		q.AddRateLimited(1)
		k, _ := q.Get(ctx)
		q.Done(k)
	}
}

// BenchmarkRetryBudget is BenchmarkRetry with a retry budget on, one that
// never delays: what the budget's bookkeeping adds to a retry.
func BenchmarkRetryBudget(b *testing.B) {
	q, _ := New[int](Options{Backoff: Backoff{Base: 1, Max: 1}, RetryBudget: RetryBudget{PerSecond: 1e12, Burst: 1 << 20}})
	ctx := context.Background()
	b.ReportAllocs()
	for range b.N {
		q.AddRateLimited(1)
		k, _ := q.Get(ctx)
		q.Done(k)
	}
}

// BenchmarkWorkers is throughput with 8 workers and one producer, per key.
func BenchmarkWorkers(b *testing.B) {
	keys := benchKeys(1 << 16)
	q, _ := New[informer.NamespacedKey](Options{})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	done := make(chan struct{}, 1)
	var left atomic.Int64
	for range 8 {
		wg.Go(func() {
			for {
				k, ok := q.Get(ctx)
				if !ok {
					return
				}
				q.Forget(k)
				q.Done(k)
				if left.Add(-1) == 0 {
					done <- struct{}{}
				}
			}
		})
	}
	b.ReportAllocs()
	for b.Loop() {
		left.Store(int64(len(keys)))
		for _, k := range keys {
			q.Add(k)
		}
		<-done
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(keys)), "ns/key")
	cancel()
	wg.Wait()
}
