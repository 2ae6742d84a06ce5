package workqueue

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// The metrics follow a known sequence exactly (fake time).
func TestMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		q := newQ[string](t, Options{Name: "m", Metrics: rec, Backoff: Backoff{Jitter: -1}})
		ctx := context.Background()
		q.Add("a")
		q.Add("a") // deduplicated: not counted
		q.Add("b")
		time.Sleep(100 * time.Millisecond)
		a, _ := q.Get(ctx) // waited 100 ms
		time.Sleep(300 * time.Millisecond)
		b, _ := q.Get(ctx) // waited 400 ms
		time.Sleep(150 * time.Millisecond)
		synctest.Wait()
		// The first sample, at 500 ms: nothing queued, a held 400 ms, b 100 ms.
		s := rec.snapshot()
		require.Equal(t, 1, s.samples)
		require.Equal(t, 0, s.depth)
		require.Equal(t, 500*time.Millisecond, s.unfinished)
		require.Equal(t, 400*time.Millisecond, s.longest)
		require.Equal(t, []time.Duration{100 * time.Millisecond, 400 * time.Millisecond}, s.latencies)

		q.Done(a) // held 450 ms
		q.AddRateLimited(b)
		q.AddAfter("c", time.Second)
		q.Done(b) // held 150 ms
		require.Equal(t, 2, rec.snapshot().added)
		time.Sleep(5 * time.Millisecond) // b's retry falls due
		synctest.Wait()
		s = rec.snapshot()
		require.Equal(t, 3, s.added)
		require.Equal(t, 2, s.retried)
		require.Equal(t, []time.Duration{450 * time.Millisecond, 150 * time.Millisecond}, s.works)

		time.Sleep(500 * time.Millisecond) // the second sample: b queued, nothing held
		synctest.Wait()
		s = rec.snapshot()
		require.Equal(t, 2, s.samples)
		require.Equal(t, 1, s.depth)
		require.Zero(t, s.unfinished)
		require.Zero(t, s.longest)

		b, _ = q.Get(ctx)
		q.Done(b)
		time.Sleep(500 * time.Millisecond) // idle: a last sample of 0, then none
		synctest.Wait()
		s = rec.snapshot()
		require.Equal(t, 3, s.samples)
		require.Equal(t, 0, s.depth)
		time.Sleep(5 * time.Second) // c falls due at 1 s: sampled again, then idle
		synctest.Wait()
		s = rec.snapshot()
		require.Equal(t, 4, rec.snapshot().added)
		require.Equal(t, 1, s.depth, "c is queued")
		c, _ := q.Get(ctx)
		q.Done(c)
		time.Sleep(time.Second)
		synctest.Wait()
		s = rec.snapshot()
		require.Equal(t, 0, s.depth)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		require.Equal(t, s.samples, rec.snapshot().samples, "idle: the sampler has stopped")
	})
}
