package workqueue

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Every error the package returns wraps one of these with
// %w, so callers test with [errors.Is], never by string.
var (
	// ErrInvalidOptions is wrapped by [New] and [NewController] when their
	// options fail validation.
	ErrInvalidOptions = errors.New("workqueue: invalid options")

	// ErrAlreadyStarted is returned by [Controller.Run] on a controller that
	// has already been run: each runs once.
	ErrAlreadyStarted = errors.New("workqueue: already started")

	// ErrReconcilePanic wraps the value of a panic recovered from a
	// reconcile function. The controller treats it as a failed reconcile:
	// the key is retried with backoff and the worker goes on.
	ErrReconcilePanic = errors.New("workqueue: reconcile panicked")
)

// RequeueAfterError, returned (wrapped or not) by a reconcile function, asks
// the [Controller] to reconcile the key again after After, counted as a
// success: the key's failures are forgotten, nothing is logged. Build one
// with [RequeueAfter].
type RequeueAfterError struct {
	// After is the delay before the key is queued again; zero or negative
	// queues it at once.
	After time.Duration
}

// Error returns "requeue after <After>".
func (e *RequeueAfterError) Error() string {
	return fmt.Sprintf("requeue after %s", e.After)
}

// RequeueAfter returns a [*RequeueAfterError]: a reconcile function returns
// it to be called again for the same key after d (a periodic re-check, or a
// condition expected to change), without it counting as a failure.
func RequeueAfter(d time.Duration) error {
	return &RequeueAfterError{After: d}
}
