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
	// ByIndex yields the objects whose index values include value.
	ByIndex(index, value string) (iter.Seq2[K, T], error)
	// IndexKeys yields the keys of the objects whose index values include value.
	IndexKeys(index, value string) (iter.Seq[K], error)
	// IndexValues yields every value the index currently holds.
	IndexValues(index string) (iter.Seq[string], error)
	// Index yields the objects sharing at least one index value with obj.
	Index(index string, obj T) (iter.Seq2[K, T], error)
	// IndexRef resolves an index once for allocation-free queries.
	IndexRef(index string) (IndexRef[K, T], error)
}
