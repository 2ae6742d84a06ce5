package memory

import (
	"context"

	"github.com/ginformer/ginformer/informer"
)

// Filtered returns a view of the store restricted to the objects for which
// pred returns true, as an [informer.Source] sharing the store's versions,
// history, options and test aids.
//
// Lists return the matching objects (a page may hold fewer than Limit items,
// even none, with a Continue token). Watches see, for each change: Added when
// the object starts matching (created matching, or updated into the
// selection), Deleted with the previous state when it stops matching (deleted,
// or updated out of the selection), Modified when it matches before and
// after, and nothing otherwise. Bookmarks still carry the store version, so a
// client of a quiet selection advances.
//
// Each call returns a view of its own, with its own snapshot identity (see
// [Store.SnapshotIdentity]): a snapshot of an informer over one view is
// refused by an informer over another, even one with the same predicate,
// since the store cannot tell two predicates apart.
//
// A nil pred matches every object. pred is user code, called without the store's lock, possibly concurrently
// from several goroutines and several times per object; it must be
// deterministic and must not call the store.
func (s *Store[K, T]) Filtered(pred func(T) bool) informer.Source[T] {
	return filtered[K, T]{s: s, pred: pred, id: randomID()}
}

// filtered is the view returned by Filtered.
type filtered[K comparable, T any] struct {
	s    *Store[K, T]
	pred func(T) bool
	id   string // tells this view from others in snapshot identities
}

func (f filtered[K, T]) List(ctx context.Context, opts informer.ListOptions) (informer.ListPage[T], error) {
	return f.s.list(ctx, opts, f.pred)
}

func (f filtered[K, T]) Watch(ctx context.Context, opts informer.WatchOptions) (informer.Watcher[T], error) {
	return f.s.watch(ctx, opts, f.pred)
}
