package informer_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
)

// boundedSource is a source that declares a liveness bound.
type boundedSource struct {
	informer.SourceFuncs[*item]
	bound time.Duration
}

func (s boundedSource) LivenessBound() time.Duration { return s.bound }

var _ informer.LivenessBounder = boundedSource{}

// Health.LivenessBound is the source's LivenessBound, 0 for a source that
// declares none, and a negative one is taken as none.
func TestHealthLivenessBound(t *testing.T) {
	funcs := informer.SourceFuncs[*item]{
		ListFunc: func(context.Context, informer.ListOptions) (informer.ListPage[*item], error) {
			return informer.ListPage[*item]{Version: "1"}, nil
		},
		WatchFunc: func(ctx context.Context, _ informer.WatchOptions) (informer.Watcher[*item], error) {
			return informer.NewWatchStream[*item](ctx, 1), nil
		},
	}
	for _, tc := range []struct {
		name string
		src  informer.Source[*item]
		want time.Duration
	}{
		{"declared", boundedSource{funcs, 5 * time.Second}, 5 * time.Second},
		{"none declared", funcs, 0},
		{"declared 0", boundedSource{funcs, 0}, 0},
		{"negative", boundedSource{funcs, -time.Second}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inf := newInformer(t, tc.src, nil)
			assert.Equal(t, tc.want, inf.Health().LivenessBound)
		})
	}
}

// StaleFor, at a fixed clock: false while the source answers and for the
// first LivenessBound of an outage (none without a bound); then the time
// since the source last answered, at least the outage.
func TestHealthStaleFor(t *testing.T) {
	now := time.Date(2026, 11, 28, 20, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	for _, tc := range []struct {
		name  string
		h     informer.Health
		stale time.Duration
		ok    bool
	}{
		{"answering", informer.Health{LivenessBound: 5 * time.Second, LastEventAt: ago(time.Hour)}, 0, false},
		{"within the bound", informer.Health{LivenessBound: 5 * time.Second, FailingSince: ago(4 * time.Second), LastEventAt: ago(6 * time.Second)}, 0, false},
		{"at the bound", informer.Health{LivenessBound: 5 * time.Second, FailingSince: ago(5 * time.Second), LastEventAt: ago(6 * time.Second)}, 0, false},
		{"past the bound", informer.Health{LivenessBound: 5 * time.Second, FailingSince: ago(50 * time.Second), LastEventAt: ago(52 * time.Second)}, 52 * time.Second, true},
		{"past the bound, the last answer a list", informer.Health{LivenessBound: 5 * time.Second, FailingSince: ago(50 * time.Second), LastListAt: ago(2 * time.Minute)}, 2 * time.Minute, true},
		{"the later of list and event", informer.Health{LivenessBound: 5 * time.Second, FailingSince: ago(50 * time.Second), LastListAt: ago(time.Hour), LastEventAt: ago(time.Minute)}, time.Minute, true},
		{"never answered", informer.Health{LivenessBound: 5 * time.Second, FailingSince: ago(time.Minute)}, time.Minute, true},
		{"no bound: at once", informer.Health{FailingSince: ago(time.Millisecond), LastEventAt: ago(time.Second)}, time.Second, true},
		{"no bound, failing from now", informer.Health{FailingSince: now}, 0, false},
		{"a negative bound is none", informer.Health{LivenessBound: -time.Hour, FailingSince: ago(time.Second)}, time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stale, ok := tc.h.StaleFor(now)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.stale, stale)
		})
	}
}

// An informer whose source goes down: StaleFor stays false for the
// source's bound after the first failure, then says how long ago the
// source last answered; the next answer ends it.
func TestHealthStaleForOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		failing := newFailingSource(false)
		inf := newFailingInformer(t, boundedSource{failing.funcs(), 5 * time.Second})
		start(t, inf)
		w := <-failing.streams
		synctest.Wait()
		h := inf.Health()
		require.True(t, h.Synced)
		assert.Equal(t, 5*time.Second, h.LivenessBound)
		_, ok := h.StaleFor(time.Now())
		assert.False(t, ok, "the source answers")

		time.Sleep(time.Second)
		answered := time.Now() // the last answer: a bookmark
		require.True(t, w.Send(informer.Event[*item]{Type: informer.EventBookmark, Version: "2"}))
		synctest.Wait()
		time.Sleep(2 * time.Second)
		failing.down.Store(true)
		require.True(t, w.Send(informer.Event[*item]{Type: informer.EventError, Err: errRefused}))
		w.Close()
		synctest.Wait()
		failed := time.Now()

		time.Sleep(5 * time.Second) // the reflector retries, and fails
		h = inf.Health()
		require.True(t, h.FailingSince.Equal(failed), "%v, not %v", h.FailingSince, failed)
		_, ok = h.StaleFor(time.Now())
		assert.False(t, ok, "failing for the bound, no longer")

		time.Sleep(time.Second)
		stale, ok := inf.Health().StaleFor(time.Now())
		assert.True(t, ok, "failing past the bound")
		assert.Equal(t, time.Since(answered), stale, "since the last bookmark")

		failing.down.Store(false)
		time.Sleep(time.Minute) // the next retry watches
		w = <-failing.streams
		synctest.Wait()
		_, ok = inf.Health().StaleFor(time.Now())
		assert.True(t, ok, "a watch open is no answer yet")
		require.True(t, w.Send(informer.Event[*item]{Type: informer.EventBookmark, Version: "2"}))
		synctest.Wait()
		_, ok = inf.Health().StaleFor(time.Now())
		assert.False(t, ok, "the source answered")
	})
}
