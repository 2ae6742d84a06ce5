package informer

import (
	"context"
	"errors"
	"fmt"
	"reflect"
)

// ErrorHandler is told of an error an informer or reflector survived. It is
// called on the goroutine that met the error (a handler's, the
// reflector's, or, for an error the source reports with
// [ReportSourceError], the source's), with no internal lock held, possibly
// from several goroutines at once, and must not block: hand the error off
// if it needs slow work. ctx is the context of the Run that met the error
// (for a source's report, the context the source passed). Errors are
// logged whether or not an ErrorHandler is set.
type ErrorHandler func(ctx context.Context, err error)

// report handles an error the informer itself survived (not one of its
// reflector's): it counts it under class, keeps it for [Health], logs it at
// error level (rate-limited) and hands it to the ErrorHandler.
func (inf *SharedInformer[K, T]) report(class ErrorClass, err error) {
	inf.metrics.Error(inf.name, class)
	inf.health.countError(class)
	inf.health.setError(err)
	inf.limiter.Error(inf.log, string(class), err, "informer error", "class", class)
	inf.callErrorHandler(inf.ctx(), err)
}

// sourceFailed is the reflector's ErrorHandler: the reflector has already
// counted and logged err; the informer keeps it for [Health] and WaitForSync.
func (inf *SharedInformer[K, T]) sourceFailed(ctx context.Context, err error) {
	inf.health.setError(err)
	inf.callErrorHandler(ctx, err)
}

func (inf *SharedInformer[K, T]) callErrorHandler(ctx context.Context, err error) {
	if inf.onError != nil {
		inf.onError(ctx, err)
	}
}

// ctx returns the context of Run, or a background context before Run.
func (inf *SharedInformer[K, T]) ctx() context.Context {
	inf.mu.Lock()
	defer inf.mu.Unlock()
	if inf.runCtx == nil {
		return context.Background()
	}
	return inf.runCtx
}

// isNil reports whether v is nil or an interface holding a nil pointer,
// map, slice, channel or function: a value whose methods would panic later,
// on a goroutine the caller does not own.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// checkSourceFuncs refuses a [SourceFuncs] without its functions, which
// would otherwise fail only when first listed.
func checkSourceFuncs[T any](src Source[T]) error {
	var sf SourceFuncs[T]
	switch s := src.(type) {
	case SourceFuncs[T]:
		sf = s
	case *SourceFuncs[T]:
		sf = *s
	default:
		return nil
	}
	if sf.ListFunc == nil || sf.WatchFunc == nil {
		return fmt.Errorf("SourceFuncs needs both ListFunc and WatchFunc: %w", ErrInvalidOptions)
	}
	return nil
}

// checkHandler refuses handlers that could never be called or would panic
// on the handler's goroutine: nil, a typed nil, a HandlerFuncs with no
// function set.
func checkHandler[K comparable, T any](h Handler[K, T]) error {
	if isNil(h) {
		return fmt.Errorf("handler is nil (%T): %w", h, ErrInvalidOptions)
	}
	var hf HandlerFuncs[K, T]
	switch f := h.(type) {
	case HandlerFuncs[K, T]:
		hf = f
	case *HandlerFuncs[K, T]:
		hf = *f
	default:
		return nil
	}
	if hf.AddFunc == nil && hf.UpdateFunc == nil && hf.DeleteFunc == nil {
		return fmt.Errorf("HandlerFuncs has no function set: %w", ErrInvalidOptions)
	}
	return nil
}

// emptyLister is the Lister of a zero SharedInformer: empty, read-only.
func emptyLister[K comparable, T any]() Lister[K, T] {
	s, _ := NewIndexer(IndexerOptions[K, T]{KeyFunc: func(T) (K, error) {
		var zero K
		return zero, errors.New("zero SharedInformer")
	}})
	return s
}
