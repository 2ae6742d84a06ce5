package informer

import (
	"context"
	"fmt"
)

// ReportSourceError tells the [Reflector] (and so the informer) that called
// the source with ctx of an error the source survived: an object it could
// not decode and skipped (wrap [ErrDecode]), a disconnect it recovered from
// or a move to another endpoint (wrap [ErrTransient]), or any other error
// it went on after. Errors that end a list or a watch are not reported
// this way: List returns them and a watch sends them as an Error event.
//
// ctx is the context the reflector gave [Source.List] or [Source.Watch], or
// one derived from it: a source may call ReportSourceError from any
// goroutine of that call (a watch's own goroutine included) for as long as
// the call or its stream lasts, and concurrently. A report after the
// informer has stopped is harmless.
//
// The reflector counts the error under its class ([Metrics.Error]:
// [ErrorClassDecode] for ErrDecode, [ErrorClassTransient] for ErrTransient,
// [ErrorClassInternal] for ErrInternal, [ErrorClassExpired] for ErrExpired,
// [ErrorClassListWatch] for anything else), hands it to its ErrorHandler
// (an informer keeps it in [Health] as LastError) and logs it: at V(1)
// (transient, internal) or V(2) (expired), or at error level, rate-limited
// per class, for the rest. It does not count as a failed list or watch: it
// neither starts a backoff nor triggers a relist. The error is wrapped with
// the reflector's name; errors.Is and errors.As still see what the source
// passed.
//
// It returns true when a reflector took the error, false when ctx carries
// none (the source is used on its own, or ctx does not derive from a
// reflector's): the source should then log the error itself, so that a
// failure someone must act on is never silent. Reporting never blocks on
// the source or a handler; it calls the ErrorHandler and Metrics, which
// must not block either. A nil err reports nothing and returns false.
func ReportSourceError(ctx context.Context, err error) bool {
	if err == nil || ctx == nil {
		return false
	}
	r, ok := ctx.Value(sourceReporterKey{}).(sourceReporter)
	if !ok {
		return false
	}
	r.sourceSurvived(ctx, err)
	return true
}

// sourceReporterKey is the context key under which a reflector puts itself
// in the contexts it gives its source.
type sourceReporterKey struct{}

// sourceReporter receives the errors of [ReportSourceError].
type sourceReporter interface {
	sourceSurvived(ctx context.Context, err error)
}

// withSourceReporter returns ctx carrying r for [ReportSourceError].
func withSourceReporter(ctx context.Context, r sourceReporter) context.Context {
	return context.WithValue(ctx, sourceReporterKey{}, r)
}

// sourceSurvived handles an error the source reported: counted by class,
// logged at the level its class calls for, handed to the ErrorHandler. It
// leaves the run of failures alone: the source went on.
func (r *Reflector[T]) sourceSurvived(ctx context.Context, err error) {
	class := errorClass(err)
	err = fmt.Errorf("%s: %w", r.opts.Name, err)
	r.opts.Metrics.Error(r.opts.Name, class)
	switch class {
	case ErrorClassTransient, ErrorClassInternal:
		r.log.V(1).Info("the source recovered from an error", "err", err, "class", class)
	case ErrorClassExpired:
		r.log.V(2).Info("the source reported an expired version", "err", err)
	default:
		r.limiter.Error(r.log, "source "+string(class), err, "the source survived an error", "class", class)
	}
	if r.onError != nil {
		r.onError(ctx, err)
	}
}
