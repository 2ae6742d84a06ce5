// Package workqueue is what a controller needs between an informer and its
// logic: a typed work queue of keys ([Queue]), a [Controller] that runs a
// reconcile function over it with N workers, and an informer handler that
// feeds it ([Handler]).
//
// It is the typed counterpart of client-go's util/workqueue
// (TypedRateLimitingInterface) with the same contract: a key is queued at
// most once; a key is never handed to two workers at once, and a key
// re-added while in progress is queued again when its worker is done; failed
// keys are retried after a per-key exponential backoff, reset by Forget;
// delayed adds keep the earliest time. It differs where client-go's API is
// easy to misuse:
//
//   - [Queue.Get] takes a context, so a worker waiting for work stops with
//     its context; there is no stop channel and no goroutine to shut down
//     (delays run on timers).
//   - Shutdown says what happens to the work left: [Queue.ShutDown] drops
//     it, [Queue.Drain] hands it out until none is left and waits for the
//     workers, bounded by a context.
//   - Backoff has jitter; the queue-wide token bucket is client-go's
//     (10 retries a second after a burst of 100) and can be tuned or
//     turned off in one field ([Options.RetryBudget], [RetryBudget]).
//   - Metrics are one small interface ([Metrics]) with client-go's
//     measurements, called outside the queue's lock; nothing is registered
//     globally.
//   - A key that the queue has nothing to do with costs no memory, and
//     queueing, handing out and finishing a key allocate nothing in the
//     steady state (docs/benchmarks.md compares it with client-go's).
//
// The flow of a controller:
//
//	c, err := workqueue.NewController(reconcile, workqueue.ControllerOptions{Workers: 4})
//	reg, err := inf.AddHandler(workqueue.Handler(c.Queue(), podKey), informer.HandlerOptions{})
//	go inf.Run(ctx)
//	informer.WaitForSync(ctx, inf, reg)
//	c.Run(ctx) // until ctx is done
//
// Data structures here do not log; the [Controller] logs failed reconciles
// through the logr.Logger of its options.
package workqueue
