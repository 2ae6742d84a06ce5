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
	var internalSince, internalLast time.Time // bounded retry of ErrInternal
	restarts := 0
	listStream := w != nil // the stream of a streaming list
	if listStream {
		restarts = 1
	}
	catchUp := r.newCatchUpTimer()
	defer catchUp.stop()
	shortRun := 0 // very short watches in a row
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
			resuming := r.isResuming()
			if resuming {
				ok, err := r.awaitConfirmed(ctx)
				if !ok {
					return nil
				}
				if err != nil {
					return r.abandonResume(err)
				}
			}
			w, err = r.opts.Source.Watch(ctx, WatchOptions{Version: r.LastSyncVersion(), Timeout: r.watchTimeout(), NotifyCaughtUp: resuming})
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				if resuming && !errors.Is(err, ErrTransient) {
					return r.abandonResume(err)
				}
				if errors.Is(err, ErrTransient) {
					r.sourceFailed(ctx, fmt.Errorf("%s: watch: %w", r.opts.Name, err))
					if !r.pause(ctx, backoff, err) {
						return nil
					}
					continue
				}
				if errors.Is(err, ErrVersionTooLarge) {
					r.setVersionUnavailable(true)
				}
				return fmt.Errorf("%s: watch: %w", r.opts.Name, err)
			}
			if resuming {
				// The watch is open (the source replays, etcd syncs, the
				// apiserver's bookmark timer runs) while the restore
				// finishes; read it only then.
				ok, err := r.awaitRestore(ctx)
				if !ok {
					w.Stop()
					return nil
				}
				if err != nil {
					w.Stop()
					return r.abandonResume(err)
				}
				catchUp.begin()
			}
		}
		err := r.handleWatch(ctx, w, resync, catchUp)
		w.Stop()
		w = nil
		var short *VeryShortWatchError
		isShort := errors.As(err, &short)
		if listStream && isShort {
			// A source may end a streaming list's stream right after its
			// initial events (the Kubernetes source does, to go on with an
			// uncompressed watch): a normal end.
			err, isShort = errWatchEnded, false
		}
		listStream = false
		if isShort {
			shortRun++
		} else {
			shortRun = 0
		}
		switch {
		case ctx.Err() != nil:
			return nil
		case isShort && shortRun < maxShortWatches:
			// A stream closed at once with nothing in it: a server
			// shutting down, a proxy. Nothing says the version is gone
			// (the source would say ErrExpired): back off and watch again
			// from the last version, as after an outage. Only a run of
			// them relists, in case watching from that version is what
			// fails.
			r.sourceFailed(ctx, err)
			if !r.pause(ctx, backoff, err) {
				return nil
			}
			continue
		case errors.Is(err, errWatchEnded):
			continue // a normal end: re-watch from the last version
		case errors.Is(err, ErrTransient):
			r.sourceFailed(ctx, err)
			if !r.pause(ctx, backoff, err) {
				return nil
			}
			continue
		case errors.Is(err, ErrInternal) && r.maxRetry > 0:
			now := time.Now()
			if internalSince.IsZero() || now.Sub(internalLast) > time.Minute {
				internalSince = now
			}
			internalLast = now
			if now.Sub(internalSince) < r.maxRetry {
				r.sourceFailed(ctx, err)
				if !r.pause(ctx, backoff, err) {
					return nil
				}
				continue
			}
		case errors.Is(err, ErrVersionTooLarge):
			r.setVersionUnavailable(true)
		}
		if r.isResuming() {
			return r.abandonResume(err)
		}
		return err
	}
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
	ch, done := w.Events(), ctx.Done()
	var next Event[T] // the event looked ahead at, if ahead
	ahead, nextOK := false, false
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
		var ev Event[T]
		var ok bool
		waited := false // the stream had nothing when the reflector came back for more
		if ahead {
			ev, ok = next, nextOK
			ahead, next = false, Event[T]{}
		} else {
			select {
			case ev, ok = <-ch:
			default:
				waited = true
				select {
				case <-done:
					return nil
				case <-resync:
					r.resync(ctx)
					continue
				case <-stalled:
					return catchUp.err(r.opts.Name)
				case ev, ok = <-ch:
				}
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
		var err error
		switch ev.Type {
		case EventAdded, EventModified, EventDeleted:
			// Received: the version is the reflector's before the store
			// has applied the event (which the store may do at once).
			r.setVersion(ev.Version)
			if applier != nil {
				select {
				case next, nextOK = <-ch:
					ahead = true
				default:
				}
				err = applier.applyEvent(ev.Type, ev.Object, ev.Version, !waited || (ahead && nextOK))
				if errors.Is(err, ErrClosed) {
					return fmt.Errorf("%s: apply %v event at version %q: %w", r.opts.Name, ev.Type, ev.Version, storeError(err))
				}
				if err != nil {
					r.fail(ctx, ErrorClassStore, fmt.Errorf("%s: apply %v event at version %q: %w", r.opts.Name, ev.Type, ev.Version, err))
				}
				events++
				continue
			}
			switch ev.Type {
			case EventAdded:
				err = r.opts.Store.Add(ev.Object)
			case EventModified:
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
				resuming, stalled = false, nil
				catchUp.finish()
				r.markCaughtUp()
				events++
				continue
			}
		case EventError:
			if ev.Err == nil {
				ev.Err = errors.New("error event without an error")
			}
			return fmt.Errorf("%s: watch: %w", r.opts.Name, ev.Err)
		default:
			r.fail(ctx, ErrorClassListWatch, fmt.Errorf("%s: watch sent an event of unknown type %d at version %q; skipped", r.opts.Name, ev.Type, ev.Version))
			continue
		}
		if errors.Is(err, ErrClosed) {
			return fmt.Errorf("%s: apply %v event at version %q: %w", r.opts.Name, ev.Type, ev.Version, storeError(err))
		}
		if err != nil {
			r.fail(ctx, ErrorClassStore, fmt.Errorf("%s: apply %v event at version %q: %w", r.opts.Name, ev.Type, ev.Version, err))
		}
		events++
	}
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
