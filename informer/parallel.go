package informer

import "sync"

// parallelFor calls f(i) for every i in [0, n), on up to workers goroutines
// (on the caller's alone when that is one), and returns the first error f
// returned; after an error no further i is started. It returns once every
// call has returned. The snapshot's encoding and decoding use it.
func parallelFor(n, workers int, f func(i int) error) error {
	workers = max(1, min(workers, n))
	if workers == 1 {
		for i := range n {
			if err := f(i); err != nil {
				return err
			}
		}
		return nil
	}
	var (
		mu    sync.Mutex // guards next and first
		next  int
		first error
		wg    sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for {
				mu.Lock()
				if first != nil || next == n {
					mu.Unlock()
					return
				}
				i := next
				next++
				mu.Unlock()
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}
