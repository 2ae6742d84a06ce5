package natskv

import (
	"time"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/internal/sourcekit"
)

// Object is one key of the bucket with its decoded value: the T of the
// source's [informer.Source]. Objects handed out are shared: treat them as
// read-only.
type Object[T any] struct {
	// Key is the KV key.
	Key string
	// Value is the decoded value; the zero T when ValueUnknown.
	Value T
	// Revision is the revision (stream sequence) of the key's last change;
	// for a Deleted event, the revision of the delete or purge marker.
	Revision uint64
	// Created is when the revision was stored (the stream's timestamp of
	// the message); for a Deleted event, the marker's.
	Created time.Time
	// ValueUnknown is set only on Deleted events whose previous value the
	// stream no longer holds (history limits, purges) or that did not
	// decode: Key is right, Value is the zero T.
	ValueUnknown bool
}

// KeyFunc is the [informer.KeyFunc] for objects of the source: the key.
// It never fails.
func KeyFunc[T any](o *Object[T]) (string, error) { return o.Key, nil }

// IndexFunc turns an index function of the values into an
// [informer.IndexFunc] of the objects. An object with an unknown value has
// no index values.
func IndexFunc[T any](f func(dst []string, value T) ([]string, error)) informer.IndexFunc[*Object[T]] {
	return sourcekit.IndexFunc(func(o *Object[T]) (T, bool) { return o.Value, !o.ValueUnknown }, f)
}

// Index declares an index named name over the values, for
// [informer.Options.Indexes]: a shorthand for IndexFunc.
func Index[T any](name string, f func(dst []string, value T) ([]string, error)) informer.Index[*Object[T]] {
	return informer.Index[*Object[T]]{Name: name, Func: IndexFunc(f)}
}
