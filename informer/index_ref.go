package informer

import "iter"

// IndexRef is an [Index] bound to one cache: the typed way to query it.
// Get one from [Lister.IndexRef] (or [Indexer.IndexRef]) once, at setup;
// its queries then cannot fail, take no lock and allocate nothing (the
// iterators are bare values the compiler keeps on the caller's stack).
// Indexes are never removed, so an IndexRef stays valid for the life of
// its cache, across relists. An IndexRef is a small value: copy it freely,
// use it from any goroutine.
//
// Its queries read as the Lister's do: a query matching at most 64 objects
// yields one state of all of them, larger ones a chunk of up to 64 at a
// time, each one state of its objects; see [Indexer]. Their order is not
// specified; every iterator may be reused, each use starting over.
//
// The zero IndexRef yields nothing.
type IndexRef[K comparable, T any] struct {
	s   *Indexer[K, T]
	ord int // position of the index in the Indexer's index set
}

// IndexRef binds idx, an index declared on s (given in
// [IndexerOptions].Indexes or to [Indexer.AddIndexes]), to s. The index is
// found by its name: idx is meant to be the very declaration s was given,
// whose Func s runs on every write (the Func of idx itself is not called).
//
// Possible errors: [ErrIndexNotFound] (no index of that name on s; on an
// index being added, until AddIndexes has returned).
func (s *Indexer[K, T]) IndexRef(idx Index[T]) (IndexRef[K, T], error) {
	ord, ok := s.ord(idx.Name)
	if !ok {
		return IndexRef[K, T]{}, &indexNotFoundError{idx.Name}
	}
	return IndexRef[K, T]{s: s, ord: ord}, nil
}

// ByValue returns an iterator over the objects whose values in the index
// include value. A value no object has yields nothing.
func (r IndexRef[K, T]) ByValue(value string) iter.Seq2[K, T] {
	return func(yield func(K, T) bool) {
		if r.s != nil {
			r.s.rangeBucket(r.ord, value, yield)
		}
	}
}

// Keys returns an iterator over the keys of the objects whose values in the
// index include value: [IndexRef.ByValue] without the objects.
func (r IndexRef[K, T]) Keys(value string) iter.Seq[K] {
	return func(yield func(K) bool) {
		if r.s != nil {
			r.s.rangeBucket(r.ord, value, func(k K, _ T) bool { return yield(k) })
		}
	}
}

// Values returns an iterator over the values the index holds: those of at
// least one object (client-go's ListIndexFuncValues). It is weakly
// consistent, as [Indexer.All]: a value held for the whole iteration is
// yielded once; one added or emptied meanwhile may be or not.
func (r IndexRef[K, T]) Values() iter.Seq[string] {
	return func(yield func(string) bool) {
		if r.s != nil {
			r.s.rangeValues(r.ord, yield)
		}
	}
}
