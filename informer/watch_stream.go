package informer

import (
	"context"
	"sync"
)

// WatchStream is a ready-made [Watcher] for source implementations: the
// source's goroutine sends events with [WatchStream.Send] and ends the stream
// with [WatchStream.Close]; the consumer receives from Events and may call
// Stop at any time.
//
// Send blocks while the buffer is full, so a slow consumer pushes back on
// the producer instead of growing memory. Use [NewWatchStream]; the zero value
// is not usable.
type WatchStream[T any] struct {
	events chan Event[T]
	ctx    context.Context
	cancel context.CancelFunc
	close  sync.Once
}

// NewWatchStream returns a stream whose channel holds up to buffer events
// (0: unbuffered). The stream is stopped when ctx is done or Stop is called;
// the producer learns it through [WatchStream.Done] and Send's result, and
// must then call Close.
func NewWatchStream[T any](ctx context.Context, buffer int) *WatchStream[T] {
	ctx, cancel := context.WithCancel(ctx)
	return &WatchStream[T]{events: make(chan Event[T], buffer), ctx: ctx, cancel: cancel}
}

// Events returns the stream's channel. It is closed by [WatchStream.Close].
func (w *WatchStream[T]) Events() <-chan Event[T] { return w.events }

// Stop ends the stream: pending and later Sends return false. It is
// idempotent and safe for concurrent use.
func (w *WatchStream[T]) Stop() { w.cancel() }

// Done is closed once the stream is stopped (by Stop or by its context).
func (w *WatchStream[T]) Done() <-chan struct{} { return w.ctx.Done() }

// Context is the stream's context: done once the stream is stopped. Producers
// pass it to the calls that feed the stream.
func (w *WatchStream[T]) Context() context.Context { return w.ctx }

// Send delivers ev, blocking while the buffer is full. It returns false,
// without delivering, once the stream is stopped. Only the producer calls
// Send, and never after Close.
func (w *WatchStream[T]) Send(ev Event[T]) bool {
	select {
	case <-w.ctx.Done():
		return false
	default:
	}
	select {
	case w.events <- ev: // a receiver waits, or there is room: no select needed
		return true
	default:
	}
	select {
	case w.events <- ev:
		return true
	case <-w.ctx.Done():
		return false
	}
}

// Close ends the stream from the producer's side: it closes the channel
// after the events already sent, and releases the stream's context. It is
// idempotent.
func (w *WatchStream[T]) Close() {
	w.close.Do(func() {
		close(w.events)
		w.cancel()
	})
}
