package informer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/ginformer/ginformer/internal/ringbuf"
)

// Waiting for a write: which versions has the cache applied?
//
// The reflector's writes go through transformingStore into the DeltaFIFO.
// After each one it records the version the source had reached (a list's, a
// watch event's, a bookmark's) with the FIFO's tail sequence number at that
// moment: every change up to that version is then in an entry numbered below
// that tail. The processing loop commits each batch to the Indexer (and
// queues its notifications) before it finishes the batch; finishing moves
// the FIFO's finished sequence number past the batch, and every recorded
// version whose tail it has reached is applied. The loop then hands the
// finished number it read to the tracker (advanceTo); record reads both
// numbers under the tracker's lock (a version whose changes are all
// processed already, or that changed nothing queued, is applied at once).
// Finished only grows, so a batch finishing between a record and the loop's
// next advance cannot strand a version: either record saw it finished, or
// the advance after it sees a number at least that new. A direct hand-off
// (see process.go) finishes its one-event batch before the reflector
// records the event's version, which is then applied at once.

// versionMark is one received version.
type versionMark struct {
	seq     uint64 // the FIFO's tail when the version was received
	ordinal uint64 // receipt number: 1 for the first version received
	version string
}

// versionTracker follows the versions the informer's cache has applied and
// wakes the callers of WaitForVersion. Its zero value is not usable: see
// newVersionTracker.
type versionTracker struct {
	name    string
	cmp     VersionComparer                // the source's; nil: WaitForVersion is unsupported
	seqs    func() (tail, finished uint64) // the FIFO's sequence numbers
	metrics Metrics                        // told of each newer version applied, after mu is released
	stopped chan struct{}                  // closed by stop
	stop    func()                         // closes stopped, once

	// mu guards the fields below. It is taken before the FIFO's lock (seqs
	// is called under it), never the other way round; no user code runs
	// under it.
	mu        sync.Mutex
	pending   ringbuf.Ring[versionMark] // received, not applied yet; one per seq
	received  uint64                    // ordinal of the last version received
	applied   versionMark               // the last version applied; zero before the first
	appliedAt time.Time
	// advanced is made by a waiter that needs it and closed, then reset to
	// nil, whenever applied changes.
	advanced chan struct{}
}

func newVersionTracker(name string, src any, seqs func() (tail, finished uint64), m Metrics) *versionTracker {
	if m == nil {
		m = NoopMetrics{}
	}
	t := &versionTracker{name: name, seqs: seqs, metrics: m, stopped: make(chan struct{})}
	t.stop = sync.OnceFunc(func() { close(t.stopped) })
	t.cmp, _ = src.(VersionComparer)
	return t
}

// record notes that every change up to version has been queued. "" is not
// a version and is ignored.
func (t *versionTracker) record(version string) {
	if version == "" {
		return
	}
	t.mu.Lock()
	tail, finished := t.seqs()
	t.received++
	m := versionMark{seq: tail, ordinal: t.received, version: version}
	if n := t.pending.Len(); n > 0 && t.pending.Ptr(n-1).seq == tail {
		// Nothing was queued since the previous version: once applied,
		// both are; the newer one stands for both.
		*t.pending.Ptr(n - 1) = m
	} else {
		t.pending.Push(m)
	}
	at, applied := t.advanceLocked(finished)
	t.mu.Unlock()
	t.reportApplied(at, applied)
}

// advanceTo applies the versions whose changes have been finished, given
// the FIFO's finished sequence number as read when the processing loop
// finished its batch (finished only grows: a value read
// before the lock is taken applies no version too early, and a version
// recorded since was checked against a finished at least as new by record).
// The processing loop calls it after each batch.
func (t *versionTracker) advanceTo(finished uint64) {
	t.mu.Lock()
	if t.pending.Len() == 0 {
		t.mu.Unlock()
		return
	}
	at, applied := t.advanceLocked(finished)
	t.mu.Unlock()
	t.reportApplied(at, applied)
}

// reportApplied tells Metrics of a newer version applied at time at, if
// applied. It is called without t.mu held: Metrics is not the tracker's code.
func (t *versionTracker) reportApplied(at time.Time, applied bool) {
	if applied {
		t.metrics.VersionApplied(t.name, at)
	}
}

// advanceLocked applies every pending version whose changes are all below
// the FIFO's finished sequence number, and wakes the waiters it satisfies.
// It returns the time it applied a newer version, and false if it applied
// none.
func (t *versionTracker) advanceLocked(finished uint64) (time.Time, bool) {
	changed := false
	for {
		m, ok := t.pending.Peek()
		if !ok || m.seq > finished {
			break
		}
		t.pending.Pop()
		t.applied, changed = m, true
	}
	if !changed {
		return time.Time{}, false
	}
	t.appliedAt = time.Now()
	if t.advanced != nil {
		close(t.advanced)
		t.advanced = nil
	}
	return t.appliedAt, true
}

// appliedVersion returns the last version the cache has applied and when it
// was applied; "" and the zero time before the first.
func (inf *SharedInformer[K, T]) appliedVersion() (version string, at time.Time) {
	return inf.versions.current()
}

// WaitForVersion blocks until the informer's cache reflects version, a
// version of its source (typically returned by a write to the source), or
// ctx is done: read-your-writes. It returns nil once every change up to and
// including version is visible through [SharedInformer.Lister] and has been
// queued to every handler registered then (handlers may not have run yet).
//
// The wait ends once the cache has applied version or any later one, as
// the source's [VersionComparer] orders them: WaitForVersion needs a source
// that implements it (every source of this module does). A source without
// one has opaque versions that cannot tell "this one or later", and the
// call fails at once.
//
// The versions the informer has received are not necessarily applied yet:
// [SharedInformer.LastSyncVersion] is the reflector's, ahead of the cache.
//
// An informer restored from a snapshot ([Options.Snapshot]) has applied the
// snapshot's version as soon as Run has loaded it; while it catches up,
// the versions it applies are not queued to handlers yet (they receive the
// caught-up state when it syncs).
//
// WaitForVersion waits on channels; it does not poll. Every waiting call
// wakes and compares versions each time a processed batch changes the
// cache's version. It may be called before
// Run (it then waits for Run to apply the version), by any number of
// goroutines at once, and from handlers (a handler waiting for a version
// not applied yet delays its own later notifications, not the cache).
//
// Possible errors:
//   - [ErrInvalidVersion]: version is "" or not a version of the source
//     (checked before waiting);
//   - [errors.ErrUnsupported]: the source does not implement
//     [VersionComparer];
//   - [ErrClosed]: the informer stopped (its Run context ended) first;
//   - ctx.Err(), wrapped in an error naming the awaited version and the
//     version the cache had reached, and wrapping the source's last error
//     too when its last answer was an error;
//   - [ErrInvalidOptions]: a zero SharedInformer.
func (inf *SharedInformer[K, T]) WaitForVersion(ctx context.Context, version string) error {
	if inf.indexer == nil {
		return errZero()
	}
	t := inf.versions
	if version == "" {
		return fmt.Errorf("informer %q: wait for version \"\": %w", t.name, ErrInvalidVersion)
	}
	if t.cmp == nil {
		return fmt.Errorf("informer %q: wait for version %q: the source does not implement VersionComparer: %w",
			t.name, version, errors.ErrUnsupported)
	}
	err := t.wait(ctx, version)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		if cause := inf.stallCause(inf.Health()); cause != nil {
			err = fmt.Errorf("%w; %w", err, cause)
		}
	}
	return err
}

// ReceivedWaiter is implemented by [SharedInformer]: a barrier on what the
// informer has received. A sharded source takes one to wait until the list
// of its new slice is in the cache.
type ReceivedWaiter interface {
	// WaitForReceived: see [SharedInformer.WaitForReceived].
	WaitForReceived(ctx context.Context) error
}

var _ ReceivedWaiter = (*SharedInformer[string, string])(nil)

// WaitForReceived blocks until the informer's cache has applied everything
// the informer had received from its source when it was called (every list,
// and every watch event and bookmark that carried a version), or ctx is
// done. Unlike [SharedInformer.WaitForVersion] it needs no version and does
// not compare any: a relist received at the version the cache is already at
// (a list of another slice, on an idle source) is waited for too. It
// returns nil at once if nothing received is still waiting to be applied.
// Like WaitForVersion it waits on channels, may be called from any number
// of goroutines and from handlers.
//
// Possible errors:
//   - [ErrClosed]: the informer stopped (its Run context ended) first;
//   - ctx.Err(), wrapped in an error naming the version the cache had
//     reached;
//   - [ErrInvalidOptions]: a zero SharedInformer.
func (inf *SharedInformer[K, T]) WaitForReceived(ctx context.Context) error {
	if inf.indexer == nil {
		return errZero()
	}
	return inf.versions.waitReceived(ctx)
}

// waitReceived waits until the receipt that was the latest when it was
// called has been applied.
func (t *versionTracker) waitReceived(ctx context.Context) error {
	t.mu.Lock()
	target := t.received
	t.mu.Unlock()
	return t.waitFor(ctx, func() (bool, error) {
		t.mu.Lock()
		defer t.mu.Unlock()
		return t.applied.ordinal >= target, nil
	}, func(cause error) error { return t.waitErrorFor("what it received", cause) })
}

// wait waits for an applied version at least version. Each time the
// applied version changes, every waiter wakes and compares it with its own,
// with no lock held (CompareVersions is the source's code).
func (t *versionTracker) wait(ctx context.Context, version string) error {
	if _, err := t.compare(version, version); err != nil {
		return err
	}
	return t.waitFor(ctx, func() (bool, error) { return t.reached(version) },
		func(cause error) error { return t.waitErrorFor("version "+strconv.Quote(version), cause) })
}

// waitFor waits until done (called with no lock held) reports true or
// fails, waking each time the applied version changes; fail makes the error
// of a wait ended by the informer's stop or ctx.
func (t *versionTracker) waitFor(ctx context.Context, done func() (bool, error), fail func(cause error) error) error {
	for {
		t.mu.Lock()
		if t.advanced == nil {
			t.advanced = make(chan struct{})
		}
		advanced := t.advanced // taken before done looks: a change after it closes advanced
		t.mu.Unlock()
		if ok, err := done(); ok || err != nil {
			return err
		}
		select {
		case <-advanced:
		case <-t.stopped:
			// Look once more: a batch may have finished just before.
			if ok, err := done(); ok || err != nil {
				return err
			}
			return fail(ErrClosed)
		case <-ctx.Done():
			return fail(ctx.Err())
		}
	}
}

// reached reports whether the applied version is at least version.
func (t *versionTracker) reached(version string) (bool, error) {
	t.mu.Lock()
	applied := t.applied.version
	t.mu.Unlock()
	if applied == "" {
		return false, nil
	}
	c, err := t.compare(applied, version)
	return err == nil && c >= 0, err
}

// compare calls the source's CompareVersions; its errors always wrap
// ErrInvalidVersion.
func (t *versionTracker) compare(a, b string) (int, error) {
	c, err := t.cmp.CompareVersions(a, b)
	switch {
	case err != nil && errors.Is(err, ErrInvalidVersion):
		return 0, fmt.Errorf("informer %q: compare versions %q and %q: %w", t.name, a, b, err)
	case err != nil:
		return 0, fmt.Errorf("informer %q: compare versions %q and %q: %w: %w", t.name, a, b, ErrInvalidVersion, err)
	}
	return c, nil
}

// waitErrorFor is the error of a wait for what ended by cause.
func (t *versionTracker) waitErrorFor(what string, cause error) error {
	applied, _ := t.current()
	reached := "has applied no version yet"
	if applied != "" {
		reached = "is at version " + strconv.Quote(applied)
	}
	if errors.Is(cause, ErrClosed) {
		return fmt.Errorf("informer %q: wait for %s: informer stopped; its cache %s: %w", t.name, what, reached, cause)
	}
	return fmt.Errorf("informer %q: wait for %s: the cache %s: %w", t.name, what, reached, cause)
}

// current returns the applied version and when it was applied.
func (t *versionTracker) current() (string, time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.applied.version, t.appliedAt
}
