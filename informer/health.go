package informer

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Health is a snapshot of what an informer is doing: what a readiness probe
// or a debug page reads. Times are zero for what has not happened yet.
type Health struct {
	// Name is the informer's name.
	Name string
	// Running is true between Run's start and the end of its context.
	Running bool
	// Synced is [SharedInformer.HasSynced].
	Synced bool
	// AppliedVersion is the newest version the cache has applied, and
	// AppliedAt when it did.
	AppliedVersion string
	AppliedAt      time.Time
	// LastListAt is when the last complete list (or streaming list) was
	// received from the source.
	LastListAt time.Time
	// LastEventAt is when the last watch event (bookmarks included, error
	// events not) was received from the source.
	LastEventAt time.Time
	// LastError is the last error the informer survived (its source's
	// reports included, see [ReportSourceError]), LastErrorAt when.
	LastError   error
	LastErrorAt time.Time
	// FailingSince is when the source's current outage began: the first
	// list or watch failure (class transient, internal or list_watch; a
	// source's report of one included) since the source last answered with
	// a list or a watch event other than an error. Zero while it answers:
	// the next list or event clears it. The cache may then lack every
	// change made since the later of LastListAt and LastEventAt.
	FailingSince time.Time
	// LivenessBound is how long a dead watch of the source can go
	// unnoticed: the source's [LivenessBounder], read when the informer was
	// built; 0 when the source declares none. [Health.StaleFor] uses it.
	LivenessBound time.Duration
	// Lists counts the complete lists (and streaming lists) applied since
	// Run started, the first included: after a cold start the relists are
	// Lists-1; after a warm restart that resumed from its snapshot without
	// listing, every list is a relist. The metric ginformer_lists_total.
	Lists int64
	// WatchRestarts counts the watches re-opened from the last version
	// without a relist (after a watch ended normally or failed with a
	// transient or internal error). The metric
	// ginformer_watch_restarts_total.
	WatchRestarts int64
	// Errors counts the errors the informer survived since Run started,
	// by class, as [Metrics.Error] does (the metric
	// ginformer_errors_total): only classes seen at least once; nil when
	// none. A new map per call: the caller owns it.
	Errors map[ErrorClass]int64
	// QueueDepth is the number of keys waiting in the informer's queue.
	QueueDepth int
	// Objects is the number of objects in the cache.
	Objects int
	// Handlers describes each registered handler, in registration order.
	Handlers []HandlerHealth

	// Restored is true while the cache holds a snapshot restored at start
	// ([Options.Snapshot]) and has not caught up with the source: readers
	// see the state saved at RestoredVersion, possibly stale, and Synced
	// is false. RestoredAt is when it was loaded; both stay set after the
	// catch-up, zero after a cold start.
	Restored        bool
	RestoredVersion string
	RestoredAt      time.Time
	// Start is how Run used the snapshot at start: cold, refused,
	// verifying, catching up, resumed or relisted (see [StartOutcome]);
	// StartReason says why for refused and relisted, StartAt when Start
	// last changed. It stays once the informer has synced, so that how the
	// start went can be read at any time. StartNone without
	// [Options.Snapshot].
	Start       StartOutcome
	StartReason string
	StartAt     time.Time
	// SnapshotVersion, SnapshotAt and SnapshotBytes describe the last
	// snapshot written (or, until one is, the one restored: SnapshotAt
	// zero). Zero without [Options.Snapshot].
	SnapshotVersion string
	SnapshotAt      time.Time
	SnapshotBytes   int64
}

// HandlerHealth describes one handler registration in [Health].
type HandlerHealth struct {
	// Name is the handler's name.
	Name string
	// Coalesce is [HandlerOptions.Coalesce].
	Coalesce bool
	// Synced is [Registration.HasSynced].
	Synced bool
	// Backlog is [Registration.Backlog].
	Backlog int
	// Running is how long the call in progress has been running; zero
	// when the handler is waiting for work.
	Running time.Duration
	// RunningKey is the key of the call in progress, formatted with %v.
	RunningKey string
	// StuckCalls counts calls that ran past the informer's
	// StuckHandlerThreshold since the handler was added.
	StuckCalls int64
}

// LongestCall returns the handler whose call in progress has run longest,
// and false if no handler is in a call.
func (h Health) LongestCall() (HandlerHealth, bool) {
	var best HandlerHealth
	for _, hh := range h.Handlers {
		if hh.Running > best.Running {
			best = hh
		}
	}
	return best, best.Running > 0
}

// StaleFor says how stale the cache may be at now, once the source has
// failed for longer than its liveness bound: ok is true when FailingSince
// is set and more than LivenessBound before now (with no bound, as soon as
// it is before now). stale is then the time since the source last
// answered: now minus the later of LastListAt and LastEventAt, at least
// now minus FailingSince (also when the source never answered).
//
// ok is false while the source answers (FailingSince zero) and during the
// first LivenessBound of an outage: a watch that answers may already lag
// that long unnoticed (see [LivenessBounder]), so an outage that short
// says no more than "synced" does, and it spans the reflector's first
// retries (0.8 s, then 1.6 s, plus jitter), which end most blips. A source
// that declares no bound gives no such grace: a failure may be anything.
//
// StaleFor does not look at Synced or Running: a caller showing staleness
// beside "synced" checks Synced (an informer that has not synced serves a
// restored snapshot, or nothing).
func (h Health) StaleFor(now time.Time) (stale time.Duration, ok bool) {
	if h.FailingSince.IsZero() {
		return 0, false
	}
	down := now.Sub(h.FailingSince)
	if down <= max(h.LivenessBound, 0) {
		return 0, false
	}
	stale = down
	answered := h.LastListAt
	if h.LastEventAt.After(answered) {
		answered = h.LastEventAt
	}
	if !answered.IsZero() {
		stale = max(stale, now.Sub(answered))
	}
	return stale, true
}

// Health returns a snapshot of the informer's state. It takes a few short
// locks and never waits for a handler or the source. Safe for concurrent
// use; a zero SharedInformer returns a Health with only Name empty fields.
func (inf *SharedInformer[K, T]) Health() Health {
	h := Health{Name: inf.name}
	if inf.indexer == nil {
		return h
	}
	h.Synced = inf.HasSynced()
	h.AppliedVersion, h.AppliedAt = inf.appliedVersion()
	h.LastListAt, h.LastEventAt = inf.health.listAt.load(), inf.health.eventAt.load()
	h.LastErrorAt, h.LastError = inf.health.lastError()
	h.FailingSince, h.LivenessBound = inf.health.failing.load(), inf.liveness
	h.Lists, h.WatchRestarts = inf.health.lists.Load(), inf.health.restarts.Load()
	h.Errors = inf.health.errorCounts()
	h.QueueDepth = inf.fifo.Len()
	h.Objects = inf.indexer.Len()
	inf.restoredHealth(&h)
	inf.mu.Lock()
	h.Running = inf.state == stateRunning
	ls := slices.Concat(inf.listeners, inf.waiting)
	inf.mu.Unlock()
	now := monoNow()
	for _, l := range ls {
		hh := HandlerHealth{Name: l.name, Coalesce: l.coalesce}
		select {
		case <-l.synced:
			hh.Synced = true
		default:
		}
		hh.Backlog = l.backlog()
		l.callMu.Lock()
		started, key := l.started, l.curKey
		hh.StuckCalls = l.stuck
		l.callMu.Unlock()
		if started != 0 {
			hh.Running = time.Duration(now - started)
			hh.RunningKey = fmt.Sprint(key)
		}
		h.Handlers = append(h.Handlers, hh)
	}
	return h
}

// notSyncedCause says why the informer has not synced yet, for WaitForSync.
func (inf *SharedInformer[K, T]) notSyncedCause() error {
	h := inf.Health()
	if h.Synced {
		return fmt.Errorf("informer %q has synced", inf.name)
	}
	if err := inf.stallCause(h); err != nil {
		return fmt.Errorf("informer %q has not synced: %w", inf.name, err)
	}
	if h.Restored {
		return fmt.Errorf("informer %q has not synced: catching up with the source from a snapshot restored at version %q (received up to %q)",
			inf.name, h.RestoredVersion, inf.LastSyncVersion())
	}
	if h.LastListAt.IsZero() {
		return fmt.Errorf("informer %q has not synced: waiting for the source's first list (no error reported)", inf.name)
	}
	return fmt.Errorf("informer %q has not synced: applying the first list (%d keys queued)", inf.name, h.QueueDepth)
}

// stallCause explains a wait that ran out (WaitForSync, WaitForVersion):
// the informer is not running, or the source's last answer was an error.
// It returns nil when neither holds.
func (inf *SharedInformer[K, T]) stallCause(h Health) error {
	switch {
	case inf.indexer == nil:
		return errZero()
	case !h.Running:
		return fmt.Errorf("informer %q is not running: call Run", inf.name)
	case h.LastError != nil && !errors.Is(h.LastError, ErrDecode) && // a skipped object stalls nothing
		h.LastErrorAt.After(h.LastListAt) && h.LastErrorAt.After(h.LastEventAt):
		return fmt.Errorf("last error %v ago: %w", time.Since(h.LastErrorAt).Round(time.Millisecond), h.LastError)
	}
	return nil
}

// healthRecord keeps the times, counts and last error behind [Health].
// The times are atomics because the reflector sets one per event; the
// counts of lists and watch restarts are atomics too, those of errors (rare)
// a map under mu.
type healthRecord struct {
	listAt, eventAt atomicTime
	failing         atomicTime // Health.FailingSince; zero while the source answers
	lists, restarts atomic.Int64

	mu        sync.Mutex // guards err, errAt and errCounts
	err       error
	errAt     time.Time
	errCounts map[ErrorClass]int64
}

func (r *healthRecord) setError(err error) {
	r.mu.Lock()
	r.err, r.errAt = err, time.Now()
	r.mu.Unlock()
}

// countError counts one error of class.
func (r *healthRecord) countError(class ErrorClass) {
	r.mu.Lock()
	if r.errCounts == nil {
		r.errCounts = make(map[ErrorClass]int64)
	}
	r.errCounts[class]++
	r.mu.Unlock()
}

// errorCounts returns a copy of the error counts, nil when there are none.
func (r *healthRecord) errorCounts() map[ErrorClass]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.errCounts)
}

func (r *healthRecord) lastError() (time.Time, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.errAt, r.err
}

// atomicTime is a moment set and read atomically, kept as monoNow (the
// monotonic clock only: marking it on every event costs no wall-clock
// read). load turns it into a time.Time from monoEpoch, so it carries a
// monotonic reading and its wall clock is monoEpoch's plus the elapsed
// time. The zero value is the zero time.
type atomicTime struct{ ns atomic.Int64 }

// mark sets t to now.
func (t *atomicTime) mark() { t.ns.Store(monoNow()) }

// markIfZero sets t to now if it is zero.
func (t *atomicTime) markIfZero() { t.ns.CompareAndSwap(0, monoNow()) }

// clear sets t to zero; a load alone when it is zero already.
func (t *atomicTime) clear() {
	if t.ns.Load() != 0 {
		t.ns.Store(0)
	}
}

func (t *atomicTime) load() time.Time {
	ns := t.ns.Load()
	if ns == 0 {
		return time.Time{}
	}
	return monoEpoch.Add(time.Duration(ns - 1))
}

// healthMetrics is the Metrics the informer gives its reflector: it notes
// the time of every list and event, and counts lists, watch restarts and
// errors, and when an outage began, for [Health], then forwards to the
// user's Metrics. Per event it adds one atomic store and one atomic load,
// nothing more.
type healthMetrics struct {
	Metrics
	h *healthRecord
}

func (m healthMetrics) EventReceived(informer string, t EventType) {
	if t != EventError { // an error event is a failure, not an answer
		m.h.eventAt.mark()
		m.h.failing.clear()
	}
	m.Metrics.EventReceived(informer, t)
}

func (m healthMetrics) Relisted(informer string) {
	m.h.listAt.mark()
	m.h.failing.clear()
	m.h.lists.Add(1)
	m.Metrics.Relisted(informer)
}

func (m healthMetrics) WatchRestarted(informer string) {
	m.h.restarts.Add(1)
	m.Metrics.WatchRestarted(informer)
}

func (m healthMetrics) Error(informer string, class ErrorClass) {
	m.h.countError(class)
	switch class {
	case ErrorClassTransient, ErrorClassInternal, ErrorClassListWatch:
		m.h.failing.markIfZero() // the first failure since the source answered
	}
	m.Metrics.Error(informer, class)
}
