package changelog

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ginformer/ginformer/informer"
)

// The log is a source whose versions are ordered.
var (
	_ informer.Source[Entry]   = (*Log)(nil)
	_ informer.VersionComparer = (*Log)(nil)
)

// Get returns the current entry under key.
func (l *Log) Get(key string) (Entry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.state[key]
	return e, ok
}

// List implements [informer.Source.List]: the entries in key order, read at
// the version opts asks for. A page's continue token names the version of
// the first page and the next offset, so every page of one list shows one
// state.
//
// Possible errors: [informer.ErrExpired] (a version or token older than
// the compacted version), [informer.ErrVersionTooLarge] (a version newer
// than the log), [informer.ErrInvalidOptions] (a malformed version or token,
// a negative Limit, an unknown Mode), ctx.Err().
func (l *Log) List(ctx context.Context, opts informer.ListOptions) (informer.ListPage[Entry], error) {
	var none informer.ListPage[Entry]
	if err := ctx.Err(); err != nil {
		return none, err
	}
	if opts.Limit < 0 {
		return none, fmt.Errorf("changelog: limit %d: %w", opts.Limit, informer.ErrInvalidOptions)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	v, offset, err := l.listVersionLocked(opts)
	if err != nil {
		return none, err
	}
	if v < l.compacted {
		return none, fmt.Errorf("changelog: list at %d, compacted at %d: %w", v, l.compacted, informer.ErrExpired)
	}
	state := l.stateAtLocked(v)
	keys := slices.Sorted(maps.Keys(state))
	if offset > len(keys) {
		return none, fmt.Errorf("changelog: continue token past the end: %w", informer.ErrInvalidOptions)
	}
	end := len(keys)
	if opts.Limit > 0 {
		end = min(end, offset+opts.Limit)
	}
	page := informer.ListPage[Entry]{Version: format(v), Items: make([]Entry, 0, end-offset)}
	for _, k := range keys[offset:end] {
		page.Items = append(page.Items, state[k])
	}
	if end < len(keys) {
		page.Continue = format(v) + "/" + strconv.Itoa(end)
	}
	return page, nil
}

// listVersionLocked resolves the version and first offset of a page.
func (l *Log) listVersionLocked(opts informer.ListOptions) (v int64, offset int, err error) {
	if opts.Continue != "" {
		ver, off, ok := strings.Cut(opts.Continue, "/")
		v, err1 := parse(ver)
		offset, err2 := strconv.Atoi(off)
		if !ok || err1 != nil || err2 != nil || offset < 0 || v > l.rev {
			return 0, 0, fmt.Errorf("changelog: malformed continue token %q: %w", opts.Continue, informer.ErrInvalidOptions)
		}
		return v, offset, nil
	}
	switch opts.Mode {
	case informer.ReadLatest, informer.ReadAny:
		return l.rev, 0, nil
	case informer.ReadNotOlderThan, informer.ReadExact:
		v, err := parse(opts.Version)
		if err != nil {
			return 0, 0, err
		}
		if v > l.rev {
			return 0, 0, fmt.Errorf("changelog: list at %d, the log is at %d: %w", v, l.rev, informer.ErrVersionTooLarge)
		}
		if opts.Mode == informer.ReadNotOlderThan {
			return l.rev, 0, nil
		}
		return v, 0, nil
	}
	return 0, 0, fmt.Errorf("changelog: read mode %v: %w", opts.Mode, informer.ErrInvalidOptions)
}

// Watch implements [informer.Source.Watch]: every change after
// opts.Version, in order, each with its version; a Deleted event carries
// the entry's last state. The stream ends, its channel closed, when ctx is
// done, on Stop, after opts.Timeout, or after an Error event wrapping
// [informer.ErrExpired] when the watcher falls behind a compaction.
// [Log.RequestProgress] makes it send a Bookmark at the version it has
// delivered. With opts.NotifyCaughtUp, once it has delivered the changes up
// to the log's version when Watch was called, it sends a Bookmark with
// InitialEventsEnd at that version (at once when nothing changed since
// opts.Version), which a warm-restarted informer waits for.
//
// Possible errors: [informer.ErrExpired] (opts.Version is compacted),
// [informer.ErrVersionTooLarge] (newer than the log),
// [informer.ErrInvalidOptions] (no version, or a malformed one),
// errors.ErrUnsupported (SendInitialEvents: the log serves no streaming
// lists; the reflector lists instead).
func (l *Log) Watch(ctx context.Context, opts informer.WatchOptions) (informer.Watcher[Entry], error) {
	if opts.SendInitialEvents {
		return nil, fmt.Errorf("changelog: streaming lists: %w", errors.ErrUnsupported)
	}
	if opts.Version == "" {
		return nil, fmt.Errorf("changelog: a watch needs the version of a list or an event: %w", informer.ErrInvalidOptions)
	}
	from, err := parse(opts.Version)
	if err != nil {
		return nil, err
	}
	progress := make(chan struct{}, 1)
	l.mu.Lock()
	switch {
	case from > l.rev:
		l.mu.Unlock()
		return nil, fmt.Errorf("changelog: watch from %d, the log is at %d: %w", from, l.rev, informer.ErrVersionTooLarge)
	case from < l.compacted:
		l.mu.Unlock()
		return nil, fmt.Errorf("changelog: watch from %d, compacted at %d: %w", from, l.compacted, informer.ErrExpired)
	}
	caughtUp := int64(-1) // the version after which to send the caught-up marker
	if opts.NotifyCaughtUp {
		caughtUp = l.rev
	}
	l.progress[progress] = struct{}{}
	l.mu.Unlock()
	w := informer.NewWatchStream[Entry](ctx, 16)
	go l.run(w, from, progress, opts.Timeout, caughtUp)
	return w, nil
}

// watchBatch is the most changes a watcher takes from the log at once.
const watchBatch = 256

// run is a watch's goroutine: it sends the changes after cursor as they
// come, until the stream is stopped, and the caught-up marker once cursor
// reaches caughtUp (if not negative).
func (l *Log) run(w *informer.WatchStream[Entry], cursor int64, progress chan struct{}, timeout time.Duration, caughtUp int64) {
	defer w.Close()
	defer func() {
		l.mu.Lock()
		delete(l.progress, progress)
		l.mu.Unlock()
	}()
	var timeoutC <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timeoutC = t.C
	}
	// marker sends the caught-up marker when it is due; false when the
	// stream is stopped.
	marker := func() bool {
		if caughtUp < 0 || cursor < caughtUp {
			return true
		}
		caughtUp = -1
		return w.Send(informer.Event[Entry]{Type: informer.EventBookmark, Version: format(cursor), InitialEventsEnd: true})
	}
	for {
		if !marker() {
			return
		}
		l.mu.Lock()
		if cursor < l.compacted {
			err := fmt.Errorf("changelog: watcher at %d fell behind the compaction at %d: %w", cursor, l.compacted, informer.ErrExpired)
			l.mu.Unlock()
			w.Send(informer.Event[Entry]{Type: informer.EventError, Err: err})
			return
		}
		after := l.changes[cursor-l.compacted:] // changes[0] is compacted+1
		batch := slices.Clone(after[:min(len(after), watchBatch)])
		wake := l.wake
		l.mu.Unlock()

		for _, c := range batch {
			if !w.Send(informer.Event[Entry]{Type: c.typ, Object: c.entry, Version: format(c.rev)}) {
				return
			}
			cursor = c.rev
			if !marker() {
				return
			}
		}
		if len(batch) > 0 {
			wake = nil // more may follow: wait for nothing, but see a stop
		}
		if !l.pause(w, wake, progress, timeoutC, cursor) {
			return
		}
	}
}

// pause waits for a write (wake), a progress request, the timeout or a
// stop; with a nil wake (more changes may be waiting) it does not block. It
// returns false when the watch must end.
func (l *Log) pause(w *informer.WatchStream[Entry], wake, progress <-chan struct{}, timeoutC <-chan time.Time, cursor int64) bool {
	// Only the delivered version: a bookmark ahead of undelivered changes
	// would make a reflector resuming from it lose them.
	bookmark := informer.Event[Entry]{Type: informer.EventBookmark, Version: format(cursor)}
	if wake == nil {
		select {
		case <-progress:
			return w.Send(bookmark)
		case <-timeoutC:
			return false
		case <-w.Done():
			return false
		default:
			return true
		}
	}
	select {
	case <-wake:
		return true
	case <-progress:
		return w.Send(bookmark)
	case <-timeoutC:
		return false // a normal end: the channel closes without an Error event
	case <-w.Done():
		return false
	}
}

// CompareVersions implements [informer.VersionComparer]: versions are
// change numbers.
//
// Possible errors: [informer.ErrInvalidVersion].
func (l *Log) CompareVersions(a, b string) (int, error) {
	x, err1 := parse(a)
	y, err2 := parse(b)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("changelog: compare %q and %q: %w", a, b, informer.ErrInvalidVersion)
	}
	return cmp.Compare(x, y), nil
}
