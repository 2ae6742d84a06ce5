package informer

import (
	"fmt"
	"slices"
	"time"
)

// HandlerOptions configures one handler registration. The zero value is the
// default: every event delivered, the informer's resync period.
type HandlerOptions struct {
	// Name identifies the handler in logs and metrics. Zero: "handler-N".
	Name string
	// ResyncPeriod: every period the handler receives OnUpdate(obj, obj) for
	// every cached object. Zero: the informer's ResyncPeriod. Negative:
	// never. The informer checks for due resyncs at an interval fixed when
	// it starts: the shortest period among its own and its handlers' at
	// that moment. A handler added later resyncs at most that often, and
	// not at all if nothing resynced at start (as in client-go).
	ResyncPeriod time.Duration
	// Coalesce bounds the handler's backlog by the number of distinct keys:
	// while the handler is behind, pending notifications for the same key
	// merge so that it receives the latest state (see the rules below).
	// Zero: every event is queued and delivered, without bound.
	//
	// The merge rules, for a key with a notification still pending:
	//   - add then update → add of the newest state;
	//   - add then delete → nothing (the handler never saw the object);
	//   - update then update → update from the state the handler saw;
	//   - update then delete → delete (with the last known state);
	//   - delete then add → delete of the old object, then add of the new.
	// A deletion of an object the handler saw is never lost. Keys are
	// delivered in the order they first became pending.
	Coalesce bool
}

// Registration is a handler added to a [SharedInformer].
//
// A nil or zero Registration (as a failed [SharedInformer.AddHandler]
// returns) is not a handler, but its methods do not panic: it never syncs
// (HasSynced is false, the Synced channel is never closed, [WaitForSync]
// refuses it with [ErrInvalidOptions]), Backlog is 0, Remove does nothing
// and Done is closed.
type Registration[K comparable, T any] struct {
	inf *SharedInformer[K, T]
	l   *listener[K, T]
}

// AddHandler registers h. Before Run, h will receive the first list as
// initial adds; after Run has started, it first receives the current contents
// of the cache as initial adds (isInInitialList true), then every later
// change, with no gap and no duplicate. During a warm start
// ([Options.Snapshot]), a handler added before the informer has synced is
// told nothing until it has; it then receives the caught-up cache as
// initial adds and the sync marker. h gets its own goroutine and queue.
//
// Possible errors: [ErrInvalidOptions] (h is nil, a typed nil, or a
// [HandlerFuncs] with no function set; or a zero SharedInformer),
// [ErrClosed] (the informer has stopped).
func (inf *SharedInformer[K, T]) AddHandler(h Handler[K, T], opts HandlerOptions) (*Registration[K, T], error) {
	if inf.indexer == nil {
		return nil, errZero()
	}
	if err := checkHandler(h); err != nil {
		return nil, fmt.Errorf("informer %q: add handler: %w", inf.name, err)
	}
	inf.mu.Lock()
	defer inf.mu.Unlock()
	if inf.state == stateStopped || (inf.runCtx != nil && inf.runCtx.Err() != nil) {
		return nil, fmt.Errorf("informer %q: add handler: %w", inf.name, ErrClosed)
	}
	inf.handlerN++
	if opts.Name == "" {
		opts.Name = fmt.Sprintf("handler-%d", inf.handlerN)
	}
	period := opts.ResyncPeriod
	if period == 0 {
		period = inf.resync
	}
	period = max(period, 0)
	// The listener is complete (its resync period included) before the
	// resync schedule, read by the reflector's goroutine, publishes it.
	l := newListener(h, opts.Name, opts.Coalesce, period, inf.handlerPanicked)
	l.informer, l.metrics = inf.name, inf.metrics
	if period > 0 {
		inf.resyncMu.Lock()
		inf.resyncNext[l] = time.Now().Add(period)
		inf.resyncMu.Unlock()
	}
	inf.admitLocked(l)
	return &Registration[K, T]{inf: inf, l: l}, nil
}

// admitLocked registers l, and starts its goroutine if the informer runs.
// During a warm start (before it has synced) l waits, told nothing, until
// markSynced attaches it. Otherwise it is attached at once: the processing
// loop is paused (the caller holds inf.mu), so what the cache holds now is
// exactly what l has not been told yet, which it receives as initial adds.
// Before Run the cache is empty and Run decides.
func (inf *SharedInformer[K, T]) admitLocked(l *listener[K, T]) {
	if inf.state == stateRunning {
		inf.startListenerLocked(l)
	}
	if inf.warm {
		inf.waiting = append(inf.waiting, l)
		return
	}
	if inf.state == stateRunning {
		l.enqueue(inf.initialNotesLocked(inf.HasSynced())...)
	}
	inf.listeners = append(inf.listeners, l)
}

// initialNotesLocked returns the current contents of the cache as initial
// adds, followed by the sync marker if synced: what a handler that joins
// now must receive first. The caller holds inf.mu, so no batch commits
// meanwhile.
func (inf *SharedInformer[K, T]) initialNotesLocked(synced bool) []notification[K, T] {
	initial := make([]notification[K, T], 0, inf.indexer.Len()+1)
	for key, obj := range inf.indexer.All() {
		initial = append(initial, notification[K, T]{kind: noteAdd, key: key, obj: obj, initial: true})
	}
	if synced {
		initial = append(initial, notification[K, T]{kind: noteSynced})
	}
	return initial
}

// startListenerLocked starts l's goroutine under the informer's run context.
// The caller holds inf.mu and the informer is running: Run has not begun
// waiting for handler goroutines.
func (inf *SharedInformer[K, T]) startListenerLocked(l *listener[K, T]) {
	ctx := inf.runCtx
	l.running = true
	inf.handlerWG.Go(func() { l.run(ctx) })
}

func (inf *SharedInformer[K, T]) handlerPanicked(name string, err error) {
	inf.report(ErrorClassHandler, err)
}

// HasSynced reports whether the handler has processed the informer's
// initial list (or, if added late, the contents it received on joining).
func (r *Registration[K, T]) HasSynced() bool {
	if r.isZero() {
		return false
	}
	select {
	case <-r.l.synced:
		return true
	default:
		return false
	}
}

// Synced returns a channel closed once [Registration.HasSynced] is true.
func (r *Registration[K, T]) Synced() <-chan struct{} {
	if r.isZero() {
		return nil // never closed
	}
	return r.l.synced
}

// isZero reports whether r is nil or zero: not a handler (see [Registration]).
func (r *Registration[K, T]) isZero() bool { return r == nil || r.l == nil }

// closedCh is the Done channel of a nil or zero Registration.
var closedCh = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// notSyncedCause says why the handler has not synced yet, for WaitForSync.
func (r *Registration[K, T]) notSyncedCause() error {
	if !r.inf.HasSynced() {
		return r.inf.notSyncedCause()
	}
	started, _, key := r.l.call()
	if started == 0 {
		return fmt.Errorf("handler %q has not processed its initial list: %d notifications queued", r.l.name, r.l.backlog())
	}
	return fmt.Errorf("handler %q has not processed its initial list: %d notifications queued; its current call (key %v) has run for %v",
		r.l.name, r.l.backlog(), key, time.Duration(monoNow()-started).Round(time.Millisecond))
}

// Backlog returns the number of notifications waiting for the handler (with
// Coalesce: the number of keys).
func (r *Registration[K, T]) Backlog() int {
	if r.isZero() {
		return 0
	}
	return r.l.backlog()
}

// Remove unregisters the handler and returns at once, without waiting:
// notifications still queued for it are dropped and it receives no new
// ones; a call in progress runs to its end. [Registration.Done] is closed
// once the handler's goroutine has exited. Remove is idempotent and safe to
// call from anywhere, the handler itself included.
func (r *Registration[K, T]) Remove() {
	if r.isZero() {
		return
	}
	inf := r.inf
	inf.mu.Lock()
	found := false
	for _, ls := range []*[]*listener[K, T]{&inf.listeners, &inf.waiting} {
		if i := slices.Index(*ls, r.l); i >= 0 {
			*ls = slices.Delete(*ls, i, i+1)
			found = true
		}
	}
	neverRan := found && !r.l.running
	inf.mu.Unlock()
	inf.resyncMu.Lock()
	delete(inf.resyncNext, r.l)
	delete(inf.resyncDue, r.l)
	inf.resyncMu.Unlock()
	r.l.close()
	if neverRan {
		close(r.l.done) // no goroutine will: the informer can no longer start it
	}
}

// Done returns a channel closed once the handler's goroutine has exited:
// after [Registration.Remove], or after the informer's Run has ended. A
// handler removed before the informer ran has no goroutine: Done is closed
// by Remove.
func (r *Registration[K, T]) Done() <-chan struct{} {
	if r.isZero() {
		return closedCh
	}
	return r.l.done
}

// reflectorResyncLocked returns the reflector's resync check interval: the
// shortest resync period among the informer and the handlers registered so
// far, zero if none resyncs.
func (inf *SharedInformer[K, T]) reflectorResyncLocked() time.Duration {
	p := inf.resync
	for _, l := range slices.Concat(inf.listeners, inf.waiting) {
		if l.resync > 0 && (p == 0 || l.resync < p) {
			p = l.resync
		}
	}
	if p > 0 && p < time.Second {
		p = time.Second
	}
	return p
}

// shouldResync is the reflector's ShouldResync, called at each resync tick:
// it recomputes the set of handlers due for resync (moving each one's next
// resync a period from now) and reports whether that set is non-empty, that
// is, whether the reflector is to resync at all. The Sync deltas of that
// resync go to exactly that set.
func (inf *SharedInformer[K, T]) shouldResync() bool {
	now := time.Now()
	inf.resyncMu.Lock()
	defer inf.resyncMu.Unlock()
	clear(inf.resyncDue)
	for l, next := range inf.resyncNext {
		if !now.Before(next) {
			inf.resyncDue[l] = true
			inf.resyncNext[l] = now.Add(l.resync)
		}
	}
	return len(inf.resyncDue) > 0
}

// resyncing reports whether l is due for the resync in progress.
func (inf *SharedInformer[K, T]) resyncing(l *listener[K, T]) bool {
	inf.resyncMu.Lock()
	defer inf.resyncMu.Unlock()
	return inf.resyncDue[l]
}
