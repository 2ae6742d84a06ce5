package informer

import "iter"

// Lister is the read-only view of a cache: the query half of [Indexer],
// which implements it. A [SharedInformer] hands it out so that readers cannot
// write into the cache behind the informer's back.
//
// Reads take no lock and never wait for writers, nor writers for them
// (List, and reads during a relist, excepted; see [Indexer] for the exact
// guarantees). Every read sees each write whole: an object as it was before
// the write or after it. A SharedInformer applies a batch of watch events
// one write after another, so a read may see a batch partly applied;
// handlers are notified of a batch only once it is wholly applied, and
// [SharedInformer.WaitForVersion] returns only then. A relist is applied at
// once: Get, Len, List and each chunk of an iterator see the old list or the
// new one, never a mix. An index query yields its matches in chunks of at most
// 64, each one state of its objects; the iterators over the whole store are
// weakly consistent. An iterator returned with an error (such as
// [ErrIndexNotFound]) is never nil: it yields nothing, so ranging over it is
// safe. Safe for concurrent use.
type Lister[K comparable, T any] interface {
	// Get returns the object stored under key.
	Get(key K) (T, bool)
	// Len returns the number of objects.
	Len() int
	// All yields every key and object, in no specified order.
	All() iter.Seq2[K, T]
	// Keys yields every key, in no specified order.
	Keys() iter.Seq[K]
	// List returns a copy of every object, taken as one consistent snapshot.
	List() []T

	// IndexRef binds idx, an index declared on this cache, to it: the
	// typed way to query an index, and the only step that can fail
	// ([ErrIndexNotFound]); the [IndexRef]'s queries cannot, and allocate
	// nothing. See [Index].
	IndexRef(idx Index[T]) (IndexRef[K, T], error)

	// The by-name queries, for compatibility layers and tools that know an
	// index only by its name (client-go's Indexer in source/k8s/compat, a
	// debug page). Each returns an error (ErrIndexNotFound for an unknown
	// name) beside its iterator, and allocates on every call (ByIndex,
	// IndexKeys and IndexValues two small objects, Index what the index
	// function does and more); programs that declare their indexes use
	// IndexRef.

	// ByIndex yields the objects whose values in the named index include
	// value ([IndexRef.ByValue] by name).
	ByIndex(index, value string) (iter.Seq2[K, T], error)
	// IndexKeys yields their keys ([IndexRef.Keys] by name).
	IndexKeys(index, value string) (iter.Seq[K], error)
	// IndexValues yields every value the named index holds
	// ([IndexRef.Values] by name).
	IndexValues(index string) (iter.Seq[string], error)
	// Index yields the objects sharing at least one value of the named
	// index with obj, each once (client-go's Index); the index function
	// runs on obj, so it also fails with [ErrIndexFunc].
	Index(index string, obj T) (iter.Seq2[K, T], error)
}
