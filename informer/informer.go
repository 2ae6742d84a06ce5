package informer

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
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
	// Logger receives the informer's logs. Zero: discard.
	Logger logr.Logger
	// Metrics receives the informer's measurements. Zero: [NoopMetrics].
	Metrics Metrics
	// ErrorHandler is called with every error the informer survives: failed
	// lists and watches, objects refused by the transform, key or index
	// functions, and handler panics. It must not block. Zero: the errors are
	// only logged.
	ErrorHandler func(err error)
	// BatchSize is the most keys the processing loop takes off the queue at
	// once; each batch is applied to the cache under one lock. Zero: 1000.
	// A relist is always applied as one batch, whatever its size.
	BatchSize int
	// ListWatch tunes the list and watch: page size, watch timeouts,
	// backoff, streaming lists. Zero: client-go's behaviour (see
	// [ListWatchOptions] for each field's default).
	ListWatch ListWatchOptions
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
type SharedInformer[K comparable, T any] struct {
	name     string
	log      logr.Logger
	metrics  Metrics
	onError  func(error)
	resync   time.Duration
	batch    int
	indexer  *Indexer[K, T]
	fifo     *DeltaFIFO[K, T]
	refl     *Reflector[T]
	reflOpts ReflectorOptions[T]

	// mu orders cache commits against handler registration: the processing
	// loop holds it while it commits a batch and queues its notifications;
	// AddHandler holds it while it snapshots the cache. No user code runs
	// under it.
	mu        sync.Mutex
	listeners []*listener[K, T]
	started   bool
	runCtx    context.Context // set by Run; listeners started later use it
	syncedCh  chan struct{}
	handlerN  int
	handlerWG sync.WaitGroup // listener goroutines

	// resyncMu guards the per-handler resync schedule.
	resyncMu   sync.Mutex
	resyncDue  map[*listener[K, T]]bool
	resyncNext map[*listener[K, T]]time.Time
}

// NewSharedInformer validates opts and returns an informer ready to
// [SharedInformer.Run]. Handlers may be added before or after Run.
//
// Possible errors: [ErrInvalidOptions], [ErrIndexExists].
func NewSharedInformer[K comparable, T any](opts Options[K, T]) (*SharedInformer[K, T], error) {
	if opts.Source == nil {
		return nil, fmt.Errorf("informer: Source is required: %w", ErrInvalidOptions)
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
	if opts.BatchSize == 0 {
		opts.BatchSize = 1000
	}
	if opts.ResyncPeriod > 0 && opts.ResyncPeriod < time.Second {
		opts.ResyncPeriod = time.Second
	}
	indexer, err := NewIndexer(IndexerOptions[K, T]{KeyFunc: opts.KeyFunc, Indexes: opts.Indexes})
	if err != nil {
		return nil, fmt.Errorf("informer %q: %w", opts.Name, err)
	}
	fifo, err := NewDeltaFIFO(DeltaFIFOOptions[K, T]{KeyFunc: opts.KeyFunc, KnownObjects: indexer})
	if err != nil {
		return nil, fmt.Errorf("informer %q: %w", opts.Name, err)
	}
	inf := &SharedInformer[K, T]{
		name:       opts.Name,
		log:        opts.Logger.WithValues("informer", opts.Name),
		metrics:    opts.Metrics,
		onError:    opts.ErrorHandler,
		resync:     opts.ResyncPeriod,
		batch:      opts.BatchSize,
		indexer:    indexer,
		fifo:       fifo,
		syncedCh:   make(chan struct{}),
		resyncDue:  make(map[*listener[K, T]]bool),
		resyncNext: make(map[*listener[K, T]]time.Time),
	}
	ro := ReflectorOptions[T]{ListWatchOptions: opts.ListWatch}
	ro.Source = opts.Source
	ro.Store = &transformingStore[K, T]{fifo: fifo, transform: opts.Transform, inf: inf}
	ro.Name = opts.Name
	ro.Logger = opts.Logger
	ro.Metrics = opts.Metrics
	ro.ErrorHandler = func(ctx context.Context, err error) { inf.report(err) }
	ro.ShouldResync = inf.shouldResync
	inf.reflOpts = ro
	return inf, nil
}

// Name returns the informer's name.
func (inf *SharedInformer[K, T]) Name() string { return inf.name }

// report logs an error the informer survives and hands it to ErrorHandler.
func (inf *SharedInformer[K, T]) report(err error) {
	inf.log.Error(err, "informer error")
	if inf.onError != nil {
		inf.onError(err)
	}
}

// Run starts the informer and blocks until ctx is done and every goroutine
// it started (reflector, processing loop, handlers) has exited. Notifications
// still queued for handlers then are dropped. An informer runs once.
//
// Possible errors: [ErrAlreadyStarted].
func (inf *SharedInformer[K, T]) Run(ctx context.Context) error {
	inf.mu.Lock()
	if inf.started {
		inf.mu.Unlock()
		return fmt.Errorf("informer %q: %w", inf.name, ErrAlreadyStarted)
	}
	inf.started = true
	inf.runCtx = ctx
	inf.reflOpts.ResyncPeriod = inf.reflectorResyncLocked()
	refl, err := NewReflector(inf.reflOpts)
	if err != nil {
		inf.mu.Unlock()
		return fmt.Errorf("informer %q: %w", inf.name, err)
	}
	inf.refl = refl
	for _, l := range inf.listeners {
		inf.startListenerLocked(l)
	}
	inf.mu.Unlock()

	var wg sync.WaitGroup
	defer inf.handlerWG.Wait()
	defer wg.Wait()
	wg.Go(func() { _ = refl.Run(ctx) })
	wg.Go(func() { inf.processLoop(ctx) })
	wg.Go(func() {
		select {
		case <-inf.fifo.Synced():
			inf.markSynced()
		case <-ctx.Done():
		}
	})
	<-ctx.Done()
	inf.fifo.Close()
	return nil
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

// LastSyncVersion returns the version of the last list or event the
// informer received, "" before it has run.
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
func (inf *SharedInformer[K, T]) QueueDepth() int { return inf.fifo.Len() }

// Lister returns the read-only view of the informer's cache. It is valid
// before Run (empty) and after (current).
func (inf *SharedInformer[K, T]) Lister() Lister[K, T] { return inf.indexer }

// AddIndexes adds indexes to the cache, indexing what it already holds. See
// [Indexer.AddIndexes].
func (inf *SharedInformer[K, T]) AddIndexes(indexes ...Index[T]) error {
	return inf.indexer.AddIndexes(indexes...)
}

// markSynced records that the cache holds the first list, and queues the
// sync marker behind the initial adds of every handler registered so far.
func (inf *SharedInformer[K, T]) markSynced() {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	if inf.HasSynced() {
		return
	}
	close(inf.syncedCh) // only here, under mu
	for _, l := range inf.listeners {
		l.enqueue(notification[K, T]{kind: noteSynced})
	}
	inf.log.V(2).Info("cache synced", "objects", inf.indexer.Len())
}

// Syncer is anything that reports its initial sync through a channel:
// a [SharedInformer], a [Registration], a [Group].
type Syncer interface {
	// Synced returns a channel closed once the initial sync is complete.
	Synced() <-chan struct{}
}

// WaitForSync blocks until every given informer or registration has synced,
// or ctx is done. It waits on channels; it does not poll.
//
// Possible errors: ctx.Err().
func WaitForSync(ctx context.Context, syncers ...Syncer) error {
	for _, s := range syncers {
		select {
		case <-s.Synced():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
