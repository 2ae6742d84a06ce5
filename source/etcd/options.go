package etcd

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/internal/lograte"
	"github.com/ginformer/ginformer/source/internal/sourcekit"
)

// Options configures a [Source]. Client is required; every other field's
// zero value is a safe default.
type Options[T any] struct {
	// Client talks to etcd. Required. The source never closes it; each
	// watch runs on a connection of its own dialled from it and closed when
	// the watch ends. See the package doc (Connections and liveness) for
	// the recommended settings: DialKeepAliveTime and DialKeepAliveTimeout.
	Client *clientv3.Client
	// Prefix is the key prefix the source covers. Zero: the whole keyspace.
	// A prefix normally ends with "/", so "/a" does not also cover "/ab".
	Prefix string
	// StripPrefix removes Prefix from [Object.Key]. Zero: keys are full etcd
	// keys.
	StripPrefix bool
	// Codec decodes values. Zero: [JSONCodec].
	Codec Codec[T]
	// Transform, if set, is applied to every stored value before the codec
	// (decrypt, decompress), like the apiserver's TransformFromStorage. key
	// is the full etcd key. It is called concurrently and must be safe for
	// it. An error makes the value bad (see the package doc). Zero: none.
	Transform func(ctx context.Context, key string, data []byte) ([]byte, error)
	// Filter, if set, selects the objects the source yields, by full key and
	// value; see the package doc for the Added/Deleted synthesis. It must be
	// deterministic and safe for concurrent use. Zero: every object.
	Filter func(key string, value T) bool
	// PageSize caps the number of keys read per list request, whatever
	// [informer.ListOptions.Limit] asks, and sets the page size of
	// streaming lists on an etcd without RangeStream (see the package doc).
	// Zero: no cap (the caller's Limit; streaming lists: pages of about
	// 2 MB).
	PageSize int
	// WatchBuffer is the number of events each watch buffers for its
	// consumer; a full buffer stops the source from reading etcd. Zero: 100,
	// as the apiserver. Negative: unbuffered.
	WatchBuffer int
	// LivenessInterval: a watch that hears nothing from etcd for this long
	// asks for a progress notification. Zero: 2 s.
	LivenessInterval time.Duration
	// LivenessTimeout: a watch whose progress request gets no answer within
	// this long, or that etcd does not confirm within this long of opening
	// it, ends with an Error event wrapping [informer.ErrTransient]. Zero:
	// 3 s. Negative: no liveness check, and no limit on the confirmation.
	LivenessTimeout time.Duration
	// ErrorHandler is told of each bad value, a *[DecodeError], from the
	// source's goroutines (ctx is the List or Watch call's); it must be safe
	// for concurrent use and must not block. Whether or not it is set, a
	// bad value is counted ([Source.DecodeErrors]) and reported to the
	// informer listing or watching the source ([informer.ReportSourceError]:
	// its metrics under class decode, its Health, its ErrorHandler, its
	// log). Zero: none.
	ErrorHandler informer.ErrorHandler
	// Logger receives the source's logs. A bad value, or a move to another
	// member after a failure, is logged by the informer the source reports
	// it to; only a source used without an informer (or a reflector) logs
	// it here: bad values at error level, at most a few per 10 s (the next
	// message says how many were left out), moves at V(1). Zero: [slog.Default] through [logr.FromSlogHandler], which
	// prints errors; pass logr.FromSlogHandler(slog.DiscardHandler) to silence it ([logr.Discard] returns the zero Logger, which means this default).
	Logger logr.Logger
}

// withDefaults validates opts and fills in the defaults.
func (o Options[T]) withDefaults() (Options[T], error) {
	if o.Client == nil {
		return o, fmt.Errorf("etcd source: Client is required: %w", informer.ErrInvalidOptions)
	}
	o.Logger = lograte.OrDefault(o.Logger)
	if o.PageSize < 0 {
		return o, fmt.Errorf("etcd source: negative PageSize: %w", informer.ErrInvalidOptions)
	}
	if o.LivenessInterval < 0 {
		return o, fmt.Errorf("etcd source: negative LivenessInterval: %w", informer.ErrInvalidOptions)
	}
	if o.Codec == nil {
		o.Codec = JSONCodec[T]{}
	}
	o.WatchBuffer = sourcekit.WatchBuffer(o.WatchBuffer)
	if o.LivenessInterval == 0 {
		o.LivenessInterval = 2 * time.Second
	}
	if o.LivenessTimeout == 0 {
		o.LivenessTimeout = 3 * time.Second
	}
	return o, nil
}
