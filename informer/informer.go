package informer

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/ginformer/ginformer/internal/lograte"
)

// Options configures a [SharedInformer]. Source and KeyFunc are required;
// every other field's zero value is a safe default.
type Options[K comparable, T any] struct {
	// Source is listed and watched. Required.
	Source Source[T]
	// KeyFunc names objects in the cache and the queue. Required.
	KeyFunc KeyFunc[K, T]
	// Indexes are the cache's secondary indexes. Zero: none (more can be
	// added later through [SharedInformer.AddIndexes]).
	Indexes []Index[T]
	// ResyncPeriod is the default resync period of handlers: every period,
	// each handler that asked for resync receives OnUpdate(obj, obj) for
	// every cached object. Resync never contacts the source. Zero: no
	// resync. Periods under a second are raised to one second.
	ResyncPeriod time.Duration
	// Transform, if set, is applied to every object from the source before
	// it is queued and cached: the place to drop fields the program does not
	// need and save memory. It must return a new value rather than modify its
	// argument if the source may share it. It is user code, called without
	// locks held. An error (or panic) is reported and the object skipped;
	// for a deletion, the untransformed object is used so no delete is lost.
	Transform func(obj T) (T, error)
	// Name identifies the informer in logs and metrics. Zero: "informer".
	Name string
	// Logger receives the informer's logs (and its reflector's). Failures a
	// person must act on (a list that keeps failing, a handler that panics
	// or is stuck, objects refused by key, index or transform functions) are
	// logged at error level, at most a few per minute per kind; routine
	// events (a relist after an expired version, a disconnect that recovers)
	// at V(1) and above. Zero: [slog.Default] through
	// [logr.FromSlogHandler], which prints errors and hides verbose levels;
	// pass logr.FromSlogHandler(slog.DiscardHandler) to silence it ([logr.Discard] returns the zero Logger, which means this default).
	Logger logr.Logger
	// Metrics receives the informer's measurements. Zero: [NoopMetrics].
	Metrics Metrics
	// ErrorHandler is told of every error the informer survives, in
	// addition to the log: failed lists and watches, objects refused by the
	// transform, key or index functions, handler panics, stuck handler
	// calls, and the errors the source survived and reported
	// ([ReportSourceError]: objects it could not decode, disconnects it
	// recovered from). It may be called from several goroutines at once.
	// Zero: the errors are only logged (and kept in [Health]).
	ErrorHandler ErrorHandler
	// StuckHandlerThreshold: a handler call running longer than this is
	// reported once (log, [ErrorClassHandlerStuck] metric, [Health]) with
	// the handler's name and the key. Zero: 30 s. Negative: never reported.
	StuckHandlerThreshold time.Duration
	// BatchSize is the most keys the processing loop takes off the queue at
	// once; each batch is applied to the cache under one lock. Zero: 1000.
	// A relist is always applied as one batch, whatever its size.
	BatchSize int
	// ListWatch tunes the list and watch: page size, watch timeouts,
	// backoff, streaming lists. Zero: client-go's behaviour (see
	// [ListWatchOptions] for each field's default).
	ListWatch ListWatchOptions
	// ObjectVersion returns the version of an object's own last change (a
	// Kubernetes resourceVersion, an etcd ModRevision), "" if unknown. With
	// it, a relist is compared with the cache page by page: a listed object
	// whose version equals the cached object's (or, if the key has changes
	// still queued, the newest queued state's) is dropped at once, keeping
	// only its key, so a relist delivers only the changed, new and deleted
	// objects to handlers, and never holds the whole new list. (client-go
	// delivers an update for every object on a relist; handlers that want
	// every object again use resync.) "" never equals anything. It is user
	// code, called without locks held on listed objects and on cached ones
	// (which went through Transform: it must keep what ObjectVersion reads);
	// a panic counts as "". Zero: the source's [ObjectVersioner] if it
	// implements one, else none, and every relisted object is delivered as an
	// update. To turn the source's off, return "".
	ObjectVersion func(obj T) string
	// Snapshot turns on warm restarts: the cache is saved to a
	// [SnapshotStore] while the informer runs and when it stops, and the
	// next informer with the same source and options starts from it,
	// catching up with what changed meanwhile instead of listing
	// everything (see [SnapshotOptions]). Zero: off.
	Snapshot SnapshotOptions[T]
	// MutationDetector configures the cache mutation detector, a testing
	// tool that reports cached objects modified in place. Zero: off, unless
	// the environment variable [MutationDetectorEnv] turns it on.
	MutationDetector MutationDetectorOptions[T]
}

// SharedInformer keeps an indexed cache of a [Source] current and tells any
// number of handlers what changed. It is the typed counterpart of client-go's
// SharedIndexInformer, and keeps its contract:
//
//   - The cache ([SharedInformer.Lister]) eventually holds exactly the
//     source's objects. A relist is applied atomically: readers and handlers
//     never observe a cache that mixes the old list and the new one.
//   - Each handler receives, in order per key, the changes that took the
//     cache from the state it last saw to the current one: by default every
//     change, or merged per key with [HandlerOptions.Coalesce]. A handler sees
//     a notification only after the cache reflects it.
//   - A handler added late first receives the current contents as initial
//     adds, then every later change, with no gap and no duplicate.
//   - Deletions are never lost. A deletion that happened while no watch was
//     open arrives as a [Deletion] with FinalStateUnknown set.
//
// User code (key, index and transform functions, handlers) is never called
// with an internal lock held. All methods are safe for concurrent use.
//
// The zero SharedInformer is not usable: build one with [NewSharedInformer].
// Its methods do not panic (Run and AddHandler return [ErrInvalidOptions],
// Lister is empty), but it never syncs.
type SharedInformer[K comparable, T any] struct {
	name     string
	log      logr.Logger
	metrics  Metrics
	onError  ErrorHandler
	limiter  lograte.Limiter
	resync   time.Duration
	stuckAt  time.Duration // zero: stuck calls are not reported
	batch    int
	indexer  *Indexer[K, T]
	fifo     *DeltaFIFO[K, T]
	refl     *Reflector[T]
	reflOpts ReflectorOptions[T]
	health   healthRecord
	liveness time.Duration   // the source's LivenessBound; 0: none (Health.LivenessBound)
	versions *versionTracker // the versions the cache has applied; see WaitForVersion
	// mutations is the cache mutation detector; nil (nearly always) when off.
	mutations *mutationDetector[K, T]
	// snap configures warm restarts; nil when off. See snapshot_restore.go
	// and snapshot_write.go.
	snap *snapshotState[K, T]
	// proc is the batch processor's reusable state. Whoever holds the
	// FIFO's in-flight batch uses it: the processing loop, or the
	// reflector's goroutine on a direct hand-off (see applyEvent).
	proc batchProcessor[K, T]
	// directWake: the handlers a direct hand-off wakes (the reflector's
	// goroutine's own; see processTaken).
	directWake []*listener[K, T]

	// mu orders cache commits against handler registration: the processing
	// loop holds it while it commits a batch and queues its notifications;
	// AddHandler holds it while it snapshots the cache. It also guards the
	// lifecycle: Run moves state forward under it, and AddHandler starts a
	// handler goroutine only while holding it in stateRunning, so Run, which
	// sets stateStopped under mu before waiting for handlers, never misses
	// one. No user code runs under it.
	mu    sync.Mutex
	state runState
	// warm is true from Run until a warm start has synced, or has found no
	// snapshot to restore: new handlers wait (see admitLocked).
	warm bool
	// listeners are the handlers processBatch notifies; waiting, those
	// registered and running during a warm start, told nothing until
	// markSynced attaches them. At most one of the two is non-empty.
	listeners []*listener[K, T]
	waiting   []*listener[K, T]
	runCtx    context.Context // set by Run; listeners started later use it
	syncedCh  chan struct{}
	handlerN  int
	handlerWG sync.WaitGroup // listener goroutines

	// resyncMu guards the per-handler resync schedule.
	resyncMu   sync.Mutex
	resyncDue  map[*listener[K, T]]bool
	resyncNext map[*listener[K, T]]time.Time
}

// runState is where an informer is in its life: it runs once.
type runState uint8

const (
	stateNew     runState = iota // not run yet
	stateRunning                 // Run has started and its context is not done
	stateStopped                 // Run's context is done: it never runs again
)

// NewSharedInformer validates opts and returns an informer ready to
// [SharedInformer.Run]. Handlers may be added before or after Run.
//
// Possible errors: [ErrInvalidOptions], [ErrIndexExists].
func NewSharedInformer[K comparable, T any](opts Options[K, T]) (*SharedInformer[K, T], error) {
	if isNil(opts.Source) {
		return nil, fmt.Errorf("informer: Source is required (got %T(nil)): %w", opts.Source, ErrInvalidOptions)
	}
	if err := checkSourceFuncs(opts.Source); err != nil {
		return nil, fmt.Errorf("informer: %w", err)
	}
	if opts.KeyFunc == nil {
		return nil, fmt.Errorf("informer: KeyFunc is required: %w", ErrInvalidOptions)
	}
	if opts.ResyncPeriod < 0 || opts.BatchSize < 0 {
		return nil, fmt.Errorf("informer: negative ResyncPeriod or BatchSize: %w", ErrInvalidOptions)
	}
	if err := opts.ListWatch.validate(); err != nil {
		return nil, fmt.Errorf("informer: ListWatch: %w", err)
	}
	if opts.Name == "" {
		opts.Name = "informer"
	}
	if opts.Metrics == nil {
		opts.Metrics = NoopMetrics{}
	}
	opts.Logger = lograte.OrDefault(opts.Logger)
	if opts.BatchSize == 0 {
		opts.BatchSize = 1000
	}
	if opts.ResyncPeriod > 0 && opts.ResyncPeriod < time.Second {
		opts.ResyncPeriod = time.Second
	}
	switch {
	case opts.StuckHandlerThreshold == 0:
		opts.StuckHandlerThreshold = 30 * time.Second
	case opts.StuckHandlerThreshold < 0:
		opts.StuckHandlerThreshold = 0
	}
	indexer, err := NewIndexer(IndexerOptions[K, T]{KeyFunc: opts.KeyFunc, Indexes: opts.Indexes})
	if err != nil {
		return nil, fmt.Errorf("informer %q: %w", opts.Name, err)
	}
	var liveness time.Duration
	if lb, ok := opts.Source.(LivenessBounder); ok {
		liveness = max(lb.LivenessBound(), 0)
	}
	objVersion := opts.ObjectVersion
	if ov, ok := opts.Source.(ObjectVersioner[T]); ok && objVersion == nil {
		objVersion = ov.ObjectVersion
	}
	fifo, err := NewDeltaFIFO(DeltaFIFOOptions[K, T]{KeyFunc: opts.KeyFunc, KnownObjects: indexer, ObjectVersion: objVersion})
	if err != nil {
		return nil, fmt.Errorf("informer %q: %w", opts.Name, err)
	}
	inf := &SharedInformer[K, T]{
		name:       opts.Name,
		log:        opts.Logger.WithValues("informer", opts.Name),
		metrics:    opts.Metrics,
		onError:    opts.ErrorHandler,
		resync:     opts.ResyncPeriod,
		stuckAt:    opts.StuckHandlerThreshold,
		liveness:   liveness,
		batch:      opts.BatchSize,
		indexer:    indexer,
		fifo:       fifo,
		versions:   newVersionTracker(opts.Name, opts.Source, fifo.sequences, opts.Metrics),
		syncedCh:   make(chan struct{}),
		resyncDue:  make(map[*listener[K, T]]bool),
		resyncNext: make(map[*listener[K, T]]time.Time),
	}
	inf.mutations, err = newMutationDetector[K](opts.Name, opts.MutationDetector, func(err error) { inf.report(ErrorClassCacheMutation, err) })
	if err != nil {
		return nil, fmt.Errorf("informer %q: %w", opts.Name, err)
	}
	snap, err := newSnapshotConfig(opts.Snapshot, opts.Source)
	if err != nil {
		return nil, fmt.Errorf("informer %q: %w", opts.Name, err)
	}
	if snap != nil {
		inf.snap = &snapshotState[K, T]{cfg: *snap, keyFunc: opts.KeyFunc, caughtUp: make(chan struct{})}
	}
	ro := ReflectorOptions[T]{ListWatchOptions: opts.ListWatch}
	ro.Source = opts.Source
	ro.Store = &transformingStore[K, T]{fifo: fifo, transform: opts.Transform, inf: inf}
	ro.Name = opts.Name
	ro.Logger = opts.Logger
	ro.Metrics = healthMetrics{Metrics: opts.Metrics, h: &inf.health}
	ro.ErrorHandler = inf.sourceFailed
	ro.ShouldResync = inf.shouldResync
	inf.reflOpts = ro
	return inf, nil
}

// Name returns the informer's name.
func (inf *SharedInformer[K, T]) Name() string { return inf.name }

// errZero is returned by the methods of a zero SharedInformer.
func errZero() error {
	return fmt.Errorf("informer: zero SharedInformer: build one with NewSharedInformer: %w", ErrInvalidOptions)
}

// Run starts the informer and blocks until ctx is done and every goroutine
// it started (reflector, processing loop, handlers) has exited.
//
// Stopping is prompt: once ctx is done, no handler receives another
// notification (those still queued are dropped, as in client-go), so Run
// returns as soon as the handler calls in progress at that moment have
// returned. A handler that never returns keeps Run waiting: it is reported
// as stuck (see [Options.StuckHandlerThreshold]).
//
// An informer runs once. After Run has returned nil, build a new one with
// [NewSharedInformer] (in a [Group]: [Group.Stop], then [InformerFor]).
// The exception is a ctx already done when Run is called: Run then starts
// nothing and returns ctx's error at once, and the informer is as it was
// (handlers may still be added, and Run may be called again).
//
// Possible errors: ctx.Err() (wrapped; ctx was done before Run started),
// [ErrAlreadyStarted] (Run is running), [ErrClosed] (Run has returned),
// [ErrInvalidOptions] (a zero SharedInformer).
func (inf *SharedInformer[K, T]) Run(ctx context.Context) error {
	if inf.indexer == nil {
		return errZero()
	}
	inf.mu.Lock()
	if err := ctx.Err(); err != nil && inf.state == stateNew {
		inf.mu.Unlock()
		return fmt.Errorf("informer %q: not started, the context is done: %w", inf.name, err)
	}
	switch inf.state {
	case stateRunning:
		inf.mu.Unlock()
		return fmt.Errorf("informer %q: %w", inf.name, ErrAlreadyStarted)
	case stateStopped:
		inf.mu.Unlock()
		return fmt.Errorf("informer %q has stopped and cannot run again; build a new one with NewSharedInformer "+
			"(in a Group: Group.Stop, then InformerFor): %w", inf.name, ErrClosed)
	}
	started := time.Now() // for Metrics.Synced
	inf.state = stateRunning
	inf.runCtx = ctx
	for _, l := range inf.listeners {
		inf.startListenerLocked(l)
	}
	if inf.snap != nil { // until restore finds nothing to restore, or markSynced
		inf.warm = true
		inf.listeners, inf.waiting = nil, inf.listeners
	}
	inf.mu.Unlock()
	var resume resumeOptions
	var applySnapshot func() // decodes and applies the snapshot, beside the reflector
	if inf.snap != nil {
		resume, applySnapshot = inf.restore(ctx)
	}

	inf.mu.Lock()
	inf.reflOpts.ResyncPeriod = inf.reflectorResyncLocked()
	inf.reflOpts.resume = resume
	refl, err := NewReflector(inf.reflOpts)
	if err != nil {
		inf.mu.Unlock()
		inf.stop()
		inf.handlerWG.Wait() // the handler goroutines started above
		return fmt.Errorf("informer %q: %w", inf.name, err)
	}
	inf.refl = refl
	inf.mu.Unlock()

	var wg sync.WaitGroup
	if applySnapshot != nil {
		wg.Go(applySnapshot)
	}
	wg.Go(func() { _ = refl.Run(ctx) })
	wg.Go(func() { inf.processLoop(ctx) })
	if inf.mutations != nil {
		wg.Go(func() { inf.mutations.run(ctx) })
	}
	wg.Go(func() {
		if resume.version != "" {
			inf.awaitCaughtUp(ctx, started)
			return
		}
		select {
		case <-inf.fifo.Synced():
			inf.markSynced(started)
		case <-ctx.Done():
		}
	})
	if inf.stuckAt > 0 {
		wg.Go(func() { inf.watchHandlers(ctx) })
	}
	if inf.snap != nil && inf.snap.cfg.interval > 0 {
		wg.Go(func() { inf.snapshotLoop(ctx) })
	}
	<-ctx.Done()
	inf.stop()
	wg.Wait()
	if inf.snap != nil {
		inf.writeFinalSnapshot(ctx) // nothing writes to the cache any more
	}
	inf.handlerWG.Wait()
	return nil
}

// stop marks the informer stopped and closes its listeners, its version
// waits and its FIFO: from here on no handler goroutine starts and none
// takes another notification, so handlerWG.Wait waits only for the calls in
// progress. Run calls it once, on every path that returns after starting
// the handler goroutines; Run then waits for them.
func (inf *SharedInformer[K, T]) stop() {
	inf.mu.Lock()
	inf.state = stateStopped
	for _, l := range inf.listeners {
		l.close()
	}
	for _, l := range inf.waiting {
		l.close()
	}
	inf.mu.Unlock()
	inf.versions.stop() // WaitForVersion callers get ErrClosed
	inf.fifo.Close()
}

// HasSynced reports whether the cache holds the source's first complete
// list. It says nothing of handlers: see [Registration.HasSynced].
func (inf *SharedInformer[K, T]) HasSynced() bool {
	select {
	case <-inf.syncedCh:
		return true
	default:
		return false
	}
}

// Synced returns a channel closed once [SharedInformer.HasSynced] is true.
func (inf *SharedInformer[K, T]) Synced() <-chan struct{} { return inf.syncedCh }

// isZero reports whether inf is a zero SharedInformer, for WaitForSync.
func (inf *SharedInformer[K, T]) isZero() bool { return inf.indexer == nil }

// LastSyncVersion returns the version of the last list or event the
// informer received, "" before it has run. The cache may not have applied it
// yet: to wait until it has, use [SharedInformer.WaitForVersion].
func (inf *SharedInformer[K, T]) LastSyncVersion() string {
	inf.mu.Lock()
	refl := inf.refl
	inf.mu.Unlock()
	if refl == nil {
		return ""
	}
	return refl.LastSyncVersion()
}

// QueueDepth returns the number of keys waiting in the informer's queue.
func (inf *SharedInformer[K, T]) QueueDepth() int {
	if inf.fifo == nil {
		return 0
	}
	return inf.fifo.Len()
}

// Lister returns the read-only view of the informer's cache. It is valid
// before Run (empty) and after (current). A zero SharedInformer's Lister is
// empty.
func (inf *SharedInformer[K, T]) Lister() Lister[K, T] {
	if inf.indexer == nil {
		return emptyLister[K, T]()
	}
	return inf.indexer
}

// AddIndexes adds indexes to the cache, indexing what it already holds. See
// [Indexer.AddIndexes].
//
// Possible errors: those of [Indexer.AddIndexes]; [ErrInvalidOptions] on a
// zero SharedInformer.
func (inf *SharedInformer[K, T]) AddIndexes(indexes ...Index[T]) error {
	if inf.indexer == nil {
		return errZero()
	}
	return inf.indexer.AddIndexes(indexes...)
}

// markSynced is the one way the informer becomes synced: it closes
// syncedCh, queues the sync marker to every attached handler (behind the
// initial adds each was given) and attaches every waiting one, giving it
// the cache's contents as initial adds followed by the marker, all under
// inf.mu: no batch commits in between, so each waiting handler then
// receives every later change, with no gap and no duplicate. It reports the
// time since Run started (at started) to Metrics and reports whether it
// synced the informer (false if it already was).
func (inf *SharedInformer[K, T]) markSynced(started time.Time) bool {
	inf.mu.Lock()
	if inf.HasSynced() {
		inf.mu.Unlock()
		return false
	}
	close(inf.syncedCh) // only here, under mu
	for _, l := range inf.listeners {
		l.enqueue(notification[K, T]{kind: noteSynced})
	}
	inf.attachWaitingLocked(true)
	inf.mu.Unlock()
	took := time.Since(started)
	inf.metrics.Synced(inf.name, took)
	inf.log.V(2).Info("cache synced", "objects", inf.indexer.Len(), "after", took)
	return true
}

// Syncer is anything that reports its initial sync through a channel:
// a [SharedInformer], a [Registration].
type Syncer interface {
	// Synced returns a channel closed once the initial sync is complete.
	Synced() <-chan struct{}
}

// WaitForSync blocks until every given informer or registration has synced,
// or ctx is done. It waits on channels; it does not poll.
//
// Waiting for nothing is a mistake WaitForSync reports, at once, before
// waiting for anything: no syncers at all, or one that is nil (a nil
// interface, or a typed nil such as the *Registration that a failed
// AddHandler returns), or a zero [SharedInformer] or [Registration], which
// never sync.
//
// When ctx ends first, the error wraps ctx.Err() and says why the first
// syncer still waiting has not synced: for an informer, the last list or
// watch error (wrapped too, so errors.Is finds its class) or the stage it
// is in; for a registration, the handler's backlog and current call.
//
// Possible errors: ctx.Err() (wrapped, with the cause); [ErrInvalidOptions]
// (no syncers, or a nil or zero one).
func WaitForSync(ctx context.Context, syncers ...Syncer) error {
	if len(syncers) == 0 {
		return fmt.Errorf("informer: WaitForSync: no informer or registration to wait for: %w", ErrInvalidOptions)
	}
	for i, s := range syncers {
		if isNil(s) {
			return fmt.Errorf("informer: WaitForSync: syncer %d is nil (%T): %w", i, s, ErrInvalidOptions)
		}
		if z, ok := s.(interface{ isZero() bool }); ok && z.isZero() {
			return fmt.Errorf("informer: WaitForSync: syncer %d is a zero %T, which never syncs: %w", i, s, ErrInvalidOptions)
		}
	}
	for _, s := range syncers {
		select {
		case <-s.Synced():
		case <-ctx.Done():
			if c, ok := s.(interface{ notSyncedCause() error }); ok {
				return fmt.Errorf("%w: %w", ctx.Err(), c.notSyncedCause())
			}
			return ctx.Err()
		}
	}
	return nil
}
