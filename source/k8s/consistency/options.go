package consistency

import (
	"fmt"
	"time"

	"github.com/go-logr/logr"

	"github.com/ginformer/ginformer/informer"
)

// DefaultMaxWait is the bound of a read's wait when [Options.MaxWait] is
// zero. A write's version normally reaches the cache in milliseconds (the
// watch delivers it as an event); 5 s covers a watch being re-opened or a
// relist after a compaction, and is longer than the 3 s the API server
// itself waits for its watch cache to reach a version before it answers
// "too large resource version". controller-runtime sets no bound (only the
// read's context ends its wait).
const DefaultMaxWait = 5 * time.Second

// Options configures a [Writer]. The zero value is valid: every default
// below.
type Options struct {
	// Name names the writer in metrics, logs and its handler's name on the
	// informer ("consistency-" + Name). Zero: "writer".
	Name string
	// MaxWait bounds each read's wait for the cache (see [Writer.Get]); a
	// read may set its own with [MaxWait]. Zero: [DefaultMaxWait].
	// Negative: no bound, only the read's context ends the wait.
	MaxWait time.Duration
	// Metrics observes the wait of each read. Zero: nothing is observed.
	Metrics Metrics
	// Logger receives the writes that cannot be waited for (a
	// resourceVersion that is not a decimal integer). Zero: discards.
	Logger logr.Logger
}

// withDefaults returns opts with its defaults filled in.
func (o Options) withDefaults() (Options, error) {
	if o.Name == "" {
		o.Name = "writer"
	}
	if o.MaxWait == 0 {
		o.MaxWait = DefaultMaxWait
	}
	if o.Metrics == nil {
		o.Metrics = noMetrics{}
	}
	if o.Logger.GetSink() == nil {
		o.Logger = logr.Discard()
	}
	if len(o.Name) > 200 {
		return o, fmt.Errorf("consistency: Name longer than 200 bytes: %w", informer.ErrInvalidOptions)
	}
	return o, nil
}

// Metrics observes the waits of a [Writer]'s reads. Implementations must be
// safe for concurrent use and fast. The method's arguments are plain strings
// so that an adapter need not import this package:
// github.com/ginformer/ginformer/metrics/prometheus implements it
// (ginformer_read_wait_duration_seconds).
type Metrics interface {
	// ReadWaited observes one read of writer (its [Options.Name]) that
	// waited d for the cache, including reads that found it caught up at
	// once (d near 0). op is "get" or "list" ([Writer.List] and
	// [Writer.WaitForWrites]); result is "ok" (caught up), "timeout" (the
	// bound: [ErrStale]), "canceled" (the read's context), "closed" (the
	// informer stopped or the writer was closed) or "error". Reads with
	// [NoWait] are not observed.
	ReadWaited(writer, op, result string, d time.Duration)
}

// noMetrics observes nothing.
type noMetrics struct{}

func (noMetrics) ReadWaited(string, string, string, time.Duration) {}

// ReadOption modifies one read of a [Writer]: [NoWait], [MaxWait].
type ReadOption func(*readOptions)

// readOptions is what the ReadOptions of a call set.
type readOptions struct {
	noWait  bool
	maxWait time.Duration // 0: the writer's
}

// applyReadOptions returns what opts set.
func applyReadOptions(opts []ReadOption) readOptions {
	var ro readOptions
	for _, o := range opts {
		o(&ro)
	}
	return ro
}

// NoWait makes a read answer from the cache at once, without waiting for
// this writer's writes: the opt-out per call.
func NoWait() ReadOption { return func(o *readOptions) { o.noWait = true } }

// MaxWait bounds this read's wait instead of [Options.MaxWait]: d > 0 is the
// bound, d < 0 none (only the read's context), 0 the writer's.
func MaxWait(d time.Duration) ReadOption { return func(o *readOptions) { o.maxWait = d } }
