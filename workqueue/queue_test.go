package workqueue

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

func newQ[K comparable](t *testing.T, opts Options) *Queue[K] {
	t.Helper()
	q, err := New[K](opts)
	require.NoError(t, err)
	t.Cleanup(q.ShutDown)
	return q
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		ok   bool
		want Backoff
	}{
		{"zero", Options{}, true, Backoff{Base: 5 * time.Millisecond, Max: 1000 * time.Second, Jitter: 0.1}},
		{"no jitter", Options{Backoff: Backoff{Jitter: -1}}, true, Backoff{Base: 5 * time.Millisecond, Max: 1000 * time.Second}},
		{"base above default max", Options{Backoff: Backoff{Base: time.Hour}}, true, Backoff{Base: time.Hour, Max: time.Hour, Jitter: 0.1}},
		{"full jitter", Options{Backoff: Backoff{Jitter: 1}}, true, Backoff{Base: 5 * time.Millisecond, Max: 1000 * time.Second, Jitter: 1}},
		{"negative base", Options{Backoff: Backoff{Base: -1}}, false, Backoff{}},
		{"negative max", Options{Backoff: Backoff{Max: -1}}, false, Backoff{}},
		{"max below base", Options{Backoff: Backoff{Base: time.Second, Max: time.Millisecond}}, false, Backoff{}},
		{"jitter above 1", Options{Backoff: Backoff{Jitter: 1.5}}, false, Backoff{}},
		{"jitter NaN", Options{Backoff: Backoff{Jitter: math.NaN()}}, false, Backoff{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := New[string](tc.opts)
			if !tc.ok {
				require.ErrorIs(t, err, ErrInvalidOptions)
				require.Nil(t, q)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, q.backoff)
			require.Equal(t, "workqueue", q.Name())
		})
	}
	q, err := New[string](Options{Name: "x", Metrics: NoopMetrics{}})
	require.NoError(t, err)
	require.Nil(t, q.metrics, "NoopMetrics is the same as nil: no clock reads")
	require.Equal(t, "x", q.Name())
}

// The zero Queue works, with the default options.
func TestZeroQueue(t *testing.T) {
	var q Queue[string]
	require.Equal(t, 0, q.Len())
	require.Equal(t, "workqueue", q.Name())
	q.Add("a")
	q.Add("a")
	require.Equal(t, 1, q.Len())
	k, ok := q.Get(context.Background())
	require.True(t, ok)
	require.Equal(t, "a", k)
	q.Done("a")
	require.Equal(t, 5*time.Millisecond, q.backoff.Base)
	require.NoError(t, q.checkInvariants())
	q.ShutDown()
	_, ok = q.Get(context.Background())
	require.False(t, ok)
}

func TestDedupOrderAndOneWorkerPerKey(t *testing.T) {
	q := newQ[string](t, Options{})
	ctx := context.Background()
	for _, k := range []string{"a", "b", "a", "c", "b"} {
		q.Add(k)
	}
	require.Equal(t, 3, q.Len(), "a key queued while pending is not queued twice")
	require.Equal(t, []string{"a", "b", "c"}, q.readyKeys())

	a, _ := q.Get(ctx)
	require.Equal(t, "a", a)
	q.Add("a") // re-added while in progress: queued at Done, not now
	require.Equal(t, []string{"b", "c"}, q.readyKeys())
	b, _ := q.Get(ctx)
	c, _ := q.Get(ctx)
	require.Equal(t, []string{"b", "c"}, []string{b, c})
	_, ok := q.tryGet()
	require.False(t, ok, "a is in progress: not handed out to a second worker")
	q.Add("a") // again: still one re-add
	q.Done("a")
	require.Equal(t, []string{"a"}, q.readyKeys())
	a2, _ := q.Get(ctx)
	require.Equal(t, "a", a2)
	for _, k := range []string{"a", "b", "c"} {
		q.Done(k)
	}
	q.Done("a")       // not in progress: nothing
	q.Done("unknown") // never seen: nothing
	require.Equal(t, 0, q.Len())
	require.NoError(t, q.checkInvariants())
	require.Zero(t, q.keys.n, "idle keys leave no state behind")
}

func TestGetWaitsAndWakes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQ[int](t, Options{})
		const workers = 4
		got := make(chan int, 100)
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for {
					k, ok := q.Get(context.Background())
					if !ok {
						return
					}
					got <- k
					q.Done(k)
				}
			})
		}
		synctest.Wait() // every worker asleep in Get
		for i := range 50 {
			q.Add(i)
			if i%7 == 0 {
				synctest.Wait()
			}
		}
		synctest.Wait()
		require.Len(t, got, 50, "every key handed out; no wake-up lost")
		require.NoError(t, q.checkInvariants())
		q.ShutDown() // wakes the sleepers
		wg.Wait()
	})
}

func TestGetContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQ[int](t, Options{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan bool)
		go func() {
			_, ok := q.Get(ctx)
			done <- ok
		}()
		synctest.Wait()
		cancel()
		require.False(t, <-done, "a done ctx ends the wait")
		q.Add(1)
		_, ok := q.Get(ctx)
		require.False(t, ok, "a done ctx returns false even with keys queued")
		require.Equal(t, 1, q.Len())
		require.NoError(t, q.checkInvariants())
	})
}

// Sleepers leaving through their context while keys arrive keep the token
// accounting straight: later sleepers are still woken.
func TestGetContextRace(t *testing.T) {
	q := newQ[int](t, Options{})
	for round := range 200 {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				if k, ok := q.Get(ctx); ok {
					q.Done(k)
				}
			})
		}
		q.Add(round)
		cancel()
		wg.Wait()
		require.NoError(t, q.checkInvariants())
		for { // take the round's key if no sleeper did
			k, ok := q.tryGet()
			if !ok {
				break
			}
			q.Done(k)
		}
		// Whatever happened above, a fresh sleeper is woken by the next key.
		got := make(chan int)
		go func() {
			k, _ := q.Get(context.Background())
			q.Done(k)
			got <- k
		}()
		q.Add(-1)
		require.Equal(t, -1, <-got)
		require.Equal(t, 0, q.Len())
	}
}

// TestQueueConcurrent drives the queue from producers and workers at once
// (run it under -race): no key is ever held by two workers, and every add
// is followed by a processing that sees it.
func TestQueueConcurrent(t *testing.T) {
	const keys, producers, workers, adds = 64, 3, 8, 20_000
	rec := &recorder{}
	// The retry budget off: its 10/s would hold the thousand-odd retries
	// back for minutes, past the wait for them to run out.
	q := newQ[int](t, Options{Metrics: rec, Backoff: Backoff{Base: time.Microsecond, Max: 50 * time.Microsecond}, RetryBudget: RetryBudget{Disable: true}})
	var version, seen [keys]atomic.Int64
	var holder [keys]atomic.Int32
	var processed atomic.Int64
	var failures atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for {
				k, ok := q.Get(context.Background())
				if !ok {
					return
				}
				if !holder[k].CompareAndSwap(0, int32(w+1)) {
					failures.Add(1)
				}
				seen[k].Store(version[k].Load())
				processed.Add(1)
				if k%5 == 0 && processed.Load()%3 == 0 {
					q.AddRateLimited(k) // retries race with adds
				} else {
					q.Forget(k)
				}
				holder[k].Store(0)
				q.Done(k)
			}
		})
	}
	var pwg sync.WaitGroup
	for p := range producers {
		pwg.Go(func() {
			for i := range adds / producers {
				k := (i*7 + p*13) % keys
				version[k].Add(1)
				if i%10 == 0 {
					q.AddAfter(k, time.Duration(i%3)*time.Microsecond)
					version[k].Add(1)
				}
				q.Add(k)
			}
		})
	}
	pwg.Wait()
	// Let the retries run out, then drain what is queued.
	require.Eventually(t, func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return len(q.delayed) == 0 && q.ready.Len() == 0 && q.working == 0
	}, 10*time.Second, time.Millisecond)
	require.NoError(t, q.Drain(context.Background()))
	wg.Wait()
	require.Zero(t, failures.Load(), "a key was held by two workers at once")
	for k := range keys {
		require.Equal(t, version[k].Load(), seen[k].Load(), "key %d: its last add was not followed by a processing", k)
	}
	require.NoError(t, q.checkInvariants())
	s := rec.snapshot()
	require.Equal(t, int(processed.Load()), len(s.latencies))
	require.Equal(t, int(processed.Load()), len(s.works))
}

func TestDrainAndShutDown(t *testing.T) {
	ctx := context.Background()
	t.Run("drain hands out what is queued and re-added, drops delays", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newQ[string](t, Options{})
			q.Add("a")
			q.Add("b")
			q.AddAfter("late", time.Second)
			a, _ := q.Get(ctx)
			q.Add("a") // re-added while in progress, before Drain: still processed
			drained := make(chan error)
			go func() { drained <- q.Drain(ctx) }()
			synctest.Wait()
			require.True(t, q.ShuttingDown())
			q.Add("c") // refused
			q.AddAfter("d", 0)
			q.AddRateLimited("e")
			b, ok := q.Get(ctx)
			require.True(t, ok)
			require.Equal(t, "b", b)
			q.Done(b)
			got := make(chan string)
			go func() { // asleep: "a" is in progress and will be queued again
				k, ok := q.Get(ctx)
				if ok {
					got <- k
				}
				close(got)
			}()
			synctest.Wait()
			q.Done(a)
			require.Equal(t, "a", <-got)
			q.Done("a")
			<-got // closed
			require.NoError(t, <-drained)
			_, ok = q.Get(ctx)
			require.False(t, ok)
			time.Sleep(2 * time.Second)
			require.Equal(t, 0, q.Len(), "the delayed key was dropped")
			require.NoError(t, q.checkInvariants())
		})
	})
	t.Run("drain waits for work in progress, or ctx", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newQ[string](t, Options{})
			q.Add("a")
			k, _ := q.Get(ctx)
			tctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			require.ErrorIs(t, q.Drain(tctx), context.DeadlineExceeded)
			q.Done(k)
			require.NoError(t, q.Drain(ctx))
		})
	})
	t.Run("shutdown drops and wakes", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := newQ[string](t, Options{})
			var wg sync.WaitGroup
			for range 3 {
				wg.Go(func() {
					_, ok := q.Get(ctx)
					require.False(t, ok)
				})
			}
			synctest.Wait()
			q.ShutDown()
			wg.Wait()

			q2 := newQ[string](t, Options{})
			q2.Add("a")
			q2.Add("b")
			q2.AddRateLimited("c")
			a, _ := q2.Get(ctx)
			q2.Add(a)
			q2.ShutDown()
			q2.ShutDown() // again: nothing
			require.Equal(t, 0, q2.Len())
			_, ok := q2.Get(ctx)
			require.False(t, ok)
			q2.Done(a) // its re-add was dropped
			require.Equal(t, 0, q2.Len())
			require.NoError(t, q2.Drain(ctx), "nothing in progress: drained")
			require.NoError(t, q2.checkInvariants())
		})
	})
	t.Run("shutdown during drain drops the rest", func(t *testing.T) {
		q := newQ[string](t, Options{})
		q.Add("a")
		q.Add("b")
		dctx, cancel := context.WithCancel(ctx)
		cancel()
		require.ErrorIs(t, q.Drain(dctx), context.Canceled)
		q.ShutDown()
		_, ok := q.Get(ctx)
		require.False(t, ok)
		require.NoError(t, q.Drain(ctx))
	})
}

func TestErrorsAreSentinels(t *testing.T) {
	_, err := New[int](Options{Backoff: Backoff{Jitter: 2}})
	require.True(t, errors.Is(err, ErrInvalidOptions))
	var ra *RequeueAfterError
	require.True(t, errors.As(RequeueAfter(time.Second), &ra))
	require.Equal(t, time.Second, ra.After)
	require.Equal(t, "requeue after 1s", ra.Error())
}

// A sleeper that leaves through its context after a token was sent for it
// (the token sits in the buffer: it had not parked yet) takes the token
// back, so the accounting stays exact, and the key stays queued for the
// next Get.
func TestGetLeaveWithTokenPending(t *testing.T) {
	q := newQ[string](t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tookBack, woke := 0, 0
	for tookBack == 0 || woke == 0 {
		q.lockInit()
		q.sleep++ // a Get about to sleep
		wake, final := q.wake, q.final
		q.addLocked(q.slotLocked("k", hashKey("k"))) // sends it a token
		require.Equal(t, 0, q.sleep)
		require.Len(t, q.wake, 1)
		q.mu.Unlock()
		if q.awaitToken(ctx, wake, final) { // both ready: select picks either
			woke++
			q.mu.Unlock()
		} else {
			tookBack++
		}
		require.Equal(t, 0, q.sleep)
		require.Equal(t, 0, q.woken)
		require.Empty(t, q.wake)
		require.NoError(t, q.checkInvariants())
		k, ok := q.tryGet()
		require.True(t, ok)
		q.Done(k)
	}
}
