package workqueue

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// queuedAt sleeps in steps of 1 ms (fake time) until key is queued and
// returns how long that took.
func queuedAt[K comparable](t *testing.T, q *Queue[K], limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) <= limit {
		if q.Len() > 0 {
			return time.Since(start)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
	}
	t.Fatalf("not queued within %s", limit)
	return 0
}

func TestBackoffTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQ[string](t, Options{Backoff: Backoff{Base: 10 * time.Millisecond, Max: 100 * time.Millisecond, Jitter: -1}})
		ctx := context.Background()
		want := []time.Duration{10, 20, 40, 80, 100, 100}
		for i, w := range want {
			w *= time.Millisecond
			q.AddRateLimited("k")
			require.Equal(t, i+1, q.NumRequeues("k"))
			time.Sleep(w - time.Nanosecond)
			synctest.Wait()
			require.Equal(t, 0, q.Len(), "retry %d: not before %s", i, w)
			time.Sleep(time.Nanosecond)
			synctest.Wait()
			require.Equal(t, 1, q.Len(), "retry %d: queued at %s", i, w)
			k, _ := q.Get(ctx)
			q.Done(k)
		}
		q.Forget("k")
		require.Equal(t, 0, q.NumRequeues("k"))
		require.Zero(t, q.keys.n, "a forgotten idle key leaves no state")
		q.AddRateLimited("k")
		require.Equal(t, 10*time.Millisecond, queuedAt(t, q, time.Second), "after Forget, the base delay again")
	})
}

func TestBackoffJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The budget off: this is the backoff's spread alone.
		q := newQ[int](t, Options{Backoff: Backoff{Base: 100 * time.Millisecond, Max: time.Second, Jitter: 0.5}, RetryBudget: RetryBudget{Disable: true}})
		const keys = 200
		for k := range keys {
			q.AddRateLimited(k)
		}
		time.Sleep(50*time.Millisecond - time.Nanosecond)
		synctest.Wait()
		require.Equal(t, 0, q.Len(), "nothing before Base·(1-Jitter)")
		time.Sleep(25 * time.Millisecond)
		synctest.Wait()
		early := q.Len()
		require.Greater(t, early, keys/5, "jitter spreads the retries")
		require.Less(t, early, keys*4/5, "jitter spreads the retries")
		time.Sleep(25 * time.Millisecond)
		synctest.Wait()
		require.Equal(t, keys, q.Len(), "everything by Base")
	})
	// The cap holds with jitter: no delay above Max.
	b, _ := Options{Backoff: Backoff{Base: time.Second, Max: 3 * time.Second}}.withDefaults()
	for n := range int32(80) {
		d := b.Backoff.delay(n)
		require.LessOrEqual(t, d, 3*time.Second)
		require.Greater(t, d, min(time.Second<<min(n, 2), 3*time.Second)*9/10-1)
	}
}

func TestAddAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQ[string](t, Options{})
		ctx := context.Background()
		q.AddAfter("a", 30*time.Millisecond)
		q.AddAfter("a", 50*time.Millisecond) // later: the earlier time stays
		q.AddAfter("b", 20*time.Millisecond)
		q.AddAfter("a", 10*time.Millisecond) // earlier: moves it
		require.Equal(t, 10*time.Millisecond, queuedAt(t, q, time.Second))
		require.Equal(t, []string{"a"}, q.readyKeys())
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		require.Equal(t, []string{"a", "b"}, q.readyKeys())
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, 2, q.Len(), "a is queued once")

		// A delayed add of a key in progress re-adds it at Done.
		a, _ := q.Get(ctx)
		q.AddAfter(a, time.Millisecond)
		time.Sleep(time.Millisecond)
		synctest.Wait()
		require.Equal(t, []string{"b"}, q.readyKeys())
		q.Done(a)
		require.Equal(t, []string{"b", "a"}, q.readyKeys())

		// Zero and negative delays add at once.
		q.AddAfter("c", 0)
		q.AddAfter("d", -time.Second)
		require.Equal(t, []string{"b", "a", "c", "d"}, q.readyKeys())

		// Same due time: the order of the calls.
		for _, k := range []string{"z", "y", "x"} {
			q.AddAfter(k, 5*time.Millisecond)
		}
		time.Sleep(5 * time.Millisecond)
		synctest.Wait()
		require.Equal(t, []string{"b", "a", "c", "d", "z", "y", "x"}, q.readyKeys())
		require.NoError(t, q.checkInvariants())
	})
}

// Many delays, added in random order, fire in due order.
func TestAddAfterMany(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQ[int](t, Options{})
		const n = 500
		for i := range n {
			k := (i * 7919) % n
			q.AddAfter(k, time.Duration(k+1)*time.Millisecond)
		}
		require.NoError(t, q.checkInvariants())
		time.Sleep(n * time.Millisecond)
		synctest.Wait()
		got := q.readyKeys()
		require.Len(t, got, n)
		for i, k := range got {
			require.Equal(t, i, k)
		}
	})
}
