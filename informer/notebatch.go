package informer

import (
	"sync"
	"sync/atomic"
)

// noteBatch holds the notifications of one committed batch, shared by every
// handler that delivers each event (every-event mode): the processing loop
// builds it once and each such handler queues a reference to it (a
// [noteSpan]) instead of a copy of every notification, so handing a batch to
// N handlers costs N queue entries, not N × batch copies.
//
// A batch is immutable once queued. Each holder releases it when done; the
// last release returns it to its pool (if any), cleared, for a later batch.
// A holder that drops it (a stopped handler) simply never releases it: the
// garbage collector reclaims it.
type noteBatch[K comparable, T any] struct {
	notes   []notification[K, T]
	syncs   []bool // per note: a resync update, for handlers due only; nil when none is
	nsync   int    // notes with syncs[i] set
	markers int    // noteSynced markers among notes (not counted in backlogs)
	refs    atomic.Int32
	pool    *sync.Pool // nil: not recycled
	// inline is the first notes buffer of a pooled batch: a batch of one
	// event (the common case at low rates) costs one allocation, not two.
	inline [1]notification[K, T]
}

// count returns how many notifications of b a handler receives: every note
// but the markers, and the resync updates only if resync.
func (b *noteBatch[K, T]) count(resync bool) int {
	n := len(b.notes) - b.markers
	if !resync {
		n -= b.nsync
	}
	return n
}

// maxPooledNotes bounds the batches kept for reuse: a relist's batch, sized
// for the whole collection, is left to the garbage collector.
const maxPooledNotes = 1 << 12

// release drops one reference; the last one returns b to its pool.
func (b *noteBatch[K, T]) release() {
	if b.pool == nil || b.refs.Add(-1) != 0 {
		return
	}
	if cap(b.notes) > maxPooledNotes {
		return
	}
	clear(b.notes)
	b.notes, b.syncs, b.nsync, b.markers = b.notes[:0], b.syncs[:0], 0, 0
	b.pool.Put(b)
}

// noteSpan is a handler's queue entry in every-event mode: a shared batch,
// and whether the handler is due for the resync updates in it.
type noteSpan[K comparable, T any] struct {
	b      *noteBatch[K, T]
	resync bool
}

// getBatch returns an empty batch from pool (allocating one if the pool is
// empty), holding one reference: the caller's, released once it has queued
// the batch to every handler.
func getBatch[K comparable, T any](pool *sync.Pool) *noteBatch[K, T] {
	b, _ := pool.Get().(*noteBatch[K, T])
	if b == nil {
		b = &noteBatch[K, T]{pool: pool}
		b.notes = b.inline[:0]
	}
	b.refs.Store(1)
	return b
}
