// Package parallel runs a loop over [0, n) on several goroutines. It is the
// one parallel-for of the tree: the informer's snapshot encoding and
// decoding, the Kubernetes source's list decoding and the etcd source's
// value decoding all use it.
package parallel

import (
	"sync"
	"sync/atomic"
)

// Chunks calls f(worker, lo, hi) for consecutive chunks [lo, hi) of [0, n),
// each of chunk indexes (the last may be shorter; a chunk below 1 counts as
// 1), on up to workers goroutines, the caller's among them. Chunks are
// handed out in order as goroutines become free. worker, in [0, workers),
// names the goroutine making the call: no two calls with the same worker
// run at once, so f may keep per-worker scratch state indexed by it.
//
// After a call returns an error no further chunk is started; Chunks returns
// the first error, once every call has returned. With one worker (or one
// chunk) every call runs on the caller's goroutine, in order.
func Chunks(n, chunk, workers int, f func(worker, lo, hi int) error) error {
	chunk = max(1, chunk)
	workers = max(1, min(workers, (n+chunk-1)/chunk))
	if workers == 1 {
		for lo := 0; lo < n; lo += chunk {
			if err := f(0, lo, min(lo+chunk, n)); err != nil {
				return err
			}
		}
		return nil
	}
	var (
		next   atomic.Int64 // the first index not yet handed out
		failed atomic.Bool  // set once first is
		mu     sync.Mutex   // guards first
		first  error
		wg     sync.WaitGroup
	)
	work := func(w int) {
		for !failed.Load() {
			lo := int(next.Add(int64(chunk))) - chunk
			if lo >= n {
				return
			}
			if err := f(w, lo, min(lo+chunk, n)); err != nil {
				mu.Lock()
				if first == nil {
					first = err
					failed.Store(true)
				}
				mu.Unlock()
				return
			}
		}
	}
	for w := 1; w < workers; w++ {
		wg.Go(func() { work(w) })
	}
	work(0)
	wg.Wait()
	return first
}

// For calls f(i) for every i in [0, n), one index at a time, on up to
// workers goroutines as [Chunks] does (chunks of one index), and returns the
// first error f returned.
func For(n, workers int, f func(i int) error) error {
	if workers > 1 && n > 1 {
		return Chunks(n, 1, workers, func(_, i, _ int) error { return f(i) })
	}
	// The caller's goroutine alone, without the adapter: an encoding on one
	// goroutine calls For once per chunk, and the adapter would be one more
	// allocation each time (BenchmarkSnapshotLayout/encode's allocs/op).
	for i := range n {
		if err := f(i); err != nil {
			return err
		}
	}
	return nil
}
