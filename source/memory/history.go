package memory

import "github.com/ginformer/ginformer/informer"

// record is one change in the store's history: the write that produced
// revision rev.
type record[K comparable, T any] struct {
	rev     int64
	version string             // rev formatted, shared by every watcher's event
	typ     informer.EventType // Added, Modified or Deleted
	key     K
	sortKey string
	// obj is the new state (Added, Modified) or the last state (Deleted).
	obj T
	// prev is the state before the write, valid when hadPrev; prevRev is its
	// mod revision.
	prev    T
	prevRev int64
	hadPrev bool
}

// history is a bounded ring of records in revision order. Revisions in it
// are consecutive. The zero value is empty with capacity zero; set max.
type history[K comparable, T any] struct {
	buf   []record[K, T]
	start int // index in buf of the oldest record
	n     int // number of records
	max   int // capacity bound
}

// len returns the number of records.
func (h *history[K, T]) len() int { return h.n }

// at returns the i-th oldest record, 0 <= i < len.
func (h *history[K, T]) at(i int) *record[K, T] {
	return &h.buf[(h.start+i)%len(h.buf)]
}

// push appends r, dropping the oldest record when the ring is full. It
// reports whether one was dropped and the revision of that record.
func (h *history[K, T]) push(r record[K, T]) (dropped bool, droppedRev int64) {
	if h.n == len(h.buf) && len(h.buf) < h.max {
		h.grow()
	}
	if h.n == len(h.buf) {
		droppedRev = h.at(0).rev
		h.dropOldest()
		dropped = true
	}
	h.buf[(h.start+h.n)%len(h.buf)] = r
	h.n++
	return dropped, droppedRev
}

// dropOldest removes the oldest record, zeroing its slot so the garbage
// collector can reclaim the objects.
func (h *history[K, T]) dropOldest() {
	h.buf[h.start] = record[K, T]{}
	h.start = (h.start + 1) % len(h.buf)
	h.n--
}

// grow enlarges buf towards max, keeping the records in order.
func (h *history[K, T]) grow() {
	size := max(16, 2*len(h.buf))
	size = min(size, h.max)
	buf := make([]record[K, T], size)
	for i := range h.n {
		buf[i] = *h.at(i)
	}
	h.buf, h.start = buf, 0
}
