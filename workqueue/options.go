package workqueue

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Options configures a [Queue]. The zero value is a valid configuration:
// every field's zero value is the default stated beside it.
type Options struct {
	// Name identifies the queue in metrics (and, for a [Controller], in
	// logs). Zero: "workqueue".
	Name string
	// Metrics receives the queue's measurements. Zero: none are taken (and
	// the queue reads no clock on Add, Get and Done).
	Metrics Metrics
	// Backoff sets the per-key delays of [Queue.AddRateLimited]. Zero:
	// client-go's per-item default, 5 ms doubling to 1000 s, with 10 %
	// jitter.
	Backoff Backoff
	// RetryBudget limits the rate of [Queue.AddRateLimited]'s retries, all
	// keys together: a retry waits the longer of its key's backoff and its
	// turn in the budget. Zero: client-go's default bucket, 10 retries a
	// second after a burst of 100. RetryBudget{Disable: true} turns it off:
	// each key retries after its backoff alone.
	RetryBudget RetryBudget
}

// Backoff configures the per-key exponential backoff of
// [Queue.AddRateLimited]: the n-th retry of a key since its last
// [Queue.Forget] (n counted from 0) waits Base·2ⁿ, capped at Max, minus a
// random jitter of up to Jitter of that.
//
// The defaults are client-go's DefaultTypedControllerRateLimiter per-item
// limits (controller-runtime's too): a key that keeps failing is retried
// within milliseconds at first, then about every 17 minutes after 18
// failures, so a permanently broken object costs almost nothing. As in
// client-go's default, the queue's [RetryBudget] (10 retries a second, burst
// 100) also applies unless it is disabled: a retry waits the longer of the
// two. Jitter, which client-go has not, spreads keys that failed together
// instead of retrying them in lockstep.
type Backoff struct {
	// Base is the delay of a key's first retry. Zero: 5 ms.
	Base time.Duration
	// Max caps the delay. Zero: 1000 s. Must not be below Base.
	Max time.Duration
	// Jitter takes a random part of up to Jitter·delay off each delay, so
	// that keys failing together do not retry together; a delay is never
	// above Max. Zero: 0.1. Negative: none. Above 1: invalid.
	Jitter float64
}

// The default backoff: client-go's per-item limits.
const (
	defaultBase   = 5 * time.Millisecond
	defaultMax    = 1000 * time.Second
	defaultJitter = 0.1
	defaultName   = "workqueue"
)

// withDefaults validates o and fills in the defaults.
func (o Options) withDefaults() (Options, error) {
	if o.Name == "" {
		o.Name = defaultName
	}
	if _, ok := o.Metrics.(NoopMetrics); ok {
		o.Metrics = nil
	}
	b := &o.Backoff
	if b.Base < 0 || b.Max < 0 {
		return o, fmt.Errorf("workqueue %q: negative Backoff.Base or Backoff.Max: %w", o.Name, ErrInvalidOptions)
	}
	if b.Jitter > 1 || math.IsNaN(b.Jitter) {
		return o, fmt.Errorf("workqueue %q: Backoff.Jitter %v not in [0, 1]: %w", o.Name, b.Jitter, ErrInvalidOptions)
	}
	if b.Base == 0 {
		b.Base = defaultBase
	}
	if b.Max == 0 {
		b.Max = max(defaultMax, b.Base)
	}
	if b.Max < b.Base {
		return o, fmt.Errorf("workqueue %q: Backoff.Max %s below Backoff.Base %s: %w", o.Name, b.Max, b.Base, ErrInvalidOptions)
	}
	var err error
	if o.RetryBudget, err = o.RetryBudget.withDefaults(o.Name); err != nil {
		return o, err
	}
	switch {
	case b.Jitter == 0:
		b.Jitter = defaultJitter
	case b.Jitter < 0:
		b.Jitter = 0
	}
	return o, nil
}

// delay returns the delay of retry number n (0 for the first), jittered.
// b has its defaults.
func (b Backoff) delay(n int32) time.Duration {
	d := b.Max
	if n < 63 {
		if shifted := b.Base << n; shifted>>n == b.Base && shifted > 0 && shifted < b.Max {
			d = shifted
		}
	}
	if b.Jitter > 0 {
		d -= time.Duration(rand.Float64() * b.Jitter * float64(d))
	}
	return d
}
