package prometheus

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ginformer/ginformer/workqueue"
)

// The work queue metrics' names and label: client-go's
// (k8s.io/component-base/metrics/prometheus/workqueue), so that its
// dashboards and alerts work unchanged.
const (
	workqueueSubsystem = "workqueue"
	labelName          = "name"
)

// WorkqueueOptions configures [NewWorkqueue]. The zero value is the default:
// client-go's buckets.
type WorkqueueOptions struct {
	// DurationBuckets are the upper bounds (seconds, strictly increasing)
	// of workqueue_queue_duration_seconds and
	// workqueue_work_duration_seconds. Zero: client-go's, ten powers of ten
	// from 10 ns to 10 s (prometheus.ExponentialBuckets(10e-9, 10, 10)).
	DurationBuckets []float64
	// RetryBudgetBuckets are the upper bounds (seconds, strictly
	// increasing) of workqueue_retry_budget_delay_seconds. Zero: 10ms,
	// 50ms, 100ms, 250ms, 500ms, 1s, 2.5s, 5s, 10s, 30s, 60s, 120s, 300s,
	// 600s.
	RetryBudgetBuckets []float64
}

var (
	// defaultDurationBuckets are client-go's, k8smetrics.ExponentialBuckets(10e-9, 10, 10).
	defaultDurationBuckets    = prometheus.ExponentialBuckets(10e-9, 10, 10)
	defaultRetryBudgetBuckets = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
)

// withDefaults validates o and fills its zero fields with copies of the
// defaults; the caller's slices are cloned, never kept.
//
// Possible errors: [workqueue.ErrInvalidOptions].
func (o WorkqueueOptions) withDefaults() (WorkqueueOptions, error) {
	var err error
	if o.DurationBuckets, err = buckets("WorkqueueOptions.DurationBuckets", o.DurationBuckets, defaultDurationBuckets, workqueue.ErrInvalidOptions); err != nil {
		return o, err
	}
	if o.RetryBudgetBuckets, err = buckets("WorkqueueOptions.RetryBudgetBuckets", o.RetryBudgetBuckets, defaultRetryBudgetBuckets, workqueue.ErrInvalidOptions); err != nil {
		return o, err
	}
	return o, nil
}

// WorkqueueMetrics is a [workqueue.Metrics] that records into Prometheus
// metrics under client-go's workqueue names and label, and the
// [prometheus.Collector] that exposes them: register it once, then pass it
// as the Metrics option of any number of queues (a [workqueue.Controller]'s
// included), each with its own name. Safe for concurrent use.
//
// The metrics are client-go's, with one more:
//
//	name                                         type       client-go's, with the same labels and buckets
//	workqueue_depth                              gauge      yes
//	workqueue_adds_total                         counter    yes
//	workqueue_queue_duration_seconds             histogram  yes
//	workqueue_work_duration_seconds              histogram  yes
//	workqueue_unfinished_work_seconds            gauge      yes
//	workqueue_longest_running_processor_seconds  gauge      yes
//	workqueue_retries_total                      counter    yes
//	workqueue_retry_budget_delay_seconds         histogram  no: the delays the retry budget added
//
// Each has one label, name: the queue's [workqueue.Options].Name. The
// gauges are set when the queue samples them ([workqueue.Metrics]): every
// half second while it has keys queued or in progress, the interval at
// which client-go updates its unfinished work, and once more, to zero,
// when it becomes idle. So no goroutine is started here, and a quiet
// queue costs nothing.
//
// client-go registers the same names on its own registry (component-base's
// legacy registry, or controller-runtime's, which adds a controller label):
// register a WorkqueueMetrics on a registry without client-go's workqueue
// metrics, or wrap it ([prometheus.WrapRegistererWithPrefix]).
//
// The zero WorkqueueMetrics is not usable: build one with [NewWorkqueue].
type WorkqueueMetrics struct {
	depth       *prometheus.GaugeVec     // name
	adds        *prometheus.CounterVec   // name
	latency     *prometheus.HistogramVec // name
	work        *prometheus.HistogramVec // name
	unfinished  *prometheus.GaugeVec     // name
	longest     *prometheus.GaugeVec     // name
	retries     *prometheus.CounterVec   // name
	budgetDelay *prometheus.HistogramVec // name
}

var _ workqueue.Metrics = (*WorkqueueMetrics)(nil)
var _ prometheus.Collector = (*WorkqueueMetrics)(nil)

// NewWorkqueue returns a WorkqueueMetrics built from opts. Register it with
// a [prometheus.Registerer] to expose it (reg.MustRegister(m)); nothing is
// registered globally. Two WorkqueueMetrics cannot be registered with the
// same registry (their names collide): one serves every queue.
//
// Possible errors: [workqueue.ErrInvalidOptions] (buckets not strictly
// increasing).
func NewWorkqueue(opts WorkqueueOptions) (*WorkqueueMetrics, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	// The help texts are client-go's, but for depth's, which says it is
	// sampled, and that of the one metric client-go has not.
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: workqueueSubsystem, Name: name, Help: help}, []string{labelName})
	}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: workqueueSubsystem, Name: name, Help: help}, []string{labelName})
	}
	histogram := func(name, help string, buckets []float64) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: workqueueSubsystem, Name: name, Help: help, Buckets: buckets}, []string{labelName})
	}
	return &WorkqueueMetrics{
		depth: gauge("depth",
			"Current depth of workqueue (sampled every 0.5 s while the queue is busy, and when it becomes idle)."),
		adds: counter("adds_total",
			"Total number of adds handled by workqueue"),
		latency: histogram("queue_duration_seconds",
			"How long in seconds an item stays in workqueue before being requested.", opts.DurationBuckets),
		work: histogram("work_duration_seconds",
			"How long in seconds processing an item from workqueue takes.", opts.DurationBuckets),
		unfinished: gauge("unfinished_work_seconds",
			"How many seconds of work has done that is in progress and hasn't been observed by work_duration. "+
				"Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases."),
		longest: gauge("longest_running_processor_seconds",
			"How many seconds has the longest running processor for workqueue been running."),
		retries: counter("retries_total",
			"Total number of retries handled by workqueue"),
		budgetDelay: histogram("retry_budget_delay_seconds",
			"Delay the workqueue's retry budget added to one rate-limited retry beyond its key's backoff; observed only for the retries it delayed.",
			opts.RetryBudgetBuckets),
	}, nil
}

// vec is what the metric vectors have in common.
type vec interface {
	prometheus.Collector
	DeletePartialMatch(prometheus.Labels) int
}

// vecs returns every metric vector, in the order they are described.
func (m *WorkqueueMetrics) vecs() []vec {
	return []vec{m.depth, m.adds, m.latency, m.work, m.unfinished, m.longest, m.retries, m.budgetDelay}
}

// Describe sends the descriptors of every metric: [prometheus.Collector].
func (m *WorkqueueMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.vecs() {
		c.Describe(ch)
	}
}

// Collect sends the current value of every series: [prometheus.Collector].
func (m *WorkqueueMetrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.vecs() {
		c.Collect(ch)
	}
}

// Forget deletes every series of the named queue, so that a queue which has
// been shut down for good does not stay in the exposition with its last
// values. Call it once the queue is shut down and its workers have
// returned: a queue still in use recreates its series as it reports. It
// returns the number of series deleted.
func (m *WorkqueueMetrics) Forget(queueName string) int {
	n := 0
	for _, v := range m.vecs() {
		n += v.DeletePartialMatch(prometheus.Labels{labelName: queueName})
	}
	return n
}

// Depth sets workqueue_depth.
func (m *WorkqueueMetrics) Depth(queue string, n int) {
	m.depth.WithLabelValues(queue).Set(float64(n))
}

// Added increments workqueue_adds_total.
func (m *WorkqueueMetrics) Added(queue string) { m.adds.WithLabelValues(queue).Inc() }

// Retried increments workqueue_retries_total.
func (m *WorkqueueMetrics) Retried(queue string) { m.retries.WithLabelValues(queue).Inc() }

// RetryBudgetDelay observes workqueue_retry_budget_delay_seconds.
func (m *WorkqueueMetrics) RetryBudgetDelay(queue string, d time.Duration) {
	m.budgetDelay.WithLabelValues(queue).Observe(d.Seconds())
}

// QueueLatency observes workqueue_queue_duration_seconds.
func (m *WorkqueueMetrics) QueueLatency(queue string, d time.Duration) {
	m.latency.WithLabelValues(queue).Observe(d.Seconds())
}

// WorkDuration observes workqueue_work_duration_seconds.
func (m *WorkqueueMetrics) WorkDuration(queue string, d time.Duration) {
	m.work.WithLabelValues(queue).Observe(d.Seconds())
}

// UnfinishedWork sets workqueue_unfinished_work_seconds to total and
// workqueue_longest_running_processor_seconds to longest.
func (m *WorkqueueMetrics) UnfinishedWork(queue string, total, longest time.Duration) {
	m.unfinished.WithLabelValues(queue).Set(total.Seconds())
	m.longest.WithLabelValues(queue).Set(longest.Seconds())
}
