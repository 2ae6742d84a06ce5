package memory

import (
	"fmt"
	"time"

	"github.com/ginformer/ginformer/informer"
)

// Defaults for zero [Options] fields.
const (
	// DefaultHistorySize is the number of changes retained when
	// Options.HistorySize is zero.
	DefaultHistorySize = 10_000
	// DefaultWatchBuffer is the per-watcher channel buffer when
	// Options.WatchBuffer is zero.
	DefaultWatchBuffer = 100
	// DefaultBookmarkInterval is the period of watch bookmarks when
	// Options.BookmarkInterval is zero.
	DefaultBookmarkInterval = time.Minute
	// DefaultSlowWatcherTimeout is how long a watcher's buffer may stay full
	// when Options.SlowWatcherTimeout is zero.
	DefaultSlowWatcherTimeout = 5 * time.Second
)

// Options configures a [Store]. Only KeyFunc is required; every other zero
// field selects the documented default.
type Options[K comparable, T any] struct {
	// KeyFunc names an object. Required. It is called by Put, never under the
	// store's lock; its errors and panics are returned wrapped in
	// [informer.ErrKeyFunc].
	KeyFunc informer.KeyFunc[K, T]

	// Compare orders keys for lists and pages: negative when a sorts before
	// b, zero only when a == b. It is user code, called without the store's
	// lock. Zero: keys are ordered by a string form computed once per write:
	// the key itself for string keys, String() for keys implementing
	// fmt.Stringer (as [informer.NamespacedKey] does), fmt.Sprint otherwise.
	// With a nil Compare, distinct keys must have distinct string forms, or
	// the order of equal forms (and so paging) is unspecified.
	Compare func(a, b K) int

	// HistorySize is the number of most recent changes retained for watch
	// resumption and exact reads. Older versions are compacted: lists at them
	// and watches from them fail with [informer.ErrExpired], and a watcher
	// that falls further behind than this gets an Error event wrapping it.
	// Zero: [DefaultHistorySize]. Negative: invalid.
	HistorySize int

	// WatchBuffer is the number of events buffered per watcher channel.
	// Zero: [DefaultWatchBuffer]. Negative: invalid.
	WatchBuffer int

	// BookmarkInterval is the period at which every watcher receives a
	// [informer.EventBookmark] carrying the version it has caught up to, so a
	// client watching a quiet (or filtered) selection still advances its
	// version. Zero: [DefaultBookmarkInterval]. Negative: no periodic
	// bookmarks ([Store.RequestBookmarks] still works).
	BookmarkInterval time.Duration

	// SlowWatcherTimeout is how long a watcher's buffer may stay full before
	// the store gives up on it, as a server would: its channel is closed
	// normally, without an Error event (there is no room for one), after the
	// events already buffered; the client re-watches from the last version it
	// received. Zero: [DefaultSlowWatcherTimeout]. Negative: never; a slow
	// watcher blocks only its own goroutine, never the writers.
	SlowWatcherTimeout time.Duration

	// Codec encodes the objects in the snapshots an informer keeps of its
	// cache (warm restarts, see [Store.SnapshotCodec]); nothing else uses
	// it. Zero: [informer.NewValueCodec]'s, which keeps every field of T,
	// or, for a T it cannot plan (one holding an interface, a func or a
	// channel), [informer.JSONCodec], which keeps only the exported fields:
	// give a codec of your own then.
	Codec informer.Codec[T]
}

// withDefaults validates o and fills its zero fields.
//
// Possible errors: [informer.ErrInvalidOptions].
func (o Options[K, T]) withDefaults() (Options[K, T], error) {
	if o.KeyFunc == nil {
		return o, fmt.Errorf("memory: Options.KeyFunc is nil: %w", informer.ErrInvalidOptions)
	}
	if o.HistorySize < 0 {
		return o, fmt.Errorf("memory: Options.HistorySize %d < 0: %w", o.HistorySize, informer.ErrInvalidOptions)
	}
	if o.WatchBuffer < 0 {
		return o, fmt.Errorf("memory: Options.WatchBuffer %d < 0: %w", o.WatchBuffer, informer.ErrInvalidOptions)
	}
	if o.HistorySize == 0 {
		o.HistorySize = DefaultHistorySize
	}
	if o.WatchBuffer == 0 {
		o.WatchBuffer = DefaultWatchBuffer
	}
	if o.BookmarkInterval == 0 {
		o.BookmarkInterval = DefaultBookmarkInterval
	}
	if o.SlowWatcherTimeout == 0 {
		o.SlowWatcherTimeout = DefaultSlowWatcherTimeout
	}
	return o, nil
}
