// Package ringbuf provides FIFO queues: Ring, a growable and shrinkable ring
// buffer, and Chunked, a queue of fixed-size chunks that reuses the chunks it
// empties.
package ringbuf

// minCap is the capacity a Ring starts with on its first Push.
const minCap = 16

// keepCap is the capacity a Ring never shrinks below once it has grown
// there: a queue that fills and drains in small bursts keeps its buffer
// instead of reallocating it on every burst (measured: ~200 B of garbage per
// event in an informer's handler queue). Above it, the Ring gives memory back.
const keepCap = 1024

// Ring is a first-in first-out queue of T stored in a circular buffer whose
// capacity is always zero or a power of two.
//
// The buffer doubles when a Push finds it full and halves when a Pop leaves
// it at most a quarter full, never below 1024 slots (client-go's handler
// buffer starts at that size), so a Ring that once held a large burst gives
// the memory back as it drains, while bursts of up to a thousand items (an
// informer's batch) reuse one buffer. Push and Pop are
// amortized O(1). Every slot is zeroed when its item leaves the Ring (Pop,
// Clear, or a resize) so the garbage collector can reclaim what it referred
// to.
//
// The zero value is an empty Ring ready to use; it allocates nothing until
// the first Push. A Ring is not safe for concurrent use: callers serialize
// access. A Ring must not be copied after first use.
type Ring[T any] struct {
	buf  []T // len(buf) is 0 or a power of two; slots outside the live range are zero
	head int // index in buf of the oldest item
	n    int // number of items
}

// Len returns the number of items in the Ring.
func (r *Ring[T]) Len() int { return r.n }

// Push appends v at the back of the Ring, doubling the buffer first if it is
// full.
func (r *Ring[T]) Push(v T) {
	if r.n == len(r.buf) {
		r.resize(max(minCap, 2*len(r.buf)))
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = v
	r.n++
}

// Pop removes and returns the item at the front of the Ring (the oldest
// one). It returns the zero T and false when the Ring is empty. The vacated
// slot is zeroed; the buffer is halved when the Ring becomes at most a
// quarter full and has more than 1024 slots.
func (r *Ring[T]) Pop() (T, bool) {
	var zero T
	if r.n == 0 {
		return zero, false
	}
	v := r.buf[r.head]
	r.buf[r.head] = zero
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	if len(r.buf) > keepCap && r.n <= len(r.buf)/4 {
		r.resize(len(r.buf) / 2)
	}
	return v, true
}

// Peek returns the item at the front of the Ring without removing it, or the
// zero T and false when the Ring is empty.
func (r *Ring[T]) Peek() (T, bool) {
	if r.n == 0 {
		var zero T
		return zero, false
	}
	return r.buf[r.head], true
}

// At returns the i-th item from the front (0 is the oldest). It panics if i
// is out of range [0, Len()), like a slice index.
func (r *Ring[T]) At(i int) T {
	if i < 0 || i >= r.n {
		panic("ringbuf: index out of range")
	}
	return r.buf[(r.head+i)&(len(r.buf)-1)]
}

// Ptr returns a pointer to the i-th item from the front (0 is the oldest),
// so it can be modified in place. The pointer is valid only until the next
// Push, Pop or Clear (which may move the items). It panics if i is out of
// range [0, Len()).
func (r *Ring[T]) Ptr(i int) *T {
	if i < 0 || i >= r.n {
		panic("ringbuf: index out of range")
	}
	return &r.buf[(r.head+i)&(len(r.buf)-1)]
}

// Clear removes every item and releases the buffer: the Ring is left as its
// zero value.
func (r *Ring[T]) Clear() {
	*r = Ring[T]{}
}

// resize moves the items, front first, to a fresh buffer of capacity c
// (a power of two >= r.n). The old buffer is dropped whole, so no reference
// survives in it beyond the garbage collector's reach.
func (r *Ring[T]) resize(c int) {
	nb := make([]T, c)
	if r.n > 0 {
		// The live range is buf[head:] followed by buf[:rest].
		k := copy(nb, r.buf[r.head:min(r.head+r.n, len(r.buf))])
		copy(nb[k:], r.buf[:r.n-k])
	}
	r.buf = nb
	r.head = 0
}
