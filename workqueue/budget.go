package workqueue

import (
	"fmt"
	"math"
	"time"
)

// RetryBudget is an overall limit on the rate of a queue's retries
// ([Queue.AddRateLimited]), all keys together, on top of each key's
// [Backoff]: a token bucket that holds up to Burst tokens, refills at
// PerSecond tokens a second, and is full when the queue is created. It is on
// by default with client-go's figures (its default controller rate
// limiter's bucket: 10 retries a second after a burst of 100), so that a
// downstream failing for every key is not hammered by their retries exactly
// when it is weakest. Tune it, or turn it off:
//
//	workqueue.Options{RetryBudget: workqueue.RetryBudget{PerSecond: 50, Burst: 500}}
//	workqueue.Options{RetryBudget: workqueue.RetryBudget{Disable: true}}
//
// Each retry takes one token when it is scheduled. When none is left, it
// takes the next one to come and waits for it: a retry past the budget is
// delayed, never dropped. A retry waits the longer of its key's backoff and
// its token's wait, as client-go's MaxOfRateLimiter combines its per-item
// and bucket limiters. So, whatever fails, no more than Burst + PerSecond·t
// retries fall due within any t; for a downstream that is failing, the
// retries of many keys slow to PerSecond instead of following each key's
// backoff. A retry of a key that already waits to be queued no later (see
// [Queue.AddAfter]) is that same retry and takes no token.
//
// The cost is that keys wait for each other: when 1,000 keys fail together
// with 10 a second after a burst of 100, the last one is retried after 90 s
// whatever its own backoff (with the budget off, all are retried within
// 5 ms), and while a downstream fails every key's retry joins the end of
// the line. A controller whose keys fail independently (a bad object among
// good ones) and that wants no key to wait for another's failures sets
// Disable. [Metrics.RetryBudgetDelay] observes each delay the budget adds.
//
// The zero RetryBudget is client-go's: {PerSecond: 10, Burst: 100}.
type RetryBudget struct {
	// PerSecond is the number of retries a second the bucket refills,
	// fractions allowed (0.5: one every two seconds). Zero: 10,
	// client-go's. Negative, NaN or infinite: invalid.
	PerSecond float64
	// Burst is the number of tokens the bucket holds: how many retries may
	// fall due at once after a quiet time. Zero: ten seconds' worth,
	// 10·PerSecond rounded up and at least 1 (client-go's 100 at the
	// default rate). Negative: invalid.
	Burst int
	// Disable turns the budget off: each key retries after its backoff
	// alone, and a retry costs no token bookkeeping. Zero: the budget is
	// on. Set together with PerSecond or Burst: invalid (one of them would
	// be ignored).
	Disable bool
}

// The default retry budget: client-go's DefaultTypedControllerRateLimiter
// bucket, rate.NewLimiter(rate.Limit(10), 100). The default Burst is this
// many seconds' worth of PerSecond, which gives client-go's 100 at its 10/s.
const (
	defaultBudgetPerSecond    = 10
	defaultBudgetBurstSeconds = 10
)

// withDefaults validates b and fills in the defaults. name is the queue's,
// for errors.
func (b RetryBudget) withDefaults(name string) (RetryBudget, error) {
	if b.Disable {
		if b.PerSecond != 0 || b.Burst != 0 {
			return b, fmt.Errorf("workqueue %q: RetryBudget.Disable set with RetryBudget.PerSecond %v or RetryBudget.Burst %d: %w", name, b.PerSecond, b.Burst, ErrInvalidOptions)
		}
		return b, nil
	}
	if b.PerSecond < 0 || math.IsNaN(b.PerSecond) || math.IsInf(b.PerSecond, 0) {
		return b, fmt.Errorf("workqueue %q: RetryBudget.PerSecond %v is not a finite rate >= 0: %w", name, b.PerSecond, ErrInvalidOptions)
	}
	if b.Burst < 0 {
		return b, fmt.Errorf("workqueue %q: negative RetryBudget.Burst %d: %w", name, b.Burst, ErrInvalidOptions)
	}
	if b.PerSecond == 0 {
		b.PerSecond = defaultBudgetPerSecond
	}
	if b.Burst == 0 {
		b.Burst = int(min(max(math.Ceil(defaultBudgetBurstSeconds*b.PerSecond), 1), math.MaxInt32))
	}
	return b, nil
}

// tokenBucket is the state of a [RetryBudget]: a token bucket kept as one
// time, in the queue's int64 clock (nanoseconds since its epoch), in the
// manner of the generic cell rate algorithm. The bucket holds
// min(Burst, (now-base)/interval) tokens at now; taking a token moves base
// one interval later, and a token taken from an empty bucket is there at
// base. The zero bucket is off. Not safe for concurrent use: the queue's
// lock guards it.
type tokenBucket struct {
	interval int64 // nanoseconds per token, rounded up; 0: off
	window   int64 // Burst·interval: how far base may lag behind now
	base     int64
}

// newTokenBucket returns the bucket of b, which has its defaults, full at
// time 0; the zero bucket (off) if b is disabled.
func newTokenBucket(b RetryBudget) tokenBucket {
	if b.Disable {
		return tokenBucket{}
	}
	// Rounded up, so that the rate is never above PerSecond; saturated for
	// tiny rates (a token every 292 years is none).
	iv := math.Ceil(float64(time.Second) / b.PerSecond)
	interval := int64(math.MaxInt64)
	if iv < math.MaxInt64 {
		interval = max(int64(iv), 1)
	}
	window := satMul(int64(b.Burst), interval)
	return tokenBucket{interval: interval, window: window, base: -window}
}

// take takes a token at now and returns when it is there: now or earlier
// if the bucket had one, later if it is to wait. undo gives it back: it
// restores the bucket as take found it, and must be called before any
// other take.
func (b *tokenBucket) take(now int64) (at, undo int64) {
	undo = b.base
	if floor := now - b.window; b.base < floor {
		b.base = floor // full: the tokens above Burst were never there
	}
	b.base = satAdd(b.base, b.interval)
	return b.base, undo
}

// satAdd returns a+b, capped at math.MaxInt64; b >= 0.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// satMul returns a·b, capped at math.MaxInt64; a, b >= 0.
func satMul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

// budgetLocked applies the retry budget to a retry, at now, of the key in
// slot whose backoff is d: it returns the delay to wait from now (the longer
// of d and the token's wait) and how much of it the budget added. A key
// already waiting to be queued no later gives the token back (the delay
// returned then keeps its wait).
func (q *Queue[K]) budgetLocked(slot int32, d time.Duration, now int64) (wait, added time.Duration) {
	at, undo := q.budget.take(now)
	due := satAdd(now, max(int64(d), 0))
	if at <= due {
		at = due
	}
	if e := q.entries.at(slot); e.heapPos != 0 && q.delayed[e.heapPos-1].due <= at {
		q.budget.base = undo
		return time.Duration(at - now), 0
	}
	return time.Duration(at - now), time.Duration(at - due)
}
