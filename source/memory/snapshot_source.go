package memory

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/ginformer/ginformer/informer"
)

// Both the store and its filtered views can be kept in an informer's
// snapshot (warm restarts, see [informer.SnapshotOptions]).
var (
	_ informer.SnapshotSource[int] = (*Store[string, int])(nil)
	_ informer.SnapshotSource[int] = filtered[string, int]{}
)

// SnapshotIdentity implements [informer.SnapshotSource]: "memory" and the
// store's incarnation, a random ID made by [New]. No option of the store
// changes what it lists (Compare only orders it), so none is part of it.
//
// The incarnation tells this store's data from every other store's: a
// snapshot written by an informer over this store is restored only by an
// informer over this same store, in this process. One written over another
// store, or in a previous run of the program, is refused and the informer
// starts cold; that is right, since the versions of one store mean nothing
// in another (every store starts at "1"). It never fails and does not use
// ctx.
func (s *Store[K, T]) SnapshotIdentity(context.Context) (string, error) {
	return "memory incarnation=" + s.incarnation, nil
}

// SnapshotCodec implements [informer.SnapshotSource]: [Options.Codec], or
// when it is nil [informer.NewValueCodec]'s (or [informer.JSONCodec] for a T
// that codec cannot plan).
func (s *Store[K, T]) SnapshotCodec() informer.Codec[T] {
	if s.opts.Codec != nil {
		return s.opts.Codec
	}
	if vc, err := informer.NewValueCodec[T](); err == nil {
		return vc
	}
	return informer.JSONCodec[T]{}
}

// SnapshotIdentity is the store's, plus the view's own random ID (see
// [Store.Filtered]).
func (f filtered[K, T]) SnapshotIdentity(ctx context.Context) (string, error) {
	id, err := f.s.SnapshotIdentity(ctx)
	return id + " view=" + f.id, err
}

// SnapshotCodec is the store's [Store.SnapshotCodec].
func (f filtered[K, T]) SnapshotCodec() informer.Codec[T] { return f.s.SnapshotCodec() }

// randomID returns 16 random hex digits.
func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}
