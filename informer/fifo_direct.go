package informer

// The direct hand-off: a change that finds the queue idle skips it.
//
// When nothing is queued and no batch is in flight, a change queued by
// Add, Update or Delete would be the whole of the next batch: PopBatch would
// take it alone. changeOrTake does both steps at once, under one hold of the
// queue lock: the change gets its sequence number as if queued and is at
// once in flight, as if PopBatch had taken it, on the writer's goroutine.
// The queue's rules hold as they are, since the pair is one of the
// interleavings they already allow (a write, then a PopBatch that takes it
// before anything else is written):
//
//   - order: the key was not queued (nothing was), so it is served exactly
//     where a pop would have served it, and any later write for any key
//     queues behind it (the batch is in flight: PopBatch waits for finish);
//   - presence: while in flight the key is present (Delete, Replace's
//     tombstones and BeginList's comparison see its in-flight delta);
//   - sequences: its sequence number is below the tail, and finish moves
//     finished past it, so a version recorded after the write is applied
//     once the caller has processed it.
//
// Nothing waiting for the queue is woken: no one can take the change, and
// finish wakes waiters only if there is something for them.

// changeOrTake is Add, Update or Delete (by t) of obj, except that when the
// queue is open, nothing is queued and nothing is in flight, the change is
// not queued but returned as a batch of one item, in flight as if
// [DeltaFIFO.PopBatch] had taken it: the caller must run it through
// process, as PopBatch does. Otherwise the change is queued as by
// the write methods and the batch is nil (as it is when a Delete of a key
// not present is ignored). The batch is valid until finish.
//
// Possible errors: [ErrKeyFunc] (nothing queued), [ErrClosed].
func (f *DeltaFIFO[K, T]) changeOrTake(t DeltaType, obj T) ([]Item[K, T], error) {
	return f.write(t, obj, true)
}

// write queues a delta of type t for obj (see change), or, if take and the
// queue is idle, hands it out at once (see changeOrTake).
func (f *DeltaFIFO[K, T]) write(t DeltaType, obj T, take bool) ([]Item[K, T], error) {
	key, err := f.keyOf(obj)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, ErrClosed
	}
	if !f.populated {
		f.populated = true
		f.maybeSyncedLocked()
	}
	if t == Deleted && !f.presentLocked(key) {
		return nil, nil
	}
	d := Delta[T]{Type: t, Object: obj}
	if take && !f.popping && f.queuedLen() == 0 {
		f.order.skip()
		f.arena = append(f.arena[:0], d)
		f.batch = append(f.batch[:0], Item[K, T]{Key: key, Deltas: f.arena[0:1:1]})
		f.popping = true
		f.inflightOK = false
		return f.batch, nil
	}
	if e := f.entryLocked(key); e != nil {
		e.add(d)
	} else {
		f.pushLocked(key, deltaSlot[T]{first: d})
	}
	return nil, nil
}
