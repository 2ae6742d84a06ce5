// Package prometheus implements [informer.Metrics] and [workqueue.Metrics]
// on the Prometheus client library (github.com/prometheus/client_golang).
// It is its own module, so that the core module never depends on that
// library:
//
//	go get github.com/ginformer/ginformer/metrics/prometheus
//
// Build one [Metrics] with [New], register it, and pass it as the Metrics
// option of every informer (see the example). Its name clashes with the
// client library's package: import it under another name, such as
// informerprom.
//
// The metrics (their help text and docs/metrics.md in the repository say
// what each measures):
//
//	name                                              type       labels
//	ginformer_watch_events_total                      counter    informer, type
//	ginformer_lists_total                             counter    informer
//	ginformer_watch_restarts_total                    counter    informer
//	ginformer_errors_total                            counter    informer, class
//	ginformer_queue_depth                             gauge      informer
//	ginformer_handler_backlog                         gauge      informer, handler
//	ginformer_processing_latency_seconds              histogram  informer
//	ginformer_handler_call_duration_seconds           histogram  informer, handler
//	ginformer_last_applied_version_timestamp_seconds  gauge      informer
//	ginformer_initial_sync_duration_seconds           gauge      informer
//	ginformer_starts_total                            counter    informer, outcome
//	ginformer_restore_duration_seconds                gauge      informer
//	ginformer_snapshot_bytes                          gauge      informer
//	ginformer_snapshot_timestamp_seconds              gauge      informer
//	ginformer_read_wait_duration_seconds              histogram  writer, op, result
//
// informer is [informer.Options].Name, handler is
// [informer.HandlerOptions].Name, type is the watch event's type (added,
// modified, deleted, bookmark, error), class an [informer.ErrorClass],
// outcome an [informer.StartOutcome].
// Label values are bounded: informer and handler names are chosen by the
// program (name the handlers: unnamed ones are "handler-N"), event types
// and error classes are enums, and versions are never labels: the time a
// version was applied is a gauge's value.
//
// For work queues, [NewWorkqueue] builds a [WorkqueueMetrics]: register it
// and pass it as the Metrics option of every [workqueue.Queue] (a
// [workqueue.Controller]'s included). Its metrics are client-go's workqueue
// metrics, with the same names, the one label name (the queue's Name) and
// the same buckets, so that client-go's dashboards and alerts work
// unchanged; [WorkqueueMetrics] lists them.
//
// [Metrics] also implements the Metrics of
// github.com/ginformer/ginformer/source/k8s/consistency (its ReadWaited
// method, with plain string arguments, so this module does not import that
// one): writer is that package's Options.Name, op "get" or "list", result
// "ok", "timeout", "canceled", "closed" or "error".
package prometheus
