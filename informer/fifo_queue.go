package informer

import "github.com/ginformer/ginformer/internal/ringbuf"

// chunkBits sets the number of entries per chunk of an entryQueue.
const (
	chunkBits = 7
	chunkLen  = 1 << chunkBits
	chunkMask = chunkLen - 1
)

// chunk is a fixed block of queue entries.
type chunk[K comparable, T any] [chunkLen]queueEntry[K, T]

// entryQueue is the DeltaFIFO's queue of entries in FIFO order, addressable
// by sequence number (the n-th entry ever pushed has sequence number n).
//
// Entries live in fixed-size chunks held in a ring, so growing never copies
// entries and a drained queue hands its memory back chunk by chunk (keeping
// one spare chunk for reuse). Popped entries are zeroed so the garbage
// collector can reclaim the objects they referred to. Not safe for
// concurrent use; the zero value is an empty queue.
type entryQueue[K comparable, T any] struct {
	chunks ringbuf.Ring[*chunk[K, T]] // chunk i holds sequence numbers [i*chunkLen, (i+1)*chunkLen)
	head   uint64                     // sequence number of the front entry
	tail   uint64                     // sequence number the next push gets
	spare  *chunk[K, T]               // a zeroed chunk kept for reuse, or nil
}

// len returns the number of entries queued.
func (q *entryQueue[K, T]) len() int { return int(q.tail - q.head) }

// push appends e and returns its sequence number.
func (q *entryQueue[K, T]) push(e queueEntry[K, T]) uint64 {
	if q.tail&chunkMask == 0 { // the last chunk is full (or there is none)
		q.addChunk()
	}
	seq := q.tail
	*q.at(seq) = e
	q.tail++
	return seq
}

// addChunk appends a chunk for the entries from tail on: the spare, or a
// new one.
func (q *entryQueue[K, T]) addChunk() {
	c := q.spare
	q.spare = nil
	if c == nil {
		c = new(chunk[K, T])
	}
	q.chunks.Push(c)
}

// at returns a pointer to the entry with sequence number seq, which must be
// in [head, tail). It stays valid until that entry is popped.
func (q *entryQueue[K, T]) at(seq uint64) *queueEntry[K, T] {
	c := q.chunks.At(int(seq>>chunkBits - q.head>>chunkBits))
	return &c[seq&chunkMask]
}

// popFront removes and returns the front entry; the queue must not be empty.
func (q *entryQueue[K, T]) popFront() queueEntry[K, T] {
	c, _ := q.chunks.Peek()
	p := &c[q.head&chunkMask]
	e := *p
	*p = queueEntry[K, T]{}
	q.head++
	if q.head&chunkMask == 0 { // the front chunk is used up
		q.chunks.Pop()
		q.spare = c
	}
	return e
}

// skip gives the next sequence number to an entry that is handed out at
// once without being stored (see [DeltaFIFO.changeOrTake]): on an empty
// queue it is push then popFront, without writing the entry.
func (q *entryQueue[K, T]) skip() {
	if q.tail&chunkMask == 0 { // as push: the chunk holding tail must exist
		q.addChunk()
	}
	q.tail++
	q.head++
	if q.head&chunkMask == 0 { // as popFront: the front chunk is used up
		c, _ := q.chunks.Pop()
		q.spare = c
	}
}

// renumber moves an empty queue to sequence number seq: the next push gets
// seq. It releases the queue's chunks (keeping one spare).
func (q *entryQueue[K, T]) renumber(seq uint64) {
	for q.chunks.Len() > 0 {
		c, _ := q.chunks.Pop() // its entries are zero: the queue is empty
		q.spare = c
	}
	q.head, q.tail = seq, seq
	if seq&chunkMask != 0 { // push expects the chunk holding tail to exist
		q.addChunk()
	}
}
