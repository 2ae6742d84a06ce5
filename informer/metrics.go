package informer

import "time"

// ErrorClass names the kind of an error counted by [Metrics.Error].
type ErrorClass string

// The error classes an informer reports.
const (
	ErrorClassExpired   ErrorClass = "expired"    // a version expired: relist
	ErrorClassTransient ErrorClass = "transient"  // source unreachable for now, or a disconnect it recovered from
	ErrorClassInternal  ErrorClass = "internal"   // source internal error
	ErrorClassListWatch ErrorClass = "list_watch" // any other list or watch failure
	ErrorClassStore     ErrorClass = "store"      // a key, index or transform function refused an object
	ErrorClassHandler   ErrorClass = "handler"    // a handler panicked
	// A handler call ran past the stuck threshold (counted once per call).
	ErrorClassHandlerStuck ErrorClass = "handler_stuck"
	// The cache mutation detector found a cached object modified in place
	// (see [MutationDetectorOptions]; counted once per object).
	ErrorClassCacheMutation ErrorClass = "cache_mutation"
	// A snapshot could not be written, or one found at start was refused
	// (see [SnapshotOptions]): the informer went on without it.
	ErrorClassSnapshot ErrorClass = "snapshot"
	// The source skipped an object it could not decode and went on
	// (reported with [ReportSourceError], wrapping [ErrDecode]).
	ErrorClassDecode ErrorClass = "decode"
)

// Metrics receives an informer's measurements. Implementations must be safe
// for concurrent use and fast: they are called on the informer's hot paths.
// Adapters to metrics libraries implement it; [NoopMetrics] is the default.
//
// Label cardinality is bounded by design: informer and handler names are
// chosen by the program, never derived from data. Versions are never passed
// as values: [Metrics.VersionApplied] gets the time a version was applied.
//
// Methods may be added to Metrics as the informer learns to measure more:
// embed [NoopMetrics] in an implementation so that it keeps compiling.
// github.com/ginformer/ginformer/metrics/prometheus (its own module)
// implements it on the Prometheus client library.
type Metrics interface {
	// EventReceived counts one watch event of type t from the source.
	EventReceived(informer string, t EventType)
	// Relisted counts one completed list (or streaming list) applied.
	Relisted(informer string)
	// WatchRestarted counts one watch re-opened without a relist.
	WatchRestarted(informer string)
	// Error counts one error the informer survived, its source's included
	// ([ReportSourceError]). It may be called from several goroutines at
	// once, the source's among them.
	Error(informer string, class ErrorClass)
	// QueueDepth reports the number of keys waiting in the informer's queue.
	QueueDepth(informer string, n int)
	// HandlerBacklog reports the notifications (or, coalescing, keys)
	// waiting for one handler: after each batch the informer queues, and
	// when the handler has caught up (0). Calls for one handler never
	// overlap, and each reads the backlog afresh, so the last value
	// reported is current.
	HandlerBacklog(informer, handler string, n int)
	// ProcessingLatency observes the time from popping a batch off the queue
	// to having applied it to the store and queued its notifications.
	// Batches are applied by the processing loop or, for a lone watch event
	// arriving at an idle queue, on the reflector's goroutine (the direct
	// hand-off); they never overlap, so neither do the QueueDepth,
	// ProcessingLatency and per-handler HandlerBacklog calls they make.
	ProcessingLatency(informer string, d time.Duration)
	// HandlerCallDuration observes one call of a handler, from taking the
	// notification off the handler's queue to the handler's return (or
	// panic). A notification that replaces an object (delete, then add) is
	// one call. The informer's sync marker, which runs no handler code, is
	// not observed.
	HandlerCallDuration(informer, handler string, d time.Duration)
	// VersionApplied reports that the cache applied a version of the source
	// at time at: every change up to that version is visible through the
	// Lister (see [SharedInformer.WaitForVersion]). A bookmark applies its
	// version again, so at says how recently the cache was known current
	// ([Health].AppliedAt). Calls for one informer may come from two
	// goroutines; a report may reach Metrics a moment after a later one.
	VersionApplied(informer string, at time.Time)
	// Synced reports that the cache holds the source's first complete list,
	// sinceStart after [SharedInformer.Run] started. It is called once per
	// informer (an informer runs once).
	Synced(informer string, sinceStart time.Duration)
	// WarmStart reports how the start of an informer with
	// [Options.Snapshot] used its snapshot, once it is decided (an outcome
	// for which [StartOutcome.Final] is true): once per informer. restore is
	// the time from Run's start to the restored cache being loaded, zero
	// when nothing was restored.
	WarmStart(informer string, outcome StartOutcome, restore time.Duration)
	// SnapshotWritten reports a snapshot saved at time at, of size bytes.
	SnapshotWritten(informer string, bytes int64, at time.Time)
}

// NoopMetrics is a [Metrics] that records nothing. Embed it in a partial
// implementation to ignore the measurements it does not care about.
type NoopMetrics struct{}

// EventReceived does nothing.
func (NoopMetrics) EventReceived(string, EventType) {}

// Relisted does nothing.
func (NoopMetrics) Relisted(string) {}

// WatchRestarted does nothing.
func (NoopMetrics) WatchRestarted(string) {}

// Error does nothing.
func (NoopMetrics) Error(string, ErrorClass) {}

// QueueDepth does nothing.
func (NoopMetrics) QueueDepth(string, int) {}

// HandlerBacklog does nothing.
func (NoopMetrics) HandlerBacklog(string, string, int) {}

// ProcessingLatency does nothing.
func (NoopMetrics) ProcessingLatency(string, time.Duration) {}

// HandlerCallDuration does nothing.
func (NoopMetrics) HandlerCallDuration(string, string, time.Duration) {}

// VersionApplied does nothing.
func (NoopMetrics) VersionApplied(string, time.Time) {}

// Synced does nothing.
func (NoopMetrics) Synced(string, time.Duration) {}

var _ Metrics = NoopMetrics{}

// WarmStart does nothing.
func (NoopMetrics) WarmStart(string, StartOutcome, time.Duration) {}

// SnapshotWritten does nothing.
func (NoopMetrics) SnapshotWritten(string, int64, time.Time) {}
