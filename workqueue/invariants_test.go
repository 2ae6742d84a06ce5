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
		out = append(out, q.entries[q.ready.At(i)].key)
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
	for _, s := range q.free {
		if freeSet[s] {
			return fmt.Errorf("slot %d free twice", s)
		}
		freeSet[s] = true
		if q.entries[s] != (entry[K]{}) {
			return fmt.Errorf("free slot %d not zeroed: %+v", s, q.entries[s])
		}
	}
	for k, s := range q.index {
		if int(s) >= len(q.entries) || freeSet[s] {
			return fmt.Errorf("key %v: slot %d is free or out of range", k, s)
		}
		if q.entries[s].key != k {
			return fmt.Errorf("key %v: slot %d holds %v", k, s, q.entries[s].key)
		}
		live++
	}
	if live+len(q.free) != len(q.entries) {
		return fmt.Errorf("%d live + %d free slots != %d entries", live, len(q.free), len(q.entries))
	}
	inReady := map[int32]bool{}
	for i := range q.ready.Len() {
		s := q.ready.At(i)
		if inReady[s] {
			return fmt.Errorf("slot %d queued twice", s)
		}
		inReady[s] = true
		if f := q.entries[s].flags; f != pending {
			return fmt.Errorf("queued key %v has flags %b, want pending only", q.entries[s].key, f)
		}
	}
	var working, requeue, queued int
	for _, s := range q.index {
		e := &q.entries[s]
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
		if (e.procPos != 0) != (q.metrics != nil && e.flags&processing != 0) {
			return fmt.Errorf("key %v: procPos %d, flags %b", e.key, e.procPos, e.flags)
		}
		if e.procPos != 0 && q.procs[e.procPos-1] != s {
			return fmt.Errorf("key %v: procs[%d] is %d, not its slot %d", e.key, e.procPos-1, q.procs[e.procPos-1], s)
		}
	}
	if queued != q.ready.Len() || working != q.working || requeue != q.requeue {
		return fmt.Errorf("counts: queued %d/%d, working %d/%d, requeue %d/%d", queued, q.ready.Len(), working, q.working, requeue, q.requeue)
	}
	if q.metrics != nil && len(q.procs) != working {
		return fmt.Errorf("%d procs, %d working", len(q.procs), working)
	}
	for i, s := range q.delayed {
		if q.entries[s].heapPos != int32(i+1) {
			return fmt.Errorf("heap[%d] = slot %d with heapPos %d", i, s, q.entries[s].heapPos)
		}
		if i > 0 && q.heapLess(i, (i-1)/2) {
			return fmt.Errorf("heap order broken at %d", i)
		}
	}
	if len(q.delayed) > 0 && (q.timerAt == 0 || q.timerAt > q.entries[q.delayed[0]].due) {
		return fmt.Errorf("timer at %d, first due %d", q.timerAt, q.entries[q.delayed[0]].due)
	}
	if q.sleep < 0 || q.sleep+len(q.wake) < 0 {
		return fmt.Errorf("sleep %d", q.sleep)
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
		works: append([]time.Duration(nil), r.works...), unfinished: r.unfinished, longest: r.longest, samples: r.samples}
}
