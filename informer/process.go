package informer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ginformer/ginformer/internal/safecall"
)

// The processing loop: queue → cache → handlers.
//
// It pops batches of keys off the DeltaFIFO. For each batch it first
// prepares the cache writes (running key and index functions, no lock held),
// then, holding inf.mu, commits every write to the Indexer (in chunks of a
// few dozen writes, releasing the Indexer's lock between them so that a
// reader waits for one chunk at most; a batch carrying a relist under one
// lock, see relistBatch) and queues the resulting notifications to every
// handler, and releases inf.mu. Handlers run on their own goroutines. Because notifications are
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
			inf.report(ErrorClassStore, fmt.Errorf("informer %q: process: %w", inf.name, err))
		}
		inf.versions.advance() // the batch is committed: its versions are applied
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

	refused  []error           // writes refused at commit
	notified []*listener[K, T] // the handlers whose backlog to report
	pool     sync.Pool         // of *noteBatch[K, T], shared with the handlers that release them
}

func (inf *SharedInformer[K, T]) processBatch(p *batchProcessor[K, T], batch []Item[K, T]) {
	start := time.Now()
	p.writes, p.deltas, p.initia = slices.Grow(p.writes[:0], len(batch)), slices.Grow(p.deltas[:0], len(batch)), slices.Grow(p.initia[:0], len(batch))
	pre := inf.indexer.prepareItems(batch) // nil unless a large batch (a list)
	for i, it := range batch {
		ds := it.Deltas
		if len(ds) == 0 {
			continue
		}
		w := write[K, T]{key: it.Key, del: true}
		if last := ds[len(ds)-1]; last.Type != Deleted {
			var err error
			if pre != nil {
				w, err = pre.take(i)
			} else {
				err = inf.indexer.prepareKeyed(&w, last.Object)
			}
			if err != nil {
				// The newest state cannot be cached: report it, and keep
				// the newest earlier state that can (a deletion always
				// can, so none is ever lost). With none, the key is left
				// as the cache has it.
				inf.report(ErrorClassStore, fmt.Errorf("informer %q: cache %v: %w", inf.name, it.Key, err))
				var ok bool
				if ds, ok = inf.storablePrefix(&w, ds[:len(ds)-1]); !ok {
					continue
				}
			}
		}
		p.writes = append(p.writes, w)
		p.deltas = append(p.deltas, ds)
		p.initia = append(p.initia, it.IsInInitialList)
	}
	defer p.release(inf.indexer)

	p.refused = p.refused[:0]
	inf.mu.Lock()
	for {
		defs := inf.indexer.tryCommit(p.writes, relistBatch(batch))
		if defs == nil {
			break
		}
		// AddIndexes ran since the writes were prepared: compute the new
		// indexes' values with no lock held, then try again. A write that
		// a new index refuses is skipped (and reported).
		inf.mu.Unlock()
		for _, err := range inf.indexer.reprepare(p.writes, defs, nil) {
			p.refused = append(p.refused, fmt.Errorf("informer %q: cache: %w", inf.name, err))
		}
		inf.mu.Lock()
	}
	p.notes, p.syncs = slices.Grow(p.notes[:0], len(p.writes)), slices.Grow(p.syncs[:0], len(p.writes))
	for i := range p.writes {
		w := &p.writes[i]
		if w.failed {
			continue
		}
		p.appendNotes(w.key, w.old, w.hadOld, p.deltas[i], p.initia[i])
	}
	anySync := slices.Contains(p.syncs, true)
	p.notified = append(p.notified[:0], inf.listeners...)
	if len(p.notes) > 0 && len(inf.listeners) > 0 {
		// One shared copy of the notes for every handler (see noteBatch).
		b := getBatch[K, T](&p.pool)
		b.notes = append(b.notes, p.notes...)
		if anySync {
			b.syncs = append(b.syncs, p.syncs...)
			for _, s := range p.syncs {
				if s {
					b.nsync++
				}
			}
		} else {
			b.syncs = nil
		}
		for _, l := range inf.listeners {
			l.enqueueBatch(b, anySync && inf.resyncing(l))
		}
		b.release()
	}
	inf.mu.Unlock()

	// Reports go out after the lock is released: they may run user code.
	for _, err := range p.refused {
		inf.report(ErrorClassStore, err)
	}
	for _, l := range p.notified {
		l.reportBacklog()
	}
	clear(p.notified) // a removed handler is not kept until the next batch
	inf.metrics.ProcessingLatency(inf.name, time.Since(start))
}

// maxKeptBatch is the largest batch (in writes or notifications) whose
// buffers the processor keeps for the next batch. A relist is processed as
// one batch of the whole list: its buffers are dropped afterwards so that
// they do not stay in the heap, sized for the whole collection, for ever.
const maxKeptBatch = 1 << 12

// release returns the writes' scratch space to the indexer and clears the
// buffers' references to objects, dropping buffers grown by a large batch.
func (p *batchProcessor[K, T]) release(s *Indexer[K, T]) {
	s.release(p.writes)
	if cap(p.writes) > maxKeptBatch {
		p.writes, p.deltas, p.initia = nil, nil, nil
	} else {
		clear(p.writes)
		clear(p.deltas)
	}
	if cap(p.notes) > maxKeptBatch {
		p.notes, p.syncs = nil, nil
	} else {
		clear(p.notes)
	}
}

// storablePrefix shortens ds to its longest prefix whose last delta can be
// cached (a deletion, or an object the index functions accept), preparing w
// for it. It reports false if no such prefix exists.
func (inf *SharedInformer[K, T]) storablePrefix(w *write[K, T], ds Deltas[T]) (Deltas[T], bool) {
	for i := len(ds) - 1; i >= 0; i-- {
		if ds[i].Type == Deleted {
			*w = write[K, T]{key: w.key, del: true}
			return ds[:i+1], true
		}
		*w = write[K, T]{key: w.key, del: true}
		if inf.indexer.prepareKeyed(w, ds[i].Object) == nil {
			return ds[:i+1], true
		}
	}
	return nil, false
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

// transformingStore is the informer's [ReflectorStore]: it applies the
// user's transform (no lock held), then queues into the DeltaFIFO. It is a
// [VersionRecorder]: the versions the reflector reaches (and those of lists)
// go to the informer's version tracker, for WaitForVersion.
type transformingStore[K comparable, T any] struct {
	fifo      *DeltaFIFO[K, T]
	transform func(T) (T, error)
	inf       *SharedInformer[K, T]
}

func (s *transformingStore[K, T]) apply(obj T) (T, error) {
	if s.transform == nil {
		return obj, nil
	}
	out, err := safecall.Call(s.transform, obj)
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

// RecordVersion is called by the reflector after each watch event it
// applied (or failed to: the cache then goes without that object), bookmarks
// included.
func (s *transformingStore[K, T]) RecordVersion(version string) { s.inf.versions.record(version) }

func (s *transformingStore[K, T]) Resync() error { return s.fifo.Resync() }
