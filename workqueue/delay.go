package workqueue

import "time"

// AddAfter queues key once d has passed (at once if d <= 0). A key already
// waiting keeps the earlier of its two due times: it is queued once. The
// wait is independent of the key's other state: a key that is queued or in
// progress now is still added when d has passed (and deduplicated then as
// any add). Keys falling due at the same instant are queued in the order of
// the calls that set their times. After ShutDown or Drain, AddAfter does
// nothing; the keys still waiting then are dropped.
func (q *Queue[K]) AddAfter(key K, d time.Duration) {
	slot, ok := q.lockRunningSlot(key)
	if !ok {
		return
	}
	q.addAfterLocked(slot, d, 0) // unlocks
}

// AddRateLimited queues key after its backoff: the n-th call for a key
// since its last [Queue.Forget] (n counted from 0) waits Base·2ⁿ, capped at
// Max, less the jitter (see [Backoff]). Unless the queue's [RetryBudget] is
// disabled, it waits the longer of that and its turn in the budget
// (delayed, never dropped). Call
// it when processing the key failed; call Forget when it succeeded. After
// ShutDown or Drain, AddRateLimited does nothing.
func (q *Queue[K]) AddRateLimited(key K) {
	slot, ok := q.lockRunningSlot(key)
	if !ok {
		return
	}
	e := q.entries.at(slot)
	d := q.backoff.delay(e.failures)
	if e.failures == 0 {
		q.failing.Add(1)
	}
	if e.failures < 1<<30 {
		e.failures++
	}
	var budgeted time.Duration
	if q.budget.interval != 0 {
		d, budgeted = q.budgetLocked(slot, d, q.nowLocked())
	}
	q.addAfterLocked(slot, d, budgeted) // unlocks
}

// addAfterLocked adds the key in slot after d, unlocks q and counts a retry,
// of which budgeted is the part the retry budget added.
func (q *Queue[K]) addAfterLocked(slot int32, d, budgeted time.Duration) {
	var added bool
	if d <= 0 {
		added = q.addLocked(slot)
	} else {
		q.waitLocked(slot, satAdd(q.nowLocked(), int64(d))) // a delay of centuries waits, not overflows
	}
	m := q.metrics
	q.mu.Unlock()
	if m != nil {
		m.Retried(q.name)
		if added {
			m.Added(q.name)
		}
		if budgeted > 0 {
			m.RetryBudgetDelay(q.name, budgeted)
		}
	}
}

// delayItem is a key waiting in the delay heap.
type delayItem struct {
	due  int64  // when the key is to be added
	seq  uint64 // orders keys due at the same instant: the order of the calls
	slot int32
}

// waitLocked makes the key in slot wait until due, or keeps its earlier due
// time, and sets the timer for the earliest.
func (q *Queue[K]) waitLocked(slot int32, due int64) {
	e := q.entries.at(slot)
	switch {
	case e.heapPos == 0:
		q.seq++
		q.delayed = append(q.delayed, delayItem{due: due, seq: q.seq, slot: slot})
		e.heapPos = int32(len(q.delayed))
		q.heapUp(len(q.delayed) - 1)
	case due < q.delayed[e.heapPos-1].due:
		q.seq++
		it := &q.delayed[e.heapPos-1]
		it.due, it.seq = due, q.seq
		q.heapUp(int(e.heapPos - 1))
	default:
		return
	}
	if first := q.delayed[0].due; q.timerAt == 0 || first < q.timerAt {
		q.setTimerLocked(first)
	}
}

// setTimerLocked sets the timer to fire at due.
func (q *Queue[K]) setTimerLocked(due int64) {
	q.timerAt = due
	d := time.Duration(due - q.nowLocked())
	if q.timer == nil {
		q.timer = time.AfterFunc(d, q.fire)
		return
	}
	q.timer.Reset(d)
}

// fire queues the keys whose delay has passed and sets the timer for the
// next. It runs on the timer's goroutine; a late or spurious call is
// harmless.
func (q *Queue[K]) fire() {
	q.mu.Lock()
	if q.state != running {
		q.mu.Unlock()
		return
	}
	now := q.nowLocked()
	added := 0
	for len(q.delayed) > 0 && q.delayed[0].due <= now {
		slot := q.delayed[0].slot
		q.heapRemove(0)
		if q.addLocked(slot) {
			added++
		}
	}
	q.timerAt = 0
	if len(q.delayed) > 0 {
		q.setTimerLocked(q.delayed[0].due)
	}
	m := q.metrics
	q.mu.Unlock()
	if m != nil {
		for range added {
			m.Added(q.name)
		}
	}
}

// Forget clears key's failures: its next [Queue.AddRateLimited] waits
// Base again. Call it when processing the key succeeded (or when giving up
// on it). It does not cancel a wait already started.
func (q *Queue[K]) Forget(key K) {
	if q.failing.Load() == 0 {
		return // no key has failures: nothing to forget, no lock to take
	}
	h := hashKey(key)
	q.lockInit()
	defer q.mu.Unlock()
	if slot, ok := lookup(&q.keys, &q.entries, key, h); ok && q.entries.at(slot).failures != 0 {
		q.entries.at(slot).failures = 0
		q.failing.Add(-1)
		q.releaseLocked(slot)
	}
}

// NumRequeues returns the number of [Queue.AddRateLimited] calls for key
// since its last [Queue.Forget].
func (q *Queue[K]) NumRequeues(key K) int {
	if q.failing.Load() == 0 {
		return 0
	}
	h := hashKey(key)
	q.lockInit()
	defer q.mu.Unlock()
	if slot, ok := lookup(&q.keys, &q.entries, key, h); ok {
		return int(q.entries.at(slot).failures)
	}
	return 0
}

// dropDelayedLocked drops every waiting key and stops the timer.
func (q *Queue[K]) dropDelayedLocked() {
	delayed := q.delayed
	q.delayed = nil
	for _, it := range delayed {
		q.entries.at(it.slot).heapPos = 0
		q.releaseLocked(it.slot)
	}
	if q.timer != nil {
		q.timer.Stop()
	}
	q.timerAt = 0
}

// The delay heap: a binary min-heap of delayItems on (due, seq), each entry
// knowing its position (heapPos) so that a key's due time can be moved
// earlier in place.

func (q *Queue[K]) heapLess(i, j int) bool {
	a, b := &q.delayed[i], &q.delayed[j]
	return a.due < b.due || a.due == b.due && a.seq < b.seq
}

func (q *Queue[K]) heapSwap(i, j int) {
	h := q.delayed
	h[i], h[j] = h[j], h[i]
	q.entries.at(h[i].slot).heapPos = int32(i + 1)
	q.entries.at(h[j].slot).heapPos = int32(j + 1)
}

func (q *Queue[K]) heapUp(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !q.heapLess(i, parent) {
			return
		}
		q.heapSwap(i, parent)
		i = parent
	}
}

func (q *Queue[K]) heapDown(i int) {
	n := len(q.delayed)
	for {
		small := i
		if l := 2*i + 1; l < n && q.heapLess(l, small) {
			small = l
		}
		if r := 2*i + 2; r < n && q.heapLess(r, small) {
			small = r
		}
		if small == i {
			return
		}
		q.heapSwap(i, small)
		i = small
	}
}

// heapRemove removes the slot at position i of the heap.
func (q *Queue[K]) heapRemove(i int) {
	last := len(q.delayed) - 1
	slot := q.delayed[i].slot
	if i != last {
		q.heapSwap(i, last)
	}
	q.delayed = q.delayed[:last]
	q.entries.at(slot).heapPos = 0
	if i != last {
		q.heapDown(i)
		q.heapUp(i)
	}
}
