package informer_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
)

// Health.FailingSince is the first failure of the current outage: kept
// across the retries, cleared by the next list or event. An error event is
// a failure, not an answer: it starts an outage and leaves LastEventAt.
func TestHealthFailingSince(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var down atomic.Bool
		down.Store(true)
		refused := fmt.Errorf("connection refused: %w", informer.ErrTransient)
		streams := make(chan *informer.WatchStream[*item], 1)
		src := informer.SourceFuncs[*item]{
			ListFunc: func(context.Context, informer.ListOptions) (informer.ListPage[*item], error) {
				if down.Load() {
					return informer.ListPage[*item]{}, refused
				}
				return informer.ListPage[*item]{Version: "1"}, nil
			},
			WatchFunc: func(ctx context.Context, _ informer.WatchOptions) (informer.Watcher[*item], error) {
				if down.Load() {
					return nil, refused
				}
				w := informer.NewWatchStream[*item](ctx, 1)
				streams <- w
				return w, nil
			},
		}
		inf := newInformer(t, src, func(o *informer.Options[string, *item]) {
			o.Logger = logr.FromSlogHandler(slog.DiscardHandler)
			o.ListWatch.DisableStreamingList = true
		})
		assert.Zero(t, inf.Health().FailingSince, "before Run")
		start(t, inf)
		synctest.Wait()
		began := time.Now()
		h := inf.Health()
		require.False(t, h.Synced)
		assert.True(t, h.FailingSince.Equal(began), "the first list failed at once: %v, not %v", h.FailingSince, began)

		time.Sleep(time.Minute) // the reflector retries, and fails
		h = inf.Health()
		assert.True(t, h.FailingSince.Equal(began), "the outage began at the first failure: %v, not %v", h.FailingSince, began)
		assert.True(t, h.LastErrorAt.After(began), "failed again since")

		down.Store(false)
		time.Sleep(time.Minute) // the next retry lists
		h = inf.Health()
		require.True(t, h.Synced)
		assert.Zero(t, h.FailingSince, "the source answered")
		w := <-streams
		require.True(t, w.Send(informer.Event[*item]{Type: informer.EventBookmark, Version: "2"}))
		synctest.Wait()
		eventAt := inf.Health().LastEventAt
		require.False(t, eventAt.IsZero())

		// The watch fails with an error event, and the source is down.
		time.Sleep(time.Second)
		down.Store(true)
		failed := time.Now()
		require.True(t, w.Send(informer.Event[*item]{Type: informer.EventError, Err: refused}))
		w.Close()
		synctest.Wait()
		h = inf.Health()
		assert.True(t, h.FailingSince.Equal(failed), "the error event began the outage: %v, not %v", h.FailingSince, failed)
		assert.True(t, h.LastEventAt.Equal(eventAt), "an error event is no answer: %v, not %v", h.LastEventAt, eventAt)

		time.Sleep(time.Minute)
		assert.True(t, inf.Health().FailingSince.Equal(failed), "still the same outage")
		down.Store(false)
		time.Sleep(time.Minute) // the next retry watches again
		w = <-streams
		assert.True(t, inf.Health().FailingSince.Equal(failed), "a watch opened is no answer yet")
		require.True(t, w.Send(informer.Event[*item]{Type: informer.EventBookmark, Version: "2"}))
		synctest.Wait()
		h = inf.Health()
		assert.Zero(t, h.FailingSince, "a bookmark is an answer")
		assert.True(t, h.LastEventAt.After(eventAt))
		w.Close()
	})
}
