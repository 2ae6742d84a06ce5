package prometheus

import (
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ginformer/ginformer/informer"
)

// The label names. Their values are bounded: informer and handler names are
// chosen by the program; event types and error classes are enums.
const (
	labelInformer = "informer"
	labelHandler  = "handler"
	labelType     = "type"
	labelClass    = "class"
	labelOutcome  = "outcome"
	labelWriter   = "writer"
	labelOp       = "op"
	labelResult   = "result"
)

const namespace = "ginformer"

// Options configures [New]. The zero value is the default.
type Options struct {
	// ProcessingBuckets are the upper bounds (seconds, strictly increasing)
	// of ginformer_processing_latency_seconds. Applying a batch to the cache
	// usually takes microseconds; a relist, applied as one batch, longer.
	// Zero: 10µs, 50µs, 100µs, 250µs, 500µs, 1ms, 2.5ms, 5ms, 10ms, 25ms,
	// 50ms, 100ms, 250ms, 500ms, 1s, 2.5s, 5s, 10s.
	ProcessingBuckets []float64
	// HandlerBuckets are the upper bounds (seconds, strictly increasing) of
	// ginformer_handler_call_duration_seconds. Zero: 100µs, 500µs, 1ms,
	// 5ms, 10ms, 25ms, 50ms, 100ms, 250ms, 500ms, 1s, 2.5s, 5s, 10s, 30s,
	// 60s.
	HandlerBuckets []float64
	// ReadWaitBuckets are the upper bounds (seconds, strictly increasing) of
	// ginformer_read_wait_duration_seconds (a read-your-writes reader's wait
	// for the cache: source/k8s/consistency). Zero: those of HandlerBuckets'
	// default.
	ReadWaitBuckets []float64
}

var (
	defaultProcessingBuckets = []float64{
		0.00001, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
		0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
	}
	defaultHandlerBuckets = []float64{
		0.0001, 0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
		5, 10, 30, 60,
	}
)

// withDefaults validates o and fills its zero fields with copies of the
// defaults; the caller's slices are cloned, never kept.
//
// Possible errors: [informer.ErrInvalidOptions].
func (o Options) withDefaults() (Options, error) {
	var err error
	if o.ProcessingBuckets, err = buckets("Options.ProcessingBuckets", o.ProcessingBuckets, defaultProcessingBuckets, informer.ErrInvalidOptions); err != nil {
		return o, err
	}
	if o.HandlerBuckets, err = buckets("Options.HandlerBuckets", o.HandlerBuckets, defaultHandlerBuckets, informer.ErrInvalidOptions); err != nil {
		return o, err
	}
	if o.ReadWaitBuckets, err = buckets("Options.ReadWaitBuckets", o.ReadWaitBuckets, defaultHandlerBuckets, informer.ErrInvalidOptions); err != nil {
		return o, err
	}
	return o, nil
}

// buckets returns a copy of bs, or of def if bs is empty. If bs is not
// strictly increasing, it returns an error naming field and wrapping
// invalid, the options sentinel of the package the metrics serve.
func buckets(field string, bs, def []float64, invalid error) ([]float64, error) {
	if len(bs) == 0 {
		return slices.Clone(def), nil
	}
	for i := 1; i < len(bs); i++ {
		if !(bs[i] > bs[i-1]) { // also refuses NaN
			return nil, fmt.Errorf("prometheus: %s not strictly increasing (%v then %v): %w", field, bs[i-1], bs[i], invalid)
		}
	}
	return slices.Clone(bs), nil
}

// Metrics is an [informer.Metrics] that records into Prometheus metrics, and
// the [prometheus.Collector] that exposes them: register it once, then pass
// it as the Metrics option of any number of informers (and reflectors),
// each with its own name. Safe for concurrent use.
//
// The zero Metrics is not usable: build one with [New].
type Metrics struct {
	events          *prometheus.CounterVec   // informer, type
	lists           *prometheus.CounterVec   // informer
	watchRestarts   *prometheus.CounterVec   // informer
	errors          *prometheus.CounterVec   // informer, class
	queueDepth      *prometheus.GaugeVec     // informer
	handlerBacklog  *prometheus.GaugeVec     // informer, handler
	processing      *prometheus.HistogramVec // informer
	handlerCalls    *prometheus.HistogramVec // informer, handler
	versionApplied  *prometheus.GaugeVec     // informer
	initialSyncTime *prometheus.GaugeVec     // informer
	starts          *prometheus.CounterVec   // informer, outcome
	restoreTime     *prometheus.GaugeVec     // informer
	snapshotBytes   *prometheus.GaugeVec     // informer
	snapshotTime    *prometheus.GaugeVec     // informer
	readWaits       *prometheus.HistogramVec // writer, op, result
}

var _ informer.Metrics = (*Metrics)(nil)
var _ prometheus.Collector = (*Metrics)(nil)

// New returns a Metrics built from opts. Register it with a
// [prometheus.Registerer] to expose it; two Metrics cannot be registered
// with the same registry (their names collide). To prefix the names or add
// constant labels, wrap the registry ([prometheus.WrapRegistererWithPrefix],
// [prometheus.WrapRegistererWith]).
//
// Possible errors: [informer.ErrInvalidOptions] (buckets not strictly
// increasing).
func New(opts Options) (*Metrics, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, labels)
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help}, labels)
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: name, Help: help, Buckets: buckets}, labels)
	}
	return &Metrics{
		events: counter("watch_events_total",
			"Watch events received from the source, by event type (added, modified, deleted, bookmark, error).",
			labelInformer, labelType),
		lists: counter("lists_total",
			"Complete lists (or streaming lists) received from the source and queued, the first one included.",
			labelInformer),
		watchRestarts: counter("watch_restarts_total",
			"Watches re-opened from the last version, without a relist.",
			labelInformer),
		errors: counter("errors_total",
			"Errors the informer survived, its source's included, by class (expired, transient, internal, list_watch, store, handler, handler_stuck, cache_mutation, snapshot, decode).",
			labelInformer, labelClass),
		queueDepth: gauge("queue_depth",
			"Keys waiting in the informer's queue, after the last batch processed.",
			labelInformer),
		handlerBacklog: gauge("handler_backlog",
			"Notifications (keys, for a coalescing handler) waiting for a handler.",
			labelInformer, labelHandler),
		processing: histogram("processing_latency_seconds",
			"Time to apply one batch of queued keys to the cache and queue its notifications to the handlers.",
			opts.ProcessingBuckets, labelInformer),
		handlerCalls: histogram("handler_call_duration_seconds",
			"Duration of one handler call, from taking the notification off the handler's queue to its return or panic.",
			opts.HandlerBuckets, labelInformer, labelHandler),
		versionApplied: gauge("last_applied_version_timestamp_seconds",
			"Unix time at which the cache last applied a version of the source (bookmarks included): how recently the cache was known current.",
			labelInformer),
		initialSyncTime: gauge("initial_sync_duration_seconds",
			"Time from the informer's start to its cache holding the source's first complete list.",
			labelInformer),
		starts: counter("starts_total",
			"Starts of an informer with snapshots on, by outcome: cold (no snapshot), refused (a snapshot refused: see the informer's errors), resumed (restored and caught up without a list), relisted (restored, then listed once).",
			labelInformer, labelOutcome),
		restoreTime: gauge("restore_duration_seconds",
			"Time from the informer's start to its cache holding the restored snapshot (0 when nothing was restored).",
			labelInformer),
		snapshotBytes: gauge("snapshot_bytes",
			"Size of the last snapshot written.",
			labelInformer),
		snapshotTime: gauge("snapshot_timestamp_seconds",
			"Unix time of the last snapshot written: time() minus it is the snapshot's age.",
			labelInformer),
		readWaits: histogram("read_wait_duration_seconds",
			"Time a read-your-writes read waited for the cache to show its writer's writes, by operation (get, list) and result (ok, timeout, canceled, closed, error).",
			opts.ReadWaitBuckets, labelWriter, labelOp, labelResult),
	}, nil
}

// vecs returns every metric vector, in the order they are described.
func (m *Metrics) vecs() []prometheus.Collector {
	return []prometheus.Collector{
		m.events, m.lists, m.watchRestarts, m.errors, m.queueDepth,
		m.handlerBacklog, m.processing, m.handlerCalls, m.versionApplied, m.initialSyncTime,
		m.starts, m.restoreTime, m.snapshotBytes, m.snapshotTime, m.readWaits,
	}
}

// Describe sends the descriptors of every metric: [prometheus.Collector].
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.vecs() {
		c.Describe(ch)
	}
}

// Collect sends the current value of every series: [prometheus.Collector].
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.vecs() {
		c.Collect(ch)
	}
}

// Forget deletes every series of the named informer, so that an informer
// which has stopped for good (a [informer.Group] member removed at run
// time) does not stay in the exposition with its last values. Call it after
// the informer's Run has returned: an informer still running recreates its
// series as it reports. It returns the number of series deleted.
func (m *Metrics) Forget(informerName string) int {
	n := 0
	only := prometheus.Labels{labelInformer: informerName}
	n += m.events.DeletePartialMatch(only)
	n += m.lists.DeletePartialMatch(only)
	n += m.watchRestarts.DeletePartialMatch(only)
	n += m.errors.DeletePartialMatch(only)
	n += m.queueDepth.DeletePartialMatch(only)
	n += m.handlerBacklog.DeletePartialMatch(only)
	n += m.processing.DeletePartialMatch(only)
	n += m.handlerCalls.DeletePartialMatch(only)
	n += m.versionApplied.DeletePartialMatch(only)
	n += m.initialSyncTime.DeletePartialMatch(only)
	n += m.starts.DeletePartialMatch(only)
	n += m.restoreTime.DeletePartialMatch(only)
	n += m.snapshotBytes.DeletePartialMatch(only)
	n += m.snapshotTime.DeletePartialMatch(only)
	return n
}

// eventTypes are the values of the type label, by [informer.EventType].
var eventTypes = [...]string{
	informer.EventAdded:    "added",
	informer.EventModified: "modified",
	informer.EventDeleted:  "deleted",
	informer.EventBookmark: "bookmark",
	informer.EventError:    "error",
}

func eventType(t informer.EventType) string {
	if int(t) < len(eventTypes) && eventTypes[t] != "" {
		return eventTypes[t]
	}
	return "unknown" // one value for every type the source invents: bounded
}

// EventReceived increments ginformer_watch_events_total.
func (m *Metrics) EventReceived(inf string, t informer.EventType) {
	m.events.WithLabelValues(inf, eventType(t)).Inc()
}

// Relisted increments ginformer_lists_total.
func (m *Metrics) Relisted(inf string) { m.lists.WithLabelValues(inf).Inc() }

// WatchRestarted increments ginformer_watch_restarts_total.
func (m *Metrics) WatchRestarted(inf string) { m.watchRestarts.WithLabelValues(inf).Inc() }

// Error increments ginformer_errors_total.
func (m *Metrics) Error(inf string, class informer.ErrorClass) {
	m.errors.WithLabelValues(inf, string(class)).Inc()
}

// QueueDepth sets ginformer_queue_depth.
func (m *Metrics) QueueDepth(inf string, n int) { m.queueDepth.WithLabelValues(inf).Set(float64(n)) }

// HandlerBacklog sets ginformer_handler_backlog.
func (m *Metrics) HandlerBacklog(inf, handler string, n int) {
	m.handlerBacklog.WithLabelValues(inf, handler).Set(float64(n))
}

// ProcessingLatency observes ginformer_processing_latency_seconds.
func (m *Metrics) ProcessingLatency(inf string, d time.Duration) {
	m.processing.WithLabelValues(inf).Observe(d.Seconds())
}

// HandlerCallDuration observes ginformer_handler_call_duration_seconds.
func (m *Metrics) HandlerCallDuration(inf, handler string, d time.Duration) {
	m.handlerCalls.WithLabelValues(inf, handler).Observe(d.Seconds())
}

// VersionApplied sets ginformer_last_applied_version_timestamp_seconds.
func (m *Metrics) VersionApplied(inf string, at time.Time) {
	m.versionApplied.WithLabelValues(inf).Set(float64(at.UnixNano()) / 1e9)
}

// Synced sets ginformer_initial_sync_duration_seconds.
func (m *Metrics) Synced(inf string, sinceStart time.Duration) {
	m.initialSyncTime.WithLabelValues(inf).Set(sinceStart.Seconds())
}

// WarmStart counts one start by outcome and sets its restore duration:
// [informer.Metrics].
func (m *Metrics) WarmStart(informerName string, outcome informer.StartOutcome, restore time.Duration) {
	m.starts.WithLabelValues(informerName, outcome.String()).Inc()
	m.restoreTime.WithLabelValues(informerName).Set(restore.Seconds())
}

// SnapshotWritten sets the size and time of the last snapshot written:
// [informer.Metrics].
func (m *Metrics) SnapshotWritten(informerName string, bytes int64, at time.Time) {
	m.snapshotBytes.WithLabelValues(informerName).Set(float64(bytes))
	m.snapshotTime.WithLabelValues(informerName).Set(float64(at.UnixNano()) / 1e9)
}

// ReadWaited observes one read's wait for the cache (source/k8s/consistency's
// Metrics, which this implements without importing it).
func (m *Metrics) ReadWaited(writer, op, result string, d time.Duration) {
	m.readWaits.WithLabelValues(writer, op, result).Observe(d.Seconds())
}
