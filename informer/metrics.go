package informer

import "time"

// ErrorClass names the kind of an error counted by [Metrics.Error].
type ErrorClass string

// The error classes an informer reports.
const (
	ErrorClassExpired   ErrorClass = "expired"    // a version expired: relist
	ErrorClassTransient ErrorClass = "transient"  // source unreachable for now
	ErrorClassInternal  ErrorClass = "internal"   // source internal error
	ErrorClassListWatch ErrorClass = "list_watch" // any other list or watch failure
	ErrorClassStore     ErrorClass = "store"      // a key, index or transform function refused an object
	ErrorClassHandler   ErrorClass = "handler"    // a handler panicked
	// A handler call ran past the stuck threshold (counted once per call).
	ErrorClassHandlerStuck ErrorClass = "handler_stuck"
)

// Metrics receives an informer's measurements. Implementations must be safe
// for concurrent use and fast: they are called on the informer's hot paths.
// Adapters to metrics libraries implement it; [NoopMetrics] is the default.
//
// Label cardinality is bounded by design: informer and handler names are
// chosen by the program, never derived from data.
type Metrics interface {
	// EventReceived counts one watch event of type t from the source.
	EventReceived(informer string, t EventType)
	// Relisted counts one completed list (or streaming list) applied.
	Relisted(informer string)
	// WatchRestarted counts one watch re-opened without a relist.
	WatchRestarted(informer string)
	// Error counts one error the informer survived.
	Error(informer string, class ErrorClass)
	// QueueDepth reports the number of keys waiting in the informer's queue.
	QueueDepth(informer string, n int)
	// HandlerBacklog reports the notifications (or, coalescing, keys)
	// waiting for one handler.
	HandlerBacklog(informer, handler string, n int)
	// ProcessingLatency observes the time from popping a batch off the queue
	// to having applied it to the store and queued its notifications.
	ProcessingLatency(informer string, d time.Duration)
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

var _ Metrics = NoopMetrics{}
