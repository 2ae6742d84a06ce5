package workqueue

import "context"

// ShutDown stops the queue and drops its work: the keys queued, those
// waiting for a delay, and the re-adds of keys in progress are discarded;
// every Get returns false from now on (sleeping ones at once), and adds are
// ignored. Keys in progress stay owned by their workers, which call Done as
// usual. It does not wait: a [Controller] waits for its workers, and
// [Queue.Drain] (after or instead of ShutDown) waits for the keys in
// progress. Calling it again, or after Drain, drops what Drain had not
// handed out yet.
func (q *Queue[K]) ShutDown() {
	q.lockInit()
	defer q.mu.Unlock()
	if q.state == stopped {
		return
	}
	q.state = stopped
	q.dropDelayedLocked()
	for {
		slot, ok := q.ready.Pop()
		if !ok {
			break
		}
		q.entries.at(slot).flags &^= pending
		q.releaseLocked(slot)
	}
	q.ready.Clear()
	if q.requeue > 0 {
		for slot := range q.entries.n {
			if e := q.entries.at(slot); e.flags == pending|processing {
				e.flags = processing
			}
		}
		q.requeue = 0
	}
	q.checkClosedLocked()
}

// Drain stops the queue and lets the workers finish its work: adds are
// ignored from now on and the keys waiting for a delay are dropped (their
// retries would fall after the end), but the keys queued, and those re-added
// while in progress before Drain, are still handed out by Get, which
// returns false once none is left. Drain returns nil once no key is queued
// or in progress, or ctx's error if ctx is done first (the queue goes on
// draining; call [Queue.ShutDown] to drop the rest).
//
// Drain does not run the workers: they must go on calling Get and Done, or
// it returns only with ctx. After ShutDown, Drain waits for the keys in
// progress.
//
// Possible errors: ctx.Err().
func (q *Queue[K]) Drain(ctx context.Context) error {
	q.lockInit()
	if q.state == running {
		q.state = draining
		q.dropDelayedLocked()
		q.checkClosedLocked()
	}
	idle := q.idle
	q.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ShuttingDown reports whether [Queue.ShutDown] or [Queue.Drain] has been
// called.
func (q *Queue[K]) ShuttingDown() bool {
	q.lockInit()
	defer q.mu.Unlock()
	return q.state != running
}

// checkClosedLocked closes final once no key can be queued any more, and
// idle once, moreover, nothing is queued or in progress.
func (q *Queue[K]) checkClosedLocked() {
	if q.state == running {
		return
	}
	if q.closed&closedFinal == 0 && q.requeue == 0 {
		q.closed |= closedFinal
		close(q.final)
	}
	if q.closed&closedIdle == 0 && q.requeue == 0 && q.working == 0 && q.ready.Len() == 0 {
		q.closed |= closedIdle
		close(q.idle)
	}
}
