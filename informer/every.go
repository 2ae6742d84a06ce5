package informer

import (
	"context"
	"time"
)

// every calls f every d until ctx is done, starting d after the call. It
// blocks until then; f runs on the caller's goroutine, so calls never
// overlap. d must be positive.
func every(ctx context.Context, d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}
