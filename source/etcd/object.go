package etcd

import (
	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/internal/sourcekit"
)

// Object is one key of the prefix with its decoded value: the T of the
// source's [informer.Source]. Objects handed out are shared: treat them as
// read-only.
type Object[T any] struct {
	// Key is the etcd key, without the prefix when [Options.StripPrefix] is
	// set.
	Key string
	// Value is the decoded value; the zero T when ValueUnknown.
	Value T
	// ModRevision is the revision of the last change of the key; for a
	// Deleted event, the revision of the deletion.
	ModRevision int64
	// CreateRevision is the revision that created the key (0 when
	// unknown).
	CreateRevision int64
	// ValueUnknown is set only on Deleted events whose previous value was not
	// available (compacted, or not read: a deletion before the caught-up
	// marker of a [informer.WatchOptions.NotifyCaughtUp] watch without a
	// Filter) or did not decode: Key and ModRevision are right, Value is the
	// zero T and CreateRevision 0.
	ValueUnknown bool
}

// KeyFunc is the [informer.KeyFunc] for objects of the source: the key.
// It never fails.
func KeyFunc[T any](o *Object[T]) (string, error) { return o.Key, nil }

// IndexFunc turns an index function of the values into an
// [informer.IndexFunc] of the objects. An object with an unknown value has no
// index values.
func IndexFunc[T any](f func(dst []string, value T) ([]string, error)) informer.IndexFunc[*Object[T]] {
	return sourcekit.IndexFunc(func(o *Object[T]) (T, bool) { return o.Value, !o.ValueUnknown }, f)
}

// Index declares an index named name over the values, for
// [informer.Options.Indexes]: a shorthand for IndexFunc.
func Index[T any](name string, f func(dst []string, value T) ([]string, error)) informer.Index[*Object[T]] {
	return informer.Index[*Object[T]]{Name: name, Func: IndexFunc(f)}
}
