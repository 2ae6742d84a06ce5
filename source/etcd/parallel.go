package etcd

import (
	"runtime"
	"sync"
)

// minPart is the fewest values a goroutine of parallel decodes: decoding a
// value of a few hundred bytes takes microseconds, starting a goroutine a
// fraction of one.
const minPart = 32

// parallel calls f on consecutive parts of [0, n), on up to GOMAXPROCS
// goroutines (parts of at least minPart), one of them the caller's, and
// returns when every call has returned. Values are decoded this way: the
// codec, transform and filter are documented to be called concurrently.
func parallel(n int, f func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), n/minPart)
	if workers <= 1 {
		f(0, n)
		return
	}
	per := (n + workers - 1) / workers
	var wg sync.WaitGroup
	for lo := per; lo < n; lo += per {
		wg.Go(func() { f(lo, min(lo+per, n)) })
	}
	f(0, per)
	wg.Wait()
}
