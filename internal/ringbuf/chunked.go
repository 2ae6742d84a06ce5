package ringbuf

// chunkLen is the number of items per chunk of a Chunked queue.
const chunkLen = 64

type chunk[T any] struct {
	items [chunkLen]T
	next  *chunk[T]
}

// Chunked is a first-in first-out queue of T stored in fixed-size chunks
// linked in a list. Unlike a Ring it never copies its items: it grows by one
// chunk at a time, and the chunks its Pop empties go to a list of spares
// that later Pushes reuse, so a queue whose length goes up and down
// allocates only when it holds more than it ever held. Trim gives spares
// back.
//
// It is built for a producer and a consumer that hand the whole queue over
// at once: the consumer swaps its empty Chunked (holding the spares of what
// it drained) with the producer's under the producer's lock, and drains its
// own with no lock held; the producer goes on with the consumer's spares.
//
// Every slot is zeroed when its item leaves the queue (Pop, Clear), so the
// garbage collector can reclaim what it referred to. The zero value is an
// empty queue ready to use. A Chunked is not safe for concurrent use.
type Chunked[T any] struct {
	head, tail *chunk[T] // nil when the queue has never held an item or was cleared
	hi, ti     int       // next item to pop in head; next free slot in tail
	n          int       // number of items
	spare      *chunk[T] // emptied chunks, linked through next
	spares     int       // number of chunks in spare
}

// Len returns the number of items in the queue.
func (q *Chunked[T]) Len() int { return q.n }

// Push appends v at the back of the queue.
func (q *Chunked[T]) Push(v T) {
	if q.tail == nil {
		c := q.newChunk()
		q.head, q.tail, q.hi, q.ti = c, c, 0, 0
	} else if q.ti == chunkLen {
		c := q.newChunk()
		q.tail.next = c
		q.tail, q.ti = c, 0
	}
	q.tail.items[q.ti] = v
	q.ti++
	q.n++
}

// Pop removes and returns the item at the front of the queue, or the zero T
// and false when it is empty. A chunk it empties becomes a spare.
func (q *Chunked[T]) Pop() (T, bool) {
	var zero T
	if q.n == 0 {
		return zero, false
	}
	v := q.head.items[q.hi]
	q.head.items[q.hi] = zero
	q.hi++
	q.n--
	switch {
	case q.n == 0:
		// Empty: keep the chunk in place, from its start.
		q.hi, q.ti = 0, 0
	case q.hi == chunkLen:
		c := q.head
		q.head, q.hi = c.next, 0
		c.next = q.spare
		q.spare = c
		q.spares++
	}
	return v, true
}

// Swap exchanges the contents of q and o: items, chunks and spares.
func (q *Chunked[T]) Swap(o *Chunked[T]) { *q, *o = *o, *q }

// Trim drops spare chunks beyond keep, and if the queue is empty, its
// current chunk too when keep is zero.
func (q *Chunked[T]) Trim(keep int) {
	for q.spares > keep {
		c := q.spare
		q.spare, c.next = c.next, nil
		q.spares--
	}
	if keep == 0 && q.n == 0 {
		q.head, q.tail, q.hi, q.ti = nil, nil, 0, 0
	}
}

// Clear removes every item and drops every chunk: the queue is left as its
// zero value.
func (q *Chunked[T]) Clear() { *q = Chunked[T]{} }

func (q *Chunked[T]) newChunk() *chunk[T] {
	if c := q.spare; c != nil {
		q.spare, c.next = c.next, nil
		q.spares--
		return c
	}
	return new(chunk[T])
}
