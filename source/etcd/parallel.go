package etcd

import (
	"runtime"

	"github.com/ginformer/ginformer/internal/parallel"
)

// minPart is the fewest values a goroutine of inParts decodes: decoding a
// value of a few hundred bytes takes microseconds, starting a goroutine a
// fraction of one.
const minPart = 32

// inParts calls f on consecutive parts of [0, n), on up to GOMAXPROCS
// goroutines (parts of at least minPart), one of them the caller's
// ([parallel.Chunks]), and returns when every call has returned. Values
// are decoded this way: the codec, transform and filter are documented to
// be called concurrently.
func inParts(n int, f func(lo, hi int)) {
	workers := max(1, min(runtime.GOMAXPROCS(0), n/minPart))
	_ = parallel.Chunks(n, (n+workers-1)/workers, workers, func(_, lo, hi int) error {
		f(lo, hi)
		return nil
	})
}
