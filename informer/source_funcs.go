package informer

import (
	"context"
	"errors"
	"fmt"
)

// SourceFuncs adapts two functions to a [Source], for one-off sources. Its
// zero value is not usable: both functions are required.
type SourceFuncs[T any] struct {
	// ListFunc implements [Source.List].
	ListFunc func(ctx context.Context, opts ListOptions) (ListPage[T], error)
	// WatchFunc implements [Source.Watch].
	WatchFunc func(ctx context.Context, opts WatchOptions) (Watcher[T], error)
	// StreamingList says WatchFunc honours [WatchOptions.SendInitialEvents].
	// False: Watch refuses such requests with errors.ErrUnsupported without
	// calling WatchFunc, so a reflector uses a plain list instead.
	StreamingList bool
}

// List calls ListFunc.
func (s SourceFuncs[T]) List(ctx context.Context, opts ListOptions) (ListPage[T], error) {
	if s.ListFunc == nil {
		return ListPage[T]{}, fmt.Errorf("SourceFuncs.ListFunc is nil: %w", ErrInvalidOptions)
	}
	return s.ListFunc(ctx, opts)
}

// Watch calls WatchFunc, or returns errors.ErrUnsupported for a streaming
// list that StreamingList does not allow.
func (s SourceFuncs[T]) Watch(ctx context.Context, opts WatchOptions) (Watcher[T], error) {
	if opts.SendInitialEvents && !s.StreamingList {
		return nil, fmt.Errorf("streaming list: %w", errors.ErrUnsupported)
	}
	if s.WatchFunc == nil {
		return nil, fmt.Errorf("SourceFuncs.WatchFunc is nil: %w", ErrInvalidOptions)
	}
	return s.WatchFunc(ctx, opts)
}
