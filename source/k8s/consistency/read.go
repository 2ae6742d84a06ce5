package consistency

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/ginformer/ginformer/informer"
)

// Get returns the object the informer's cache holds under key, once the
// cache shows this writer's writes to key: it has applied the version of
// the last create, update or patch of key made through the writer (or any
// later one), and no longer holds the objects the writer deleted there (by
// UID: an object recreated since under the same name may be returned).
// Writes whose calls returned before Get was called are waited for; writes
// still in flight may or may not be.
//
// The wait takes no lock; it ends with ctx, with the bound
// ([Options.MaxWait], or [MaxWait] for this call) or when the informer
// stops. Whatever ends it, Get returns the cache's answer (obj, ok): when
// the error is not nil, that answer may not show the writes yet. With
// [NoWait], Get answers at once and its error is nil. It may be called from
// any goroutine, handlers of the informer included (a handler that waits
// delays its own later notifications, not the cache).
//
// Possible errors:
//   - [ErrStale]: the bound was reached first (the error also wraps the
//     wait's: context.DeadlineExceeded, and the version awaited);
//   - ctx.Err() (wrapped): ctx ended first;
//   - [informer.ErrClosed]: the informer stopped or the writer was closed
//     while a delete was awaited;
//   - [informer.ErrInvalidVersion]: the informer's source refuses a
//     recorded resourceVersion (see [informer.SharedInformer.WaitForVersion]).
func (w *Writer[C, T]) Get(ctx context.Context, key informer.NamespacedKey, opts ...ReadOption) (obj T, ok bool, err error) {
	err = w.read(ctx, opts, key, false)
	obj, ok = w.inf.Lister().Get(key)
	if err != nil {
		return obj, ok, fmt.Errorf("consistency: writer %q: get %s: %w", w.opts.Name, key, err)
	}
	return obj, ok, nil
}

// List returns a copy of every object in the informer's cache (see
// [informer.Lister]'s List), once the cache shows every write this writer
// made: it has applied the highest version the writer recorded and no
// longer holds any object the writer deleted. The wait is as for
// [Writer.Get], and so are the answer returned with an error and the
// possible errors.
//
// The version waited for is that of a write, which the cache receives as a
// watch event; List never waits for the resourceVersion of an API list
// (see docs/k8s.md, "Read your writes").
func (w *Writer[C, T]) List(ctx context.Context, opts ...ReadOption) ([]T, error) {
	err := w.WaitForWrites(ctx, opts...)
	return w.inf.Lister().List(), err
}

// WaitForWrites blocks as [Writer.List] does, without listing: afterwards,
// any read of the informer's cache (an index query through
// [informer.IndexRef], [informer.Lister]'s All) shows every write this
// writer made before the call. Possible errors: those of [Writer.Get].
func (w *Writer[C, T]) WaitForWrites(ctx context.Context, opts ...ReadOption) error {
	if err := w.read(ctx, opts, informer.NamespacedKey{}, true); err != nil {
		return fmt.Errorf("consistency: writer %q: wait for writes: %w", w.opts.Name, err)
	}
	return nil
}

// read waits for one read, of key or (all) of the whole cache, bounded as
// opts and the writer's Options say, and tells Metrics how long it took and
// how it ended. A read with nothing to wait for makes no context and no
// timer.
func (w *Writer[C, T]) read(ctx context.Context, opts []ReadOption, key informer.NamespacedKey, all bool) error {
	var ro readOptions
	if len(opts) > 0 {
		ro = applyReadOptions(opts) // out of line: &ro escapes to the option funcs
	}
	if ro.noWait {
		return nil
	}
	op := "get"
	if all {
		op = "list"
	}
	start := time.Now()
	if w.caughtUp(key, all) {
		w.opts.Metrics.ReadWaited(w.opts.Name, op, "ok", time.Since(start))
		return nil
	}
	bound := w.opts.MaxWait
	if ro.maxWait != 0 {
		bound = ro.maxWait
	}
	wctx := ctx
	if bound > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeoutCause(ctx, bound, errBound)
		defer cancel()
	}
	var err error
	if all {
		err = w.waitAll(wctx)
	} else {
		err = w.waitKey(wctx, key)
	}
	result := "ok"
	switch {
	case err == nil:
	case ctx.Err() != nil:
		result = "canceled"
	case errors.Is(context.Cause(wctx), errBound):
		result = "timeout"
		err = fmt.Errorf("%w within %v: %w", ErrStale, bound, err)
	case errors.Is(err, informer.ErrClosed):
		result = "closed"
	default:
		result = "error"
	}
	w.opts.Metrics.ReadWaited(w.opts.Name, op, result, time.Since(start))
	return err
}

// caughtUp reports whether the cache is known to show the writer's writes
// to key (all: every write) without waiting.
func (w *Writer[C, T]) caughtUp(key informer.NamespacedKey, all bool) bool {
	if all {
		return w.rec.caughtUpAll()
	}
	v, _, deleting := w.rec.forKey(key)
	return !deleting && v.n <= w.rec.seen.Load()
}

// waitKey waits until the cache shows the writer's writes to key.
func (w *Writer[C, T]) waitKey(ctx context.Context, key informer.NamespacedKey) error {
	v, d, deleting := w.rec.forKey(key)
	if err := w.waitVersion(ctx, v); err != nil {
		return err
	}
	if deleting {
		return w.waitGone(ctx, key, d.uid)
	}
	return nil
}

// waitAll waits until the cache shows every write of the writer.
func (w *Writer[C, T]) waitAll(ctx context.Context) error {
	v, ds := w.rec.forAll()
	if err := w.waitVersion(ctx, v); err != nil {
		return err
	}
	for _, d := range ds {
		if err := w.waitGone(ctx, d.key, d.uid); err != nil {
			return err
		}
	}
	return nil
}

// waitVersion waits until the cache has applied v (nothing to wait for if
// v is zero or seen already).
func (w *Writer[C, T]) waitVersion(ctx context.Context, v version) error {
	if v.n == 0 || v.n <= w.rec.seen.Load() {
		return nil
	}
	if err := w.inf.WaitForVersion(ctx, v.rv); err != nil {
		return err
	}
	w.rec.observe(v.n)
	return nil
}

// waitGone waits until the cache no longer holds the object of uid under
// key. It wakes at each change the cache applies to a key with a pending
// delete (the writer's handler tells it), and looks again.
func (w *Writer[C, T]) waitGone(ctx context.Context, key informer.NamespacedKey, uid types.UID) error {
	// Counted before the first look: a change the handler skipped for
	// want of waiters was applied before that look.
	w.rec.waiting.Add(1)
	defer w.rec.waiting.Add(-1)
	for {
		changed := w.rec.changes()
		if w.gone(key, uid) {
			w.rec.deleteDone(key, uid)
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("wait for %s (uid %s) to leave the cache: %w", key, uid, ctx.Err())
		case <-w.reg.Done():
			if w.gone(key, uid) {
				return nil
			}
			return fmt.Errorf("wait for %s (uid %s) to leave the cache: %w", key, uid, informer.ErrClosed)
		}
	}
}
