package informer

// IndexFunc appends the index values of obj to dst and returns the extended
// slice, in the style of strconv.AppendInt: the engine passes a reused buffer,
// so an index that reads a string field straight out of the object costs no
// allocation. Returning no values means obj is not in the index; duplicate
// values count once.
//
// It is user code: the engine calls it without holding any internal lock, and
// an error or a panic from it is returned wrapped in [ErrIndexFunc] (naming
// the index and the key); the write that needed it is refused. It must be
// deterministic and must not retain dst.
type IndexFunc[T any] func(dst []string, obj T) ([]string, error)

// Index declares a secondary index: a name, unique within a store, and the
// function giving each object's values in it. A multi-value index (one value
// per label, say) simply appends several values.
type Index[T any] struct {
	Name string
	Func IndexFunc[T]
}
