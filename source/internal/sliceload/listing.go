package sliceload

import (
	"context"
	"fmt"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/shard"
)

// Listing returns the slice of the consumer's last list (or streaming
// list): the slice the source serves now. It is the zero Slice before the
// first list.
func (t *Tracker) Listing() shard.Slice {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.listing
}

// StartPage is a sharded source's List up to fetching a page: it returns
// the current slice of slices (waiting for the first), which the page is
// to serve. A first page (cont is false) makes it the slice being listed;
// a continued page must find the slice of the first. Errors are prefixed
// with source (such as "etcd sharded source"), except those of
// slices.Slice.
//
// Possible errors: those of slices.Slice; [informer.ErrRelistRequested]
// wrapped with [informer.ErrExpired] when the slice changed since the first
// page.
func (t *Tracker) StartPage(ctx context.Context, source string, slices Slicer, cont bool) (shard.Slice, error) {
	sl, _, err := slices.Slice(ctx)
	if err != nil {
		return shard.Slice{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case !cont:
		t.listing, t.listed = sl, false
	case t.listing.Gen != sl.Gen:
		return shard.Slice{}, fmt.Errorf("%s: slice changed during the list: %w: %w", source, informer.ErrRelistRequested, informer.ErrExpired)
	}
	return sl, nil
}

// LastPage is called by a sharded source's List when it returns the last
// page of a list of sl: if sl is still the slice being listed, the next
// plain watch shows the consumer committed the list.
func (t *Tracker) LastPage(sl shard.Slice) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.listed = t.listing.Gen == sl.Gen
}

// StartWatch is a sharded source's Watch up to opening the watch: it
// returns the current slice of slices, which the watch is to serve, and
// the channel closed when it changes. A plain watch that follows a paged
// list records that list as committed (Tracker.markLoaded). A streaming list
// (opts.SendInitialEvents) makes the slice the one being listed; a plain
// watch must find the slice of the last list. A plain watch with
// NotifyCaughtUp, which an informer restored from a snapshot opens instead
// of listing, is refused at once: the restored cache holds a slice the
// source never listed. Errors are prefixed with source (such as "etcd
// sharded source"), except those of slices.Slice.
//
// Possible errors: those of slices.Slice; [informer.ErrRelistRequested]
// wrapped with [informer.ErrExpired] when the slice changed since the last
// list, or for NotifyCaughtUp.
func (t *Tracker) StartWatch(ctx context.Context, source string, slices Slicer, opts informer.WatchOptions) (shard.Slice, <-chan struct{}, error) {
	if opts.NotifyCaughtUp && !opts.SendInitialEvents {
		return shard.Slice{}, nil, fmt.Errorf("%s: a watch resuming a restored cache needs a list of the slice first: %w: %w",
			source, informer.ErrRelistRequested, informer.ErrExpired)
	}
	sl, changed, err := slices.Slice(ctx)
	if err != nil {
		return shard.Slice{}, nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.listed && !opts.SendInitialEvents {
		// The consumer watches after its list: it committed it.
		t.loadedLocked(t.listing)
	}
	t.listed = false
	switch {
	case opts.SendInitialEvents:
		t.listing = sl
	case t.listing.Gen != sl.Gen:
		return shard.Slice{}, nil, fmt.Errorf("%s: slice changed since the list: %w: %w", source, informer.ErrRelistRequested, informer.ErrExpired)
	}
	return sl, changed, nil
}
