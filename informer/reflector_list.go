package informer

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// list reads the whole collection, page by page, and replaces the store's
// contents with it. The source is called on a separate goroutine so that a
// cancelled ctx returns at once even if the source is slow to notice; a panic
// there is re-raised here.
func (r *Reflector[T]) list(ctx context.Context) error {
	type result struct {
		items   []T
		version string
		err     error
	}
	done := make(chan result, 1)
	panicked := make(chan any, 1)
	r.lists.Go(func() {
		defer func() {
			if p := recover(); p != nil {
				panicked <- p
			}
		}()
		opts := r.listOptions()
		items, version, err := r.listPages(ctx, opts)
		if err != nil && ctx.Err() == nil && (errors.Is(err, ErrExpired) || errors.Is(err, ErrVersionTooLarge)) {
			// The version asked for is gone or not there yet: read the
			// latest state instead, at once.
			r.setVersionUnavailable(true)
			items, version, err = r.listPages(ctx, r.listOptions())
		}
		done <- result{items, version, err}
	})
	var res result
	select {
	case <-ctx.Done():
		return ctx.Err()
	case p := <-panicked:
		panic(p)
	case res = <-done:
	}
	if res.err != nil {
		return fmt.Errorf("%s: list: %w", r.opts.Name, res.err)
	}
	r.setVersionUnavailable(false)
	if err := r.opts.Store.Replace(res.items, res.version); err != nil {
		return fmt.Errorf("%s: replace store with list at version %q: %w", r.opts.Name, res.version, err)
	}
	r.setVersion(res.version)
	r.opts.Metrics.Relisted(r.opts.Name)
	r.succeeded()
	return nil
}

// listPages follows continue tokens to the end of one list. If a token
// expires mid-list it starts over without paging, at the same version choice,
// as client-go's pager does.
func (r *Reflector[T]) listPages(ctx context.Context, opts ListOptions) ([]T, string, error) {
	opts.Limit = r.pageSize
	var items []T
	for {
		page, err := r.opts.Source.List(ctx, opts)
		if err != nil {
			if opts.Continue != "" && errors.Is(err, ErrExpired) {
				r.log.V(2).Info("continue token expired mid-list, listing again without paging")
				opts.Continue, opts.Limit = "", 0
				items = items[:0]
				continue
			}
			return nil, "", err
		}
		if items == nil && page.Continue == "" {
			return page.Items, page.Version, nil // one page: no copy
		}
		items = append(items, page.Items...)
		if page.Continue == "" {
			return items, page.Version, nil
		}
		opts.Continue = page.Continue
	}
}

// errStreamStalled ends a streaming list whose initial events stopped coming.
var errStreamStalled = errors.New("streaming list stalled before its end marker")

// streamingList asks the source for its state as a stream of Added events
// ended by a marker bookmark, applies them as one Replace, and returns the
// still-open stream for the watch to continue. On error the stream is
// stopped and the caller falls back to a plain list (or relists on
// ErrExpired / ErrVersionTooLarge).
func (r *Reflector[T]) streamingList(ctx context.Context, backoff *backoffTimer) (Watcher[T], error) {
	for {
		r.mu.Lock()
		version := r.lastVersion
		if r.versionUnavailable {
			version = ""
		}
		r.mu.Unlock()
		w, err := r.opts.Source.Watch(ctx, WatchOptions{
			Version:           version,
			Timeout:           r.watchTimeout(),
			SendInitialEvents: true,
		})
		if err != nil {
			if errors.Is(err, ErrTransient) {
				r.sourceFailed(ctx, fmt.Errorf("%s: streaming list: %w", r.opts.Name, err))
				if !sleep(ctx, backoff.delay()) {
					return nil, ctx.Err()
				}
				continue
			}
			if errors.Is(err, ErrExpired) || errors.Is(err, ErrVersionTooLarge) {
				r.setVersionUnavailable(true)
			}
			return nil, err
		}
		items, version, err := r.collectInitialEvents(ctx, w)
		if err != nil {
			w.Stop()
			if errors.Is(err, ErrExpired) || errors.Is(err, ErrVersionTooLarge) {
				r.setVersionUnavailable(true)
			}
			return nil, err
		}
		r.setVersionUnavailable(false)
		if err := r.opts.Store.Replace(items, version); err != nil {
			w.Stop()
			return nil, fmt.Errorf("%s: replace store with streamed list at version %q: %w", r.opts.Name, version, err)
		}
		r.setVersion(version)
		r.opts.Metrics.Relisted(r.opts.Name)
		r.succeeded()
		return w, nil
	}
}

// collectInitialEvents gathers the Added events of a streaming list up to
// its end marker. Initial events may arrive out of version order, so no
// version is recorded before the marker.
func (r *Reflector[T]) collectInitialEvents(ctx context.Context, w Watcher[T]) ([]T, string, error) {
	var items []T
	stall := time.NewTimer(r.streamTTL)
	defer stall.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, "", ctx.Err()
		case <-stall.C:
			return nil, "", fmt.Errorf("%s: no event for %v: %w", r.opts.Name, r.streamTTL, errStreamStalled)
		case ev, ok := <-w.Events():
			if !ok {
				return nil, "", fmt.Errorf("%s: streaming list closed before its end marker", r.opts.Name)
			}
			switch ev.Type {
			case EventAdded:
				items = append(items, ev.Object)
			case EventBookmark:
				if ev.InitialEventsEnd {
					return items, ev.Version, nil
				}
			case EventError:
				return nil, "", fmt.Errorf("%s: streaming list: %w", r.opts.Name, ev.Err)
			default:
				return nil, "", fmt.Errorf("%s: streaming list sent %v before its end marker", r.opts.Name, ev.Type)
			}
			stall.Reset(r.streamTTL)
		}
	}
}
