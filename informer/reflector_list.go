package informer

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ListReceiver may be implemented by a [ReflectorStore] that takes a list
// page by page rather than as one slice. The reflector then hands it each
// page as it arrives (and the initial events of a streaming list in chunks)
// instead of gathering the whole list first, so a store that drops what it
// does not need keeps a relist's memory near a page: a [DeltaFIFO] with
// [DeltaFIFOOptions.ObjectVersion] drops the objects it already holds at the
// same version.
type ListReceiver[T any] interface {
	// BeginList starts one list. The reflector passes the list's pages to
	// the returned builder in order, from one goroutine at a time, then
	// either calls Commit once or drops the builder (the list failed or was
	// abandoned). A builder that is never committed must leave the store
	// unchanged.
	BeginList() ListBuilder[T]
}

// ListBuilder receives the pages of one list; see [ListReceiver].
type ListBuilder[T any] interface {
	// AddPage takes the next page. items belongs to the caller: the builder
	// must not modify it, and may retain it. An error abandons the list.
	AddPage(items []T) error
	// Commit applies the whole list, read at version, as
	// [ReflectorStore.Replace] would.
	Commit(version string) error
}

// beginList starts a list into the store: its own builder if it is a
// ListReceiver, else one that gathers the pages for Replace.
func (r *Reflector[T]) beginList() ListBuilder[T] {
	if lr, ok := r.opts.Store.(ListReceiver[T]); ok {
		return lr.BeginList()
	}
	return &gatherList[T]{store: r.opts.Store}
}

// gatherList gathers a list's pages and commits them with one Replace.
type gatherList[T any] struct {
	store ReflectorStore[T]
	items []T
	pages int
}

func (g *gatherList[T]) AddPage(items []T) error {
	switch g.pages {
	case 0:
		g.items = items // one page: no copy
	case 1:
		// Full slice expression: the first page's array is the source's;
		// never append into it.
		g.items = append(g.items[:len(g.items):len(g.items)], items...)
	default:
		g.items = append(g.items, items...)
	}
	g.pages++
	return nil
}

func (g *gatherList[T]) Commit(version string) error { return g.store.Replace(g.items, version) }

// errNoVersion is the error of a list page, or of the end of a streaming
// list's initial events, that carries no version.
func errNoVersion(what string) error {
	return fmt.Errorf("%s carries no version (the source must name the state it read; the reflector will not watch from \"\"): %w", what, ErrInvalidVersion)
}

// list reads the whole collection, page by page, and replaces the store's
// contents with it. The source is called (and the pages added to the
// store's list builder) on a separate goroutine so that a cancelled ctx
// returns at once even if the source is slow to notice; a panic there is
// re-raised here.
func (r *Reflector[T]) list(ctx context.Context) error {
	type result struct {
		list    ListBuilder[T]
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
		list, version, err := r.listPages(ctx, opts)
		if err != nil && ctx.Err() == nil && (errors.Is(err, ErrExpired) || errors.Is(err, ErrVersionTooLarge)) {
			// The version asked for is gone or not there yet: read the
			// latest state instead, at once.
			r.setVersionUnavailable(true)
			list, version, err = r.listPages(ctx, r.listOptions())
		}
		done <- result{list, version, err}
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
	if err := res.list.Commit(res.version); err != nil {
		return fmt.Errorf("%s: replace store with list at version %q: %w", r.opts.Name, res.version, storeError(err))
	}
	r.setVersion(res.version)
	r.opts.Metrics.Relisted(r.opts.Name)
	r.succeeded()
	return nil
}

// listPages follows continue tokens to the end of one list, adding each page
// to a new list builder of the store. If a token expires mid-list it starts
// over (with a new builder) without paging, at the same version choice, as
// client-go's pager does. A page without a version fails the list.
func (r *Reflector[T]) listPages(ctx context.Context, opts ListOptions) (ListBuilder[T], string, error) {
	opts.Limit = r.pageSize
	list := r.beginList()
	for {
		page, err := r.opts.Source.List(ctx, opts)
		if err != nil {
			if opts.Continue != "" && errors.Is(err, ErrExpired) {
				r.log.V(2).Info("continue token expired mid-list, listing again without paging")
				opts.Continue, opts.Limit = "", 0
				list = r.beginList()
				continue
			}
			return nil, "", err
		}
		if page.Version == "" {
			return nil, "", errNoVersion("list page")
		}
		if err := list.AddPage(page.Items); err != nil {
			return nil, "", fmt.Errorf("store refused a page: %w", storeError(err))
		}
		if page.Continue == "" {
			return list, page.Version, nil
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
				if !r.pause(ctx, backoff, err) {
					return nil, ctx.Err()
				}
				continue
			}
			if errors.Is(err, ErrExpired) || errors.Is(err, ErrVersionTooLarge) {
				r.setVersionUnavailable(true)
			}
			return nil, err
		}
		list, version, err := r.collectInitialEvents(ctx, w)
		if err != nil {
			w.Stop()
			if errors.Is(err, ErrExpired) || errors.Is(err, ErrVersionTooLarge) {
				r.setVersionUnavailable(true)
			}
			return nil, err
		}
		r.setVersionUnavailable(false)
		if err := list.Commit(version); err != nil {
			w.Stop()
			return nil, fmt.Errorf("%s: replace store with streamed list at version %q: %w", r.opts.Name, version, storeError(err))
		}
		r.setVersion(version)
		r.opts.Metrics.Relisted(r.opts.Name)
		r.succeeded()
		return w, nil
	}
}

// streamChunk is the number of initial events of a streaming list handed
// to the store's list builder at once.
const streamChunk = 500

// collectInitialEvents adds the Added events of a streaming list, up to its
// end marker, to a new list builder of the store, in chunks. Initial events
// may arrive out of version order, so no version is recorded before the
// marker. A marker without a version fails the list.
func (r *Reflector[T]) collectInitialEvents(ctx context.Context, w Watcher[T]) (ListBuilder[T], string, error) {
	list := r.beginList()
	var chunk []T
	flush := func() error {
		if len(chunk) == 0 {
			return nil
		}
		err := list.AddPage(chunk)
		chunk = nil // the builder may retain it
		if err != nil {
			return fmt.Errorf("%s: streaming list: store refused a page: %w", r.opts.Name, storeError(err))
		}
		return nil
	}
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
				if chunk == nil {
					chunk = make([]T, 0, streamChunk)
				}
				chunk = append(chunk, ev.Object)
				if len(chunk) == streamChunk {
					if err := flush(); err != nil {
						return nil, "", err
					}
				}
			case EventBookmark:
				if ev.InitialEventsEnd {
					if ev.Version == "" {
						return nil, "", fmt.Errorf("%s: %w", r.opts.Name, errNoVersion("end of a streaming list's initial events"))
					}
					if err := flush(); err != nil {
						return nil, "", err
					}
					return list, ev.Version, nil
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
