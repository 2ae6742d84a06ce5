package informer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"

	"github.com/ginformer/ginformer/internal/lograte"
)

// ReflectorStore is what a [Reflector] writes into: normally a [DeltaFIFO].
// The reflector calls it from one goroutine at a time. A store that also
// implements [ListReceiver] (as DeltaFIFO does) receives lists page by page
// instead of through Replace.
type ReflectorStore[T any] interface {
	// Add, Update and Delete apply one watch event.
	Add(obj T) error
	Update(obj T) error
	Delete(obj T) error
	// Replace applies a complete list read at version.
	Replace(objs []T, version string) error
	// Resync is called every resync period while the reflector watches.
	Resync() error
}

// ListWatchOptions tunes how a [Reflector] lists and watches its source:
// paging, watch timeouts, backoff, streaming lists. It is embedded in
// [ReflectorOptions] and is the [Options.ListWatch] of an informer. Every
// field's zero value is a safe default; the zero ListWatchOptions gives
// client-go's behaviour.
type ListWatchOptions struct {
	// PageSize is the page size of lists. Zero: 500. Negative: no paging.
	PageSize int
	// MinWatchTimeout: each watch asks the source to end after a random time
	// in [MinWatchTimeout, 2×MinWatchTimeout], so clients spread their
	// reconnects. Zero: 5 minutes. Negative: invalid.
	MinWatchTimeout time.Duration
	// Backoff spaces attempts after failures. Zero: client-go's defaults.
	Backoff Backoff
	// MaxInternalErrorRetryDuration: a watch failing with [ErrInternal] is
	// re-established from the same version (after a backoff delay) for at
	// most this long before the reflector relists. Zero: 30 s. Negative:
	// never retried, relist at once.
	MaxInternalErrorRetryDuration time.Duration
	// DisableStreamingList turns off streaming lists
	// ([WatchOptions.SendInitialEvents]). Zero (false): a reflector tries one
	// first and falls back to a plain list for good once the source answers
	// errors.ErrUnsupported.
	DisableStreamingList bool
	// StreamingListTimeout: a streaming list whose initial events stall for
	// this long without the end marker is abandoned for a plain list (client-go
	// waits forever, kubernetes#135895). Zero: 10 s. Negative: invalid.
	StreamingListTimeout time.Duration
}

// validate checks o.
//
// Possible errors: [ErrInvalidOptions].
func (o ListWatchOptions) validate() error {
	if o.MinWatchTimeout < 0 || o.StreamingListTimeout < 0 {
		return fmt.Errorf("negative MinWatchTimeout or StreamingListTimeout: %w", ErrInvalidOptions)
	}
	return o.Backoff.validate()
}

// ReflectorOptions configures a [Reflector]. Source and Store are required;
// every other field's zero value is a safe default.
type ReflectorOptions[T any] struct {
	// Source is listed and watched. Required.
	Source Source[T]
	// Store receives the lists and events. Required.
	Store ReflectorStore[T]
	// Name identifies the reflector in logs. Zero: "reflector".
	Name string
	// Logger receives the reflector's logs. Errors a person must act on (a
	// list or watch failing for a reason other than an expired version or
	// a passing outage, an outage that lasts, events the store refuses) are
	// logged at error level, rate-limited; routine ones (version expired,
	// a disconnect that recovers) at V(1) and above. Zero: [slog.Default]
	// through [logr.FromSlogHandler]; pass logr.FromSlogHandler(slog.DiscardHandler) to silence it ([logr.Discard] returns the zero Logger, which means this default).
	Logger logr.Logger
	// ResyncPeriod: while watching, Store.Resync is called this often. Zero:
	// never. Resync never contacts the source.
	ResyncPeriod time.Duration
	// ShouldResync, if set, is asked before each periodic resync; false skips
	// that one. It is user code and is called without locks held.
	ShouldResync func() bool
	// ListWatchOptions tunes paging, watch timeouts, backoff and streaming
	// lists; its zero value is client-go's behaviour.
	ListWatchOptions
	// ErrorHandler is told of every error the reflector survives, after it
	// is counted and logged: a failed list or watch (before backing off,
	// including the transient and internal failures it retries from the
	// same version), a store write that failed (the event is then
	// skipped), and an error the source survived and reported with
	// [ReportSourceError]. It runs on the reflector's goroutine, or, for
	// the source's reports, on the source's: it must be safe for
	// concurrent use. Zero: errors are only logged and counted.
	ErrorHandler ErrorHandler
	// Metrics receives the reflector's counts (events, relists, watch
	// restarts, errors by class, the source's reports included), labelled
	// with Name. Zero: [NoopMetrics].
	Metrics Metrics

	// resume is set by an informer restored from a snapshot: see
	// reflector_resume.go.
	resume resumeOptions
}

// Reflector keeps a [ReflectorStore] in step with a [Source]: it lists, then
// watches from the listed version, re-watches when a watch ends normally,
// relists when the version has expired, and backs off on failure. It is the
// typed counterpart of client-go's cache.Reflector.
//
// Version choice: the first list asks for [ReadAny]; later lists ask for
// [ReadNotOlderThan] the last version seen; after [ErrExpired] or
// [ErrVersionTooLarge] the next list (or streaming list) asks for
// [ReadLatest], once, then returns to normal.
//
// A list page, or the end marker of a streaming list, without a version is
// refused with an error wrapping [ErrInvalidVersion] (reported, retried after
// a backoff): the reflector never applies it and never watches from "".
//
// The contexts it gives the source's List and Watch carry the reflector, so
// that the source can report the errors it survives with
// [ReportSourceError].
type Reflector[T any] struct {
	opts    ReflectorOptions[T]
	log     logr.Logger
	onError ErrorHandler // nil: none
	limiter lograte.Limiter
	// failures counts the list and watch failures since the last list or
	// watch event that succeeded: an outage that lasts is logged louder.
	failures  atomic.Int32
	pageSize  int
	minWatch  time.Duration
	maxRetry  time.Duration
	streamTTL time.Duration

	// mu guards the fields below it.
	mu                 sync.Mutex
	lastVersion        string
	versionUnavailable bool   // last request failed with ErrExpired or ErrVersionTooLarge
	resuming           bool   // watch from lastVersion before any list: see reflector_resume.go
	caughtUp           func() // resumeOptions.caughtUp, until called
	streamUnsupported  bool   // the source answered ErrUnsupported to a streaming list

	lists sync.WaitGroup // list goroutines still running; Run waits for them

	// watchEvents counts the watch events received but Error ones
	// (bookmarks included):
	// Run tells a watch that made progress from one that expired at once.
	// Owned by Run's goroutine.
	watchEvents uint64
}

// NewReflector validates opts and returns a reflector ready to [Reflector.Run].
//
// Possible errors: [ErrInvalidOptions].
func NewReflector[T any](opts ReflectorOptions[T]) (*Reflector[T], error) {
	if opts.Source == nil {
		return nil, fmt.Errorf("reflector: Source is required: %w", ErrInvalidOptions)
	}
	if opts.Store == nil {
		return nil, fmt.Errorf("reflector: Store is required: %w", ErrInvalidOptions)
	}
	if opts.ResyncPeriod < 0 {
		return nil, fmt.Errorf("reflector: negative ResyncPeriod: %w", ErrInvalidOptions)
	}
	if err := opts.ListWatchOptions.validate(); err != nil {
		return nil, fmt.Errorf("reflector: %w", err)
	}
	if opts.Name == "" {
		opts.Name = "reflector"
	}
	if opts.Metrics == nil {
		opts.Metrics = NoopMetrics{}
	}
	opts.Logger = lograte.OrDefault(opts.Logger)
	r := &Reflector[T]{
		opts:      opts,
		log:       opts.Logger.WithValues("reflector", opts.Name),
		pageSize:  opts.PageSize,
		minWatch:  opts.MinWatchTimeout,
		maxRetry:  opts.MaxInternalErrorRetryDuration,
		streamTTL: opts.StreamingListTimeout,
	}
	switch {
	case r.pageSize == 0:
		r.pageSize = 500
	case r.pageSize < 0:
		r.pageSize = 0
	}
	if r.minWatch == 0 {
		r.minWatch = 5 * time.Minute
	}
	if r.maxRetry == 0 {
		r.maxRetry = 30 * time.Second
	}
	if r.streamTTL == 0 {
		r.streamTTL = 10 * time.Second
	}
	r.onError = opts.ErrorHandler
	if opts.resume.version != "" {
		r.lastVersion, r.resuming, r.caughtUp = opts.resume.version, true, opts.resume.caughtUp
	}
	return r, nil
}

// Name returns the reflector's name.
func (r *Reflector[T]) Name() string { return r.opts.Name }

// LastSyncVersion returns the version of the last list applied to the store
// or of the last watch event received (set as the event is handed to the
// store), "" before the first list. Safe for concurrent use.
func (r *Reflector[T]) LastSyncVersion() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastVersion
}

// setVersion records v as the last version received; "" is ignored.
func (r *Reflector[T]) setVersion(v string) {
	if v == "" {
		return
	}
	r.mu.Lock()
	r.lastVersion = v
	r.mu.Unlock()
}

func (r *Reflector[T]) setVersionUnavailable(u bool) {
	r.mu.Lock()
	r.versionUnavailable = u
	r.mu.Unlock()
}

// listOptions returns the version choice for the next list.
func (r *Reflector[T]) listOptions() ListOptions {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.versionUnavailable:
		return ListOptions{Mode: ReadLatest}
	case r.lastVersion == "":
		return ListOptions{Mode: ReadAny}
	default:
		return ListOptions{Mode: ReadNotOlderThan, Version: r.lastVersion}
	}
}

// Run lists and watches until ctx is done, backing off between failed
// attempts (see [Backoff]: a relist that is no failure starts at once). It
// returns nil once ctx is done and every goroutine it started has exited;
// with a ctx already done it starts nothing and returns ctx's error
// (wrapped), as [SharedInformer.Run] does, and the reflector may run later. It also stops, and returns nil, once the store refuses a
// write with [ErrClosed] (its owner is stopping it, as an informer does
// when its Run context ends): stopping is no failure, so that refusal is
// neither logged as an error nor handed to the ErrorHandler or to Metrics.
// A panic in the source's List is re-raised on Run's goroutine.
func (r *Reflector[T]) Run(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: run with a context already done: %w", r.opts.Name, err)
	}
	defer r.lists.Wait()
	ctx = withSourceReporter(ctx, r) // for ReportSourceError
	r.log.V(3).Info("starting reflector")
	defer r.log.V(3).Info("stopped reflector")
	backoff := newBackoffTimer(r.opts.Backoff)
	quick := false // the last relist started at once after an expired version
	for {
		events := r.watchEvents
		err := r.listAndWatch(ctx, backoff)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, errStoreClosed) {
			r.log.V(2).Info("the store is closed, stopping", "reason", err)
			return nil
		}
		switch {
		case errors.Is(err, ErrRelistRequested):
			r.log.V(2).Info("the source asked for a relist", "reason", err)
			continue
		case errors.Is(err, errResumeAbandoned):
			r.log.V(1).Info("not resuming from the restored version, relisting", "reason", err)
			continue
		case errors.Is(err, ErrExpired) && (!quick || r.watchEvents != events):
			// The source answered: relist at once, unless the relist
			// before this one expired too without a single event.
			quick = true
			r.fail(ctx, ErrorClassExpired, err)
			continue
		}
		quick = false
		if err != nil {
			r.sourceFailed(ctx, err)
		}
		if !r.pause(ctx, backoff, err) {
			return nil
		}
	}
}

// ListAndWatch runs one cycle: a list (or streaming list), then watches
// until a relist is needed or ctx is done. It returns nil when ctx is done,
// the error that ended the cycle otherwise. [Reflector.Run] calls it in a
// loop; call it directly only to drive a reflector by hand. A list goroutine
// may outlive a cancelled ListAndWatch briefly; [Reflector.Run] waits for it.
func (r *Reflector[T]) ListAndWatch(ctx context.Context) error {
	return r.listAndWatch(withSourceReporter(ctx, r), newBackoffTimer(r.opts.Backoff))
}

func (r *Reflector[T]) listAndWatch(ctx context.Context, backoff *backoffTimer) error {
	if r.isResuming() {
		return r.watch(ctx, nil, backoff)
	}
	if ok, _ := r.awaitRestore(ctx); !ok {
		return nil // the store is not ours to write before a restore ends
	}
	var w Watcher[T]
	if r.useStreamingList() {
		var err error
		w, err = r.streamingList(ctx, backoff)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			if errors.Is(err, errors.ErrUnsupported) {
				r.mu.Lock()
				r.streamUnsupported = true
				r.mu.Unlock()
			}
			if errors.Is(err, ErrExpired) || errors.Is(err, ErrVersionTooLarge) || errors.Is(err, ErrInvalidVersion) {
				return err // a marker without a version too: reported, retried after a backoff
			}
			if errors.Is(err, errStoreClosed) {
				return err
			}
			r.log.V(4).Info("streaming list failed, falling back to a plain list", "err", err)
		}
	}
	if w == nil {
		if err := r.list(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
	r.log.V(2).Info("caches populated", "version", r.LastSyncVersion())
	r.markCaughtUp() // a relist after a restore catches up too
	return r.watch(ctx, w, backoff)
}

func (r *Reflector[T]) useStreamingList() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.opts.DisableStreamingList && !r.streamUnsupported
}

// watchTimeout returns a random timeout in [minWatch, 2×minWatch].
func (r *Reflector[T]) watchTimeout() time.Duration {
	return r.minWatch + time.Duration(rand.Int64N(int64(r.minWatch)+1))
}

// errStoreClosed marks a store write refused with [ErrClosed]: the store's
// owner is stopping it. Run stops without reporting it.
var errStoreClosed = errors.New("store closed")

// storeError returns err, the error of a store write, marked with
// errStoreClosed if it wraps [ErrClosed].
func storeError(err error) error {
	if errors.Is(err, ErrClosed) {
		return fmt.Errorf("%w: %w", errStoreClosed, err)
	}
	return err
}

// outageLoud is the number of consecutive failures after which a transient
// or internal error (normally routine) is logged at error level.
const outageLoud = 5

// fail counts err under class, logs it at a level that follows the class
// and the current run of failures, and hands it to the ErrorHandler.
func (r *Reflector[T]) fail(ctx context.Context, class ErrorClass, err error) {
	r.opts.Metrics.Error(r.opts.Name, class)
	var short *VeryShortWatchError
	failures := int(r.failures.Load())
	switch {
	case errors.Is(err, ErrExpired), errors.Is(err, ErrVersionTooLarge):
		r.log.V(2).Info("version unavailable, relisting", "err", err)
	case (errors.Is(err, ErrTransient) || errors.Is(err, ErrInternal) || errors.As(err, &short)) && failures < outageLoud:
		r.log.V(1).Info("source unavailable, will retry", "err", err, "failures", failures)
	default:
		r.limiter.Error(r.log, string(class), err, "list and watch failing", "class", class, "failures", failures)
	}
	if r.onError != nil {
		r.onError(ctx, err)
	}
}

// sourceFailed reports a failed list or watch, whether the reflector retries
// from the same version or relists: one more failure in a row.
func (r *Reflector[T]) sourceFailed(ctx context.Context, err error) {
	r.failures.Add(1)
	r.fail(ctx, errorClass(err), err)
}

// succeeded ends a run of failures: the source answered.
func (r *Reflector[T]) succeeded() { r.failures.Store(0) }

// errorClass maps a list or watch error onto its metrics class.
func errorClass(err error) ErrorClass {
	switch {
	case errors.Is(err, ErrExpired), errors.Is(err, ErrVersionTooLarge):
		return ErrorClassExpired
	case errors.Is(err, ErrTransient):
		return ErrorClassTransient
	case errors.Is(err, ErrInternal):
		return ErrorClassInternal
	case errors.Is(err, ErrKeyFunc), errors.Is(err, ErrIndexFunc), errors.Is(err, ErrTransform):
		return ErrorClassStore
	case errors.Is(err, ErrDecode):
		return ErrorClassDecode
	}
	return ErrorClassListWatch
}

// VeryShortWatchError reports a watch that ended normally in under a second
// without delivering a single event: usually a server shutting down, or a
// source or proxy that closes streams at once. The reflector backs off and
// watches again from the last version; after three in a row it relists
// (client-go relists after the first).
type VeryShortWatchError struct {
	// Name is the reflector's name.
	Name string
}

// Error describes the short watch.
func (e *VeryShortWatchError) Error() string {
	return fmt.Sprintf("%s: very short watch: unexpected watch close - watch lasted less than a second and no items received", e.Name)
}
