package informer

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Resuming from a restored version.
//
// An informer restored from a snapshot (see snapshot_restore.go) gives its
// reflector the snapshot's version, a caughtUp function and a ready channel
// closed once the restore is applied. The reflector then starts with a watch
// from that version instead of a list, asking the source to mark the moment
// it has caught up ([WatchOptions.NotifyCaughtUp]); it opens the watch as
// soon as the source has confirmed the snapshot's identity (confirmed) but
// reads it (and writes to the store) only after ready, so the source's
// catch-up and the restore overlap. If the restore failed, it
// lists instead. On that bookmark it records the bookmark's version and calls caughtUp:
// every change up to the source's current version is queued. It re-watches
// after a normal end or a transient failure as usual, still asking for the
// marker. Any other failure of a resume watch (an expired version, a source
// that cannot resume, a marker that does not come: see catchUpTimer)
// abandons resuming: the reflector relists, at once, as it would after an
// expired version, and calls caughtUp once that list is applied. caughtUp
// is called once, whichever way.

// resumeOptions is set in ReflectorOptions by an informer restored from a
// snapshot.
type resumeOptions struct {
	// version is the version the store holds the source's state at; ""
	// means no resume: the reflector lists first.
	version string
	// caughtUp is called once, on the reflector's goroutine, when the
	// store holds (queued) the source's current state: see above.
	caughtUp func()
	// ready, if not nil, is closed once the store holds the state at
	// version or failed to (restored then reports which): the restore may
	// still run when the reflector starts. The reflector opens its resume
	// watch meanwhile but reads nothing from it, and writes nothing to the
	// store, before ready; if the restore failed it lists instead.
	ready    <-chan struct{}
	restored func() bool
	// confirmed, if not nil, is closed once the source has confirmed that
	// it serves the snapshot's collection: the reflector opens no watch
	// from version before (a version of another collection means nothing
	// there). If the confirmation fails, ready is closed instead, with
	// restored false.
	confirmed <-chan struct{}
	// abandoned, if not nil, is told why the reflector gave up resuming
	// and relists, once.
	abandoned func(error)
}

// errRestoreFailed abandons a resume whose restore failed (reported by the
// informer): the reflector lists.
var errRestoreFailed = errors.New("the snapshot could not be restored")

// awaitRestore waits until the store holds the restored state (see
// resumeOptions.ready). It reports false if ctx ended first; err is
// errRestoreFailed if the restore failed.
func (r *Reflector[T]) awaitRestore(ctx context.Context) (ok bool, err error) {
	ready := r.opts.resume.ready
	if ready == nil {
		return true, nil
	}
	select {
	case <-ready:
	case <-ctx.Done():
		return false, nil
	}
	if !r.opts.resume.restored() {
		return true, errRestoreFailed
	}
	return true, nil
}

// awaitConfirmed waits until the source has confirmed the snapshot's
// identity (see resumeOptions.confirmed). It reports false if ctx ended
// first; err is errRestoreFailed if the restore failed instead.
func (r *Reflector[T]) awaitConfirmed(ctx context.Context) (ok bool, err error) {
	confirmed := r.opts.resume.confirmed
	if confirmed == nil {
		return true, nil
	}
	select {
	case <-confirmed:
		return true, nil
	case <-r.opts.resume.ready:
		select {
		case <-confirmed:
			return true, nil
		default:
			return true, errRestoreFailed
		}
	case <-ctx.Done():
		return false, nil
	}
}

// errResumeAbandoned marks the failure of a resume watch other than an
// expired version: Run relists at once, without reporting an error.
var errResumeAbandoned = errors.New("cannot resume from the restored version")

// isResuming reports whether the reflector still watches from a restored
// version without having listed.
func (r *Reflector[T]) isResuming() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.resuming
}

// abandonResume ends resuming after err failed a resume watch, and returns
// the error that makes Run relist: err itself if it is an expired version
// (counted and logged as such), else err marked with errResumeAbandoned.
func (r *Reflector[T]) abandonResume(err error) error {
	r.mu.Lock()
	r.resuming = false
	r.mu.Unlock()
	if f := r.opts.resume.abandoned; f != nil {
		f(err)
	}
	if errors.Is(err, ErrExpired) || errors.Is(err, ErrVersionTooLarge) || errors.Is(err, errResumeAbandoned) {
		return err
	}
	return fmt.Errorf("%w: %w", errResumeAbandoned, err)
}

// markCaughtUp ends resuming and calls caughtUp, the first time only.
func (r *Reflector[T]) markCaughtUp() {
	r.mu.Lock()
	f := r.caughtUp
	r.resuming, r.caughtUp = false, nil
	r.mu.Unlock()
	if f != nil {
		f()
	}
}

// catchUpTimer bounds the wait for a resume watch's caught-up marker, so
// that a source that ignores [WatchOptions.NotifyCaughtUp] cannot keep an
// informer from syncing: the marker must come within the streaming-list
// timeout of the last event (the stream is stalled otherwise) and within
// catchUpLimit of the first resume watch read, however often the source
// ends its watches meanwhile. It runs from begin (the first resume watch
// read: the time spent restoring does not count) until finish (the
// marker), after which it never fires, on that watch or any later one. A
// nil catchUpTimer (not resuming) never fires.
type catchUpTimer struct {
	stall    time.Duration
	deadline time.Time   // set by the first begin
	t        *time.Timer // nil before the first begin
	done     bool        // finished: never fires again
}

// catchUpLimit bounds the whole catch-up, in streaming-list timeouts.
const catchUpLimit = 6

// newCatchUpTimer returns the timer of a resume, nil when not resuming.
func (r *Reflector[T]) newCatchUpTimer() *catchUpTimer {
	if !r.isResuming() {
		return nil
	}
	return &catchUpTimer{stall: r.streamTTL}
}

// c returns the channel that fires when the wait is over; nil (never) for
// a nil, not yet begun or finished timer.
func (c *catchUpTimer) c() <-chan time.Time {
	if c == nil || c.t == nil || c.done {
		return nil
	}
	return c.t.C
}

// begin is called as each resume watch is about to be read: the first
// call sets the deadline; every call gives the new watch a stall period,
// within the deadline.
func (c *catchUpTimer) begin() {
	if c == nil || c.done {
		return
	}
	if c.t == nil {
		c.deadline = time.Now().Add(catchUpLimit * c.stall)
		c.t = time.NewTimer(c.stall)
		return
	}
	c.progress()
}

// progress restarts the stall timer after an event, within the deadline.
func (c *catchUpTimer) progress() {
	if c == nil || c.t == nil || c.done {
		return
	}
	c.t.Reset(max(0, min(c.stall, time.Until(c.deadline))))
}

// finish ends the wait for good: the marker came.
func (c *catchUpTimer) finish() {
	if c == nil {
		return
	}
	c.done = true
	if c.t != nil {
		c.t.Stop()
	}
}

// stop releases the timer when the watch loop returns.
func (c *catchUpTimer) stop() { c.finish() }

// err is the error of a wait that ran out.
func (c *catchUpTimer) err(name string) error {
	return fmt.Errorf("%s: %w: no caught-up marker from the source within %v of the last event (or %v in all); does it implement WatchOptions.NotifyCaughtUp?",
		name, errResumeAbandoned, c.stall, catchUpLimit*c.stall)
}
