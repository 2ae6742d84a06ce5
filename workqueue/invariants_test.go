package workqueue

import (
	"fmt"
	"sync"
	"time"
)

// tryGet is Get without waiting: the key at the front, if any.
func (q *Queue[K]) tryGet() (K, bool) {
	q.lockInit()
	if slot, ok := q.ready.Pop(); ok {
		return q.handOutLocked(slot), true
	}
	q.mu.Unlock()
	var zero K
	return zero, false
}

// readyKeys returns the queued keys, oldest first.
func (q *Queue[K]) readyKeys() []K {
	q.lockInit()
	defer q.mu.Unlock()
	out := make([]K, 0, q.ready.Len())
	for i := range q.ready.Len() {
		out = append(out, q.entries.at(q.ready.At(i)).key)
	}
	return out
}

// checkInvariants returns an error describing the first broken invariant
// of q's internal state.
func (q *Queue[K]) checkInvariants() error {
	q.lockInit()
	defer q.mu.Unlock()
	live := 0
	freeSet := map[int32]bool{}
	for next := q.entries.free; next != 0; {
		s := next - 1
		if freeSet[s] {
			return fmt.Errorf("slot %d free twice", s)
		}
		freeSet[s] = true
		e := *q.entries.at(s)
		next, e.heapPos = e.heapPos, 0
		if e != (entry[K]{}) {
			return fmt.Errorf("free slot %d not zeroed: %+v", s, e)
		}
	}
	if len(freeSet) != int(q.entries.nfree) {
		return fmt.Errorf("%d free slots, counted %d", len(freeSet), q.entries.nfree)
	}
	var slots []int32
	mask := len(q.keys.tab) - 1
	for i, b := range q.keys.tab {
		if b.slot1 == 0 {
			continue
		}
		s := b.slot1 - 1
		if s >= q.entries.n || freeSet[s] {
			return fmt.Errorf("bucket %d: slot %d is free or out of range", i, s)
		}
		k := q.entries.at(s).key
		if h := hashKey(k); h != b.hash || h != q.entries.at(s).hash {
			return fmt.Errorf("key %v: hash %x, bucket says %x, entry %x", k, h, b.hash, q.entries.at(s).hash)
		}
		if got, ok := lookup(&q.keys, &q.entries, k, b.hash); !ok || got != s {
			return fmt.Errorf("key %v in bucket %d (home %d) not found: %d, %v", k, i, int(b.hash)&mask, got, ok)
		}
		slots = append(slots, s)
		live++
	}
	if live != q.keys.n {
		return fmt.Errorf("%d buckets used, counted %d", live, q.keys.n)
	}
	if q.keys.n*4 > len(q.keys.tab)*3 {
		return fmt.Errorf("table over 3/4 full: %d of %d", q.keys.n, len(q.keys.tab))
	}
	if live+len(freeSet) != int(q.entries.n) {
		return fmt.Errorf("%d live + %d free slots != %d entries", live, len(freeSet), q.entries.n)
	}
	inReady := map[int32]bool{}
	for i := range q.ready.Len() {
		s := q.ready.At(i)
		if inReady[s] {
			return fmt.Errorf("slot %d queued twice", s)
		}
		inReady[s] = true
		if f := q.entries.at(s).flags; f != pending {
			return fmt.Errorf("queued key %v has flags %b, want pending only", q.entries.at(s).key, f)
		}
	}
	var working, requeue, queued int
	var failing int32
	for _, s := range slots {
		e := q.entries.at(s)
		if e.flags == 0 && e.heapPos == 0 && e.failures == 0 {
			return fmt.Errorf("key %v has no state but was kept", e.key)
		}
		if e.flags&processing != 0 {
			working++
			if e.flags&pending != 0 {
				requeue++
			}
		} else if e.flags&pending != 0 {
			queued++
			if !inReady[s] {
				return fmt.Errorf("pending key %v not queued", e.key)
			}
		}
		if q.metrics != nil {
			pp := q.entries.timesAt(s).procPos
			if (pp != 0) != (e.flags&processing != 0) {
				return fmt.Errorf("key %v: procPos %d, flags %b", e.key, pp, e.flags)
			}
			if pp != 0 && q.procs[pp-1] != s {
				return fmt.Errorf("key %v: procs[%d] is %d, not its slot %d", e.key, pp-1, q.procs[pp-1], s)
			}
		}
		if e.failures != 0 {
			failing++
		}
	}
	if queued != q.ready.Len() || working != q.working || requeue != q.requeue {
		return fmt.Errorf("counts: queued %d/%d, working %d/%d, requeue %d/%d", queued, q.ready.Len(), working, q.working, requeue, q.requeue)
	}
	if q.metrics != nil && len(q.procs) != working {
		return fmt.Errorf("%d procs, %d working", len(q.procs), working)
	}
	if failing != q.failing.Load() {
		return fmt.Errorf("%d keys failing, counted %d", failing, q.failing.Load())
	}
	if q.metrics != nil && len(q.entries.times) != len(q.entries.chunks) {
		return fmt.Errorf("%d chunks of times for %d of entries", len(q.entries.times), len(q.entries.chunks))
	}
	for i, it := range q.delayed {
		if q.entries.at(it.slot).heapPos != int32(i+1) {
			return fmt.Errorf("heap[%d] = slot %d with heapPos %d", i, it.slot, q.entries.at(it.slot).heapPos)
		}
		if i > 0 && q.heapLess(i, (i-1)/2) {
			return fmt.Errorf("heap order broken at %d", i)
		}
	}
	if len(q.delayed) > 0 && (q.timerAt == 0 || q.timerAt > q.delayed[0].due) {
		return fmt.Errorf("timer at %d, first due %d", q.timerAt, q.delayed[0].due)
	}
	if q.sleep < 0 || q.woken < len(q.wake) {
		return fmt.Errorf("sleep %d, woken %d, %d tokens buffered", q.sleep, q.woken, len(q.wake))
	}
	if q.state != running && len(q.delayed) > 0 {
		return fmt.Errorf("%d keys waiting after shutdown", len(q.delayed))
	}
	if q.state == stopped && (q.ready.Len() > 0 || q.requeue > 0) {
		return fmt.Errorf("stopped with %d queued, %d requeues", q.ready.Len(), q.requeue)
	}
	return nil
}

// recorder is a Metrics that counts and keeps the last samples.
type recorder struct {
	mu                  sync.Mutex
	depth               int
	added, retried      int
	latencies, works    []time.Duration
	unfinished, longest time.Duration
	samples             int
	budgetDelays        []time.Duration
}

func (r *recorder) Depth(_ string, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.depth = n
	r.samples++
}

func (r *recorder) Added(string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.added++
}

func (r *recorder) Retried(string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.retried++
}

func (r *recorder) RetryBudgetDelay(_ string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.budgetDelays = append(r.budgetDelays, d)
}

func (r *recorder) QueueLatency(_ string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.latencies = append(r.latencies, d)
}

func (r *recorder) WorkDuration(_ string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.works = append(r.works, d)
}

func (r *recorder) UnfinishedWork(_ string, total, longest time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unfinished, r.longest = total, longest
}

func (r *recorder) snapshot() recorder {
	r.mu.Lock()
	defer r.mu.Unlock()
	return recorder{depth: r.depth, added: r.added, retried: r.retried, latencies: append([]time.Duration(nil), r.latencies...),
		works: append([]time.Duration(nil), r.works...), unfinished: r.unfinished, longest: r.longest, samples: r.samples,
		budgetDelays: append([]time.Duration(nil), r.budgetDelays...)}
}
