package informer

import "iter"

// IndexRef is an index of an [Indexer] resolved once, by name, for queries
// on a hot path: [IndexRef.ByValue] cannot fail, so it returns a bare
// iterator that the compiler keeps on the caller's stack, and a query
// allocates nothing at all (ByIndex, which must return an error too, costs
// two small allocations per call). Indexes are never removed, so a ref stays
// valid for the life of its Indexer. The zero IndexRef yields nothing.
type IndexRef[K comparable, T any] struct {
	s   *Indexer[K, T]
	ord int // position of the index in the Indexer's index set
}

// IndexRef resolves the named index.
//
// Possible errors: [ErrIndexNotFound].
func (s *Indexer[K, T]) IndexRef(index string) (IndexRef[K, T], error) {
	ord, ok := s.ord(index)
	if !ok {
		return IndexRef[K, T]{}, &indexNotFoundError{index}
	}
	return IndexRef[K, T]{s: s, ord: ord}, nil
}

// ByValue returns an iterator over the objects whose values in the index
// include value, with the guarantees of [Indexer.All]: weakly consistent,
// order not specified, reusable.
func (r IndexRef[K, T]) ByValue(value string) iter.Seq2[K, T] {
	return func(yield func(K, T) bool) {
		if r.s != nil {
			r.s.rangeBucket(r.ord, value, yield)
		}
	}
}
