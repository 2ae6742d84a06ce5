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
// handler, and releases inf.mu. Handlers run on their own goroutines. Because notifications are derived from the
// state each key had in the cache just before the commit, every handler sees
// a consistent sequence per key, and a handler registered between two
// batches (AddHandler also takes inf.mu) sees neither a gap nor a duplicate.
//
// The direct hand-off. A watch event that arrives while the queue is idle
// (nothing queued, no batch in flight) and no other event is already
// waiting on the stream is not queued for the loop: the reflector's
// goroutine takes it as a batch of one (DeltaFIFO.changeOrTake) and runs the
// same processBatch on it, so a lone event reaches its handlers after two
// goroutine wake-ups instead of three. Holding the FIFO's in-flight batch is
// the processing token: while the reflector's goroutine holds it the loop
// cannot pop (and nothing is queued for it anyway), and while the loop holds
// one the reflector queues. Ordering, atomicity, metrics and versions are
// therefore those of the loop (see fifo_direct.go). When events come faster
// than they are processed, the reflector sees the next one waiting and
// queues, so that reading the stream and processing it go on in parallel.
// The price: while the reflector's goroutine runs a lone event's index
// functions (as while it runs the transform) it does not read the stream;
// the events that arrive meanwhile find the stream busy and are queued.

// processLoop runs until ctx is done or the queue is closed. It pops as
// PopBatch does, but keeps what finish returns: the queue's depth for
// Metrics and the finished sequence number for the version tracker, with no
// further hold of the queue's lock.
func (inf *SharedInformer[K, T]) processLoop(ctx context.Context) {
	for {
		batch, err := inf.fifo.take(ctx, inf.batch, true)
		if err != nil {
			return // ctx is done or the queue is closed: take fails for nothing else
		}
		depth, finished, _ := inf.fifo.process(batch, func(batch []Item[K, T]) error {
			inf.processBatch(&inf.proc, batch, false)
			return nil
		})
		inf.versions.advanceTo(finished) // the batch is committed: its versions are applied
		inf.metrics.QueueDepth(inf.name, depth)
	}
}

// processTaken processes a batch handed out by DeltaFIFO.changeOrTake, as
// the loop does a batch it took. Then it records version (if not ""), which
// is applied at once: the batch is finished and nothing else was queued or
// in flight. It wakes the handlers last, just before the
// reflector's goroutine goes back to waiting on the stream, so that the
// handler's goroutine runs on the processor it is woken on rather than
// being moved to another one while the reflector's goroutine finishes.
//
// Only the reflector's goroutine calls it (through applyEvent), one call at
// a time: inf.directWake is its own.
func (inf *SharedInformer[K, T]) processTaken(batch []Item[K, T], version string) {
	depth, _, _ := inf.fifo.process(batch, func(batch []Item[K, T]) error {
		inf.processBatch(&inf.proc, batch, true)
		// inf.proc belongs to the processing loop again after finish: keep
		// the handlers to wake apart.
		p := &inf.proc
		p.wake, inf.directWake = inf.directWake[:0], p.wake
		return nil
	})
	inf.versions.record(version)
	for _, l := range inf.directWake {
		l.signal()
	}
	clear(inf.directWake)
	inf.metrics.QueueDepth(inf.name, depth)
}

// batchProcessor holds the buffers the processing loop reuses between
// batches, so a steady stream of events allocates nothing for bookkeeping.
type batchProcessor[K comparable, T any] struct {
	writes []write[K, T]
	deltas []Deltas[T] // per write: the deltas to notify
	initia []bool      // per write: part of the initial list
	syncs  []bool      // per note of the batch being built: a resync (only for handlers due)

	refused  []error           // writes refused at commit
	notified []*listener[K, T] // the handlers whose backlog to report
	wake     []*listener[K, T] // the handlers to wake: see wakeHandlers
	pool     sync.Pool         // of *noteBatch[K, T], shared with the handlers that release them
}

// wakeHandlers wakes the handler goroutines that processBatch queued work
// for while they waited.
func (p *batchProcessor[K, T]) wakeHandlers() {
	for _, l := range p.wake {
		l.signal()
	}
	clear(p.wake)
	p.wake = p.wake[:0]
}

// processBatch applies batch to the cache and queues its notifications to
// the handlers. The processing loop's call (direct false) wakes the handlers
// as soon as the commit is done; the direct hand-off's (direct true) leaves
// that to its caller, to do last (see processTaken).
func (inf *SharedInformer[K, T]) processBatch(p *batchProcessor[K, T], batch []Item[K, T], direct bool) {
	start := monoNow() // the monotonic clock only: half the cost of time.Now
	inf.prepareBatch(p, batch)
	defer p.release(inf.indexer)
	if inf.mutations != nil {
		inf.mutations.copyWrites(p.writes) // before anyone can see the objects
	}

	inf.mu.Lock()
	inf.commitLocked(p, relistBatch(batch))
	p.notified = append(p.notified[:0], inf.listeners...)
	if len(inf.listeners) > 0 {
		inf.notifyLocked(p, inf.listeners)
	}
	inf.mu.Unlock()

	// Reports go out after the lock is released: they may run user code.
	if !direct {
		p.wakeHandlers()
	}
	if inf.mutations != nil {
		inf.mutations.committed(p.writes)
	}
	for _, err := range p.refused {
		inf.report(ErrorClassStore, err)
	}
	for _, l := range p.notified {
		l.reportBacklog()
	}
	clear(p.notified) // a removed handler is not kept until the next batch
	inf.metrics.ProcessingLatency(inf.name, time.Duration(monoNow()-start))
}

// prepareBatch prepares the cache writes of batch into p.writes (with each
// one's deltas and initial-list flag), running key and index functions with
// no lock held. A key whose newest state cannot be cached is reported, and
// keeps the newest earlier state that can (a deletion always can, so none
// is ever lost); with none, the key is left as the cache has it.
func (inf *SharedInformer[K, T]) prepareBatch(p *batchProcessor[K, T], batch []Item[K, T]) {
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
}

// commitLocked commits p.writes to the Indexer (atomically for a relist).
// If AddIndexes ran since the writes were prepared, it releases inf.mu to
// compute the new indexes' values with no lock held, then tries again; a
// write that a new index refuses is skipped, its error kept in p.refused.
// The caller holds inf.mu.
func (inf *SharedInformer[K, T]) commitLocked(p *batchProcessor[K, T], atomic bool) {
	p.refused = p.refused[:0]
	for {
		defs := inf.indexer.tryCommit(p.writes, atomic)
		if defs == nil {
			return
		}
		inf.mu.Unlock()
		for _, err := range inf.indexer.reprepare(p.writes, defs, nil) {
			p.refused = append(p.refused, fmt.Errorf("informer %q: cache: %w", inf.name, err))
		}
		inf.mu.Lock()
	}
}

// notifyLocked queues the notifications of the committed writes, one shared
// copy for every handler (see noteBatch), built in place, and notes the
// handlers to wake in p.wake. The caller holds inf.mu.
func (inf *SharedInformer[K, T]) notifyLocked(p *batchProcessor[K, T], listeners []*listener[K, T]) {
	b := getBatch[K, T](&p.pool)
	b.notes = slices.Grow(b.notes, len(p.writes))
	p.syncs = slices.Grow(p.syncs[:0], len(p.writes))
	for i := range p.writes {
		w := &p.writes[i]
		if w.failed {
			continue
		}
		b.notes = p.appendNotes(b.notes, w.key, w.old, w.hadOld, p.deltas[i], p.initia[i])
	}
	anySync := false
	for _, s := range p.syncs {
		if s {
			anySync = true
			b.nsync++
		}
	}
	if anySync {
		b.syncs = append(b.syncs[:0], p.syncs...)
	} else {
		b.syncs = nil
	}
	if len(b.notes) > 0 {
		for _, l := range listeners {
			if l.enqueueBatch(b, anySync && inf.resyncing(l)) {
				p.wake = append(p.wake, l)
			}
		}
	}
	b.release()
	if cap(p.syncs) > maxKeptBatch {
		p.syncs = nil
	}
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

// appendNotes turns one key's deltas into notifications appended to notes
// (and whether each is a resync to p.syncs), starting from the state the
// cache held for the key before the commit (old, if hadOld). It returns the
// extended notes.
func (p *batchProcessor[K, T]) appendNotes(notes []notification[K, T], key K, old T, hadOld bool, ds Deltas[T], initial bool) []notification[K, T] {
	prev, has := old, hadOld
	for _, d := range ds {
		switch d.Type {
		case Deleted:
			if has {
				notes = append(notes, notification[K, T]{kind: noteDelete, key: key, obj: d.Object, unknown: d.FinalStateUnknown})
				p.syncs = append(p.syncs, false)
			}
			var zero T
			prev, has = zero, false
		default: // Added, Updated, Replaced, Sync
			if has {
				notes = append(notes, notification[K, T]{kind: noteUpdate, key: key, old: prev, obj: d.Object})
				p.syncs = append(p.syncs, d.Type == Sync)
			} else {
				notes = append(notes, notification[K, T]{kind: noteAdd, key: key, obj: d.Object, initial: initial})
				p.syncs = append(p.syncs, false)
			}
			prev, has = d.Object, true
		}
	}
	return notes
}

// transformingStore is the informer's [ReflectorStore]: it applies the
// user's transform (no lock held), then queues into the DeltaFIFO. It is an
// eventApplier: the versions the reflector reaches (and those of lists) go
// to the informer's version tracker, for WaitForVersion.
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

func (s *transformingStore[K, T]) Add(obj T) error { return s.applyEvent(EventAdded, obj, "", true) }

func (s *transformingStore[K, T]) Update(obj T) error {
	return s.applyEvent(EventModified, obj, "", true)
}

func (s *transformingStore[K, T]) Delete(obj T) error {
	return s.applyEvent(EventDeleted, obj, "", true)
}

// applyEvent applies one watch event (t is EventAdded, EventModified or
// EventDeleted) received at version (possibly ""), and records the version
// for WaitForVersion: it transforms obj, then queues it, or, unless more
// events are waiting (more), processes it at once on the caller's goroutine
// if the queue is idle (see "The direct hand-off" above). A deletion is
// never dropped: if the transform fails, the untransformed object is used
// (and the failure still reported).
func (s *transformingStore[K, T]) applyEvent(t EventType, obj T, version string, more bool) error {
	dt := Deleted
	switch t {
	case EventAdded:
		dt = Added
	case EventModified:
		dt = Updated
	}
	out, terr := s.apply(obj)
	if terr != nil && dt != Deleted {
		s.inf.versions.record(version)
		return terr
	}
	if terr != nil {
		out = obj
	}
	var err error
	if more {
		err = s.fifo.change(dt, out)
	} else {
		var batch []Item[K, T]
		if batch, err = s.fifo.changeOrTake(dt, out); batch != nil {
			s.inf.processTaken(batch, version)
			version = "" // recorded
		}
	}
	s.inf.versions.record(version)
	if terr != nil {
		return errors.Join(terr, err)
	}
	return err
}

// recordVersion is called by the reflector for each bookmark (the versions
// of events are recorded by applyEvent).
func (s *transformingStore[K, T]) recordVersion(version string) { s.inf.versions.record(version) }

func (s *transformingStore[K, T]) Resync() error { return s.fifo.Resync() }
