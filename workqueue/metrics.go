package workqueue

import "time"

// Metrics receives a queue's measurements, named after client-go's workqueue
// metrics so that dashboards carry over. Implementations must be safe for
// concurrent use and fast: Added, Retried, QueueLatency and WorkDuration are
// called on every operation (never with the queue's lock held). Adapters to
// metrics libraries implement it; embed [NoopMetrics] to implement part of
// it.
//
// Label cardinality is bounded by design: the queue name is chosen by the
// program, keys never appear.
type Metrics interface {
	// Depth reports the number of keys queued and waiting for a worker
	// ([Queue.Len]); client-go's depth. It is sampled every half second
	// while the queue has keys queued or in progress, and once more when
	// it becomes idle (reporting 0).
	Depth(queue string, n int)
	// Added counts one key queued: an add of a key that was not already
	// queued (a deduplicated add is not counted); client-go's adds_total.
	Added(queue string)
	// Retried counts one [Queue.AddAfter] or [Queue.AddRateLimited];
	// client-go's retries_total.
	Retried(queue string)
	// RetryBudgetDelay observes the delay the queue's [RetryBudget] added
	// to one [Queue.AddRateLimited], beyond the key's own backoff. It is
	// called only for the retries the budget delayed, so the number of
	// calls counts them; a count that grows means the budget is holding
	// retries back (a downstream failing for many keys), and the delays
	// say by how much. client-go has no such metric.
	RetryBudgetDelay(queue string, d time.Duration)
	// QueueLatency observes how long a key waited, from the add that
	// queued it to the [Queue.Get] that handed it out; client-go's
	// queue_duration_seconds.
	QueueLatency(queue string, d time.Duration)
	// WorkDuration observes how long a key was held by a worker, from
	// [Queue.Get] to [Queue.Done]; client-go's work_duration_seconds.
	WorkDuration(queue string, d time.Duration)
	// UnfinishedWork reports, for the keys handed out and not yet done,
	// the sum of the time they have been held and the longest of those
	// times; client-go's unfinished_work_seconds and
	// longest_running_processor_seconds. A worker stuck on a key shows as
	// a longest time that keeps growing. Sampled with Depth.
	UnfinishedWork(queue string, total, longest time.Duration)
}

// sampleEvery is how often Depth and UnfinishedWork are sampled while the
// queue is busy (client-go updates unfinished work every 500 ms).
const sampleEvery = 500 * time.Millisecond

// NoopMetrics is a [Metrics] that records nothing. Embed it in a partial
// implementation to ignore the measurements it does not care about. Passing
// NoopMetrics{} itself in [Options] is the same as passing nil.
type NoopMetrics struct{}

// Depth does nothing.
func (NoopMetrics) Depth(string, int) {}

// Added does nothing.
func (NoopMetrics) Added(string) {}

// Retried does nothing.
func (NoopMetrics) Retried(string) {}

// RetryBudgetDelay does nothing.
func (NoopMetrics) RetryBudgetDelay(string, time.Duration) {}

// QueueLatency does nothing.
func (NoopMetrics) QueueLatency(string, time.Duration) {}

// WorkDuration does nothing.
func (NoopMetrics) WorkDuration(string, time.Duration) {}

// UnfinishedWork does nothing.
func (NoopMetrics) UnfinishedWork(string, time.Duration, time.Duration) {}

var _ Metrics = NoopMetrics{}

// armSamplerLocked makes sure the sampler runs while the queue is busy.
func (q *Queue[K]) armSamplerLocked() {
	if q.armed {
		return
	}
	q.armed = true
	if q.sampler == nil {
		q.sampler = time.AfterFunc(sampleEvery, q.sample)
		return
	}
	q.sampler.Reset(sampleEvery)
}

// sample reports Depth and UnfinishedWork, and runs again in sampleEvery
// while keys are queued or in progress.
func (q *Queue[K]) sample() {
	q.mu.Lock()
	depth := q.ready.Len()
	now := q.nowLocked()
	var total, longest time.Duration
	for _, slot := range q.procs {
		d := time.Duration(now - q.entries.timesAt(slot).startAt)
		total += d
		longest = max(longest, d)
	}
	if depth > 0 || q.working > 0 {
		q.sampler.Reset(sampleEvery)
	} else {
		q.armed = false
	}
	m := q.metrics
	q.mu.Unlock()
	m.Depth(q.name, depth)
	m.UnfinishedWork(q.name, total, longest)
}
