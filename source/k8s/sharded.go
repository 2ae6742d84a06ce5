package k8s

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/shard"
	"github.com/ginformer/ginformer/source/internal/sliceload"
)

// SliceSource tells a [Sharded] source which shards to serve: the slice
// assigned to this replica and a channel closed when it changes.
// [shard.Owner] implements it (with [shard.Hash] as its
// [shard.OwnerOptions.Hash]), and so does [StaticSlices].
type SliceSource interface {
	// Slice waits for the first slice (bounded by ctx), then returns the
	// current one and a channel closed when it changes.
	Slice(ctx context.Context) (shard.Slice, <-chan struct{}, error)
}

var (
	_ SliceSource = (*shard.Owner)(nil)
	_ SliceSource = (*StaticSlices)(nil)
)

// ShardedOptions configures a [Sharded] source. Source and Slices are
// required.
type ShardedOptions[T Object] struct {
	// Source is the unsharded source of the whole resource. Required. Its
	// label and field selectors apply as usual, together with the shard
	// selector.
	Source *Source[T]
	// Slices gives the slice to serve: normally the replica's
	// [shard.Owner], or [StaticSlices] for a fixed split. Required. If it
	// has a Hash(string) uint64 method (as [shard.Owner] does), that must
	// be [shard.Hash], the apiserver's FNV-1a: NewSharded checks it.
	Slices SliceSource
	// Field is the field whose hash places an object: [shard.FieldUID]
	// (objects spread evenly) or [shard.FieldNamespace] (each namespace on
	// one replica; every cluster-scoped object on the replica owning
	// the hash of ""). Zero: [shard.FieldUID].
	Field string
	// DisableServerFilter stops the source from sending the ShardSelector:
	// every replica then receives everything and filters on the client,
	// as with a server without the ShardedListAndWatch gate. Zero: the
	// selector is sent on every list and watch.
	DisableServerFilter bool
	// Logger receives one line each time the filter mode changes (see
	// [Sharded.Mode]). Zero: discards.
	Logger logr.Logger
}

// FilterMode says where a [Sharded] source's slice is being cut out of the
// collection.
type FilterMode int32

const (
	// FilterUnknown: no list has been answered yet.
	FilterUnknown FilterMode = iota
	// FilterServer: the apiserver applies the ShardSelector (it echoed it
	// in the list's shardInfo): each replica receives only its slice.
	FilterServer
	// FilterClient: the apiserver did not echo the ShardSelector: it
	// ignored it (the ShardedListAndWatch gate is off, or the server
	// predates it), or [ShardedOptions.DisableServerFilter] is set. Each
	// replica then receives everything and drops what is not its slice.
	// One exception: kube-apiserver v1.37.1 filters the lists of metadata
	// clients ([NewMetadata]) but drops the echo when it converts them to
	// PartialObjectMetadataList, so those report FilterClient while
	// [Sharded.Counts] shows received = delivered.
	FilterClient
)

// String returns "unknown", "server" or "client".
func (m FilterMode) String() string {
	switch m {
	case FilterServer:
		return "server"
	case FilterClient:
		return "client"
	}
	return "unknown"
}

// Sharded is an [informer.Source] serving the slice of a Kubernetes
// resource assigned to this replica: the objects whose FNV-1a 64 hash
// ([shard.Hash]) of metadata.uid (or metadata.namespace, see
// [ShardedOptions.Field]) falls into the slice's shards.
//
// # Server-side and client-side filtering
//
// Every list and watch carries the slice as a ShardSelector (KEP-5866):
// shardRange(object.metadata.uid, '0x…', '0x…') terms joined by " || ", one
// per merged range of the slice ([shard.Selector]). An apiserver with the
// ShardedListAndWatch feature gate (alpha since v1.36) sends only the
// slice, on lists and on watches, and echoes the selector in the list's
// metadata.shardInfo. An apiserver without the gate, or older, drops the
// field silently and sends everything, without shardInfo. The source
// checks every list page for the echo and filters every object it receives
// by the same hash on the client in any case, so the result is the same
// slice either way: only the traffic differs. [Sharded.Mode] reports which
// case holds ([FilterServer] or [FilterClient]), and the Logger gets a
// line when it changes. A streaming list (a watch with SendInitialEvents)
// has no list metadata: unless the mode is already [FilterServer], it is
// preceded by a one-object list that checks for the echo. A watch that
// delivers an object outside the slice while the mode is [FilterServer]
// (an apiserver behind the same address without the gate) turns the mode
// to [FilterClient]. A mode change needs no relist: the client-side filter
// already gives the right slice. [Sharded.Counts] tells how much was
// received and how much was kept.
//
// An apiserver that refuses the selector (a 400, 422 or 500 naming the
// shard selector, which v1.37 does not do for the selectors this source
// writes) gets the request again without it, and none until the slice
// changes: the mode is then [FilterClient].
//
// A replica whose slice is empty sends a selector covering the single
// hash 0xffffffffffffffff (an empty selector would mean "everything") and
// keeps nothing.
//
// # Slice changes
//
// When the slice changes, the open watch ends with an Error event wrapping
// [informer.ErrRelistRequested] (and [informer.ErrExpired], for consumers
// that know only that one), so the informer's reflector relists at once,
// without backing off and without reporting an error, through this source
// with the new slice. The relist is applied to the cache as one batch under
// one lock, so readers see the old slice or the new one, never a mix:
// objects that left arrive as deletions with FinalStateUnknown set, objects
// that arrived as adds. A plain watch opened after the slice changed since
// the last list fails with the same error, as does a page of a list whose
// first page was read with another slice; a streaming list takes the new
// slice.
//
// # Owned but not cached yet
//
// The cache follows the slice, not the ownership, and lags it by one
// relist: after a slice change the objects of the new shards are missing
// from the cache until the relist is applied. A new owner usually has them
// before it may act on them (a join: the slice moves before the old owners
// release), but not always: after a crash or a leave the slice and the
// ownership move together, so for the length of one relist a handler or
// worker may find [shard.Owner.Owns] true for an object the cache does not
// hold yet (a Get finds nothing, a List misses it; no event for it has been
// delivered). [Sharded.WaitLoaded] waits until the cache holds the current
// slice; call it before acting on the objects of newly acquired shards (in
// a worker, after [shard.OwnerOptions.OnChange] reported them).
//
// To tell "moved away" from "deleted" in a handler: a deletion with
// FinalStateUnknown false was observed (the object was deleted in the
// API); one with FinalStateUnknown true was inferred by a relist, and the
// object moved away if [Sharded.InSlice] is false for it now (it may also
// have been deleted meanwhile: either way another replica owns it from now
// on). If the slice changes twice in quick succession an object that left
// and came back shows up as a deletion followed by an add.
//
// A Sharded source serves one informer: it remembers the slice of the last
// list, which the next watches must match. Use one per informer, each with
// the same Slices. It is safe for concurrent use.
type Sharded[T Object] struct {
	src      *Source[T]
	slices   SliceSource
	field    string
	noServer bool
	log      logr.Logger

	received  atomic.Uint64
	delivered atomic.Uint64
	mode      atomic.Int32
	// loaded follows the slice listed and the slice loaded by the
	// informer this source serves.
	loaded sliceload.Tracker

	// mu guards sel and refused.
	mu sync.Mutex
	// sel is the selector of the slice of generation selGen ("" if
	// DisableServerFilter).
	sel    string
	selGen uint64
	selSet bool
	// refused is set when the apiserver refused the selector of slice
	// generation selGen: nothing is sent until the slice changes.
	refused bool
}

var (
	_ informer.Source[*metav1.PartialObjectMetadata] = (*Sharded[*metav1.PartialObjectMetadata])(nil)
	_ informer.VersionComparer                       = (*Sharded[*metav1.PartialObjectMetadata])(nil)
	_ informer.LivenessBounder                       = (*Sharded[*metav1.PartialObjectMetadata])(nil)
	_ informer.ObjectVersioner[Object]               = (*Sharded[Object])(nil)
)

// NewSharded validates opts and returns a sharded source.
//
// Possible errors: [informer.ErrInvalidOptions] (Source or Slices missing,
// an unknown Field, a Slices whose Hash is not [shard.Hash]).
func NewSharded[T Object](opts ShardedOptions[T]) (*Sharded[T], error) {
	if opts.Source == nil || opts.Slices == nil {
		return nil, fmt.Errorf("k8s sharded source: Source and Slices are required: %w", informer.ErrInvalidOptions)
	}
	switch opts.Field {
	case "":
		opts.Field = shard.FieldUID
	case shard.FieldUID, shard.FieldNamespace:
	default:
		return nil, fmt.Errorf("k8s sharded source: Field %q, want %q or %q: %w",
			opts.Field, shard.FieldUID, shard.FieldNamespace, informer.ErrInvalidOptions)
	}
	if h, ok := opts.Slices.(interface{ Hash(string) uint64 }); ok {
		for _, probe := range []string{"", "default", "7f0c1c52-8f8e-4f3e-9d55-2b1a0c6f4e21"} {
			if h.Hash(probe) != shard.Hash(probe) {
				return nil, fmt.Errorf("k8s sharded source: Slices hashes keys with another function than shard.Hash, "+
					"the apiserver's FNV-1a (set shard.OwnerOptions.Hash to shard.Hash): %w", informer.ErrInvalidOptions)
			}
		}
	}
	s := &Sharded[T]{src: opts.Source, slices: opts.Slices, field: opts.Field, noServer: opts.DisableServerFilter, log: opts.Logger}
	if s.noServer {
		s.mode.Store(int32(FilterClient))
	}
	return s, nil
}

// ShardKey returns the value whose hash places obj: its uid, or its
// namespace with [ShardedOptions.Field] = [shard.FieldNamespace]. Give it
// to [shard.Owner.Owns] (with [shard.Hash] as the Owner's hash).
func (s *Sharded[T]) ShardKey(obj T) string {
	if s.field == shard.FieldNamespace {
		return obj.GetNamespace()
	}
	return string(obj.GetUID())
}

// Hash returns the hash that places obj: [shard.Hash] of [Sharded.ShardKey],
// as the apiserver computes it.
func (s *Sharded[T]) Hash(obj T) uint64 { return shard.Hash(s.ShardKey(obj)) }

// InSlice reports whether obj belongs to the slice this source serves now
// (the slice of its last list). See [Sharded] for its use in handlers.
func (s *Sharded[T]) InSlice(obj T) bool {
	h := s.Hash(obj)
	return s.loaded.Listing().Shards.Contains(h)
}

// Mode reports where the slice is being filtered, as the last list (or
// probe, or watch event) showed. See [Sharded].
func (s *Sharded[T]) Mode() FilterMode { return FilterMode(s.mode.Load()) }

// Counts returns the number of objects this source received from the
// apiserver (listed or watched; bookmarks excluded) and how many of them it
// passed on. With server-side filtering they are equal; with client-side
// filtering and N replicas, about 1/N of what is received is delivered.
func (s *Sharded[T]) Counts() (received, delivered uint64) {
	return s.received.Load(), s.delivered.Load()
}

// LivenessBound is the underlying source's ([Source.LivenessBound]): the
// watches of a Sharded source are its watches.
func (s *Sharded[T]) LivenessBound() time.Duration { return s.src.LivenessBound() }

// ObjectVersion is the underlying source's ([Source.ObjectVersion]), so
// that an informer over a Sharded source delivers, on a relist, only the
// objects changed since it last saw them, as over a Source.
func (s *Sharded[T]) ObjectVersion(obj T) string { return s.src.ObjectVersion(obj) }

// CompareVersions orders resourceVersions as [Source.CompareVersions] does.
//
// Possible errors: [informer.ErrInvalidVersion].
func (s *Sharded[T]) CompareVersions(a, b string) (int, error) { return s.src.CompareVersions(a, b) }

// List returns one page of the slice. The apiserver sends only the slice
// when it honours the ShardSelector; otherwise the page is the whole
// collection's with the objects of other slices removed (then a page may
// hold fewer objects than asked for, even none, and still have a continue
// token). It waits for the first slice.
//
// Possible errors: those of [Source.List]; [informer.ErrRelistRequested]
// wrapped with [informer.ErrExpired] for a continued list whose slice
// changed since its first page; ctx.Err().
func (s *Sharded[T]) List(ctx context.Context, opts informer.ListOptions) (informer.ListPage[T], error) {
	sl, err := s.loaded.StartPage(ctx, shardedName, s.slices, opts.Continue != "")
	if err != nil {
		return informer.ListPage[T]{}, err
	}
	s.mu.Lock()
	sel := s.selectorLocked(sl)
	s.mu.Unlock()
	page, meta, err := s.src.listPage(ctx, opts, sel)
	if err != nil && s.refusedSelector(sl, sel, err) {
		sel = ""
		page, meta, err = s.src.listPage(ctx, opts, sel)
	}
	if err != nil {
		return page, err
	}
	if sel != "" {
		s.checkEcho(sel, meta, "list")
	}
	s.received.Add(uint64(len(page.Items)))
	kept := page.Items[:0]
	for _, o := range page.Items {
		if sl.Shards.Contains(s.Hash(o)) {
			kept = append(kept, o)
		}
	}
	clear(page.Items[len(kept):])
	page.Items = kept
	s.delivered.Add(uint64(len(kept)))
	if page.Continue == "" {
		s.loaded.LastPage(sl)
	}
	return page, nil
}

// Watch opens a watch of the slice. A streaming list (SendInitialEvents)
// takes the current slice, and follows its end marker with a bookmark at
// the same version (whose delivery tells this source the list was
// committed, for [Sharded.WaitLoaded]); a plain watch must find the slice
// of the last list. The watch ends with an Error event wrapping
// [informer.ErrRelistRequested] and [informer.ErrExpired] when the slice
// changes.
//
// A plain watch with NotifyCaughtUp, which an informer restored from a
// snapshot opens instead of listing, is refused the same way, without
// contacting the server: the restored cache holds the slice of another run
// (or the whole resource), which this source never listed, so a caught-up
// marker would pass it off as the current slice. The informer relists at
// once (without backing off or reporting an error), and the relist hands
// on only what differs from the restored cache.
//
// Possible errors: those of [Source.Watch]; [informer.ErrRelistRequested]
// wrapped with [informer.ErrExpired] when the slice changed since the last
// list, or for NotifyCaughtUp; ctx.Err().
func (s *Sharded[T]) Watch(ctx context.Context, opts informer.WatchOptions) (informer.Watcher[T], error) {
	sl, changed, err := s.loaded.StartWatch(ctx, shardedName, s.slices, opts)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	sel := s.selectorLocked(sl)
	s.mu.Unlock()
	if opts.SendInitialEvents && sel != "" && s.Mode() != FilterServer && !s.probe(ctx, sl, sel) {
		sel = ""
	}
	inner, err := s.src.openWatch(ctx, opts, sel)
	if err != nil && s.refusedSelector(sl, sel, err) {
		sel = ""
		inner, err = s.src.openWatch(ctx, opts, sel)
	}
	if err != nil {
		return nil, err
	}
	out := informer.NewWatchStream[T](ctx, 0)
	go sliceload.Forward(&s.loaded, shardedName, sl, opts.SendInitialEvents, changed, out, inner, s.keep(sl))
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

// emptySliceSelector matches the hash 0xffffffffffffffff alone: what a
// replica owning nothing sends, since an empty selector means everything.
func emptySliceSelector(field string) string {
	return "shardRange(" + field + ", '0xffffffffffffffff', '0x10000000000000000')"
}

// selectorLocked returns the ShardSelector for sl, "" when the server
// filter is disabled; computed once per slice generation.
func (s *Sharded[T]) selectorLocked(sl shard.Slice) string {
	if s.noServer || s.refused && s.selGen == sl.Gen {
		return ""
	}
	if !s.selSet || s.selGen != sl.Gen {
		s.refused = false
		s.sel = sl.Shards.Selector(s.field)
		if s.sel == "" {
			s.sel = emptySliceSelector(s.field)
		}
		s.selGen, s.selSet = sl.Gen, true
	}
	return s.sel
}
