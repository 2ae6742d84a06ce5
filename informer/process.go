package informer

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"
)

// The processing loop: queue → cache → handlers.
//
// It pops batches of keys off the DeltaFIFO. For each batch it first
// prepares the cache writes (running key and index functions, no lock held),
// then, holding inf.mu, commits every write to the Indexer under one write
// lock and queues the resulting notifications to every handler, and releases
// inf.mu. Handlers run on their own goroutines. Because notifications are
// derived from the state each key had in the cache just before the commit,
// every handler sees a consistent sequence per key, and a handler registered
// between two batches (AddHandler also takes inf.mu) sees neither a gap nor a
// duplicate.

// processLoop runs until ctx is done or the queue is closed.
func (inf *SharedInformer[K, T]) processLoop(ctx context.Context) {
	var p batchProcessor[K, T]
	for {
		err := inf.fifo.PopBatch(ctx, inf.batch, func(batch []Item[K, T]) error {
			inf.processBatch(&p, batch)
			return nil
		})
		if err != nil {
			if errors.Is(err, ErrClosed) || ctx.Err() != nil {
				return
			}
			inf.report(fmt.Errorf("informer %q: process: %w", inf.name, err))
		}
		inf.metrics.QueueDepth(inf.name, inf.fifo.Len())
	}
}

// batchProcessor holds the buffers the processing loop reuses between
// batches, so a steady stream of events allocates nothing for bookkeeping.
type batchProcessor[K comparable, T any] struct {
	writes []write[K, T]
	deltas []Deltas[T] // per write: the deltas to notify
	initia []bool      // per write: part of the initial list
	notes  []notification[K, T]
	syncs  []bool // per note: a resync (only for handlers due)
}

func (inf *SharedInformer[K, T]) processBatch(p *batchProcessor[K, T], batch []Item[K, T]) {
	start := time.Now()
	p.writes, p.deltas, p.initia = p.writes[:0], p.deltas[:0], p.initia[:0]
	for _, it := range batch {
		ds := it.Deltas
		if len(ds) == 0 {
			continue
		}
		w := write[K, T]{key: it.Key, del: true}
		if last := ds[len(ds)-1]; last.Type != Deleted {
			if err := inf.indexer.prepareUpsert(&w, last.Object); err != nil {
				// The newest state cannot be cached. Keep what the deltas
				// up to the last deletion say (a deletion is never lost);
				// without one, leave the key as it is.
				inf.metrics.Error(inf.name, ErrorClassStore)
				inf.report(fmt.Errorf("informer %q: cache %v: %w", inf.name, it.Key, err))
				d := lastDeletion(ds)
				if d < 0 {
					continue
				}
				ds = ds[:d+1]
				w = write[K, T]{key: it.Key, del: true}
			}
		}
		p.writes = append(p.writes, w)
		p.deltas = append(p.deltas, ds)
		p.initia = append(p.initia, it.IsInInitialList)
	}
	defer inf.indexer.release(p.writes)

	inf.mu.Lock()
	defer inf.mu.Unlock()
	if err := inf.indexer.commit(p.writes); err != nil {
		// Only possible when AddIndexes ran meanwhile and a new index
		// refuses an object: apply the writes one by one, skipping those.
		inf.commitEach(p.writes)
	}
	p.notes, p.syncs = p.notes[:0], p.syncs[:0]
	for i := range p.writes {
		w := &p.writes[i]
		if w.failed {
			continue
		}
		p.appendNotes(w.key, w.old, w.hadOld, p.deltas[i], p.initia[i])
	}
	for _, l := range inf.listeners {
		resync := false
		for _, s := range p.syncs {
			if s {
				resync = inf.resyncing(l)
				break
			}
		}
		l.mu.Lock()
		for j, n := range p.notes {
			if !p.syncs[j] || resync {
				l.enqueueLocked(n)
			}
		}
		backlog := l.backlogLocked()
		l.mu.Unlock()
		l.signal()
		inf.metrics.HandlerBacklog(inf.name, l.name, backlog)
	}
	inf.metrics.ProcessingLatency(inf.name, time.Since(start))
}

// commitEach commits writes one at a time, marking those refused.
func (inf *SharedInformer[K, T]) commitEach(ws []write[K, T]) {
	for i := range ws {
		if err := inf.indexer.commit(ws[i : i+1]); err != nil {
			ws[i].failed = true
			inf.metrics.Error(inf.name, ErrorClassStore)
			inf.report(fmt.Errorf("informer %q: cache %v: %w", inf.name, ws[i].key, err))
		}
	}
}

// appendNotes turns one key's deltas into notifications, starting from the
// state the cache held for the key before the commit (old, if hadOld).
func (p *batchProcessor[K, T]) appendNotes(key K, old T, hadOld bool, ds Deltas[T], initial bool) {
	prev, has := old, hadOld
	for _, d := range ds {
		switch d.Type {
		case Deleted:
			if has {
				p.notes = append(p.notes, notification[K, T]{kind: noteDelete, key: key, obj: d.Object, unknown: d.FinalStateUnknown})
				p.syncs = append(p.syncs, false)
			}
			var zero T
			prev, has = zero, false
		default: // Added, Updated, Replaced, Sync
			if has {
				p.notes = append(p.notes, notification[K, T]{kind: noteUpdate, key: key, old: prev, obj: d.Object})
				p.syncs = append(p.syncs, d.Type == Sync)
			} else {
				p.notes = append(p.notes, notification[K, T]{kind: noteAdd, key: key, obj: d.Object, initial: initial})
				p.syncs = append(p.syncs, false)
			}
			prev, has = d.Object, true
		}
	}
}

// lastDeletion returns the index of the last Deleted delta, or -1.
func lastDeletion[T any](ds Deltas[T]) int {
	for i := len(ds) - 1; i >= 0; i-- {
		if ds[i].Type == Deleted {
			return i
		}
	}
	return -1
}

// transformingStore is the informer's [ReflectorStore]: it applies the
// user's transform (no lock held), then queues into the DeltaFIFO.
type transformingStore[K comparable, T any] struct {
	fifo      *DeltaFIFO[K, T]
	transform func(T) (T, error)
	inf       *SharedInformer[K, T]
}

func (s *transformingStore[K, T]) apply(obj T) (out T, err error) {
	if s.transform == nil {
		return obj, nil
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: panic: %v\n%s", ErrTransform, p, debug.Stack())
		}
	}()
	out, err = s.transform(obj)
	if err != nil {
		return out, fmt.Errorf("%w: %w", ErrTransform, err)
	}
	return out, nil
}

func (s *transformingStore[K, T]) Add(obj T) error {
	obj, err := s.apply(obj)
	if err != nil {
		return err
	}
	return s.fifo.Add(obj)
}

func (s *transformingStore[K, T]) Update(obj T) error {
	obj, err := s.apply(obj)
	if err != nil {
		return err
	}
	return s.fifo.Update(obj)
}

// Delete never drops a deletion: if the transform fails, the object goes
// into the queue untransformed (and the failure is still reported).
func (s *transformingStore[K, T]) Delete(obj T) error {
	out, err := s.apply(obj)
	if err != nil {
		return errors.Join(err, s.fifo.Delete(obj))
	}
	return s.fifo.Delete(out)
}

// Replace transforms every listed object; one that fails is reported and
// left out of the list.
func (s *transformingStore[K, T]) Replace(objs []T, version string) error {
	var errs []error
	if s.transform != nil {
		out := objs[:0]
		for _, obj := range objs {
			t, err := s.apply(obj)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, t)
		}
		objs = out
	}
	for _, err := range errs {
		s.inf.metrics.Error(s.inf.name, ErrorClassStore)
		s.inf.report(fmt.Errorf("informer %q: list at version %q: %w", s.inf.name, version, err))
	}
	return s.fifo.Replace(objs, version)
}

func (s *transformingStore[K, T]) Resync() error { return s.fifo.Resync() }
