package informer

import (
	"math/rand/v2"
	"time"
)

// Backoff configures the exponential backoff a [Reflector] waits between
// attempts. The zero value gives client-go's defaults: 800 ms doubling to
// 30 s, full jitter, reset after 2 minutes without a failure.
type Backoff struct {
	// Initial is the first delay. Zero: 800 ms.
	Initial time.Duration
	// Max caps the delay before jitter. Zero: 30 s.
	Max time.Duration
	// Factor multiplies the delay after each attempt. Zero: 2. Values below
	// 1 are treated as 1.
	Factor float64
	// Jitter adds a random extra of up to Jitter times the delay, so clients
	// that failed together do not retry together. Zero: 1.0. Negative: none.
	Jitter float64
	// ResetAfter: a delay asked for this long after the previous one starts
	// again from Initial, because the time in between was healthy.
	// Zero: 2 minutes.
	ResetAfter time.Duration
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
