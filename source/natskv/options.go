package natskv

import (
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/internal/lograte"
	"github.com/ginformer/ginformer/source/internal/sourcekit"
)

// Options configures a [Source]. JetStream and Bucket are required; every
// other field's zero value is a safe default.
type Options[T any] struct {
	// JetStream talks to the server. Required. The source never closes its
	// connection. Its API prefix and domain are used as they are.
	JetStream jetstream.JetStream
	// Bucket is the name of the KV bucket (its stream is KV_<Bucket>).
	// Required. The bucket must exist when List or Watch is called; see the
	// package doc for the settings that matter (History, AllowDirect).
	Bucket string
	// Codec decodes values. Zero: [JSONCodec].
	Codec Codec[T]
	// WatchBuffer is the number of events each watch buffers for its
	// consumer; a full buffer stops the source from reading the stream.
	// Zero: 100. Negative: unbuffered.
	WatchBuffer int
	// ContinueTTL is how long the rest of a paged list is kept for its
	// continue token (see the package doc, Lists). Zero: 1 minute. An
	// expired token gives [informer.ErrExpired].
	ContinueTTL time.Duration
	// MaxContinues caps the number of paged lists kept at once; the oldest
	// is dropped (its token expires) when a new one would exceed it.
	// Zero: 16.
	MaxContinues int
	// ErrorHandler is told of each bad value, a *[DecodeError], from the
	// source's goroutines (ctx is the List or Watch call's); it must be safe
	// for concurrent use and must not block. Whether or not it is set, a
	// bad value is counted ([Source.DecodeErrors]) and reported to the
	// informer listing or watching the source ([informer.ReportSourceError]:
	// its metrics under class decode, its Health, its ErrorHandler, its
	// log). Zero: none.
	ErrorHandler informer.ErrorHandler
	// Logger receives the source's logs. A bad value is logged by the
	// informer the source reports it to; only a source used without an
	// informer (or a reflector) logs it here, at error level, at most a few
	// per 10 s. Zero: [slog.Default] through [logr.FromSlogHandler]; pass
	// logr.FromSlogHandler(slog.DiscardHandler) to silence it.
	Logger logr.Logger
}

// withDefaults validates opts and fills in the defaults.
func (o Options[T]) withDefaults() (Options[T], error) {
	switch {
	case o.JetStream == nil:
		return o, fmt.Errorf("natskv source: JetStream is required: %w", informer.ErrInvalidOptions)
	case o.Bucket == "":
		return o, fmt.Errorf("natskv source: Bucket is required: %w", informer.ErrInvalidOptions)
	case o.ContinueTTL < 0:
		return o, fmt.Errorf("natskv source: negative ContinueTTL: %w", informer.ErrInvalidOptions)
	case o.MaxContinues < 0:
		return o, fmt.Errorf("natskv source: negative MaxContinues: %w", informer.ErrInvalidOptions)
	}
	o.Logger = lograte.OrDefault(o.Logger)
	if o.Codec == nil {
		o.Codec = JSONCodec[T]{}
	}
	o.WatchBuffer = sourcekit.WatchBuffer(o.WatchBuffer)
	if o.ContinueTTL == 0 {
		o.ContinueTTL = time.Minute
	}
	if o.MaxContinues == 0 {
		o.MaxContinues = 16
	}
	return o, nil
}
