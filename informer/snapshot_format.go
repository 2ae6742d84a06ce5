package informer

import (
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/ginformer/ginformer/internal/safecall"
	"github.com/ginformer/ginformer/internal/snapshotfmt"
)

// The snapshot's byte layout (header, chunks, checksums, trailer) is
// internal/snapshotfmt's; this file is the informer's side of it: objects
// through the Codec and the key function, and the format's errors as
// ErrSnapshot refusals. A file is accepted only whole; anything else
// refuses it (ErrSnapshot) and the informer starts cold.

// encodeSnapshot writes objs, the state of a cache at version, to w,
// encoding chunks on up to workers goroutines at once (1: on the caller's
// goroutine only).
func encodeSnapshot[T any](w io.Writer, identity, version string, objs []T, codec Codec[T], workers int) (snapshotfmt.Stats, error) {
	return snapshotfmt.Encode(w, identity, version, len(objs), workers, func(dst []byte, i int) ([]byte, error) {
		return codec.AppendEncode(dst, objs[i])
	})
}

// decodedSnapshot is a snapshot's content.
type decodedSnapshot[K comparable, T any] struct {
	version string
	keys    []K
	objs    []T
}

// decodeSnapshot checks data against identity and decodes its objects and
// their keys on up to workers goroutines. It fails whole: any damaged
// chunk, object the codec refuses or key the key function refuses refuses
// the snapshot.
//
// Possible errors: [ErrSnapshot] (wrapped).
func decodeSnapshot[K comparable, T any](data []byte, identity string, codec Codec[T], keyFunc KeyFunc[K, T], workers int) (*decodedSnapshot[K, T], error) {
	out := &decodedSnapshot[K, T]{}
	alloc := func(n int) { out.keys, out.objs = make([]K, n), make([]T, n) }
	version, err := snapshotfmt.Decode(data, identity, workers, alloc, func(i int, b []byte) error {
		obj, err := codec.Decode(b)
		if err != nil {
			return fmt.Errorf("the codec (%s) cannot decode an object: %w", codec.Format(), err)
		}
		key, err := safeKey(keyFunc, obj)
		if err != nil {
			return fmt.Errorf("an object's key: %w", err)
		}
		out.objs[i], out.keys[i] = obj, key
		return nil
	})
	if err != nil {
		return nil, refuseSnapshot(err)
	}
	out.version = version
	return out, nil
}

// refuseSnapshot returns the error refusing a snapshot for err, an error of
// internal/snapshotfmt or of decodeSnapshot's object decoding.
func refuseSnapshot(err error) error {
	if ie, ok := errors.AsType[*snapshotfmt.IdentityError](err); ok {
		return identityMismatch(ie.Got, ie.Want)
	}
	return fmt.Errorf("%w: refused, %w", ErrSnapshot, err)
}

// identityMismatch explains why a snapshot of identity got is refused by an
// informer of identity want: the first line that differs.
func identityMismatch(got, want string) error {
	g, w, ok := snapshotfmt.FirstDiff(got, want)
	if !ok {
		return fmt.Errorf("%w: refused, identity differs", ErrSnapshot)
	}
	return fmt.Errorf("%w: refused, it is a snapshot of something else: it has %q where this informer has %q", ErrSnapshot, g, w)
}

// safeKey calls the user's key function, turning a panic into an error.
func safeKey[K comparable, T any](f KeyFunc[K, T], obj T) (K, error) {
	k, err := safecall.Call(f, obj)
	if err != nil {
		return k, fmt.Errorf("%w: %w", ErrKeyFunc, err)
	}
	return k, nil
}

// snapshotWorkers is the number of goroutines a snapshot is decoded on.
func snapshotWorkers() int { return runtime.GOMAXPROCS(0) }
