package informer

import (
	"fmt"
	"sync"

	"github.com/ginformer/ginformer/internal/safecall"
)

// DeltaFIFOOptions configures [NewDeltaFIFO].
type DeltaFIFOOptions[K comparable, T any] struct {
	// KeyFunc names each object. Required: NewDeltaFIFO fails without it.
	KeyFunc KeyFunc[K, T]

	// KnownObjects is what the consumer already holds (normally the Indexer
	// it writes to). It lets Delete accept keys that are not queued, lets
	// Replace infer deletions of known objects missing from the list, and
	// gives Resync something to resync. Zero (nil): the queue knows only the
	// keys it holds or has handed out and not yet finished; Resync does
	// nothing.
	KnownObjects KnownObjects[K, T]

	// ObjectVersion returns the version of an object's own last change (a
	// Kubernetes resourceVersion, an etcd ModRevision), "" if unknown. With
	// it, a list taken through [DeltaFIFO.BeginList] drops every listed
	// object whose version equals that of the newest state the queue or
	// KnownObjects holds for its key: no Replaced delta is queued for it and
	// the object is not retained, only its key (so it is not taken for
	// deleted). "" never equals anything. It is user code, called without the
	// queue's lock held, on listed objects and on known or queued ones, and
	// must be safe for concurrent use. Zero (nil): every listed object is
	// queued, as [DeltaFIFO.Replace] does.
	ObjectVersion func(obj T) string
}

// DeltaFIFO is a queue of per-key changes between a producer (a reflector
// calling Add, Update, Delete, Replace and Resync) and a consumer (calling
// Pop or PopBatch and applying the changes to its store).
//
// Rules:
//
//   - Keys are served in FIFO order of their first enqueue. While a key is
//     queued, further changes to it are appended to its [Deltas] (oldest
//     first) and the key keeps its place.
//   - Two consecutive Deleted deltas collapse into one: the one that is not
//     FinalStateUnknown is kept; if both or neither are, the newer one. No
//     other deltas are merged.
//   - A key is "present" if it is queued, in flight (handed to a process
//     function that has not returned yet) or, when KnownObjects is set,
//     known. Delete of a key that is not present is ignored.
//   - Process functions run without the queue lock held, so they may call
//     back into the queue. Pop and PopBatch calls are serialized: at most one
//     process function runs at a time (the others wait), so each key's
//     changes are processed in order, one batch at a time.
//   - Close wakes blocked Pops. Items queued at Close remain poppable:
//     nothing is dropped; Pop returns [ErrClosed] only once the queue is
//     closed and empty. Writes after Close return [ErrClosed].
//
// All methods are safe for concurrent use. The zero DeltaFIFO is not usable:
// build one with [NewDeltaFIFO].
type DeltaFIFO[K comparable, T any] struct {
	keyFunc    KeyFunc[K, T]
	known      KnownObjects[K, T] // nil: none
	objVersion func(T) string     // nil: none
	synced     chan struct{}      // closed once HasSynced is true; never replaced

	// mu guards every field below. It is never held while user code (key
	// functions, process functions) runs.
	mu sync.Mutex
	// order holds the queued keys with their deltas, oldest first enqueue
	// at the front. items maps keys to the sequence number of their newest
	// entry in order; use seqLocked to read it. A pop does not delete from
	// items (deleting costs as much as inserting): a mapping below
	// order.head is stale and means "not queued"; take drops stale mappings
	// in bulk. The keys of entries below unindexed (pushed by a Replace into
	// an empty queue, see replaceLocked) are not in items until indexLocked
	// adds them, which every keyed lookup does first.
	order     entryQueue[K, T]
	items     map[K]uint64
	unindexed uint64
	// bulk holds the items of a Replace into an empty queue (nothing
	// queued, in flight or known), built as PopBatch hands them out, ahead
	// of order: they hold the sequence numbers [order.head-len(bulk),
	// order.head). PopBatch hands the slice over whole; anything else that
	// needs the queue's entries calls unbulkLocked first (seqLocked does).
	bulk []Item[K, T]
	peak int    // largest order.len() since items was last made
	gen  uint32 // incremented by each Replace; see slot.gen
	// finished: every entry with a sequence number below it has been popped
	// and the process function it was handed to has returned (set by
	// finish; see sequences).
	finished uint64

	populated   bool   // a first Add/Update/Delete/Replace happened
	initialLeft int    // items of the first Replace not yet processed
	closed      bool   // Close was called
	lastVersion string // version given to the last Replace
	// replaceEnd: every entry with a sequence number below it was queued or
	// touched by the last Replace, and PopBatch hands them out together
	// (see PopBatch). Meaningful while replacePending.
	replaceEnd     uint64
	replacePending bool

	// wake is made by a waiter when it needs one and closed (and reset to
	// nil) by whoever changes what waiters wait for: a key queued, the
	// in-flight batch finished while keys are queued, the queue closed.
	wake chan struct{}

	// popping is true while a Pop or PopBatch has items in flight; batch
	// and arena then hold them (read-only until finish). inflight lazily
	// maps the batch's keys to their last item's index (valid if
	// inflightOK).
	popping    bool
	batch      []Item[K, T]
	arena      []Delta[T]
	inflight   map[K]int
	inflightOK bool
}

// queueEntry is one queued key and its slot.
type queueEntry[K comparable, T any] struct {
	key K
	deltaSlot[T]
}

// deltaSlot is the value of one queued key: its deltas (first inline, so a key
// with one delta allocates nothing) and bookkeeping.
type deltaSlot[T any] struct {
	first Delta[T]
	more  []Delta[T] // the deltas after first, oldest first
	// gen is the Replace generation that last listed this key, so Replace
	// can tell listed keys from others without building a set.
	gen     uint32
	initial bool // the key is part of the first Replace's population
}

// newest returns a pointer to the last delta of s.
func (s *deltaSlot[T]) newest() *Delta[T] {
	if n := len(s.more); n > 0 {
		return &s.more[n-1]
	}
	return &s.first
}

// add appends d to s, collapsing two consecutive Deleted deltas.
func (s *deltaSlot[T]) add(d Delta[T]) {
	if d.Type == Deleted {
		if n := s.newest(); n.Type == Deleted {
			if !d.FinalStateUnknown || n.FinalStateUnknown {
				*n = d
			}
			return
		}
	}
	if s.more == nil {
		s.more = make([]Delta[T], 0, 4)
	}
	s.more = append(s.more, d)
}

// Item is one key handed out by [DeltaFIFO.PopBatch] with its deltas. The
// items of one batch have distinct keys: a key queued once is handed out
// once, whatever its number of deltas (a Replace that lists a key twice
// gives it two Replaced deltas, in list order).
type Item[K comparable, T any] struct {
	// Key is the key of the object the deltas are about.
	Key K
	// Deltas are the key's queued changes, oldest first; never empty.
	Deltas Deltas[T]
	// IsInInitialList is true if the key is part of the first Replace's
	// population (see [DeltaFIFO.HasSynced]).
	IsInInitialList bool
}

// NewDeltaFIFO returns an empty, open DeltaFIFO.
//
// Possible errors: [ErrInvalidOptions] if opts.KeyFunc is nil.
func NewDeltaFIFO[K comparable, T any](opts DeltaFIFOOptions[K, T]) (*DeltaFIFO[K, T], error) {
	if opts.KeyFunc == nil {
		return nil, fmt.Errorf("informer: NewDeltaFIFO: KeyFunc is nil: %w", ErrInvalidOptions)
	}
	return &DeltaFIFO[K, T]{
		keyFunc:    opts.KeyFunc,
		known:      opts.KnownObjects,
		objVersion: opts.ObjectVersion,
		synced:     make(chan struct{}),
		items:      make(map[K]uint64),
	}, nil
}

// keyOf calls the user key function, turning an error or a panic into an
// error wrapping ErrKeyFunc. It must be called without f.mu held.
func (f *DeltaFIFO[K, T]) keyOf(obj T) (K, error) {
	key, err := safecall.Call(f.keyFunc, obj)
	if err != nil {
		return key, fmt.Errorf("%w: %w", ErrKeyFunc, err)
	}
	return key, nil
}

// Add queues an Added delta for obj.
//
// Possible errors: [ErrKeyFunc] (nothing queued), [ErrClosed].
func (f *DeltaFIFO[K, T]) Add(obj T) error { return f.change(Added, obj) }

// Update queues an Updated delta for obj.
//
// Possible errors: [ErrKeyFunc] (nothing queued), [ErrClosed].
func (f *DeltaFIFO[K, T]) Update(obj T) error { return f.change(Updated, obj) }

// Delete queues a Deleted delta for obj (its last known state), unless the
// key is not present (neither queued, in flight, nor known), in which case
// the call is ignored and returns nil. A Deleted right after a Deleted
// collapses into one (see [DeltaFIFO]).
//
// Possible errors: [ErrKeyFunc] (nothing queued), [ErrClosed].
func (f *DeltaFIFO[K, T]) Delete(obj T) error { return f.change(Deleted, obj) }

func (f *DeltaFIFO[K, T]) change(t DeltaType, obj T) error {
	_, err := f.write(t, obj, false)
	return err
}

// presentLocked reports whether key is queued, in flight or known.
func (f *DeltaFIFO[K, T]) presentLocked(key K) bool {
	if _, ok := f.seqLocked(key); ok {
		return true
	}
	if f.inFlightLocked(key) {
		return true
	}
	if f.known != nil {
		_, ok := f.known.Get(key)
		return ok
	}
	return false
}

// entryLocked returns key's queued entry, or nil if the key is not queued.
// The pointer is valid until order is next pushed or popped.
func (f *DeltaFIFO[K, T]) entryLocked(key K) *queueEntry[K, T] {
	seq, ok := f.seqLocked(key)
	if !ok {
		return nil
	}
	return f.order.at(seq)
}

// seqLocked returns the sequence number of key's newest queued entry, and
// whether the key is queued.
func (f *DeltaFIFO[K, T]) seqLocked(key K) (uint64, bool) {
	if f.bulk != nil {
		f.unbulkLocked()
	}
	if f.unindexed > f.order.head {
		f.indexLocked()
	}
	seq, ok := f.items[key]
	return seq, ok && seq >= f.order.head
}

// indexLocked adds the keys of the unindexed entries to items.
func (f *DeltaFIFO[K, T]) indexLocked() {
	for seq := f.order.head; seq < f.unindexed; seq++ {
		f.items[f.order.at(seq).key] = seq
	}
	f.unindexed = 0
}

// unbulkLocked turns the bulk items into queue entries (under the same
// sequence numbers, unindexed), so that they can be looked up, merged into
// and popped one by one.
func (f *DeltaFIFO[K, T]) unbulkLocked() {
	bulk := f.bulk
	f.bulk = nil
	end := f.order.head // order is empty: every push looks keys up first
	f.order.renumber(end - uint64(len(bulk)))
	for i := range bulk {
		it := &bulk[i]
		f.order.push(queueEntry[K, T]{key: it.Key, deltaSlot: deltaSlot[T]{first: it.Deltas[0], gen: f.gen, initial: it.IsInInitialList}})
	}
	f.unindexed = end
}

// queuedLen returns the number of queued items.
func (f *DeltaFIFO[K, T]) queuedLen() int { return f.order.len() + len(f.bulk) }

// pushLocked queues a key that is not queued yet, with slot s, at the tail.
// The caller has looked the key up (so unindexed entries are indexed).
func (f *DeltaFIFO[K, T]) pushLocked(key K, s deltaSlot[T]) {
	f.items[key] = f.order.push(queueEntry[K, T]{key: key, deltaSlot: s})
	if n := f.order.len(); n > f.peak {
		f.peak = n
	}
	f.signalLocked()
}

// signalLocked wakes every waiter.
func (f *DeltaFIFO[K, T]) signalLocked() {
	if f.wake != nil {
		close(f.wake)
		f.wake = nil
	}
}

// maybeSyncedLocked closes the synced channel if the initial population has
// been processed.
func (f *DeltaFIFO[K, T]) maybeSyncedLocked() {
	if f.populated && f.initialLeft == 0 {
		select {
		case <-f.synced:
		default:
			close(f.synced)
		}
	}
}

// inFlightLocked reports whether key is in the batch being processed.
func (f *DeltaFIFO[K, T]) inFlightLocked(key K) bool { return f.inFlightIndexLocked(key) >= 0 }

// inFlightIndexLocked returns the index in f.batch of key's last item, or
// -1 if key is not in flight.
func (f *DeltaFIFO[K, T]) inFlightIndexLocked(key K) int {
	if !f.popping {
		return -1
	}
	if len(f.batch) <= 8 {
		for i := len(f.batch) - 1; i >= 0; i-- {
			if f.batch[i].Key == key {
				return i
			}
		}
		return -1
	}
	if !f.inflightOK {
		if f.inflight == nil {
			f.inflight = make(map[K]int, len(f.batch))
		}
		for i := range f.batch {
			f.inflight[f.batch[i].Key] = i
		}
		f.inflightOK = true
	}
	if i, ok := f.inflight[key]; ok {
		return i
	}
	return -1
}

// HasSynced reports whether the initial population has been processed: true
// once every key queued by the first Replace has been popped and its process
// function has returned (with anything but ErrRequeue), or as soon as an Add,
// Update or Delete arrives before any Replace. It never reverts to false.
func (f *DeltaFIFO[K, T]) HasSynced() bool {
	select {
	case <-f.synced:
		return true
	default:
		return false
	}
}

// Synced returns a channel closed when HasSynced becomes true; it is never
// closed otherwise (not even by Close). Every call returns the same channel.
func (f *DeltaFIFO[K, T]) Synced() <-chan struct{} { return f.synced }

// Len returns the number of keys queued (not counting in-flight ones).
func (f *DeltaFIFO[K, T]) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.queuedLen()
}

// sequences returns the sequence number the next queued entry will get
// (tail) and the one below which every entry has been popped and processed
// (finished). Each change a write makes lands in an entry numbered below the
// tail read after the write: the entry the key already had, or a new one.
// So once finished reaches that tail, every process function that was
// handed the change has returned.
//
// A requeue (ErrRequeue, or a panicking process function) may put deltas
// back under a later sequence number while finished counts their old one as
// processed: a consumer relying on sequences must not requeue (the
// informer's processing loop never does).
func (f *DeltaFIFO[K, T]) sequences() (tail, finished uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.order.tail, f.finished
}

// LastVersion returns the version given to the last successful Replace, or
// "" if there was none.
func (f *DeltaFIFO[K, T]) LastVersion() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastVersion
}

// Close closes the queue: blocked Pop and PopBatch calls wake up, writes
// return [ErrClosed] from now on, and Pop returns ErrClosed once the items
// still queued have been popped. Close is idempotent.
func (f *DeltaFIFO[K, T]) Close() {
	f.mu.Lock()
	f.closed = true
	f.signalLocked()
	f.mu.Unlock()
}
