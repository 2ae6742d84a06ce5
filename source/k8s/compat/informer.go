package compat

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
)

// Key is the key of the compat informer's cache: namespace and name.
type Key = informer.NamespacedKey

// engine is the ginformer informer behind an [Informer].
type engine = informer.SharedInformer[Key, k8s.Object]

// Options configures an [Informer]. Only ListerWatcher is required.
type Options struct {
	// ListerWatcher lists and watches the resource. Required.
	ListerWatcher cache.ListerWatcher
	// ExampleObject is an object of the resource's type, used for names in
	// logs. Zero: none.
	ExampleObject runtime.Object
	// ResyncPeriod is the default resync period of handlers, as
	// defaultEventHandlerResyncPeriod of client-go. Zero: no resync.
	ResyncPeriod time.Duration
	// Indexers are the cache's initial indexes. Zero: none.
	Indexers cache.Indexers
	// Name identifies the informer in logs. Zero: the example object's
	// type, or "compat".
	Name string
	// Logger receives the engine's logs. Zero: klog's background logger.
	Logger *logr.Logger
	// DropManagedFields drops metadata.managedFields (server-side apply's
	// record of which manager set which field) from every object before it
	// is cached and handed to handlers. They are often half of an object's
	// bytes, so dropping them is the way to save memory in compat (its
	// objects are decoded by the ListerWatcher, client-go's decoders, which
	// share nothing between objects; the source's own decoding, which shares
	// repeated strings, needs [k8s.New] and the engine's API). Controllers
	// that read managedFields (server-side apply ownership checks, diffing
	// tools) must not set it. It is part of a snapshot's identity. Zero:
	// kept, as client-go keeps them.
	DropManagedFields bool
	// ListWatch tunes the engine's list and watch (page size, timeouts,
	// backoff, streaming lists). Zero: client-go's behaviour (see
	// [informer.ListWatchOptions] for each field's default).
	ListWatch informer.ListWatchOptions
	// Snapshot keeps the cache on disk between runs (see
	// [informer.SnapshotOptions] and docs/operations.md, "Warm restarts"):
	// written periodically and when the informer stops, loaded by the next
	// informer before its first request. Zero: off (no Store).
	//
	// It needs a Store, one per informer, and an Identity: a ListerWatcher
	// cannot say what it lists, so the source's identity names only its Go
	// type ([k8s.Source.SnapshotIdentity]). Identity must name the cluster
	// (its kube-system namespace's uid, say), the resource, the namespace
	// and the selectors, and change whenever a transform
	// ([Informer.SetTransform]) changes what is cached: a snapshot of
	// another resource whose objects have the same keys and
	// resourceVersions would otherwise be taken for this one's. Objects
	// are kept by their kind in client-go's scheme, or as unstructured or
	// partial metadata ([k8s.Source.SnapshotCodec]); an object of another
	// type fails each snapshot write, which is reported (log, metrics) and
	// skipped, and not passed to the watch error handler.
	//
	// A compat informer cannot resume its watch from the snapshot's version
	// (the requests of a ListerWatcher cannot be addressed to learn when a
	// watch has caught up), so after loading the snapshot it lists again:
	// the ListerWatcher still lists and decodes every object, and the
	// informer drops the objects whose resourceVersion did not change
	// before they are queued, sparing the cache their updates. What handlers
	// see is a cold start's: nothing until the list is applied, then the
	// listed state as initial adds (an object deleted while the program was
	// down is never handed on). Readers are not held back: before
	// HasSynced, GetStore and GetIndexer serve the restored, possibly stale
	// state, where client-go's are empty. Snapshot objects are already
	// transformed: the transform is not applied to them again.
	//
	// [NewSharedIndexInformer], whose signature is client-go's and
	// controller-runtime's, offers no snapshot: it has nothing to name the
	// informer by (controller-runtime calls it with a ListerWatcher per
	// type and namespace, and with the same example object for each).
	Snapshot informer.SnapshotOptions[k8s.Object]
}

// Informer implements client-go's cache.SharedIndexInformer on ginformer's
// engine ([informer.SharedInformer]): handlers, indexers, transform and
// watch error handler keep client-go's signatures, and the list, watch,
// queue, cache and delivery are ginformer's. All methods are safe for
// concurrent use. Its zero value is not usable: use [New] or
// [NewSharedIndexInformer]. See the package documentation for the places
// where the two contracts differ.
type Informer struct {
	name  string
	lw    shardLW // what the source lists and watches through (SetShardSelector)
	eng   *engine
	store *store

	// mu guards the fields below.
	mu          sync.Mutex
	started     bool
	stopped     bool
	regs        map[*registration]struct{} // handlers not removed, for a Run that never starts the engine
	transform   cache.TransformFunc
	watchErr    cache.WatchErrorHandlerWithContext
	indexers    cache.Indexers
	defaultSync time.Duration
}

var _ cache.SharedIndexInformer = (*Informer)(nil)

// NewSharedIndexInformer has the signature of client-go's
// cache.NewSharedIndexInformer and of controller-runtime's
// cache.Options.NewInformer, so either can be swapped for it:
//
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
//		Cache: crcache.Options{NewInformer: compat.NewSharedIndexInformer},
//	})
//
// It panics where client-go's does (an indexer that cannot be added), since
// the signature has no error; use [New] to get the error instead.
func NewSharedIndexInformer(lw cache.ListerWatcher, exampleObject runtime.Object, defaultEventHandlerResyncPeriod time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
	inf, err := New(Options{ListerWatcher: lw, ExampleObject: exampleObject, ResyncPeriod: defaultEventHandlerResyncPeriod, Indexers: indexers})
	if err != nil {
		panic(err)
	}
	return inf
}

// New returns an informer ready to run.
//
// Possible errors: [informer.ErrInvalidOptions], [informer.ErrIndexExists].
func New(opts Options) (*Informer, error) {
	// client-go's behaviour unless told otherwise: managedFields kept (the
	// source drops them by default).
	if opts.ListerWatcher == nil {
		return nil, fmt.Errorf("compat: nil ListerWatcher: %w", informer.ErrInvalidOptions)
	}
	lw := newShardLW(opts.ListerWatcher)
	src, err := k8s.NewFromListerWatcher(lw, k8s.Options{KeepManagedFields: !opts.DropManagedFields})
	if err != nil {
		return nil, fmt.Errorf("compat: %w", err)
	}
	if opts.ResyncPeriod < 0 {
		return nil, fmt.Errorf("compat: negative ResyncPeriod: %w", informer.ErrInvalidOptions)
	}
	name := opts.Name
	if name == "" {
		name = "compat"
		if opts.ExampleObject != nil {
			name = fmt.Sprintf("compat %T", opts.ExampleObject)
		}
	}
	log := klog.Background()
	if opts.Logger != nil {
		log = *opts.Logger
	}
	inf := &Informer{name: name, lw: lw, indexers: cache.Indexers{}, defaultSync: opts.ResyncPeriod, regs: map[*registration]struct{}{}}
	inf.eng, err = informer.NewSharedInformer(informer.Options[Key, k8s.Object]{
		Source:       src,
		KeyFunc:      k8s.Key[k8s.Object],
		ResyncPeriod: opts.ResyncPeriod,
		Transform:    inf.applyTransform,
		Name:         name,
		Logger:       log,
		ErrorHandler: inf.onError,
		ListWatch:    opts.ListWatch,
		Snapshot:     opts.Snapshot,
	})
	if err != nil {
		return nil, fmt.Errorf("compat: %w", err)
	}
	inf.store = &store{inf: inf}
	if err := inf.AddIndexers(opts.Indexers); err != nil {
		return nil, err
	}
	return inf, nil
}

// Run runs the informer until stopCh is closed. See [Informer.RunWithContext].
func (inf *Informer) Run(stopCh <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stopCh:
			cancel()
		case <-ctx.Done():
		}
	}()
	inf.RunWithContext(ctx)
}

// RunWithContext runs the informer until ctx is done, then waits for every
// goroutine it started, handlers included. As with client-go, an informer
// runs once: a second call, or a call after it stopped, returns at once; and
// one whose ctx is done before it starts has stopped all the same
// (IsStopped, its handlers shut down), though the engine never ran.
func (inf *Informer) RunWithContext(ctx context.Context) {
	inf.mu.Lock()
	if inf.started || inf.stopped {
		inf.mu.Unlock()
		klog.FromContext(ctx).Info("Warning: the compat informer has already been started", "informer", inf.name)
		return
	}
	inf.started = true
	inf.mu.Unlock()
	err := inf.eng.Run(ctx)
	inf.mu.Lock()
	inf.stopped = true
	regs := inf.regs
	inf.regs = nil
	inf.mu.Unlock()
	if err != nil {
		// ctx was done before the engine started: it started nothing and
		// stays able to run, so its handlers have no goroutine to end. This
		// informer never runs it again: shut them down here. (A handler
		// added meanwhile sees stopped and removes itself.)
		for r := range regs {
			r.removed.Store(true)
			r.reg.Remove()
		}
	}
}

// HasSynced reports whether the cache holds a first complete list.
func (inf *Informer) HasSynced() bool { return inf.eng.HasSynced() }

// HasSyncedChecker returns a DoneChecker done once [Informer.HasSynced].
func (inf *Informer) HasSyncedChecker() cache.DoneChecker {
	return doneChecker{name: inf.name, ch: inf.eng.Synced()}
}

// LastSyncResourceVersion returns the resourceVersion of the last list or
// watch event received, "" before the first list.
func (inf *Informer) LastSyncResourceVersion() string { return inf.eng.LastSyncVersion() }

// IsStopped reports whether the informer has run and stopped.
func (inf *Informer) IsStopped() bool {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	return inf.stopped
}

// GetStore returns the cache as a read-only cache.Store (see GetIndexer).
func (inf *Informer) GetStore() cache.Store { return inf.store }

// GetIndexer returns the cache as a cache.Indexer. Reads see the engine's
// cache; writes (Add, Update, Delete, Replace, Resync) are refused with an
// error, since the cache belongs to the informer.
func (inf *Informer) GetIndexer() cache.Indexer { return inf.store }

// GetController returns a stand-in controller that reports the informer's
// sync state; its Run methods do nothing (client-go's is deprecated too).
func (inf *Informer) GetController() cache.Controller { return controller{inf} }

// AddIndexers adds indexes to the cache, before or after Run, indexing what
// it already holds. Each cache.IndexFunc is wrapped into an [informer.Index];
// an error (or panic) from one refuses the object it was called for, which
// the informer reports and skips, rather than panicking under a lock as
// client-go does.
//
// Possible errors: [informer.ErrIndexExists] for a name already used.
func (inf *Informer) AddIndexers(indexers cache.Indexers) error {
	if len(indexers) == 0 {
		return nil
	}
	inf.mu.Lock()
	idx := make([]informer.Index[k8s.Object], 0, len(indexers))
	for name := range indexers {
		if _, dup := inf.indexers[name]; dup {
			inf.mu.Unlock()
			return fmt.Errorf("compat: indexer conflict: %q: %w", name, informer.ErrIndexExists)
		}
	}
	for name, fn := range indexers {
		inf.indexers[name] = fn // reserved; released below on failure
		idx = append(idx, informer.Index[k8s.Object]{Name: name, Func: func(dst []string, obj k8s.Object) ([]string, error) {
			vals, err := fn(obj)
			return append(dst, vals...), err
		}})
	}
	inf.mu.Unlock()
	// The index functions run in AddIndexes: user code, so no lock is held.
	if err := inf.eng.AddIndexes(idx...); err != nil {
		inf.mu.Lock()
		for name := range indexers {
			delete(inf.indexers, name)
		}
		inf.mu.Unlock()
		return fmt.Errorf("compat: %w", err)
	}
	return nil
}

// SetTransform sets the function applied to every object before it is
// cached and handed to handlers. It must be called before Run.
//
// Possible errors: [informer.ErrAlreadyStarted].
func (inf *Informer) SetTransform(fn cache.TransformFunc) error {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	if inf.started {
		return fmt.Errorf("compat: set transform: %w", informer.ErrAlreadyStarted)
	}
	inf.transform = fn
	return nil
}

// SetWatchErrorHandler sets the function told of every failed list or
// watch; the *cache.Reflector argument is always nil (there is none). It
// must be called before Run.
//
// Possible errors: [informer.ErrAlreadyStarted].
func (inf *Informer) SetWatchErrorHandler(fn cache.WatchErrorHandler) error {
	return inf.SetWatchErrorHandlerWithContext(func(_ context.Context, r *cache.Reflector, err error) { fn(r, err) })
}

// SetWatchErrorHandlerWithContext is [Informer.SetWatchErrorHandler] with a
// context (context.Background()).
//
// Possible errors: [informer.ErrAlreadyStarted].
func (inf *Informer) SetWatchErrorHandlerWithContext(fn cache.WatchErrorHandlerWithContext) error {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	if inf.started {
		return fmt.Errorf("compat: set watch error handler: %w", informer.ErrAlreadyStarted)
	}
	inf.watchErr = fn
	return nil
}

// applyTransform is the engine's Transform: the client-go transform, if set.
func (inf *Informer) applyTransform(obj k8s.Object) (k8s.Object, error) {
	inf.mu.Lock()
	fn := inf.transform
	inf.mu.Unlock()
	if fn == nil {
		return obj, nil
	}
	out, err := fn(obj)
	if err != nil {
		return nil, err
	}
	o, ok := out.(k8s.Object)
	if !ok {
		return nil, fmt.Errorf("compat: transform returned %T, which has no object metadata", out)
	}
	return o, nil
}

// onError is the engine's ErrorHandler: list and watch failures go to the
// watch error handler, if set (the engine has already logged them).
func (inf *Informer) onError(ctx context.Context, err error) {
	for _, own := range []error{informer.ErrHandlerPanic, informer.ErrTransform, informer.ErrKeyFunc, informer.ErrIndexFunc, informer.ErrSnapshot} {
		if errors.Is(err, own) {
			return
		}
	}
	inf.mu.Lock()
	fn := inf.watchErr
	inf.mu.Unlock()
	if fn != nil {
		fn(ctx, nil, err)
	}
}

// doneChecker is a cache.DoneChecker over a channel.
type doneChecker struct {
	name string
	ch   <-chan struct{}
}

func (d doneChecker) Name() string          { return d.name }
func (d doneChecker) Done() <-chan struct{} { return d.ch }

// controller is the stand-in of [Informer.GetController].
type controller struct{ inf *Informer }

func (c controller) RunWithContext(context.Context)      {}
func (c controller) Run(<-chan struct{})                 {}
func (c controller) HasSynced() bool                     { return c.inf.HasSynced() }
func (c controller) HasSyncedChecker() cache.DoneChecker { return c.inf.HasSyncedChecker() }
func (c controller) LastSyncResourceVersion() string     { return c.inf.LastSyncResourceVersion() }
