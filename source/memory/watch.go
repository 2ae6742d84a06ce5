package memory

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ginformer/ginformer/informer"
)

// watchBatch is the most records a watcher copies out of the history per
// lock acquisition.
const watchBatch = 256

// watcher is one open watch: a goroutine reading the shared history by
// revision and sending to its stream.
type watcher[K comparable, T any] struct {
	s      *Store[K, T]
	stream *informer.WatchStream[T]
	pred   func(T) bool // nil: every object
	// caughtUp is the store's revision when a watch asked for
	// NotifyCaughtUp opened, -1 for other watches or once the marker is
	// sent. Owned by the watcher's goroutine once it runs.
	caughtUp int64
	// brk and bookmark are guarded by s.mu: a requested Error event and a
	// requested bookmark.
	brk      error
	bookmark bool
}

// Watch opens a stream of the changes after opts.Version, implementing
// [informer.Source.Watch]. Every change is delivered once, in revision order,
// with the store version after it; a Deleted event carries the object's last
// state. Events are buffered up to Options.WatchBuffer; see
// Options.SlowWatcherTimeout for a consumer that stops reading, and
// Options.BookmarkInterval for periodic bookmarks.
//
// With opts.SendInitialEvents the stream starts with an Added event for every
// object of the current state, in key order, all with the current version V
// (opts.Version, if set, must not be newer than V), then a Bookmark with
// InitialEventsEnd at V, then the changes after V.
//
// With opts.NotifyCaughtUp (and without SendInitialEvents), once the watch
// has delivered the changes up to the store's version when Watch was called
// (replayed from the history), it sends a Bookmark with InitialEventsEnd
// at the version of the last change it has read, then goes on; at once when
// nothing changed since opts.Version. A version that has left the history
// gives ErrExpired as for any watch. (A streaming list ignores
// NotifyCaughtUp: its InitialEventsEnd bookmark marks the same moment.)
//
// The stream ends, and its channel is closed, when ctx is done, on Stop,
// after opts.Timeout (a normal end), after an Error event (the watcher fell
// behind the retained history: ErrExpired), and on [Store.Close] and
// [Store.DropWatches]. Watch returns once the watch is registered: every
// write that starts after it returns is delivered.
//
// Possible errors: [informer.ErrExpired] (opts.Version was compacted),
// [informer.ErrVersionTooLarge] (opts.Version is newer than the store),
// [informer.ErrInvalidOptions] (missing or malformed version),
// [informer.ErrClosed] (after Close), ctx.Err(), and errors injected by
// [Store.FailNextWatch].
func (s *Store[K, T]) Watch(ctx context.Context, opts informer.WatchOptions) (informer.Watcher[T], error) {
	return s.watch(ctx, opts, nil)
}

// watch implements Watch for the store (pred nil) and its filtered views.
func (s *Store[K, T]) watch(ctx context.Context, opts informer.WatchOptions, pred func(T) bool) (informer.Watcher[T], error) {
	if err := s.beforeCall(ctx, &s.failWatch); err != nil {
		return nil, err
	}
	if opts.Version == "" && !opts.SendInitialEvents {
		return nil, fmt.Errorf("memory: watch needs a version: %w", informer.ErrInvalidOptions)
	}
	var start int64
	if opts.Version != "" {
		v, err := parseVersion(opts.Version)
		if err != nil {
			return nil, err
		}
		start = v
	}
	var initial *snapshot[T]
	if opts.SendInitialEvents {
		s.mu.Lock()
		cur := s.rev
		s.mu.Unlock()
		if start > cur {
			return nil, fmt.Errorf("memory: watch from %d, current %d: %w", start, cur, informer.ErrVersionTooLarge)
		}
		snap, err := s.snapshotAt(cur)
		if err != nil {
			return nil, err
		}
		initial, start = snap, cur
	}

	w := &watcher[K, T]{s: s, pred: pred, caughtUp: -1}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, fmt.Errorf("memory: watch: %w", informer.ErrClosed)
	}
	if err := s.checkReadableLocked(start); err != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("memory: watch: %w", err)
	}
	if opts.NotifyCaughtUp && !opts.SendInitialEvents {
		w.caughtUp = s.rev
	}
	w.stream = informer.NewWatchStream[T](ctx, s.opts.WatchBuffer)
	s.watchers[w] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	go w.run(start, initial, opts.Timeout)
	return w.stream, nil
}

// run is the watcher's goroutine: it sends the initial events, if any, then
// the history after cursor, then waits for more.
func (w *watcher[K, T]) run(cursor int64, initial *snapshot[T], timeout time.Duration) {
	s := w.s
	defer s.wg.Done()
	defer w.stream.Close()
	defer s.unregister(w)

	var timeoutC, tickC <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timeoutC = t.C
	}
	if d := s.opts.BookmarkInterval; d > 0 {
		t := time.NewTicker(d)
		defer t.Stop()
		tickC = t.C
	}
	if initial != nil {
		v := formatVersion(initial.rev)
		for _, obj := range initial.items {
			if w.pred != nil && !w.pred(obj) {
				continue
			}
			if !w.send(informer.Event[T]{Type: informer.EventAdded, Object: obj, Version: v}) {
				return
			}
		}
		if !w.send(informer.Event[T]{Type: informer.EventBookmark, Version: v, InitialEventsEnd: true}) {
			return
		}
	}
	bookmark := func() bool {
		return w.send(informer.Event[T]{Type: informer.EventBookmark, Version: formatVersion(cursor)})
	}
	// caughtUp sends the NotifyCaughtUp marker once cursor has reached the
	// revision it waits for; false when the stream is stopped.
	caughtUp := func() bool {
		if w.caughtUp < 0 || cursor < w.caughtUp {
			return true
		}
		w.caughtUp = -1
		return w.send(informer.Event[T]{Type: informer.EventBookmark, Version: formatVersion(cursor), InitialEventsEnd: true})
	}
	var batch []record[K, T]
	for {
		if !caughtUp() {
			return
		}
		var notify <-chan struct{}
		var err error
		var wantBookmark bool
		batch, notify, wantBookmark, err = s.nextBatch(w, cursor, batch[:0])
		if err != nil {
			w.send(informer.Event[T]{Type: informer.EventError, Err: err})
			return
		}
		if wantBookmark && !bookmark() {
			return
		}
		if len(batch) == 0 {
			select {
			case <-notify:
			case <-w.stream.Done():
				return
			case <-timeoutC:
				return
			case <-tickC:
				if !bookmark() {
					return
				}
			}
			continue
		}
		for i := range batch {
			r := &batch[i]
			cursor = r.rev
			if ev, ok := w.transform(r); ok && !w.send(ev) {
				return
			}
			if !caughtUp() {
				return
			}
		}
		clear(batch) // let the objects go
		select {
		case <-timeoutC:
			return
		case <-tickC:
			if !bookmark() {
				return
			}
		default:
		}
	}
}

// nextBatch appends to buf the records after cursor, at most watchBatch of
// them. With none, it returns a channel closed on the next change. It also
// reports a requested bookmark, and the error ending the watch: a requested
// break, or ErrExpired when the records after cursor were compacted.
func (s *Store[K, T]) nextBatch(w *watcher[K, T], cursor int64, buf []record[K, T]) (
	_ []record[K, T], notify <-chan struct{}, bookmark bool, err error,
) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.brk != nil {
		return buf, nil, false, w.brk
	}
	if cursor < s.compactRev {
		return buf, nil, false, fmt.Errorf("memory: watcher at %d fell behind the history (oldest %d): %w",
			cursor, s.compactRev, informer.ErrExpired)
	}
	bookmark, w.bookmark = w.bookmark, false
	pending := s.rev - cursor
	if pending == 0 {
		if s.notify == nil {
			s.notify = make(chan struct{})
		}
		return buf, s.notify, bookmark, nil
	}
	first := s.hist.len() - int(pending)
	for i := range int(min(pending, watchBatch)) {
		buf = append(buf, *s.hist.at(first + i))
	}
	return buf, nil, bookmark, nil
}

// transform turns a record into the event this watcher sees, if any: for a
// filtered watch, Added when the object starts matching, Deleted (with the
// old state) when it stops, Modified when it matches before and after.
func (w *watcher[K, T]) transform(r *record[K, T]) (informer.Event[T], bool) {
	if w.pred == nil {
		return informer.Event[T]{Type: r.typ, Object: r.obj, Version: r.version}, true
	}
	before := r.hadPrev && w.pred(r.prev)
	after := r.typ != informer.EventDeleted && w.pred(r.obj)
	switch {
	case before && after:
		return informer.Event[T]{Type: informer.EventModified, Object: r.obj, Version: r.version}, true
	case after:
		return informer.Event[T]{Type: informer.EventAdded, Object: r.obj, Version: r.version}, true
	case before:
		return informer.Event[T]{Type: informer.EventDeleted, Object: r.prev, Version: r.version}, true
	}
	return informer.Event[T]{}, false
}

// send delivers ev, blocking while the buffer is full; after
// SlowWatcherTimeout of that, the stream is stopped. It returns false when
// the stream is stopped.
func (w *watcher[K, T]) send(ev informer.Event[T]) bool {
	ch := w.stream.Events()
	if d := w.s.opts.SlowWatcherTimeout; d > 0 && len(ch) == cap(ch) {
		t := time.AfterFunc(d, w.stream.Stop)
		ok := w.stream.Send(ev)
		t.Stop()
		return ok
	}
	return w.stream.Send(ev)
}

// unregister forgets a watcher whose goroutine is ending.
func (s *Store[K, T]) unregister(w *watcher[K, T]) {
	s.mu.Lock()
	delete(s.watchers, w)
	s.mu.Unlock()
}

// watcherListLocked returns the open watchers.
func (s *Store[K, T]) watcherListLocked() []*watcher[K, T] {
	ws := make([]*watcher[K, T], 0, len(s.watchers))
	for w := range s.watchers {
		ws = append(ws, w)
	}
	return ws
}

var _ informer.Source[int] = (*Store[string, int])(nil)

// errBroken is what BreakWatches sends when given a nil error.
var errBroken = errors.New("memory: watch broken")
