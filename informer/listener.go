package informer

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/ginformer/ginformer/internal/ringbuf"
)

// listener is one handler registration: its queue and the goroutine that
// drains it into the handler. The informer's processing loop enqueues; the
// listener's goroutine delivers, outside every lock.
//
// Two queue modes:
//   - every event (default): a FIFO of notifications, unbounded, each
//     delivered as it happened;
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

	// mu guards the queues, stopped and the current call's bookkeeping.
	mu      sync.Mutex
	queue   ringbuf.Ring[notification[K, T]] // every-event mode
	order   ringbuf.Ring[pendingRef[K]]      // coalescing mode: delivery order
	pending map[K]*notification[K, T]        // coalescing mode: one per key
	stopped bool                             // nothing is queued or delivered any more
	marker  bool                             // the sync marker is queued (not counted in the backlog)
	// The handler call in progress: started is zero while the goroutine
	// waits for work; calls counts the notifications taken, so a watchdog
	// can tell one long call from a series of short ones.
	started time.Time
	curKey  K
	calls   uint64
	// stuck counts calls that ran longer than the informer's threshold
	// (reported by the watchdog); stuckCall is the last such call's number.
	stuck     int64
	stuckCall uint64

	wake     chan struct{} // cap 1: something was enqueued
	stop     chan struct{} // closed by close() to stop the goroutine
	stopOnce sync.Once
	done     chan struct{} // closed when the goroutine has exited
	synced   chan struct{} // closed once the noteSynced marker was delivered
}

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

// enqueueLocked adds n to the queue. The caller holds l.mu.
func (l *listener[K, T]) enqueueLocked(n notification[K, T]) {
	if l.stopped {
		return
	}
	if n.kind == noteSynced {
		l.marker = true
	}
	switch {
	case !l.coalesce:
		l.queue.Push(n)
	case n.kind == noteSynced:
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

// enqueue adds notifications and wakes the goroutine.
func (l *listener[K, T]) enqueue(ns ...notification[K, T]) {
	l.mu.Lock()
	for _, n := range ns {
		l.enqueueLocked(n)
	}
	l.mu.Unlock()
	l.signal()
}

// close stops the listener's goroutine; queued notifications are dropped.
// It is idempotent and does not wait: receive from l.done for that.
func (l *listener[K, T]) close() {
	l.stopOnce.Do(func() {
		l.mu.Lock()
		l.stopped = true
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
	l.reportMu.Lock()
	defer l.reportMu.Unlock()
	l.metrics.HandlerBacklog(l.informer, l.name, l.backlog())
}

func (l *listener[K, T]) backlogLocked() int {
	n := l.queue.Len()
	if l.coalesce {
		n = l.order.Len()
	}
	if l.marker {
		n-- // the sync marker is bookkeeping, not a notification
	}
	return n
}

// next pops the next notification and records it as the call in progress,
// started at the time it returns. It reports false when the queue is empty
// or the listener is stopped.
func (l *listener[K, T]) next() (n notification[K, T], started time.Time, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, ok = l.popLocked()
	if n.kind == noteSynced {
		l.marker = false
	}
	if ok {
		l.started, l.curKey = time.Now(), n.key
		l.calls++
	} else {
		var zero K
		l.started, l.curKey = time.Time{}, zero
	}
	return n, l.started, ok
}

func (l *listener[K, T]) popLocked() (notification[K, T], bool) {
	if l.stopped {
		return notification[K, T]{}, false
	}
	if !l.coalesce {
		return l.queue.Pop()
	}
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

// call describes the handler call in progress, if any: when it started,
// its sequence number and the key it is about.
func (l *listener[K, T]) call() (started time.Time, seq uint64, key K) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.started, l.calls, l.curKey
}

// run delivers notifications until ctx is done or the listener is stopped.
// Both are checked before every call, so once either happens the goroutine
// exits as soon as the call in progress returns; queued notifications are
// dropped.
func (l *listener[K, T]) run(ctx context.Context) {
	defer close(l.done)
	done := ctx.Done()
	defer func() {
		l.mu.Lock()
		l.stopped = true
		l.marker = false
		l.queue.Clear()
		l.order.Clear()
		clear(l.pending)
		l.mu.Unlock()
	}()
	busy := false // a notification was taken since the last idle report
	for {
		n, started, ok := l.next()
		if !ok {
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
		select {
		case <-done:
			return
		default:
		}
		busy = true
		l.deliver(n, started)
	}
}

// deliver calls the handler for one notification, recovering a panic so the
// listener goes on with the next one. It observes the call's duration from
// started, the time next recorded for the watchdog: one clock reading per
// call is added, at its end.
func (l *listener[K, T]) deliver(n notification[K, T], started time.Time) {
	if n.kind == noteSynced {
		select {
		case <-l.synced:
		default:
			close(l.synced)
		}
		return
	}
	defer func() {
		p := recover()
		l.metrics.HandlerCallDuration(l.informer, l.name, time.Since(started))
		if p != nil {
			l.onPanic(l.name, fmt.Errorf("%w: handler %q panicked: %v\n%s", ErrHandlerPanic, l.name, p, debug.Stack()))
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
}
