package informer

import (
	"context"
	"errors"
	"maps"
	"slices"
)

// maxKeptArena is the largest delta arena (in deltas) kept between batches;
// a larger one is released after its batch.
const maxKeptArena = 1 << 14

// keepMapMax is the peak number of queued keys above which the key map is
// dropped and made afresh once the queue drains (Go maps never shrink).
// Below it the grown map is kept: re-growing it costs more than the
// couple of MB it holds.
const keepMapMax = 1 << 16

// Pop waits for a queued key, removes it with all its deltas and calls
// process(key, deltas, isInInitialList) without holding the queue lock.
//
// deltas (oldest first, never empty) is backed by a buffer the queue reuses:
// it is valid only until process returns and must not be modified or
// retained; copy what must outlive the call. isInInitialList is true if the
// key is part of the first Replace's population.
//
// Pop blocks, on channels, until a key is available, ctx is done or the
// queue is closed and empty; if ctx is already done it returns at once
// without popping. Pop calls are serialized with each other and with
// PopBatch (see [DeltaFIFO]), so process must not call Pop or PopBatch on
// the same queue (it would wait for itself forever); other methods are fine.
//
// If process returns an error e with errors.Is(e, ErrRequeue), the deltas
// are put back ahead of any newer deltas queued for the key meanwhile (the
// key joins the tail if it is not queued) and Pop returns e. Any other error
// from process is returned as is, the deltas counting as processed. If
// process panics, its deltas are put back as for ErrRequeue and the panic
// propagates.
//
// Possible errors: ctx.Err() (nothing popped), [ErrClosed] (closed and
// empty), or process's error.
func (f *DeltaFIFO[K, T]) Pop(ctx context.Context, process func(key K, deltas Deltas[T], isInInitialList bool) error) error {
	batch, err := f.take(ctx, 1, false)
	if err != nil {
		return err
	}
	_, _, err = f.process(batch, func(batch []Item[K, T]) error {
		return process(batch[0].Key, batch[0].Deltas, batch[0].IsInInitialList)
	})
	return err
}

// PopBatch is Pop for up to maxKeys keys at once (maxKeys < 1 means 1): it
// waits as Pop does, removes up to maxKeys keys from the front of the queue,
// oldest first, and calls process(batch) without holding the queue lock.
//
// A Replace is never split: every key queued or touched by a Replace (and
// every key ahead of those) is handed out in one batch, whatever maxKeys, so
// that a consumer can apply a relist atomically.
//
// The batch slice and every Item's Deltas are backed by buffers the queue
// reuses: they are valid only until process returns and must not be
// modified or retained; copy what must outlive the call. If process returns
// an error wrapping [ErrRequeue] (or panics), the whole batch is put back as
// Pop describes, keys not queued meanwhile joining the tail in batch order.
//
// Possible errors: ctx.Err() (nothing popped), [ErrClosed] (closed and
// empty), or process's error.
func (f *DeltaFIFO[K, T]) PopBatch(ctx context.Context, maxKeys int, process func(batch []Item[K, T]) error) error {
	batch, err := f.take(ctx, maxKeys, true)
	if err != nil {
		return err
	}
	_, _, err = f.process(batch, process)
	return err
}

// process calls fn on batch, the batch take handed out, and finishes it:
// requeued if fn returns an error wrapping ErrRequeue or panics (the panic
// propagates). It returns what finish returns and fn's error.
func (f *DeltaFIFO[K, T]) process(batch []Item[K, T], fn func([]Item[K, T]) error) (queued int, finished uint64, err error) {
	done := false
	defer func() {
		if !done { // fn panicked
			f.finish(true)
		}
	}()
	err = fn(batch)
	done = true
	queued, finished = f.finish(errors.Is(err, ErrRequeue))
	return queued, finished, err
}

// take waits until no batch is in flight and a key is queued, then moves up
// to maxKeys keys (more if wholeReplace and a Replace is pending: up to its
// end) into f.batch (their deltas into f.arena), marks the batch in
// flight and returns it. The caller must call finish.
func (f *DeltaFIFO[K, T]) take(ctx context.Context, maxKeys int, wholeReplace bool) ([]Item[K, T], error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	maxKeys = max(maxKeys, 1)
	f.mu.Lock()
	for f.popping || f.queuedLen() == 0 {
		if !f.popping && f.closed {
			f.mu.Unlock()
			return nil, ErrClosed
		}
		if f.wake == nil {
			f.wake = make(chan struct{})
		}
		wake := f.wake
		f.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-wake:
		}
		f.mu.Lock()
	}
	if f.bulk != nil && !wholeReplace {
		f.unbulkLocked()
	}
	batch, arena := f.batch[:0], f.arena[:0]
	if f.bulk != nil {
		// A Replace into an empty queue: its items are the batch (the
		// whole Replace; nothing is queued behind it).
		batch, f.bulk = f.bulk, nil
		arena = nil
	}
	if wholeReplace && f.replacePending && f.order.head < f.replaceEnd {
		// A whole Replace is taken at once: size the buffers for it up
		// front instead of doubling them through a large list.
		n := max(int(f.replaceEnd-f.order.head), min(maxKeys, f.order.len()))
		batch = slices.Grow(batch, n)
		arena = slices.Grow(arena, n)
	}
	for len(batch) < maxKeys || (wholeReplace && f.replacePending && f.order.head < f.replaceEnd) {
		if f.order.len() == 0 {
			break
		}
		e := f.order.popFront() // its mapping in items goes stale: see sweepLocked
		start := len(arena)
		arena = append(arena, e.first)
		arena = append(arena, e.more...)
		// Full slice expression: later appends to arena never show through.
		batch = append(batch, Item[K, T]{Key: e.key, Deltas: arena[start:len(arena):len(arena)], IsInInitialList: e.initial})
	}
	if f.order.head >= f.replaceEnd {
		f.replacePending = false
	}
	f.sweepLocked()
	f.batch, f.arena = batch, arena
	f.popping = true
	f.inflightOK = false
	f.mu.Unlock()
	return batch, nil
}

// sweepMin is the number of stale mappings in a DeltaFIFO's items below
// which they are left alone.
const sweepMin = 1024

// sweepLocked drops the stale mappings of items (keys popped since), in
// bulk, when they are many enough for the cost (proportional to the map's
// size) to be paid back: when the queue is empty and they are at least half
// the largest queue the map served, or when they outnumber that twice over.
func (f *DeltaFIFO[K, T]) sweepLocked() {
	if f.unindexed <= f.order.head {
		f.unindexed = 0
	}
	n, live := len(f.items), f.order.len()
	switch {
	case live == 0 && n > 0 && f.peak >= keepMapMax:
		// Go maps never shrink: drop a big one after a burst.
		f.items = make(map[K]uint64)
		f.peak = 0
	case live == 0 && n >= max(sweepMin, f.peak/2):
		clear(f.items)
		f.peak = 0
	case live > 0 && n > 2*f.peak+sweepMin:
		head := f.order.head
		maps.DeleteFunc(f.items, func(_ K, seq uint64) bool { return seq < head })
	}
}

// finish ends the in-flight batch: it requeues it if asked, otherwise counts
// it as processed; then it releases the buffers' references and wakes
// waiters. It returns the number of keys queued and the finished sequence
// number (see sequences).
func (f *DeltaFIFO[K, T]) finish(requeue bool) (queued int, finished uint64) {
	f.mu.Lock()
	for i := range f.batch {
		it := &f.batch[i]
		if requeue {
			f.requeueLocked(it)
		} else if it.IsInInitialList {
			f.initialLeft--
		}
	}
	f.maybeSyncedLocked()
	if cap(f.batch) > maxKeptArena {
		f.batch = nil // after a large Replace: do not keep its buffer for ever
	} else {
		clear(f.batch)
		f.batch = f.batch[:0]
	}
	if cap(f.arena) > maxKeptArena {
		f.arena = nil
	} else {
		clear(f.arena)
		f.arena = f.arena[:0]
	}
	if f.inflightOK {
		clear(f.inflight)
	}
	f.inflightOK = false
	f.popping = false
	f.finished = f.order.head // take popped everything below head
	if f.queuedLen() > 0 || f.closed {
		// Waiters wait for a key while none is in flight: with nothing
		// queued there is nothing for them (the processing loop stays
		// parked after a direct hand-off, see changeOrTake), unless the
		// queue is closed.
		f.signalLocked()
	}
	queued, finished = f.queuedLen(), f.finished
	f.mu.Unlock()
	return queued, finished
}

// requeueLocked puts a popped item back: in front of the key's newer deltas
// if it is queued again, else at the tail. The deltas are copied out of the
// arena. Consecutive Deleted deltas at the junction collapse as usual.
func (f *DeltaFIFO[K, T]) requeueLocked(it *Item[K, T]) {
	ns := deltaSlot[T]{first: it.Deltas[0], initial: it.IsInInitialList}
	for _, d := range it.Deltas[1:] {
		ns.add(d)
	}
	seq, queued := f.seqLocked(it.Key)
	if !queued {
		f.pushLocked(it.Key, ns)
		return
	}
	old := f.order.at(seq)
	ns.add(old.first)
	for _, d := range old.more {
		ns.add(d)
	}
	ns.gen = old.gen
	if ns.initial && old.initial {
		f.initialLeft-- // both were counted; the merged slot counts once
	}
	ns.initial = ns.initial || old.initial
	old.deltaSlot = ns
}
