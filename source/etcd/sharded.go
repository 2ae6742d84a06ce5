package etcd

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/shard"
	"github.com/ginformer/ginformer/source/internal/sliceload"
)

// SliceSource tells a [Sharded] source which shards to serve: the slice
// assigned to this replica, a channel closed when it changes, and how keys
// are hashed. [shard.Owner] implements it.
type SliceSource interface {
	// Slice waits for the first slice (bounded by ctx), then returns the
	// current one and a channel closed when it changes.
	Slice(ctx context.Context) (shard.Slice, <-chan struct{}, error)
	// Hash places a key in the hash space. It must be deterministic and
	// safe for concurrent use (lists filter their chunks in parallel).
	Hash(key string) uint64
}

var _ SliceSource = (*shard.Owner)(nil)

// ShardedOptions configures a [Sharded] source. Source and Slices are
// required.
type ShardedOptions[T any] struct {
	// Source is the unsharded source of the whole prefix. Required.
	Source *Source[T]
	// Slices gives the slice to serve: normally the replica's
	// [shard.Owner]. Required.
	Slices SliceSource
}

// Sharded is an [informer.Source] serving the slice of an etcd prefix
// assigned to this replica: the objects whose hash of [Object.Key] falls
// into the slice's shards. The hash is the Slices' Hash: for a default
// [shard.Owner], [shard.HashKey] (FNV-1a 64 with a finalizer that spreads
// keys differing only in their last characters). With
// [Options.StripPrefix] the hash is over the stripped key: every replica
// must use the same setting, and a controller must give
// [shard.Owner.Owns] the same key.
//
// # The filter is client-side
//
// etcd has no server-side hash filter: each replica lists and watches the
// whole prefix and drops what is not in its slice before the informer sees
// it. The filter looks at keys only and runs before anything else: values
// of other slices are never transformed nor decoded, and their deletions
// need no read of the previous value. So memory (the cache, the queue),
// decoding and handler load scale with 1/N of the replicas; network
// traffic, etcd's work and the client's protobuf decoding of the responses
// do not (every key-value is still sent to every replica). The Kubernetes
// apiserver, with ShardedListAndWatch, filters on the server instead.
//
// # Slice changes
//
// When the slice changes (a member joined or left), the open watch ends with
// an Error event wrapping [informer.ErrRelistRequested] (and
// [informer.ErrExpired], for consumers that know only that one), so the
// informer's reflector relists at once, without backing off and without
// reporting an error, through this source with the new slice. The relist is
// applied to the cache as one batch under one lock, so readers see the old
// slice or the new one, never a mix: keys that left arrive as deletions
// with FinalStateUnknown set, keys that arrived as adds. A watch opened
// after the slice changed since the last list fails with the same error
// for the same reason, as does a page of a list whose first page was read
// with another slice.
//
// # Owned but not cached yet
//
// The cache follows the slice, not the ownership, and lags it by one
// relist: after a slice change the keys of the new shards are missing from
// the cache until the relist is applied. A new owner usually has them
// before it may act on them (a join: the slice moves before the old owners
// release), but not always: after a crash or a leave the slice and the
// ownership move together, so for the length of one relist a handler or
// worker may find [shard.Owner.Owns] true for a key the cache does not hold
// yet (a Get finds nothing, a List misses it; no event for it has been
// delivered). [Sharded.WaitLoaded] waits until the cache holds the current
// slice; call it before acting on the keys of newly acquired shards (in a
// worker, after [shard.OwnerOptions.OnChange] reported them).
//
// To tell "moved away" from "deleted" in a handler: a deletion with
// FinalStateUnknown false was observed (the key was deleted in etcd); one
// with FinalStateUnknown true was inferred by a relist, and the key moved
// away if [Sharded.InSlice] is false for it now (it may also have been
// deleted meanwhile: either way another replica owns it from now on). If
// the slice changes twice in quick succession a key that left and came
// back shows up as a deletion followed by an add.
//
// A Sharded source serves one informer: it remembers the slice of the last
// list, which the next watches must match. Use one per informer, each with
// the same Slices.
type Sharded[T any] struct {
	src    *Source[T]
	slices SliceSource

	received  atomic.Uint64
	delivered atomic.Uint64
	// loaded follows the slice listed and the slice loaded by the
	// informer this source serves.
	loaded sliceload.Tracker
}

// shardedName prefixes the errors of a [Sharded] source.
const shardedName = "etcd sharded source"

var (
	_ informer.Source[*Object[int]]          = (*Sharded[int])(nil)
	_ informer.VersionComparer               = (*Sharded[int])(nil)
	_ informer.LivenessBounder               = (*Sharded[int])(nil)
	_ informer.ReachabilityWaiter            = (*Sharded[int])(nil)
	_ informer.ObjectVersioner[*Object[int]] = (*Sharded[int])(nil)
)

// NewSharded validates opts and returns a sharded source.
//
// Possible errors: [informer.ErrInvalidOptions].
func NewSharded[T any](opts ShardedOptions[T]) (*Sharded[T], error) {
	if opts.Source == nil || opts.Slices == nil {
		return nil, fmt.Errorf("etcd sharded source: Source and Slices are required: %w", informer.ErrInvalidOptions)
	}
	return &Sharded[T]{src: opts.Source, slices: opts.Slices}, nil
}

// InSlice reports whether key belongs to the slice this source serves now
// (the slice of its last list). See [Sharded] for its use in handlers.
func (s *Sharded[T]) InSlice(key string) bool {
	return s.loaded.Listing().Shards.Contains(s.slices.Hash(key))
}

// Counts returns the number of key-values this source received from etcd
// (listed, or watch events; bookmarks excluded), all of which its filter
// examined, and how many objects it passed on (listed, or Added, Modified
// and Deleted events): with N replicas, about 1/N.
func (s *Sharded[T]) Counts() (received, delivered uint64) {
	return s.received.Load(), s.delivered.Load()
}

// CompareVersions orders versions as [Source.CompareVersions] does.
//
// Possible errors: [informer.ErrInvalidVersion].
func (s *Sharded[T]) CompareVersions(a, b string) (int, error) { return s.src.CompareVersions(a, b) }

// LivenessBound is the underlying source's ([Source.LivenessBound]): the
// watches of a Sharded source are its watches.
func (s *Sharded[T]) LivenessBound() time.Duration { return s.src.LivenessBound() }

// WaitReachable waits as the underlying source's [Source.WaitReachable]
// does: the lists and watches of a Sharded source are its own.
func (s *Sharded[T]) WaitReachable(ctx context.Context) error { return s.src.WaitReachable(ctx) }

// ObjectVersion is the underlying source's [Source.ObjectVersion] (the
// object's ModRevision), so that an informer over a Sharded source also
// delivers, on a relist, only the keys changed since it last saw them.
func (s *Sharded[T]) ObjectVersion(obj *Object[T]) string { return s.src.ObjectVersion(obj) }

// RequestProgress asks the watches of the underlying source for progress
// bookmarks; see [Source.RequestProgress].
//
// Possible errors: those of [Source.RequestProgress].
func (s *Sharded[T]) RequestProgress(ctx context.Context) error { return s.src.RequestProgress(ctx) }

// List returns one page of the slice: the underlying source's page with the
// objects of other slices removed (a page may hold fewer objects than asked
// for, even none, and still have a continue token). It waits for the first
// slice.
//
// Possible errors: those of [Source.List]; [informer.ErrRelistRequested]
// wrapped with [informer.ErrExpired] for a continued list whose slice
// changed since its first page; ctx.Err().
func (s *Sharded[T]) List(ctx context.Context, opts informer.ListOptions) (informer.ListPage[*Object[T]], error) {
	sl, err := s.loaded.StartPage(ctx, shardedName, s.slices, opts.Continue != "")
	if err != nil {
		return informer.ListPage[*Object[T]]{}, err
	}
	page, err := s.src.list(ctx, opts, s.keyFilter(sl))
	if err != nil {
		return page, err
	}
	s.delivered.Add(uint64(len(page.Items)))
	if page.Continue == "" {
		s.loaded.LastPage(sl)
	}
	return page, nil
}

// Watch opens a watch of the slice. A streaming list
// (SendInitialEvents) takes the current slice, and follows its end marker
// with a bookmark at the same version (whose delivery tells this source the
// list was committed, for [Sharded.WaitLoaded]); a plain watch must find
// the slice of the last list. The watch ends with an Error event wrapping
// [informer.ErrRelistRequested] and [informer.ErrExpired] when the slice
// changes.
//
// A plain watch with NotifyCaughtUp, which an informer restored from a
// snapshot opens instead of listing, is refused the same way: a restored
// cache holds the slice of another run (or of none), which this source
// never listed, so a caught-up marker would pass it off as the current
// slice. The informer relists at once (without backing off or reporting an
// error), and the relist hands on only what differs from the restored
// cache.
//
// Possible errors: those of [Source.Watch]; [informer.ErrRelistRequested]
// wrapped with [informer.ErrExpired] when the slice changed since the last
// list, or for NotifyCaughtUp; ctx.Err().
func (s *Sharded[T]) Watch(ctx context.Context, opts informer.WatchOptions) (informer.Watcher[*Object[T]], error) {
	sl, changed, err := s.loaded.StartWatch(ctx, shardedName, s.slices, opts)
	if err != nil {
		return nil, err
	}
	inner, err := s.src.watchKeys(ctx, opts, s.keyFilter(sl))
	if err != nil {
		return nil, err
	}
	out := informer.NewWatchStream[*Object[T]](ctx, 0)
	go sliceload.Forward(&s.loaded, shardedName, sl, opts.SendInitialEvents, changed, out, inner, func(informer.Event[*Object[T]]) bool {
		s.delivered.Add(1)
		return true
	})
	return out, nil
}

// WaitLoaded blocks until cache, the informer this source serves, holds
// the slice that was current when WaitLoaded was called, or a later one:
// the list of that slice has been applied, and so has everything the
// informer received before WaitLoaded saw that. It returns the slice the
// cache holds. It waits for the first slice like [Sharded.List]. See
// "Owned but not cached yet" in [Sharded] for when to call it. It waits on
// channels; the wait ends with ctx if the informer is not running (or is
// given another informer than the one this source serves).
//
// Possible errors: ctx.Err() (wrapped); [informer.ErrClosed] (the informer
// stopped).
func (s *Sharded[T]) WaitLoaded(ctx context.Context, cache informer.ReceivedWaiter) (shard.Slice, error) {
	return s.loaded.WaitCurrent(ctx, shardedName, s.slices, cache)
}

// keyFilter returns the filter of slice sl, for the underlying source: it
// counts every key it is asked about as received.
func (s *Sharded[T]) keyFilter(sl shard.Slice) keyFilter {
	return func(key string) bool {
		s.received.Add(1)
		return sl.Shards.Contains(s.slices.Hash(key))
	}
}
