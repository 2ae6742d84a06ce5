package informer

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// errWatchEnded is returned by handleWatch when the stream closed normally.
var errWatchEnded = errors.New("watch ended")

// maxShortWatches is the number of very short watches in a row (see
// VeryShortWatchError) after which the reflector relists; before, it backs
// off and watches again from the last version.
const maxShortWatches = 3

// watch consumes w (or opens a watch from the last version when w is nil)
// and re-watches from the last version each time a stream ends normally. It
// returns nil when ctx is done, or the error that calls for a relist.
func (r *Reflector[T]) watch(ctx context.Context, w Watcher[T], backoff *backoffTimer) error {
	var resync <-chan time.Time
	if r.opts.ResyncPeriod > 0 {
		t := time.NewTicker(r.opts.ResyncPeriod)
		defer t.Stop() // on every exit path
		resync = t.C
	}
	var retries watchRetries
	restarts := 0
	listStream := w != nil // the stream of a streaming list
	if listStream {
		restarts = 1
	}
	catchUp := r.newCatchUpTimer()
	defer catchUp.stop()
	for {
		if ctx.Err() != nil {
			if w != nil {
				w.Stop()
			}
			return nil
		}
		if w == nil {
			if restarts > 0 {
				r.opts.Metrics.WatchRestarted(r.opts.Name)
			}
			restarts++
			var err error
			if w, err = r.openWatch(ctx, backoff, catchUp); err != nil {
				return err
			}
			if w == nil {
				continue // ctx is done, or paused after a transient failure
			}
		}
		err := r.handleWatch(ctx, w, resync, catchUp)
		w.Stop()
		w = nil
		var short *VeryShortWatchError
		if listStream && errors.As(err, &short) {
			// A source may end a streaming list's stream right after its
			// initial events (the Kubernetes source does, to go on with an
			// uncompressed watch): a normal end.
			err = errWatchEnded
		}
		listStream = false
		if err = r.watchEnded(ctx, err, backoff, &retries); err != nil {
			return err
		}
	}
}

// openWatch opens a watch from the last version. While resuming, it waits
// for the source to confirm the snapshot's identity first, and for the
// restore to finish after (the watch is open meanwhile: the source replays,
// etcd syncs, the apiserver's bookmark timer runs). It returns a nil
// watcher and nil error when ctx is done or after pausing for a transient
// failure (the caller tries again), or the error that calls for a relist.
func (r *Reflector[T]) openWatch(ctx context.Context, backoff *backoffTimer, catchUp *catchUpTimer) (Watcher[T], error) {
	resuming := r.isResuming()
	if resuming {
		if ok, err := r.awaitConfirmed(ctx); !ok {
			return nil, nil
		} else if err != nil {
			return nil, r.abandonResume(err)
		}
	}
	w, err := r.opts.Source.Watch(ctx, WatchOptions{Version: r.LastSyncVersion(), Timeout: r.watchTimeout(), NotifyCaughtUp: resuming})
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return nil, nil
	case resuming && !errors.Is(err, ErrTransient):
		return nil, r.abandonResume(err)
	case errors.Is(err, ErrTransient):
		r.sourceFailed(ctx, fmt.Errorf("%s: watch: %w", r.opts.Name, err))
		r.pause(ctx, backoff, err) // false: ctx is done, which the caller sees
		return nil, nil
	default:
		if errors.Is(err, ErrVersionTooLarge) {
			r.setVersionUnavailable(true)
		}
		return nil, fmt.Errorf("%s: watch: %w", r.opts.Name, err)
	}
	if resuming {
		ok, err := r.awaitRestore(ctx)
		if !ok || err != nil {
			w.Stop()
		}
		if !ok {
			return nil, nil
		}
		if err != nil {
			return nil, r.abandonResume(err)
		}
		catchUp.begin()
	}
	return w, nil
}

// watchRetries is what watchEnded remembers between streams.
type watchRetries struct {
	shortRun                    int       // very short watches in a row
	internalSince, internalLast time.Time // bounded retry of ErrInternal
}

// watchEnded decides what follows a stream that ended with err (see
// handleWatch): it returns nil to watch again from the last version (after
// a pause if the source failed), or the error that calls for a relist. It
// returns nil too when ctx is done; the caller sees it.
func (r *Reflector[T]) watchEnded(ctx context.Context, err error, backoff *backoffTimer, rt *watchRetries) error {
	var short *VeryShortWatchError
	isShort := errors.As(err, &short)
	if isShort {
		rt.shortRun++
	} else {
		rt.shortRun = 0
	}
	retry := false
	switch {
	case ctx.Err() != nil:
		return nil
	case isShort && rt.shortRun < maxShortWatches:
		// A stream closed at once with nothing in it: a server shutting
		// down, a proxy. Nothing says the version is gone (the source
		// would say ErrExpired): back off and watch again from the last
		// version, as after an outage. Only a run of them relists, in
		// case watching from that version is what fails.
		retry = true
	case errors.Is(err, errWatchEnded):
		return nil // a normal end: re-watch from the last version
	case errors.Is(err, ErrTransient):
		retry = true
	case errors.Is(err, ErrInternal) && r.maxRetry > 0:
		now := time.Now()
		if rt.internalSince.IsZero() || now.Sub(rt.internalLast) > time.Minute {
			rt.internalSince = now
		}
		rt.internalLast = now
		retry = now.Sub(rt.internalSince) < r.maxRetry
	case errors.Is(err, ErrVersionTooLarge):
		r.setVersionUnavailable(true)
	}
	if retry {
		r.sourceFailed(ctx, err)
		r.pause(ctx, backoff, err) // false: ctx is done, which the caller sees
		return nil
	}
	if r.isResuming() {
		return r.abandonResume(err)
	}
	return err
}

// eventApplier is implemented by a [ReflectorStore] that can apply a watch
// event on the reflector's goroutine when its consumer is idle (the
// informer's store: see "The direct hand-off" in process.go). The reflector
// tells it whether the stream is busy (more: see handleWatch): the store
// then queues the event for its consumer instead, so that reading the
// stream and processing it go on in parallel under load.
type eventApplier[T any] interface {
	// applyEvent applies one EventAdded, EventModified or EventDeleted
	// event, as Add, Update or Delete would, and records its version (if
	// not "") as recordVersion would: the reflector does not.
	applyEvent(t EventType, obj T, version string, more bool) error
	// recordVersion records the version of a bookmark (never ""), the
	// version up to which every event has been applied (for
	// WaitForVersion).
	recordVersion(version string)
}

// handleWatch applies the events of one stream to the store until it ends.
// It returns errWatchEnded (wrapped) for a normal end, a
// *VeryShortWatchError for a normal end under a second without events, the
// stream's error for an Error event, errStoreClosed (wrapped) when the store
// refused a write with ErrClosed, or nil when ctx is done.
//
// For a store that is an eventApplier, it tells the store whether the
// stream is busy, so that only a lone event is applied at once (see
// eventApplier). The stream is busy unless the reflector had to wait for the
// event (it was not already there when the reflector came back for it) and
// no other event is waiting behind it. To know the latter it looks one event
// ahead: after receiving an event it takes the next one if it is already
// there (a receive that does not block); that event is handled next, after
// the checks a blocking receive makes (ctx done, resync due). Both checks
// are made on every event, so neither is starved by a busy stream.
func (r *Reflector[T]) handleWatch(ctx context.Context, w Watcher[T], resync <-chan time.Time, catchUp *catchUpTimer) error {
	start := time.Now()
	resuming := r.isResuming()
	stalled := catchUp.c()
	events := 0
	applier, _ := r.opts.Store.(eventApplier[T])
	rd := watchReader[T]{ch: w.Events()}
	done := ctx.Done()
	for {
		select {
		case <-done:
			return nil
		default:
		}
		select {
		case <-resync:
			r.resync(ctx)
		case <-stalled:
			return catchUp.err(r.opts.Name)
		default:
		}
		ev, ok, got := rd.take()
		if !got { // the stream had nothing when the reflector came back for more
			select {
			case <-done:
				return nil
			case <-resync:
				r.resync(ctx)
				continue
			case <-stalled:
				return catchUp.err(r.opts.Name)
			case ev, ok = <-rd.ch:
			}
		}
		if !ok {
			if events == 0 && time.Since(start) < time.Second {
				return &VeryShortWatchError{Name: r.opts.Name}
			}
			return errWatchEnded
		}
		r.opts.Metrics.EventReceived(r.opts.Name, ev.Type)
		if resuming {
			catchUp.progress()
		}
		if ev.Type != EventError {
			r.watchEvents++
			if events == 0 {
				r.succeeded()
			}
		}
		more := false
		if applier != nil && (ev.Type == EventAdded || ev.Type == EventModified || ev.Type == EventDeleted) {
			more = rd.lookAhead() || got
		}
		outcome, err := r.applyWatchEvent(ctx, applier, &ev, more, resuming)
		if err != nil {
			return err
		}
		switch outcome {
		case eventSkipped:
			continue
		case eventCaughtUp:
			resuming, stalled = false, nil
			catchUp.finish()
			r.markCaughtUp()
		}
		events++
	}
}

// watchReader receives the events of one stream, one looked ahead.
type watchReader[T any] struct {
	ch     <-chan Event[T]
	next   Event[T] // the event looked ahead at, if ahead
	ahead  bool
	nextOK bool // the stream was open when next was received
}

// take returns the event looked ahead at, else one already waiting on the
// stream (ok false: the stream ended). got is false if there was none: the
// caller waits for it.
func (rd *watchReader[T]) take() (ev Event[T], ok, got bool) {
	if rd.ahead {
		ev, ok = rd.next, rd.nextOK
		rd.ahead, rd.next = false, Event[T]{}
		return ev, ok, true
	}
	select {
	case ev, ok = <-rd.ch:
		return ev, ok, true
	default:
		return ev, false, false
	}
}

// lookAhead takes the next event if it is already there (a receive that
// does not block), to be handed out by the next take, and reports whether
// another event is waiting.
func (rd *watchReader[T]) lookAhead() bool {
	select {
	case rd.next, rd.nextOK = <-rd.ch:
		rd.ahead = true
	default:
	}
	return rd.ahead && rd.nextOK
}

// eventOutcome is what applyWatchEvent did with an event.
type eventOutcome uint8

const (
	eventApplied  eventOutcome = iota // applied (a change) or recorded (a bookmark)
	eventSkipped                      // of an unknown type: reported, not counted
	eventCaughtUp                     // the resume's caught-up marker, its version recorded
)

// applyWatchEvent applies one received event that is not the end of the
// stream: a change to the store (through applier if not nil, which is told
// whether more events are waiting), a bookmark's version to the reflector
// and the store. It returns an error only when the stream must end: the
// stream's error for an Error event, errStoreClosed (wrapped) when the store
// refused a write with ErrClosed. Other store errors are reported.
func (r *Reflector[T]) applyWatchEvent(ctx context.Context, applier eventApplier[T], ev *Event[T], more, resuming bool) (eventOutcome, error) {
	var err error
	switch ev.Type {
	case EventAdded, EventModified, EventDeleted:
		// Received: the version is the reflector's before the store has
		// applied the event (which the store may do at once).
		r.setVersion(ev.Version)
		switch {
		case applier != nil:
			err = applier.applyEvent(ev.Type, ev.Object, ev.Version, more)
		case ev.Type == EventAdded:
			err = r.opts.Store.Add(ev.Object)
		case ev.Type == EventModified:
			err = r.opts.Store.Update(ev.Object)
		default:
			err = r.opts.Store.Delete(ev.Object)
		}
	case EventBookmark:
		r.setVersion(ev.Version)
		if ev.Version != "" && applier != nil {
			applier.recordVersion(ev.Version)
		}
		if resuming && ev.InitialEventsEnd && ev.Version != "" {
			// Caught up: every change up to ev.Version is queued. The
			// version is recorded (above) before the informer is told.
			return eventCaughtUp, nil
		}
	case EventError:
		if ev.Err == nil {
			ev.Err = errors.New("error event without an error")
		}
		return eventApplied, fmt.Errorf("%s: watch: %w", r.opts.Name, ev.Err)
	default:
		r.fail(ctx, ErrorClassListWatch, fmt.Errorf("%s: watch sent an event of unknown type %d at version %q; skipped", r.opts.Name, ev.Type, ev.Version))
		return eventSkipped, nil
	}
	if err == nil {
		return eventApplied, nil
	}
	closed := errors.Is(err, ErrClosed)
	err = fmt.Errorf("%s: apply %v event at version %q: %w", r.opts.Name, ev.Type, ev.Version, storeError(err))
	if closed {
		return eventApplied, err
	}
	r.fail(ctx, ErrorClassStore, err)
	return eventApplied, nil
}

// resync runs one periodic resync of the store, if ShouldResync agrees.
func (r *Reflector[T]) resync(ctx context.Context) {
	if r.opts.ShouldResync == nil || r.opts.ShouldResync() {
		// A closed store is not reported: its next write stops the reflector.
		if err := r.opts.Store.Resync(); err != nil && !errors.Is(err, ErrClosed) {
			r.fail(ctx, ErrorClassStore, fmt.Errorf("%s: resync: %w", r.opts.Name, err))
		}
	}
}
