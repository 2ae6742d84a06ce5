package informer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/ginformer/ginformer/internal/ctxtime"
)

// Backoff configures the exponential backoff a [Reflector] waits between
// attempts that failed. The zero value gives client-go's defaults: 800 ms
// doubling to 30 s, full jitter, reset after 2 minutes without a failure.
//
// The backoff measures failures only: it starts again from Initial at the
// first failure after the source answered (a list or a watch event
// succeeded), and a relist that is no failure (an expired version, a
// relist the source asks for with [ErrRelistRequested]) starts at once.
// While it waits after an outage ([ErrTransient], [ErrInternal]) on a
// source that implements [ReachabilityWaiter], the wait ends as soon as the
// source is reachable again, though never sooner than Initial.
type Backoff struct {
	// Initial is the first delay. Zero: 800 ms. Negative: invalid.
	Initial time.Duration
	// Max caps the delay before jitter. Zero: 30 s, or Initial if that is
	// longer. Negative, or below a non-zero Initial: invalid.
	Max time.Duration
	// Factor multiplies the delay after each attempt. Zero: 2. Values in
	// (0, 1) are treated as 1. Negative, NaN or infinite: invalid.
	Factor float64
	// Jitter adds a random extra of up to Jitter times the delay, so clients
	// that failed together do not retry together. Zero: 1.0. Negative: none.
	// Above 1 or NaN: invalid.
	Jitter float64
	// ResetAfter: a delay asked for this long after the previous one starts
	// again from Initial, because the time in between was healthy.
	// Zero: 2 minutes. Negative: invalid.
	ResetAfter time.Duration
}

// validate refuses the values that would make the backoff no backoff: a
// hot loop of attempts (an infinite jitter or factor overflows the delay)
// or a cap below the first delay.
//
// Possible errors: [ErrInvalidOptions], naming the field.
func (b Backoff) validate() error {
	bad := func(field string, v any, why string) error {
		return fmt.Errorf("invalid Backoff.%s %v: %s: %w", field, v, why, ErrInvalidOptions)
	}
	switch {
	case b.Initial < 0:
		return bad("Initial", b.Initial, "negative")
	case b.Max < 0:
		return bad("Max", b.Max, "negative")
	case b.Max != 0 && b.Max < b.Initial:
		return bad("Max", b.Max, fmt.Sprintf("below Backoff.Initial %v", b.Initial))
	case b.ResetAfter < 0:
		return bad("ResetAfter", b.ResetAfter, "negative")
	case b.Factor < 0 || math.IsNaN(b.Factor) || math.IsInf(b.Factor, 0):
		return bad("Factor", b.Factor, "not a finite factor of 0 or more")
	case b.Jitter > 1 || math.IsNaN(b.Jitter):
		return bad("Jitter", b.Jitter, "not at most 1 (negative: none)")
	}
	return nil
}

func (b Backoff) withDefaults() Backoff {
	if b.Initial <= 0 {
		b.Initial = 800 * time.Millisecond
	}
	if b.Max <= 0 {
		b.Max = 30 * time.Second
	}
	if b.Max < b.Initial {
		b.Max = b.Initial
	}
	if b.Factor == 0 {
		b.Factor = 2
	}
	if b.Factor < 1 {
		b.Factor = 1
	}
	switch {
	case b.Jitter == 0:
		b.Jitter = 1
	case b.Jitter < 0:
		b.Jitter = 0
	}
	if b.ResetAfter <= 0 {
		b.ResetAfter = 2 * time.Minute
	}
	return b
}

// backoffTimer hands out successive delays of a [Backoff]. Not safe for
// concurrent use: a reflector's loop owns it.
type backoffTimer struct {
	cfg  Backoff
	next time.Duration // delay before jitter for the next call
	last time.Time     // when next() was last called; zero before the first
}

func newBackoffTimer(cfg Backoff) *backoffTimer {
	cfg = cfg.withDefaults()
	return &backoffTimer{cfg: cfg, next: cfg.Initial}
}

// reset starts the sequence again from Initial.
func (b *backoffTimer) reset() { b.next = b.cfg.Initial }

// delay returns the delay to wait now and advances the sequence.
func (b *backoffTimer) delay() time.Duration {
	now := time.Now()
	if !b.last.IsZero() && now.Sub(b.last) >= b.cfg.ResetAfter {
		b.next = b.cfg.Initial
	}
	b.last = now
	d := b.next
	b.next = min(time.Duration(float64(b.next)*b.cfg.Factor), b.cfg.Max)
	if b.cfg.Jitter > 0 {
		d += time.Duration(rand.Float64() * b.cfg.Jitter * float64(d))
	}
	return d
}

// pause waits before the next attempt after a failure, err (nil: an
// unclassified end of a cycle): the backoff's next delay, from Initial
// again if err is the first failure since the source answered. An outage
// ends sooner on a source that is a [ReachabilityWaiter]: as soon as it is
// reachable, but not before Initial. pause reports whether the wait ended
// without ctx being done.
func (r *Reflector[T]) pause(ctx context.Context, backoff *backoffTimer, err error) bool {
	if r.failures.Load() <= 1 {
		backoff.reset()
	}
	d := backoff.delay()
	rw, ok := r.opts.Source.(ReachabilityWaiter)
	floor := backoff.cfg.Initial
	if !ok || d <= floor || !(errors.Is(err, ErrTransient) || errors.Is(err, ErrInternal)) {
		return ctxtime.Sleep(ctx, d)
	}
	start := time.Now()
	pctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	reachable := make(chan struct{})
	wg.Go(func() {
		if rw.WaitReachable(pctx) == nil {
			close(reachable)
		}
	})
	select {
	case <-pctx.Done():
		return ctx.Err() == nil
	case <-reachable:
	}
	r.log.V(1).Info("source reachable again, retrying before the backoff ends", "backoff", d, "waited", time.Since(start))
	return ctxtime.Sleep(ctx, floor-time.Since(start))
}
