// Package keepalive holds what the lease-based memberships
// (source/etcd/lease and source/k8s/lease) share: the loop renewing a
// registration until the lease is lost, the pause between retries, the
// registration and its validity under a clock-drift bound, and the channel
// that signals a new view. The memberships live in sources
// that must not import each other; each imports this package instead. It
// imports nothing of ginformer's but internal/ctxtime and shard.
package keepalive

import (
	"context"
	"time"

	"github.com/ginformer/ginformer/internal/ctxtime"
)

// Result is what one renewal attempt found.
type Result int

const (
	// Renewed: the lease was renewed; the next attempt is a third of the
	// lease duration later.
	Renewed Result = iota
	// Again: the attempt learned something (a newer state of the lease)
	// and wants to be made again at once.
	Again
	// Failed: the attempt failed; the next is a tenth of the lease
	// duration later (at least 50 ms), if the lease is still valid then.
	Failed
	// Lost: the lease is gone; [Renew] returns.
	Lost
)

// Renew keeps a lease of duration ttl alive: it calls renew a third of ttl
// from now, then again after each attempt as its [Result] says, until ctx
// is done, an attempt reports [Lost], or the lease's validity (until, read
// before each attempt) has ended without a successful renewal. Each attempt
// gets a context that ends with that validity and the local time it is
// sent, from which the renewal computes the new validity (renew stores it
// where until reads it).
//
// Renew blocks until it returns and starts no goroutine; renew runs on the
// caller's goroutine.
func Renew(ctx context.Context, ttl time.Duration, until func() time.Time, renew func(ctx context.Context, sent time.Time) Result) {
	period, retry := ttl/3, max(ttl/10, 50*time.Millisecond)
	for wait := period; ctxtime.Sleep(ctx, wait); {
		end := until()
		sent := time.Now()
		if !sent.Before(end) {
			return
		}
		rctx, cancel := context.WithDeadline(ctx, end)
		r := renew(rctx, sent)
		cancel()
		switch {
		case r == Renewed:
			wait = period
		case r == Again:
			wait = 0
		case r == Lost || ctx.Err() != nil:
			return
		default:
			wait = retry
		}
	}
}
