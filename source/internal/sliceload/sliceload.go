// Package sliceload follows which slice the informer of a sharded source
// has loaded: what the etcd and Kubernetes sharded sources share to
// implement their WaitLoaded.
package sliceload

import (
	"context"
	"fmt"
	"sync"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/shard"
)

// Tracker records the slice a sharded source's consumer listed, which its
// watches must agree with, and the slices whose lists the consumer
// committed to its store, and lets callers wait for one. The zero value is
// ready to use. It is safe for concurrent use.
type Tracker struct {
	// mu guards listing, listed, loaded and changed.
	mu sync.Mutex
	// listing is the slice of the last list (or streaming list) the
	// consumer applied, with which its watches must agree.
	listing shard.Slice
	// listed is set when the last page of a paged list of listing was
	// returned: the next plain watch shows the consumer committed it.
	listed bool
	// loaded is the newest slice whose list the consumer committed; zero
	// before the first.
	loaded shard.Slice
	// changed is closed, then set to nil, when loaded changes; made by a
	// waiter that needs it.
	changed chan struct{}
}

// markLoaded records that the consumer committed a list of sl (a source knows
// it when the consumer comes back for more after the list: the watch that
// follows a paged list, or the first event after a streaming list's end).
// An older generation than the one recorded is ignored.
func (t *Tracker) markLoaded(sl shard.Slice) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.loadedLocked(sl)
}

func (t *Tracker) loadedLocked(sl shard.Slice) {
	if sl.Gen <= t.loaded.Gen {
		return
	}
	t.loaded = sl
	if t.changed != nil {
		close(t.changed)
		t.changed = nil
	}
}

// Wait blocks until the consumer has committed a list of slice generation
// want or a later one and cache (the consumer) has applied everything it
// had received by then, and returns that slice. If the consumer does not
// list, the wait ends with ctx.
//
// Possible errors: ctx.Err() (wrapped); those of
// [informer.ReceivedWaiter.WaitForReceived].
func (t *Tracker) Wait(ctx context.Context, want uint64, cache informer.ReceivedWaiter) (shard.Slice, error) {
	for {
		t.mu.Lock()
		got := t.loaded
		if got.Gen < want && t.changed == nil {
			t.changed = make(chan struct{})
		}
		changed := t.changed
		t.mu.Unlock()
		if got.Gen >= want {
			if err := cache.WaitForReceived(ctx); err != nil {
				return shard.Slice{}, fmt.Errorf("wait for the list of slice generation %d to be applied: %w", got.Gen, err)
			}
			return got, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return shard.Slice{}, fmt.Errorf("wait for a list of slice generation %d (the last one committed: %d): %w", want, got.Gen, ctx.Err())
		}
	}
}

// Slicer is the part of a sharded source's SliceSource that [Tracker.WaitCurrent]
// needs: the current slice, once there is one.
type Slicer interface {
	Slice(ctx context.Context) (shard.Slice, <-chan struct{}, error)
}

// WaitCurrent is a sharded source's WaitLoaded: it waits for the first
// slice of slices (bounded by ctx), then, by [Tracker.Wait], until cache
// has loaded the slice current at the call or a later one, and returns the
// slice cache holds. Errors are prefixed with source (such as "etcd sharded
// source").
//
// Possible errors: ctx.Err() (wrapped); those of slices.Slice and of
// [Tracker.Wait].
func (t *Tracker) WaitCurrent(ctx context.Context, source string, slices Slicer, cache informer.ReceivedWaiter) (shard.Slice, error) {
	want, _, err := slices.Slice(ctx)
	if err != nil {
		return shard.Slice{}, fmt.Errorf("%s: %w", source, err)
	}
	sl, err := t.Wait(ctx, want.Gen, cache)
	if err != nil {
		return shard.Slice{}, fmt.Errorf("%s: %w", source, err)
	}
	return sl, nil
}

// ended is the error a sharded source's watch ends with when its slice,
// generation gen, is replaced: it wraps [informer.ErrRelistRequested] and
// [informer.ErrExpired], so the informer lists the new slice.
func ended(source string, gen uint64) error {
	return fmt.Errorf("%s: slice changed (generation %d ended): %w: %w", source, gen, informer.ErrRelistRequested, informer.ErrExpired)
}
