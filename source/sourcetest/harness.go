// Package sourcetest is the conformance kit for [informer.Source]
// implementations: [Run] checks a source against the contract in
// informer/source.go (versions, pagination, future, malformed and compacted
// versions, watch ordering, watchers behind a compaction, bookmarks,
// cancellation, Stop, streaming lists, timeouts, watches that notify when
// they have caught up, and the snapshot codec and identity of an
// [informer.SnapshotSource]), through a [Harness] that lets the kit write to
// the collection behind the source.
//
// A source's own tests call it:
//
//	func TestConformance(t *testing.T) {
//		sourcetest.Run(t, func(t *testing.T) sourcetest.Harness[*Obj] { ... })
//	}
//
// Every check runs as a subtest named as in [Checks], with a fresh harness,
// waits with bounded deadlines (never sleeps), and fails with a message that
// says what the source did and what the contract requires, for example
//
//	watch from "12": expected Added k7 gen 1 at version "13" within 10s; got nothing
//
// The kit also holds every stream of every check to the bookmark rule,
// whenever a bookmark arrives: a Bookmark at version B fails the check if a
// write the kit made, at a version after the stream's start and at or
// before B (by [Harness.CompareVersions]; without it, only a write at B
// itself made after the stream started), was not delivered on the stream
// before it, since a reflector resuming from B would lose that write. The
// kit applies it when a bookmark arrives and again when a write completes,
// so a bookmark ahead of a write made after it is caught too. A bookmark
// past the collection's last change is legitimate when no write of the
// collection lies in between (etcd's progress notifications carry the whole
// store's revision).
//
// An object the harness cannot read (a Deleted event without its object)
// fails the check with a message; it never panics the kit. docs/sources.md
// lists the faults the kit catches, by check, and those it cannot.
package sourcetest

import (
	"context"
	"time"

	"github.com/ginformer/ginformer/informer"
)

// Harness is one isolated collection of a source under test, and the means
// to change it. The kit names objects with short lowercase strings and
// expects each write to complete (to be visible to a ReadLatest list and to
// watches) when its function returns. Fields marked optional may be nil or
// zero; the checks that need them are skipped.
type Harness[T any] struct {
	// Source is the source under test, over an empty collection. Required.
	Source informer.Source[T]

	// Create creates the object name with generation 1 and returns the
	// version of the write (the version its watch event carries). Required.
	Create func(ctx context.Context, name string) (version string, err error)
	// Update changes the content of the existing object name, incrementing
	// its generation, and returns the version of the write. Required.
	Update func(ctx context.Context, name string) (version string, err error)
	// Delete deletes the existing object name and returns the version of the
	// write. Required.
	Delete func(ctx context.Context, name string) (version string, err error)

	// Name returns the name of an object. Required.
	Name func(obj T) string
	// Generation returns the generation of an object: 1 after Create, plus
	// one per Update. Required.
	Generation func(obj T) int

	// Compact makes every version older than the current one expired: lists
	// at them, their continue tokens and watches from them must then fail
	// with [informer.ErrExpired]. Optional.
	Compact func(ctx context.Context) error
	// Bookmark asks the source to send soon a Bookmark on every open watch,
	// carrying the version the watch has caught up to. Optional.
	Bookmark func(ctx context.Context) error
	// CompareVersions orders two versions of the source (negative when a is
	// older). Optional: without it, checks that versions never go backwards
	// are skipped, since versions are otherwise opaque, and the bookmark
	// rule (see the package doc) recognises only a bookmark at the version of
	// a write.
	CompareVersions func(a, b string) int

	// FutureVersion returns a version the source has not reached, newer
	// than current (a version the source returned). Optional: without it,
	// the kit adds 1e9 to a current version that is a decimal integer, and
	// skips the future-version checks for other versions.
	FutureVersion func(current string) string
	// WatchFutureWaits says a Watch from a future version waits until the
	// source reaches that version instead of failing with
	// [informer.ErrVersionTooLarge] (an etcd watch does this); the kit then
	// checks that such a watch delivers no change at or before its version.
	WatchFutureWaits bool

	// DisableReadExact says the source does not serve [informer.ReadExact].
	DisableReadExact bool
	// DisableStreamingList says the source answers
	// [informer.WatchOptions.SendInitialEvents] with errors.ErrUnsupported.
	DisableStreamingList bool
	// StreamingListEndsAtMarker says the source ends a streaming list's
	// stream right after its InitialEventsEnd bookmark (the Kubernetes
	// source does: the apiserver compresses that response, and a plain
	// watch is not compressed); a reflector then watches from the
	// bookmark's version. The kit checks that the stream closes there
	// without an error, and follows the changes on a watch from that
	// version. Zero: the changes follow on the same stream.
	StreamingListEndsAtMarker bool
	// DisableNotifyCaughtUp says the source refuses
	// [informer.WatchOptions.NotifyCaughtUp]: with errors.ErrUnsupported
	// returned by Watch, or with an error wrapping
	// [informer.ErrRelistRequested], returned or as the first event (a
	// source that learns only from its server that it cannot tell, or whose
	// cache must be listed again: a sharded one). The kit checks that it
	// does, and skips the other checks of caught-up watches. Zero: the kit checks that such a watch
	// delivers the changes after its version, then one Bookmark with
	// InitialEventsEnd, then the later changes; it waits twice WaitTimeout
	// for that bookmark.
	DisableNotifyCaughtUp bool
	// KeyOnlyDeletesBeforeCaughtUp says the source may deliver a Deleted
	// event before the caught-up marker of a NotifyCaughtUp watch with an
	// object that carries only its key, not its last state (which
	// [informer.WatchOptions.NotifyCaughtUp] allows: the etcd source does
	// not read the previous values then). Name must still return the
	// object's name from such an object, and Generation 0 (generations
	// start at 1). The checks of caught-up watches then accept, before the
	// marker, a Deleted of the right name at the right version with
	// generation 0; after the marker, and on every other watch, a deletion
	// must carry the last state as usual. Zero: every deletion must.
	KeyOnlyDeletesBeforeCaughtUp bool

	// Equal reports whether two objects are the same state, for the check
	// of the snapshot codec of a source that implements
	// [informer.SnapshotSource] (an object decoded from its encoding must
	// equal the one encoded). Optional: zero is reflect.DeepEqual; give one
	// when a round trip may change the representation but not the state
	// (a time.Time's location, a nil slice that comes back empty).
	Equal func(a, b T) bool

	// WaitTimeout bounds every wait of the kit for an event, a page or a
	// closed stream. Zero: 10s.
	WaitTimeout time.Duration
}

func (h *Harness[T]) wait() time.Duration {
	if h.WaitTimeout > 0 {
		return h.WaitTimeout
	}
	return 10 * time.Second
}
