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

// errRefused is the transient error a [failingSource] returns while down.
var errRefused = fmt.Errorf("connection refused: %w", informer.ErrTransient)

// failingSource is a source that refuses every list and watch with
// errRefused while down is set. While up, it lists nothing at version "1"
// and sends each watch it opens on streams (buffered 1), for the test to
// drive.
type failingSource struct {
	down    atomic.Bool
	streams chan *informer.WatchStream[*item]
}

// newFailingSource returns a failingSource, down or not. Call it inside
// the synctest bubble that uses it.
func newFailingSource(down bool) *failingSource {
	s := &failingSource{streams: make(chan *informer.WatchStream[*item], 1)}
	s.down.Store(down)
	return s
}

// funcs is the source as the informer sees it.
func (s *failingSource) funcs() informer.SourceFuncs[*item] {
	return informer.SourceFuncs[*item]{
		ListFunc: func(context.Context, informer.ListOptions) (informer.ListPage[*item], error) {
			if s.down.Load() {
				return informer.ListPage[*item]{}, errRefused
			}
			return informer.ListPage[*item]{Version: "1"}, nil
		},
		WatchFunc: func(ctx context.Context, _ informer.WatchOptions) (informer.Watcher[*item], error) {
			if s.down.Load() {
				return nil, errRefused
			}
			w := informer.NewWatchStream[*item](ctx, 1)
			s.streams <- w
			return w, nil
		},
	}
}

// newFailingInformer is newInformer over src with the retries' error logs
// discarded and a plain list (no streaming list), as the outage tests
// expect.
func newFailingInformer(t *testing.T, src informer.Source[*item]) *informer.SharedInformer[string, *item] {
	return newInformer(t, src, func(o *informer.Options[string, *item]) {
		o.Logger = logr.FromSlogHandler(slog.DiscardHandler)
		o.ListWatch.DisableStreamingList = true
	})
}

// Health.FailingSince is the first failure of the current outage: kept
// across the retries, cleared by the next list or event. An error event is
// a failure, not an answer: it starts an outage and leaves LastEventAt.
func TestHealthFailingSince(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFailingSource(true)
		inf := newFailingInformer(t, src.funcs())
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

		src.down.Store(false)
		time.Sleep(time.Minute) // the next retry lists
		h = inf.Health()
		require.True(t, h.Synced)
		assert.Zero(t, h.FailingSince, "the source answered")
		w := <-src.streams
		require.True(t, w.Send(informer.Event[*item]{Type: informer.EventBookmark, Version: "2"}))
		synctest.Wait()
		eventAt := inf.Health().LastEventAt
		require.False(t, eventAt.IsZero())

		// The watch fails with an error event, and the source is down.
		time.Sleep(time.Second)
		src.down.Store(true)
		failed := time.Now()
		require.True(t, w.Send(informer.Event[*item]{Type: informer.EventError, Err: errRefused}))
		w.Close()
		synctest.Wait()
		h = inf.Health()
		assert.True(t, h.FailingSince.Equal(failed), "the error event began the outage: %v, not %v", h.FailingSince, failed)
		assert.True(t, h.LastEventAt.Equal(eventAt), "an error event is no answer: %v, not %v", h.LastEventAt, eventAt)

		time.Sleep(time.Minute)
		assert.True(t, inf.Health().FailingSince.Equal(failed), "still the same outage")
		src.down.Store(false)
		time.Sleep(time.Minute) // the next retry watches again
		w = <-src.streams
		assert.True(t, inf.Health().FailingSince.Equal(failed), "a watch opened is no answer yet")
		require.True(t, w.Send(informer.Event[*item]{Type: informer.EventBookmark, Version: "2"}))
		synctest.Wait()
		h = inf.Health()
		assert.Zero(t, h.FailingSince, "a bookmark is an answer")
		assert.True(t, h.LastEventAt.After(eventAt))
		w.Close()
	})
}
