package informer

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ginformer/ginformer/internal/ringbuf"
)

// listener is one handler registration: its queue and the goroutine that
// drains it into the handler. The informer's processing loop enqueues; the
// listener's goroutine delivers, outside every lock.
//
// Two queue modes:
//   - every event (default): a FIFO, unbounded, of references to the
//     batches the processing loop committed (shared by every such handler,
//     see [noteBatch]), each notification delivered as it happened;
//   - coalescing: at most one pending notification per key, merged by
//     [notification.merge]; keys are delivered in the order they first became
//     pending. Memory is proportional to the number of distinct keys pending.
type listener[K comparable, T any] struct {
	// Set before the listener is published, never written afterwards.
	handler  Handler[K, T]
	name     string
	coalesce bool
	onPanic  func(name string, err error)
	resync   time.Duration // zero: never resynced
	running  bool          // its goroutine was started; guarded by the informer's mu
	// The informer's name and Metrics (NoopMetrics unless AddHandler sets
	// them): call durations and backlogs are reported there.
	informer string
	metrics  Metrics

	// reportMu orders the backlog reports of this listener (processing loop
	// and listener goroutine): each reads the backlog and reports it while
	// holding it, so the last value reported is current. It guards no
	// state; only Metrics.HandlerBacklog (and a read of the backlog under
	// mu, taken after it) runs under it. It is never taken while mu or the
	// informer's mu is held.
	reportMu sync.Mutex

	// mu guards the queues, stopped, marker and idle. The goroutine takes
	// it once per batch (every-event mode: everything queued at that
	// moment), not once per notification.
	mu      sync.Mutex
	queue   ringbuf.Chunked[noteSpan[K, T]] // every-event mode: batches not yet taken by the goroutine
	queued  int                             // every-event mode: notifications in queue (markers excluded)
	order   ringbuf.Ring[pendingRef[K]]     // coalescing mode: delivery order
	pending map[K]*notification[K, T]       // coalescing mode: one per key
	stopped bool                            // nothing is queued or delivered any more
	marker  bool                            // coalescing mode: the sync marker is queued (not counted in the backlog)
	one     noteBatch[K, T]                 // coalescing mode: the goroutine's holder for the notification it took
	// idle: the goroutine found nothing to take and waits on wake; the next
	// enqueue clears it and signals. While the goroutine is busy, enqueues
	// send no signal at all.
	idle bool
	// halted mirrors stopped for the goroutine's check before every call,
	// made with no lock held.
	halted atomic.Bool

	// callMu guards the bookkeeping of the handler call in progress, written
	// by the goroutine once per call and read by the watchdog and Health. It
	// may be taken while mu is held, never the other way round.
	callMu sync.Mutex
	// started is when the call in progress started (monoNow), zero while
	// the goroutine is between calls; calls counts the notifications taken,
	// so a watchdog can tell one long call from a series of short ones;
	// taken counts the notifications the goroutine holds in its batch that
	// no call has started for yet (markers excluded): part of the backlog.
	started int64
	curKey  K
	calls   uint64
	taken   int
	// stuck counts calls that ran longer than the informer's threshold
	// (reported by the watchdog); stuckCall is the last such call's number.
	stuck     int64
	stuckCall uint64

	wake     chan struct{} // cap 1: something was enqueued while idle
	stop     chan struct{} // closed by close() to stop the goroutine
	stopOnce sync.Once
	done     chan struct{} // closed when the goroutine has exited
	synced   chan struct{} // closed once the noteSynced marker was delivered
}

// monoEpoch is the origin of monoNow.
var monoEpoch = time.Now()

// monoNow returns the monotonic clock in nanoseconds since monoEpoch, never
// zero. It reads only the monotonic clock (time.Since of a time that has
// one), about half the cost of time.Now, which also reads the wall clock.
func monoNow() int64 { return int64(time.Since(monoEpoch)) + 1 }

// pendingRef is an entry of the coalescing order: a key, or the sync marker.
type pendingRef[K comparable] struct {
	key    K
	marker bool
}

func newListener[K comparable, T any](h Handler[K, T], name string, coalesce bool, resync time.Duration, onPanic func(string, error)) *listener[K, T] {
	l := &listener[K, T]{
		handler:  h,
		name:     name,
		coalesce: coalesce,
		resync:   resync,
		onPanic:  onPanic,
		metrics:  NoopMetrics{},
		wake:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		synced:   make(chan struct{}),
	}
	if coalesce {
		l.pending = make(map[K]*notification[K, T])
	}
	return l
}

// enqueueLocked adds n to the queue of a coalescing listener. The caller
// holds l.mu.
func (l *listener[K, T]) enqueueLocked(n notification[K, T]) {
	if l.stopped {
		return
	}
	switch {
	case n.kind == noteSynced:
		l.marker = true
		l.order.Push(pendingRef[K]{marker: true})
	default:
		if p, ok := l.pending[n.key]; ok {
			p.merge(n)
			return // already in the order: keeps its place
		}
		p := new(notification[K, T])
		*p = n
		l.pending[n.key] = p
		l.order.Push(pendingRef[K]{key: n.key})
	}
}

// enqueue adds notifications and wakes the goroutine. The listener keeps ns
// (every-event mode): the caller must not modify it afterwards.
func (l *listener[K, T]) enqueue(ns ...notification[K, T]) {
	b := &noteBatch[K, T]{notes: ns}
	for _, n := range ns {
		if n.kind == noteSynced {
			b.markers++
		}
	}
	if l.enqueueBatch(b, true) {
		l.signal()
	}
}

// enqueueBatch queues the notifications of b, those b marks as resync
// updates only if resync: the processing loop's hand-off, one lock
// acquisition and at most one wake-up per batch. In every-event mode it
// queues a reference to b (taking one of b's references for it); in
// coalescing mode it merges each notification into the pending ones.
//
// It reports whether the goroutine waits for the work just queued: the
// caller must then call signal, once it has released its locks (the later
// the better, as long as nothing else it does waits for the handler: a
// goroutine woken while its waker goes on running may be moved to another
// CPU, which costs more than the wait).
func (l *listener[K, T]) enqueueBatch(b *noteBatch[K, T], resync bool) bool {
	l.mu.Lock()
	switch {
	case l.stopped:
	case l.coalesce:
		for j, n := range b.notes {
			if b.syncs == nil || !b.syncs[j] || resync {
				l.enqueueLocked(n)
			}
		}
	default:
		if n := b.count(resync); n > 0 || b.markers > 0 {
			b.refs.Add(1)
			l.queue.Push(noteSpan[K, T]{b: b, resync: resync})
			l.queued += n
		}
	}
	wake := l.wakeLocked()
	l.mu.Unlock()
	return wake
}

// wakeLocked reports whether the goroutine waits for work that is now
// queued, and clears idle: the caller must signal once it released mu.
func (l *listener[K, T]) wakeLocked() bool {
	if !l.idle || (l.queue.Len() == 0 && l.order.Len() == 0) {
		return false
	}
	l.idle = false
	return true
}

// close stops the listener's goroutine; queued notifications are dropped.
// It is idempotent and does not wait: receive from l.done for that.
func (l *listener[K, T]) close() {
	l.stopOnce.Do(func() {
		l.mu.Lock()
		l.stopped = true
		l.halted.Store(true)
		l.mu.Unlock()
		close(l.stop)
	})
}

func (l *listener[K, T]) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// backlog returns the number of notifications (every-event mode) or keys
// (coalescing mode) waiting for the handler.
func (l *listener[K, T]) backlog() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.backlogLocked()
}

// reportBacklog reports the handler's backlog to Metrics (see reportMu).
func (l *listener[K, T]) reportBacklog() {
	if _, ok := l.metrics.(NoopMetrics); ok {
		return // nothing to report to: spare the two locks
	}
	l.reportMu.Lock()
	defer l.reportMu.Unlock()
	l.metrics.HandlerBacklog(l.informer, l.name, l.backlog())
}

// backlogLocked is backlog; the caller holds l.mu.
func (l *listener[K, T]) backlogLocked() int {
	n := l.queued
	if l.coalesce {
		n = l.order.Len()
		if l.marker {
			n-- // the sync marker is bookkeeping, not a notification
		}
	}
	l.callMu.Lock()
	n += l.taken
	l.callMu.Unlock()
	return n
}

// takeLocked moves work into batch, which is empty: in every-event mode
// everything queued (the queues swap chunks), in coalescing mode the next
// pending notification (pending ones keep merging until taken). It returns
// how many batches it moved. The caller holds l.mu.
func (l *listener[K, T]) takeLocked(batch *ringbuf.Chunked[noteSpan[K, T]]) int {
	var taken int
	if !l.coalesce {
		if l.queue.Len() == 0 {
			return 0
		}
		// The producer goes on with batch's spare chunks, those the last
		// take used: about as many as the next one will need. More, left
		// by a burst, are dropped.
		batch.Trim(2 + 2*l.queue.Len()/64)
		l.queue.Swap(batch)
		taken, l.queued = l.queued, 0
	} else if n, ok := l.popPendingLocked(); ok {
		l.one.notes = append(l.one.notes[:0], n)
		batch.Push(noteSpan[K, T]{b: &l.one, resync: true})
		if n.kind == noteSynced {
			l.marker = false
		} else {
			taken = 1
		}
	} else {
		return 0
	}
	l.callMu.Lock()
	l.taken = taken
	l.callMu.Unlock()
	return batch.Len()
}

// popPendingLocked pops the next pending notification of a coalescing
// listener. The caller holds l.mu.
func (l *listener[K, T]) popPendingLocked() (notification[K, T], bool) {
	for {
		ref, ok := l.order.Pop()
		if !ok {
			return notification[K, T]{}, false
		}
		if ref.marker {
			return notification[K, T]{kind: noteSynced}, true
		}
		p := l.pending[ref.key]
		delete(l.pending, ref.key)
		if p != nil && p.kind != noteNone {
			return *p, true
		}
	}
}

// call describes the handler call in progress, if any: when it started
// (monoNow; zero if none), its sequence number and the key it is about.
func (l *listener[K, T]) call() (started int64, seq uint64, key K) {
	l.callMu.Lock()
	defer l.callMu.Unlock()
	return l.started, l.calls, l.curKey
}

// run delivers notifications until ctx is done or the listener is stopped.
// Both are checked before every call, so once either happens the goroutine
// exits as soon as the call in progress returns; queued notifications are
// dropped.
//
// The goroutine takes everything queued under one acquisition of l.mu and
// delivers it with no lock held but callMu's brief per-call bookkeeping;
// it waits on wake only after finding the queue empty, and enqueues signal
// it only then, so a busy handler costs its producer no wake-up.
func (l *listener[K, T]) run(ctx context.Context) {
	defer close(l.done)
	done := ctx.Done()
	var batch ringbuf.Chunked[noteSpan[K, T]]
	defer func() {
		l.mu.Lock()
		l.stopped = true
		l.halted.Store(true)
		l.marker = false
		l.queue.Clear()
		l.queued = 0
		l.order.Clear()
		clear(l.pending)
		l.callMu.Lock()
		var zero K
		l.started, l.curKey, l.taken = 0, zero, 0
		l.callMu.Unlock()
		l.mu.Unlock()
		batch.Clear()
	}()
	busy := false // a notification was taken since the last idle report
	for {
		l.mu.Lock()
		if l.stopped {
			l.mu.Unlock()
			return
		}
		got := l.takeLocked(&batch)
		l.idle = got == 0
		if got == 0 {
			l.queue.Trim(1) // idle: give a burst's chunks back
		}
		l.mu.Unlock()
		if got == 0 {
			batch.Trim(1)
			if busy {
				// Caught up: report it, or the backlog last reported (by
				// the processing loop, at enqueue time) would stand.
				busy = false
				l.reportBacklog()
			}
			select {
			case <-done:
				return
			case <-l.stop:
				return
			case <-l.wake:
				continue
			}
		}
		busy = true
		if !l.deliverBatch(done, &batch) {
			return
		}
	}
}

// deliverBatch delivers the notifications of batch in order, emptying it.
// It reports false, leaving the rest undelivered, once ctx is done or the
// listener is stopped (checked before every call). The end of one call,
// read once, is the start of the next: one clock reading per call.
func (l *listener[K, T]) deliverBatch(done <-chan struct{}, batch *ringbuf.Chunked[noteSpan[K, T]]) bool {
	start := monoNow()
	for {
		sp, ok := batch.Pop()
		if !ok {
			break
		}
		notes, syncs := sp.b.notes, sp.b.syncs
		for i := range notes {
			if syncs != nil && syncs[i] && !sp.resync {
				continue
			}
			if l.halted.Load() {
				return false
			}
			select {
			case <-done:
				return false
			default:
			}
			n := &notes[i]
			l.callMu.Lock()
			l.started, l.curKey = start, n.key
			l.calls++
			if n.kind != noteSynced {
				l.taken--
			}
			l.callMu.Unlock()
			start = l.deliver(n, start)
		}
		if sp.b == &l.one {
			clear(l.one.notes) // do not keep the object until the next take
		}
		sp.b.release()
	}
	l.callMu.Lock()
	var zero K
	l.started, l.curKey = 0, zero
	l.callMu.Unlock()
	return true
}

// deliver calls the handler for one notification, recovering a panic so the
// listener goes on with the next one. It observes the call's duration from
// started and returns when the call ended (monoNow).
func (l *listener[K, T]) deliver(n *notification[K, T], started int64) (ended int64) {
	if n.kind == noteSynced {
		select {
		case <-l.synced:
		default:
			close(l.synced)
		}
		return started
	}
	defer func() {
		p := recover()
		ended = monoNow()
		l.metrics.HandlerCallDuration(l.informer, l.name, time.Duration(ended-started))
		if p != nil {
			l.onPanic(l.name, fmt.Errorf("%w: handler %q panicked: %v\n%s", ErrHandlerPanic, l.name, p, debug.Stack()))
			ended = monoNow()
		}
	}()
	switch n.kind {
	case noteAdd:
		l.handler.OnAdd(n.obj, n.initial)
	case noteUpdate:
		l.handler.OnUpdate(n.old, n.obj)
	case noteDelete:
		l.handler.OnDelete(Deletion[K, T]{Key: n.key, Object: n.obj, FinalStateUnknown: n.unknown})
	case noteReplaced:
		l.handler.OnDelete(Deletion[K, T]{Key: n.key, Object: n.old, FinalStateUnknown: n.unknown})
		l.handler.OnAdd(n.obj, n.initial)
	}
	return 0 // replaced by the deferred function
}
