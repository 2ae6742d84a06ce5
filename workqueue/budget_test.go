package workqueue

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
)

// discard is a Logger that drops everything (logr.Discard() would mean the
// default logger, see ControllerOptions.Logger).
var discard = logr.FromSlogHandler(slog.DiscardHandler)

func TestRetryBudgetOptions(t *testing.T) {
	clientGo := RetryBudget{PerSecond: 10, Burst: 100}
	for _, tc := range []struct {
		name string
		in   RetryBudget
		ok   bool
		want RetryBudget
	}{
		{"zero: client-go's", RetryBudget{}, true, clientGo},
		{"client-go's", RetryBudget{PerSecond: 10, Burst: 100}, true, clientGo},
		{"disabled", RetryBudget{Disable: true}, true, RetryBudget{Disable: true}},
		{"burst defaults to ten seconds' worth", RetryBudget{PerSecond: 2.55}, true, RetryBudget{PerSecond: 2.55, Burst: 26}},
		{"burst at least 1", RetryBudget{PerSecond: 0.01}, true, RetryBudget{PerSecond: 0.01, Burst: 1}},
		{"rate defaults to client-go's", RetryBudget{Burst: 5}, true, RetryBudget{PerSecond: 10, Burst: 5}},
		{"negative rate", RetryBudget{PerSecond: -1}, false, RetryBudget{}},
		{"NaN rate", RetryBudget{PerSecond: math.NaN()}, false, RetryBudget{}},
		{"infinite rate", RetryBudget{PerSecond: math.Inf(1)}, false, RetryBudget{}},
		{"negative burst", RetryBudget{PerSecond: 1, Burst: -1}, false, RetryBudget{}},
		{"disabled with a rate", RetryBudget{Disable: true, PerSecond: 1}, false, RetryBudget{}},
		{"disabled with a burst", RetryBudget{Disable: true, Burst: 1}, false, RetryBudget{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := New[string](Options{RetryBudget: tc.in})
			if !tc.ok {
				require.ErrorIs(t, err, ErrInvalidOptions)
				return
			}
			require.NoError(t, err)
			require.Equal(t, newTokenBucket(tc.want), q.budget)
			require.Equal(t, tc.want.Disable, q.budget.interval == 0, "off only when disabled")
		})
	}
	var zero Queue[string]
	zero.Add("a")
	require.Equal(t, newTokenBucket(clientGo), zero.budget, "the zero Queue has client-go's budget")
}

// The bucket's arithmetic: full at 0, Burst tokens at once, then one per
// interval; refilled up to Burst, no more; undo gives a token back; no
// overflow at extreme rates.
func TestTokenBucket(t *testing.T) {
	b := newTokenBucket(RetryBudget{PerSecond: 10, Burst: 3})
	ms := int64(time.Millisecond)
	var got []int64
	for range 5 {
		at, _ := b.take(0)
		got = append(got, at)
	}
	require.Equal(t, []int64{-200 * ms, -100 * ms, 0, 100 * ms, 200 * ms}, got, "3 at once, then one per 100 ms")
	at, undo := b.take(250 * ms)
	require.Equal(t, 300*ms, at)
	b.base = undo
	at, _ = b.take(250 * ms)
	require.Equal(t, 300*ms, at, "undo gave the token back")
	at, _ = b.take(10_000 * ms) // long idle: full again, not more than Burst
	require.Equal(t, 9_800*ms, at)
	for range 2 {
		at, _ = b.take(10_000 * ms)
	}
	require.Equal(t, 10_000*ms, at)
	at, _ = b.take(10_000 * ms)
	require.Equal(t, 10_100*ms, at, "the 4th token of a full bucket waits")

	// A rate of 3/s is rounded to an interval of 333,333,334 ns (never
	// faster than asked).
	require.Equal(t, int64(333_333_334), newTokenBucket(RetryBudget{PerSecond: 3, Burst: 1}).interval)
	// Extreme values saturate instead of overflowing.
	tiny := newTokenBucket(RetryBudget{PerSecond: 1e-300, Burst: 1 << 40})
	require.Equal(t, int64(math.MaxInt64), tiny.interval)
	for range 3 {
		at, _ = tiny.take(0)
		require.GreaterOrEqual(t, at, int64(0))
	}
	require.Equal(t, int64(math.MaxInt64), at)
}

// retryLog records the reconcile calls of a controller whose keys fail:
// each key's first call is its initial add, every later one a retry.
type retryLog struct {
	mu      sync.Mutex
	start   time.Time
	seen    map[int]int // calls per key
	retries []time.Duration
	firsts  []time.Duration // the keys' first retries
}

func newRetryLog() *retryLog {
	return &retryLog{start: time.Now(), seen: map[int]int{}}
}

// reconcile fails the first failures calls of each key (every call if
// failures is 0).
func (l *retryLog) reconcile(failures int) func(context.Context, int) error {
	return func(_ context.Context, k int) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.seen[k] > 0 {
			l.retries = append(l.retries, time.Since(l.start))
		}
		if l.seen[k] == 1 {
			l.firsts = append(l.firsts, time.Since(l.start))
		}
		l.seen[k]++
		if failures == 0 || l.seen[k] <= failures {
			return errors.New("downstream unavailable")
		}
		return nil
	}
}

// retriesBy returns the number of retries reconciled by d.
func (l *retryLog) retriesBy(d time.Duration) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, at := range l.retries {
		if at <= d {
			n++
		}
	}
	return n
}

// runFailing runs a 4-worker controller over keys that all fail at once,
// for the given fake time.
func runFailing(t *testing.T, opts Options, keys, failures int, run time.Duration) *retryLog {
	t.Helper()
	l := newRetryLog()
	c, err := NewController(l.reconcile(failures), ControllerOptions{Queue: opts, Workers: 4, Logger: discard})
	require.NoError(t, err)
	for k := range keys {
		c.Queue().Add(k)
	}
	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()
	require.NoError(t, c.Run(ctx))
	return l
}

// retryTable are the times at which TestRetryBudgetThousandKeys counts the
// retries made so far: docs/workqueue.md shows its table.
var retryTable = []struct {
	at      time.Duration
	on, off int // retries made by at, budget on (the default) and off
}{
	// On: the burst, then one token every 100 ms, the 101st at 100 ms.
	// Off: each key's n-th retry comes after 5·(2ⁿ-1) ms less up to 10 %:
	// the 1st by 5 ms, the 4th by 75 ms and the 5th not before 139.5 ms,
	// the 7th by 635 ms and the 8th not before 1147.5 ms, the 12th by
	// 20.5 s and the 13th (by 41 s) not before 36.9 s, the 14th by 81.9 s
	// and the 15th not before 147.5 s.
	{7 * time.Millisecond, 100, 1_000},
	{100 * time.Millisecond, 101, 4_000},
	{time.Second, 110, 7_000},
	{30 * time.Second, 400, 12_000},
	{60 * time.Second, 700, 13_000},
	{90 * time.Second, 1_000, 14_000},
}

// The case: 1,000 keys fail at once against a failing downstream,
// and every retry fails again. By default (client-go's budget: 10/s after a
// burst of 100) no more than 100 + 10·t retries are made by any time t
// (fake time), every token is used (retries are delayed, not lost), and the
// last key is first retried at 90 s. With the budget off, each key follows
// its own backoff: all 1,000 are retried within 5 ms, and again and again.
// -v prints the table docs/workqueue.md shows.
func TestRetryBudgetThousandKeys(t *testing.T) {
	const keys = 1000
	run := 90*time.Second + time.Millisecond
	var on, off *retryLog
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		on = runFailing(t, Options{Name: "budget", Metrics: rec}, keys, 0, run)
		require.NotEmpty(t, on.retries)
		for i, at := range on.retries {
			limit := 100 + int(10*at.Seconds())
			require.LessOrEqual(t, i+1, limit, "retry %d at %v: more than burst + rate·t", i+1, at)
		}
		require.Equal(t, 100, on.retriesBy(100*time.Millisecond-time.Nanosecond), "the burst, then the first token at 100 ms")
		require.Len(t, on.firsts, keys, "every key retried")
		require.Equal(t, 90*time.Second, on.firsts[keys-1], "the last key's first retry: the 1,000th token")
		s := rec.snapshot()
		require.Len(t, s.budgetDelays, len(on.retries)+keys-100, "every retry past the burst delayed, those still waiting included")
		for _, d := range s.budgetDelays {
			require.Positive(t, d)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		off = runFailing(t, Options{Metrics: rec, RetryBudget: RetryBudget{Disable: true}}, keys, 0, run)
		require.Len(t, off.firsts, keys, "every key retried")
		require.LessOrEqual(t, off.firsts[keys-1], 5*time.Millisecond, "all within the first backoff")
		require.Empty(t, rec.snapshot().budgetDelays, "no budget, no delay")
	})
	t.Logf("| retries made by | budget on (default) | budget off |")
	for _, row := range retryTable {
		gotOn, gotOff := on.retriesBy(row.at), off.retriesBy(row.at)
		t.Logf("| %v | %d | %d |", row.at, gotOn, gotOff)
		require.Equal(t, row.on, gotOn, "on, by %v", row.at)
		require.Equal(t, row.off, gotOff, "off, by %v", row.at)
	}
	t.Logf("every key retried once by: on %v, off %v", on.firsts[keys-1], off.firsts[keys-1])
}

// Retries past the budget wait for their turn and all happen: 1,000 keys
// that fail once are each retried once, the 101st to 1,000th one token
// apart, the last at 90 s. The metric observes each of the 900 delays.
func TestRetryBudgetDelaysNotDrops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		l := runFailing(t, Options{Name: "budget", Metrics: rec}, 1000, 1, 2*time.Minute) // the default budget
		require.Len(t, l.retries, 1000, "every key retried once")
		for k, n := range l.seen {
			require.Equal(t, 2, n, "key %d", k)
		}
		require.LessOrEqual(t, l.retries[99], 5*time.Millisecond, "the burst: the key's own backoff")
		require.Equal(t, 90*time.Second, l.retries[999], "the last token")
		s := rec.snapshot()
		require.Len(t, s.budgetDelays, 900, "one observation per delayed retry")
		require.Equal(t, 1000, s.retried)
	})
}

// A retry of a key that already waits to be queued no later is that same
// retry: it takes no token. One that moves a later wait earlier takes one.
func TestRetryBudgetKeyWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQ[string](t, Options{Backoff: Backoff{Base: 10 * time.Millisecond, Jitter: -1}, RetryBudget: RetryBudget{PerSecond: 1, Burst: 1}})
		q.AddRateLimited("a") // the token: due at 10 ms
		q.AddRateLimited("a") // waits already, earlier than its turn (1 s): no token
		q.AddAfter("b", time.Hour)
		q.AddRateLimited("b") // the next token, at 1 s: moves b's wait earlier
		require.Equal(t, 10*time.Millisecond, queuedAt(t, q, time.Second))
		k, _ := q.Get(context.Background())
		require.Equal(t, "a", k)
		q.Done(k)
		require.Equal(t, time.Second-10*time.Millisecond, queuedAt(t, q, 2*time.Second), "b at 1 s: a's second call took no token")
		k, _ = q.Get(context.Background())
		require.Equal(t, "b", k)
		q.Done(k)
		require.NoError(t, q.checkInvariants())
	})
	synctest.Test(t, func(t *testing.T) {
		q := newQ[string](t, Options{Backoff: Backoff{Base: 10 * time.Millisecond, Jitter: -1}, RetryBudget: RetryBudget{PerSecond: 1, Burst: 1}})
		q.AddRateLimited("a") // the token: due at 10 ms
		q.AddAfter("b", 500*time.Millisecond)
		q.AddRateLimited("b") // its turn would be 1 s, after its wait: no token, and the wait is kept (not 10 ms)
		require.Equal(t, 10*time.Millisecond, queuedAt(t, q, time.Second))
		k, _ := q.Get(context.Background())
		q.Done(k)
		require.Equal(t, 490*time.Millisecond, queuedAt(t, q, time.Second), "b keeps its wait")
		k, _ = q.Get(context.Background())
		require.Equal(t, "b", k)
		q.Done(k)
		q.AddRateLimited("c") // the token b did not take, at 1 s
		require.Equal(t, 500*time.Millisecond, queuedAt(t, q, time.Second))
	})
}

// Waits that reach the end of the clock (a budget so slow that its tokens
// saturate, a backoff of centuries) still delay: the retry is not queued at
// once by an overflow.
func TestRetrySaturated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQ[int](t, Options{RetryBudget: RetryBudget{PerSecond: 1e-9, Burst: 1}})
		for k := range 20 {
			q.AddRateLimited(k)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		require.Equal(t, 1, q.Len(), "the burst of one; the others wait for tokens 31 years apart")
		require.NoError(t, q.checkInvariants())
	})
	synctest.Test(t, func(t *testing.T) {
		forever := time.Duration(math.MaxInt64)
		q := newQ[int](t, Options{Backoff: Backoff{Base: forever, Max: forever, Jitter: -1}})
		time.Sleep(time.Second)
		q.AddRateLimited(1)
		q.AddAfter(2, time.Millisecond) // the timer fires: 1 is not due
		time.Sleep(time.Hour)
		synctest.Wait()
		require.Equal(t, 1, q.Len(), "only 2")
	})
}
