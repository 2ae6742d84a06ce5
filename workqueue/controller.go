package workqueue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"

	"github.com/ginformer/ginformer/internal/lograte"
	"github.com/ginformer/ginformer/internal/safecall"
)

// ControllerOptions configures a [Controller]. The zero value is valid.
type ControllerOptions struct {
	// Queue configures the controller's queue; its Name also names the
	// controller in logs. Zero: the defaults of [Options].
	Queue Options
	// Workers is the number of keys reconciled at once, each by its own
	// goroutine. Zero: 1. Negative: invalid.
	Workers int
	// Logger receives the controller's logs: failed reconciles (errors and
	// recovered panics) at error level, at most a burst of 5 then one per
	// 10 s for each kind, the number left out noted on the next; a
	// reconcile interrupted by the end of Run's context at V(1). Zero:
	// [slog.Default] (as it is when NewController is called) through
	// [logr.FromSlogHandler], which prints errors; pass
	// logr.FromSlogHandler(slog.DiscardHandler) to silence it.
	// [logr.Discard]() returns the zero Logger, so it means this default:
	// it does not silence the controller.
	Logger logr.Logger
}

// Controller runs a reconcile function over the keys of its [Queue] with a
// fixed number of workers: what every controller needs between an informer
// and its logic. For each key handed out, it calls reconcile and then:
//
//   - on success (nil), forgets the key's failures ([Queue.Forget]);
//   - on a [*RequeueAfterError] (see [RequeueAfter]), forgets the failures
//     and queues the key again after the delay;
//   - on any other error, or a panic (wrapped in [ErrReconcilePanic]),
//     logs it and retries the key with backoff ([Queue.AddRateLimited]);
//
// then marks the key done. The queue's guarantees hold: a key is never
// reconciled by two workers at once, and a key changed while it is being
// reconciled is reconciled again afterwards.
//
// The reconcile function is user code, called without any lock held, with
// Run's context: it should return when that context is done.
//
// The zero Controller is not usable: build one with [NewController].
type Controller[K comparable] struct {
	q         *Queue[K]
	reconcile func(ctx context.Context, key K) error
	workers   int
	log       logr.Logger
	limiter   lograte.Limiter
	started   atomic.Bool
}

// NewController returns a controller that calls reconcile for the keys of
// a new queue built from opts.Queue. Feed the queue with
// [Controller.Queue] (for an informer: [Handler]), then call
// [Controller.Run].
//
// Possible errors: [ErrInvalidOptions] (reconcile is nil, Workers is
// negative, or the queue options are invalid).
func NewController[K comparable](reconcile func(ctx context.Context, key K) error, opts ControllerOptions) (*Controller[K], error) {
	if reconcile == nil {
		return nil, fmt.Errorf("workqueue: NewController: reconcile is nil: %w", ErrInvalidOptions)
	}
	if opts.Workers < 0 {
		return nil, fmt.Errorf("workqueue: NewController: negative Workers %d: %w", opts.Workers, ErrInvalidOptions)
	}
	q, err := New[K](opts.Queue)
	if err != nil {
		return nil, err
	}
	return &Controller[K]{
		q:         q,
		reconcile: reconcile,
		workers:   max(opts.Workers, 1),
		log:       lograte.OrDefault(opts.Logger).WithValues("controller", q.name),
	}, nil
}

// Queue returns the controller's queue, to add keys to.
func (c *Controller[K]) Queue() *Queue[K] { return c.q }

// Run starts the workers and blocks until they have all exited: when ctx is
// done (reconciles in progress see it through their context) or when the
// queue has been shut down ([Queue.ShutDown]) or drained ([Queue.Drain])
// by the program. Before returning it shuts the queue down, dropping what
// is left. A controller runs once; if ctx is already done when Run is
// called, Run starts nothing and returns ctx's error at once, leaving the
// queue as it was (not shut down, its keys kept) and the controller able to
// run.
//
// Start it once the caches the reconcile function reads have synced
// ([informer.WaitForSync]), or it will act on partial data.
//
// Possible errors: ctx.Err() (wrapped; ctx was done before Run started),
// [ErrAlreadyStarted] (Run was called before), and [ErrInvalidOptions] for
// a zero Controller.
func (c *Controller[K]) Run(ctx context.Context) error {
	if c.q == nil {
		return fmt.Errorf("workqueue: zero Controller: build one with NewController: %w", ErrInvalidOptions)
	}
	if err := ctx.Err(); err != nil && !c.started.Load() {
		return fmt.Errorf("workqueue: controller %q: not started, the context is done: %w", c.q.name, err)
	}
	if !c.started.CompareAndSwap(false, true) {
		return fmt.Errorf("workqueue: controller %q: %w", c.q.name, ErrAlreadyStarted)
	}
	var wg sync.WaitGroup
	for range c.workers {
		wg.Go(func() {
			for {
				key, ok := c.q.Get(ctx)
				if !ok {
					return
				}
				c.process(ctx, key)
			}
		})
	}
	wg.Wait()
	c.q.ShutDown()
	return nil
}

// process reconciles one key handed out by the queue and settles it.
func (c *Controller[K]) process(ctx context.Context, key K) {
	defer c.q.Done(key)
	_, err := safecall.Call(func(k K) (struct{}, error) { return struct{}{}, c.reconcile(ctx, k) }, key)
	if err == nil {
		c.q.Forget(key)
		return
	}
	if pe, ok := errors.AsType[*safecall.PanicError](err); ok {
		err = fmt.Errorf("%w: %w", ErrReconcilePanic, pe)
	}
	if ra, ok := errors.AsType[*RequeueAfterError](err); ok {
		c.q.Forget(key)
		c.q.AddAfter(key, ra.After)
		return
	}
	c.q.AddRateLimited(key)
	if ctx.Err() != nil {
		c.log.V(1).Info("reconcile interrupted by shutdown", "key", key, "err", err)
		return
	}
	kind := "reconcile"
	if errors.Is(err, ErrReconcilePanic) {
		kind = "panic"
	}
	c.limiter.Error(c.log, kind, err, "reconcile failed; retrying with backoff", "key", key, "retries", c.q.NumRequeues(key))
}
