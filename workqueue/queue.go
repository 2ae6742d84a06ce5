package workqueue

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ginformer/ginformer/internal/ringbuf"
)

// Queue is a work queue of keys for reconcilers: the typed counterpart of
// client-go's workqueue.TypedRateLimitingInterface, with the same contract.
//
//   - Deduplication. A key is queued at most once: adding a key that is
//     already queued does nothing.
//   - One worker per key. A key handed out by [Queue.Get] is not handed out
//     again before [Queue.Done]. Adding it meanwhile marks it to be queued
//     again at Done: the change is never lost, and never processed by two
//     workers at once.
//   - Order. Keys are handed out in the order they were queued (a key
//     re-added while in progress is queued at its Done).
//   - Retries. [Queue.AddRateLimited] queues a key after a per-key
//     exponential backoff with jitter (see [Backoff]), and, unless
//     [Options.RetryBudget] turns it off, no sooner than the queue's
//     overall retry rate allows; [Queue.Forget] resets the key's backoff.
//     [Queue.AddAfter] queues a key after a delay; a key waiting for
//     several delays is queued once, at the earliest.
//   - Shutdown. [Queue.ShutDown] drops what is queued and waiting;
//     [Queue.Drain] lets the workers finish it.
//
// A key that is neither queued, in progress, waiting for a delay nor
// counting failures has no state in the queue. The memory of the largest
// backlog (about 60 bytes per key with a NamespacedKey) is kept for reuse,
// as a Go map keeps its buckets. Queueing, handing out and finishing a key
// allocate nothing once the queue has grown (keys that are strings,
// integers, or structs of them, are hashed without allocating).
//
// All methods are safe for concurrent use, and none calls user code (its
// [Metrics]) with the queue's lock held. The queue starts no goroutine of
// its own, so there is nothing to run or stop: delays run on a
// [time.AfterFunc] timer, which [Queue.ShutDown] and [Queue.Drain] stop,
// and, with metrics, samples on another that stops when the queue is idle.
//
// The zero Queue is ready to use, with the default [Options]. A Queue must
// not be copied after first use.
type Queue[K comparable] struct {
	name    string
	metrics Metrics // nil: none, and no clock reads on the hot paths
	backoff Backoff // defaults applied

	// mu guards every field below. No user code runs under it.
	mu      sync.Mutex
	inited  bool
	epoch   time.Time           // the origin of the int64 times below (monotonic)
	keys    keyIndex            // key → its slot in entries, for every key the queue has state for
	entries slab[K]             // per-key state, addressed by slot
	ready   ringbuf.Ring[int32] // slots queued for a worker, oldest first
	delayed []delayItem         // keys waiting for AddAfter or AddRateLimited: a min-heap on (due, seq)
	timer   *time.Timer         // fires at the earliest delay; nil until the first AddAfter
	timerAt int64               // when timer is set to fire; 0: not set
	seq     uint64              // orders delays falling due at the same instant
	working int                 // keys handed out and not yet done
	requeue int                 // keys in progress that are to be queued again at Done
	procs   []int32             // with metrics: the slots in progress, for UnfinishedWork
	state   queueState          // running, draining or stopped
	sleep   int                 // Get callers asleep that no token in wake is for (see getWait)
	woken   int                 // tokens sent whose receiver has not locked q yet
	wake    chan struct{}       // tokens for sleeping Get callers
	final   chan struct{}       // closed once no key will be queued any more (shut down, no requeue pending)
	idle    chan struct{}       // closed once shut down with nothing queued or in progress
	closed  uint8               // closedFinal, closedIdle: which of final and idle are closed
	sampler *time.Timer         // the metrics sampler; nil until first armed
	armed   bool                // sampler is set to fire

	// failing counts the keys with failures; written under mu, read
	// without it so that Forget and NumRequeues of a queue where nothing
	// fails take no lock.
	failing atomic.Int32

	// budget is the RetryBudget's bucket (zero: off), guarded by mu; last,
	// so that the fields of the hot paths keep their places.
	budget tokenBucket
}

// entry is the state of one key: 48 bytes with a NamespacedKey. What only
// some keys need lives elsewhere: delays in the heap, metric times in
// parallel chunks of the slab.
type entry[K comparable] struct {
	key      K
	hash     uint32 // the key's hash in keys
	failures int32  // AddRateLimited calls since the last Forget
	heapPos  int32  // 1 + the key's index in the delay heap; 0: not waiting (a free entry: the next free slot)
	flags    uint8
}

// entryTimes are an entry's metric times, kept only with metrics.
type entryTimes struct {
	addedAt int64 // when the key was queued
	startAt int64 // when the key was handed out
	procPos int32 // 1 + the key's index in procs; 0: not listed
}

const (
	pending    uint8 = 1 << iota // the key is to be processed: queued, or queued again at Done
	processing                   // the key is handed out, Done not called yet
)

type queueState uint8

const (
	running  queueState = iota
	draining            // Drain called: no adds; queued keys still handed out
	stopped             // ShutDown called: nothing handed out any more
)

const (
	closedFinal uint8 = 1 << iota
	closedIdle
)

// wakeTokens bounds the buffered wake-ups: more sleeping Get callers than
// this are woken in a chain, each waking the next (see signalLocked).
const wakeTokens = 256

// New returns an empty queue configured by opts.
//
// Possible errors: [ErrInvalidOptions].
func New[K comparable](opts Options) (*Queue[K], error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	q := &Queue[K]{}
	q.setup(opts)
	return q, nil
}

// setup initializes q with opts, which have their defaults.
func (q *Queue[K]) setup(opts Options) {
	q.name = opts.Name
	q.metrics = opts.Metrics
	q.entries.timed = opts.Metrics != nil
	q.backoff = opts.Backoff
	q.budget = newTokenBucket(opts.RetryBudget)
	q.epoch = time.Now()
	q.wake = make(chan struct{}, wakeTokens)
	q.final = make(chan struct{})
	q.idle = make(chan struct{})
	q.inited = true
}

// lockInit locks q and, for a zero Queue, sets it up with the default
// options.
func (q *Queue[K]) lockInit() {
	q.mu.Lock()
	if !q.inited {
		opts, _ := Options{}.withDefaults()
		q.setup(opts)
	}
}

// Name returns the queue's name.
func (q *Queue[K]) Name() string {
	q.lockInit()
	defer q.mu.Unlock()
	return q.name
}

// nowLocked returns the monotonic time since the queue's epoch.
func (q *Queue[K]) nowLocked() int64 { return int64(time.Since(q.epoch)) }

// Add queues key, unless it is already queued. If key is in progress (handed
// out by Get, Done not called yet), it is queued again when Done is called.
// After ShutDown or Drain, Add does nothing.
func (q *Queue[K]) Add(key K) {
	slot, ok := q.lockRunningSlot(key)
	if !ok {
		return
	}
	added := q.addLocked(slot)
	m := q.metrics
	q.mu.Unlock()
	if added && m != nil {
		m.Added(q.name)
	}
}

// lockRunningSlot locks q and returns key's slot, allocating one if needed.
// If q is shut down or draining it unlocks q and returns false instead.
func (q *Queue[K]) lockRunningSlot(key K) (int32, bool) {
	h := hashKey(key)
	q.lockInit()
	if q.state != running {
		q.mu.Unlock()
		return 0, false
	}
	return q.slotLocked(key, h), true
}

// slotLocked returns the slot of key, whose hash is h, making one if the
// key has none.
func (q *Queue[K]) slotLocked(key K, h uint32) int32 {
	q.keys.ensureRoom()
	pos, found := find(&q.keys, &q.entries, key, h)
	if found {
		return int32(pos)
	}
	slot := q.entries.alloc()
	*q.entries.at(slot) = entry[K]{key: key, hash: h}
	q.keys.insertAt(pos, h, slot)
	return slot
}

// addLocked marks the key in slot pending and queues it unless it is in
// progress. It reports whether the key was not pending already.
func (q *Queue[K]) addLocked(slot int32) bool {
	e := q.entries.at(slot)
	if e.flags&pending != 0 {
		return false
	}
	e.flags |= pending
	if q.metrics != nil {
		q.entries.timesAt(slot).addedAt = q.nowLocked()
		q.armSamplerLocked()
	}
	if e.flags&processing != 0 {
		q.requeue++
		return true
	}
	q.ready.Push(slot)
	q.signalLocked()
	return true
}

// releaseLocked forgets the key in slot if the queue has nothing left to do
// with it.
func (q *Queue[K]) releaseLocked(slot int32) {
	e := q.entries.at(slot)
	if e.flags != 0 || e.heapPos != 0 || e.failures != 0 {
		return
	}
	q.keys.remove(e.hash, slot)
	q.entries.release(slot)
}

// Get hands out the oldest queued key, waiting for one if none is queued.
// The caller owns the key until it calls [Queue.Done] with it: no other Get
// returns it meanwhile.
//
// Get returns the zero K and false when ctx is done (checked first: a done
// ctx returns false even if keys are queued), after [Queue.ShutDown], and
// after [Queue.Drain] once every queued key has been handed out. A worker
// loop ends when Get returns false.
func (q *Queue[K]) Get(ctx context.Context) (key K, ok bool) {
	if ctx.Err() != nil {
		return key, false
	}
	q.lockInit()
	for {
		if slot, ok := q.ready.Pop(); ok {
			return q.handOutLocked(slot), true // unlocks
		}
		if q.closed&closedFinal != 0 {
			q.mu.Unlock()
			return key, false
		}
		if !q.getWait(ctx) { // unlocks, and locks again if it returns true
			return key, false
		}
	}
}

// handOutLocked moves the key in slot, just taken off the ready ring, to in
// progress, wakes another sleeper if more keys are queued, unlocks q, and
// returns the key.
func (q *Queue[K]) handOutLocked(slot int32) K {
	e := q.entries.at(slot)
	e.flags = e.flags&^pending | processing
	q.working++
	key := e.key
	m := q.metrics
	var waited time.Duration
	if m != nil {
		now := q.nowLocked()
		tm := q.entries.timesAt(slot)
		waited = time.Duration(now - tm.addedAt)
		tm.startAt = now
		q.procs = append(q.procs, slot)
		tm.procPos = int32(len(q.procs))
	}
	q.signalLocked()
	q.mu.Unlock()
	if m != nil {
		m.QueueLatency(q.name, waited)
	}
	return key
}

// getWait sleeps until a wake-up token, the end of the queue, or the end of
// ctx. Called with q.mu held; it unlocks it, and returns with it locked and
// true, or, if ctx is done, unlocked and false.
//
// The wake-up protocol: sleep counts the sleepers no token has been sent
// for, so that sleep + len(wake) + (sleepers that chose final or ctx.Done
// but have not locked yet) is the number of sleepers. signalLocked sends a
// token (and decrements sleep) only while sleep > 0, so every token is
// received by a sleeper; a sleeper that leaves without a token gives up its
// place in sleep, or, if every remaining sleeper already has a token, takes
// one back (see leaveLocked). woken counts the tokens sent and not yet
// acted on, so that a key gets a token only if the keys queued outnumber
// the wake-ups on their way: a sleeper is not woken for a key another one
// will take. A woken sleeper that finds more keys queued than wake-ups on
// their way wakes the next one (handOutLocked), so a full token buffer
// delays wake-ups but never loses one.
func (q *Queue[K]) getWait(ctx context.Context) bool {
	q.sleep++
	wake, final := q.wake, q.final
	q.mu.Unlock()
	return q.awaitToken(ctx, wake, final)
}

// awaitToken is getWait's sleep, after the caller counted itself in sleep
// and unlocked q.
func (q *Queue[K]) awaitToken(ctx context.Context, wake, final chan struct{}) bool {
	select {
	case <-wake:
		q.mu.Lock()
		q.woken--
		return true
	case <-final:
		q.mu.Lock()
		q.leaveLocked()
		return true
	case <-ctx.Done():
		q.mu.Lock()
		q.leaveLocked()
		q.mu.Unlock()
		return false
	}
}

// leaveLocked accounts for a sleeper that woke without receiving a token.
func (q *Queue[K]) leaveLocked() {
	if q.sleep > 0 {
		q.sleep--
		return
	}
	// Every remaining sleeper already has a token, and one more token than
	// there are sleepers is buffered: take it back. No send can happen
	// meanwhile (sends need sleep > 0, and we hold the lock), and receivers
	// take a token and leave together, so this never blocks.
	<-q.wake
	q.woken--
}

// signalLocked wakes one sleeping Get caller if more keys are queued than
// wake-ups are on their way.
func (q *Queue[K]) signalLocked() {
	if q.sleep == 0 || q.ready.Len() <= q.woken {
		return
	}
	select {
	case q.wake <- struct{}{}:
		q.sleep--
		q.woken++
	default: // buffer full: the sleepers it wakes will wake the others
	}
}

// Done marks key as no longer in progress. If it was added meanwhile, it is
// queued again now. Done of a key that is not in progress does nothing.
func (q *Queue[K]) Done(key K) {
	h := hashKey(key)
	q.lockInit()
	slot, ok := lookup(&q.keys, &q.entries, key, h)
	if !ok || q.entries.at(slot).flags&processing == 0 {
		q.mu.Unlock()
		return
	}
	e := q.entries.at(slot)
	e.flags &^= processing
	q.working--
	m := q.metrics
	var held time.Duration
	if m != nil {
		held = time.Duration(q.nowLocked() - q.entries.timesAt(slot).startAt)
		q.unlistLocked(slot)
	}
	if e.flags&pending != 0 {
		q.requeue--
		q.ready.Push(slot)
		q.signalLocked()
	} else {
		q.releaseLocked(slot)
	}
	q.checkClosedLocked()
	q.mu.Unlock()
	if m != nil {
		m.WorkDuration(q.name, held)
	}
}

// unlistLocked removes slot from procs.
func (q *Queue[K]) unlistLocked(slot int32) {
	tm := q.entries.timesAt(slot)
	if tm.procPos == 0 {
		return
	}
	i, last := tm.procPos-1, len(q.procs)-1
	moved := q.procs[last]
	q.procs[i] = moved
	q.entries.timesAt(moved).procPos = i + 1
	q.procs = q.procs[:last]
	tm.procPos = 0
}

// Len returns the number of keys queued and waiting for a worker: neither
// the keys in progress nor those waiting for a delay. It is for
// information: by the time it returns, workers may have taken some.
func (q *Queue[K]) Len() int {
	q.lockInit()
	defer q.mu.Unlock()
	return q.ready.Len()
}
