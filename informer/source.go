package informer

import (
	"context"
	"time"
)

// ReadMode says how fresh a [Source.List] must be. Its names follow the
// Kubernetes resourceVersion / resourceVersionMatch semantics.
type ReadMode uint8

const (
	// ReadLatest is a consistent read of the most recent state (Kubernetes
	// resourceVersion ""; an etcd quorum read). The zero value: the safe one.
	ReadLatest ReadMode = iota
	// ReadAny accepts any state, possibly stale, typically served from a cache
	// (Kubernetes resourceVersion "0"). A reflector's first list uses it.
	ReadAny
	// ReadNotOlderThan accepts any state at least as new as
	// [ListOptions.Version] (Kubernetes resourceVersionMatch=NotOlderThan).
	ReadNotOlderThan
	// ReadExact reads the state exactly at [ListOptions.Version]
	// (Kubernetes resourceVersionMatch=Exact; an etcd read at a revision).
	ReadExact
)

// String returns the mode's name.
func (m ReadMode) String() string { return enumString(readModeNames[:], "ReadMode", uint8(m)) }

var readModeNames = [...]string{ReadLatest: "Latest", ReadAny: "Any", ReadNotOlderThan: "NotOlderThan", ReadExact: "Exact"}

// ListOptions asks a [Source] for one page of a list.
type ListOptions struct {
	// Mode selects the state to read. Zero: [ReadLatest].
	Mode ReadMode
	// Version is the version Mode refers to; ignored by ReadLatest and ReadAny.
	Version string
	// Limit is the largest number of items wanted in the page; the source may
	// return fewer. Zero: no limit, the whole list in one page.
	Limit int
	// Continue is the token of the previous page. When set, the source
	// continues that list at the version of its first page and Mode and
	// Version are ignored. An expired token yields [ErrExpired]; a malformed
	// one [ErrInvalidOptions] (or ErrExpired).
	Continue string
}

// ListPage is one page of a list.
type ListPage[T any] struct {
	// Items are the objects of the page, in the source's order.
	Items []T
	// Version is the version of the collection the page was read at. Every
	// page of one list has the same version. Required: the reflector rejects
	// a page without one with an error, rather than watch from "".
	Version string
	// Continue is the token for the next page, "" on the last page.
	Continue string
}

// WatchOptions asks a [Source] for a stream of changes.
type WatchOptions struct {
	// Version: the watch delivers every change after this version, in order.
	// Required unless SendInitialEvents is set ("" gives [ErrInvalidOptions]:
	// a plain watch never starts "from now"). With SendInitialEvents, ""
	// means "the latest state" and a version means "a state not older than
	// it".
	Version string
	// Timeout asks the source to end the stream normally after about this
	// long, so clients spread their reconnects. Zero: no timeout.
	Timeout time.Duration
	// SendInitialEvents asks for a streaming list: the stream starts with an
	// [EventAdded] event for every object of the state selected by Version, then an
	// [EventBookmark] with InitialEventsEnd set, then the changes after it. A source
	// that cannot do this returns errors.ErrUnsupported from Watch.
	SendInitialEvents bool
	// NotifyCaughtUp asks a plain watch (from Version, without
	// SendInitialEvents) to mark the moment it has caught up: once the
	// stream has delivered every change up to the source's current
	// version, it sends an [EventBookmark] with InitialEventsEnd set at that
	// version (or a later one), then goes on as usual. "Current" is the
	// newest state the source knows when it answers: etcd's revision when it
	// answers a progress request, the apiserver's watch cache. The bookmark
	// is sent once, soon after the watch opens (within a few seconds),
	// also when nothing changed since Version. An informer restored from a
	// snapshot ([SnapshotOptions]) asks for it to know when it has caught
	// up. A source that cannot do this returns errors.ErrUnsupported from
	// Watch (the informer then relists).
	//
	// Before that bookmark, the object of an [EventDeleted] event may carry
	// only what the informer's key function needs (the key), not its last
	// state: a source may then spare a read per deletion (the etcd source
	// does). The informer tells its handlers nothing before the bookmark
	// (it is restoring), and deletes by key. Its Options.Transform still
	// sees such an object; a transform that fails on it is reported and the
	// deletion applied with the object as received. After the bookmark, and
	// on every other watch, a deletion carries the last known state.
	NotifyCaughtUp bool
}

// EventType is the kind of a watch [Event].
type EventType uint8

// The event types of a watch stream.
const (
	// EventAdded: Object was created (or entered the watched selection).
	EventAdded EventType = iota + 1
	// EventModified: Object is the new state of an existing object.
	EventModified
	// EventDeleted: the object was deleted (or left the watched selection);
	// Object is its last known state, or, before the caught-up bookmark of a
	// watch asked for [WatchOptions.NotifyCaughtUp], possibly only what the
	// key function needs.
	EventDeleted
	// EventBookmark: no object changed; the collection reached Version, and
	// every change up to Version has been delivered on this stream.
	EventBookmark
	// EventError: the stream failed with Err; no event follows it.
	EventError
)

// String returns the event type's name.
func (t EventType) String() string { return enumString(eventTypeNames[:], "EventType", uint8(t)) }

var eventTypeNames = [...]string{EventAdded: "Added", EventModified: "Modified", EventDeleted: "Deleted", EventBookmark: "Bookmark", EventError: "Error"}

// Event is one element of a watch stream.
type Event[T any] struct {
	Type EventType
	// Object is the new state (Added, Modified) or the last known state
	// (Deleted); the zero T for Bookmark and Error.
	Object T
	// Version is the version of the collection after this event; required
	// on every type but Error. Versions of one stream never go backwards
	// (the initial events of a streaming list excepted, see [Source]).
	Version string
	// InitialEventsEnd marks the Bookmark that ends the initial events of a
	// streaming list (see [WatchOptions.SendInitialEvents]), or, on a watch
	// asked for it, the Bookmark that says the stream has caught up with the
	// source (see [WatchOptions.NotifyCaughtUp]).
	InitialEventsEnd bool
	// Err is set on Error events and wraps one of the sentinels in errors.go
	// when the source can classify it.
	Err error
}

// Watcher is an open watch stream.
type Watcher[T any] interface {
	// Events returns the stream. The source closes the channel when the
	// watch ends: soon after Stop, promptly when the context given to Watch
	// is done (also with events undelivered), on a normal end (timeout), or
	// right after an Error event.
	Events() <-chan Event[T]
	// Stop ends the watch and releases its resources. It is idempotent and
	// safe to call concurrently with receiving; the channel is closed soon
	// after. Events not yet received are dropped.
	Stop()
}

// Source is a versioned collection of T that can be listed at a version and
// watched from a version, the shape shared by the Kubernetes API (resource
// versions, 410 Gone, bookmarks, continue tokens, watch-list) and etcd
// (revisions, compaction, progress notifications, key-range pagination).
// Implementations must be safe for concurrent use. docs/sources.md walks
// through writing one; the conformance kit, source/sourcetest, checks one
// against everything below.
//
// Versions. A version names a state of the whole collection. To the informer
// versions are opaque strings: it hands them back to the source and compares
// them for equality, nothing more. The versions of one watch stream never go
// backwards. A source whose versions are totally ordered (etcd revisions, the
// memory source's revisions, Kubernetes resourceVersions in practice) says so
// by also implementing [VersionComparer]; [SharedInformer.WaitForVersion]
// needs it, to wait for "this version or a later one".
//
// A reflector only hands back versions and continue tokens the source gave
// it. A version or token the source never produced (malformed) gives an
// error wrapping [ErrInvalidOptions], from List and from Watch; a token the
// source can no longer decode (from an older release, say) may give
// [ErrExpired] instead. Either way the reflector relists.
//
// Lists. Every [ListPage] carries the version it was read at; a page without
// one is rejected by the reflector with an error naming the source (it never
// watches from ""). Every page of one list shows the state at the first
// page's version, whatever is written between pages.
//
// Watches. A plain watch needs a version: Watch with Version "" and without
// SendInitialEvents fails with [ErrInvalidOptions]. There is no "watch from
// now", because the changes between a list and such a watch would be lost.
// A watch from v delivers every change after v exactly once, in order, each
// with the version of its write; a Deleted event carries the object's last
// state (at least enough of it for the key function). Nothing follows an
// Error event: the source closes the channel right after it.
//
// Bookmarks. A Bookmark at version v promises that every change up to v has
// been delivered on this stream, so its version never exceeds the changes
// delivered before it. A reflector resumes from the last version it saw; a
// bookmark ahead of undelivered changes would make it skip them silently.
// (Answer a progress request with the version the watch has delivered, not
// with the store's head.)
//
// Initial events. With [WatchOptions.SendInitialEvents], the Added events
// of the initial state come first, one per object, in any order of objects
// (key order is usual); each may carry the state's version or the object's
// own (Kubernetes does the latter), so their versions need not be ordered.
// Then a Bookmark with InitialEventsEnd carries the version of the state
// they describe, at least as new as each of them; from it on, versions never
// go backwards and the changes are the writes after that version.
//
// Errors. A source maps its native failures onto the sentinels in errors.go,
// wrapped with %w so the reflector can act on them with [errors.Is]:
//
//   - [ErrExpired]: the requested version (or a continue token) is older than
//     the oldest the source can serve. Kubernetes: 410 Gone / reason Expired.
//     etcd: ErrCompacted. The reflector relists. Watch may return it, or
//     open the stream and send it as the first event, an Error one: both
//     are allowed and handled alike. A watcher that falls behind the
//     compacted history after it started must end with an Error event
//     wrapping ErrExpired; it must never skip changes and go on.
//   - [ErrVersionTooLarge]: the requested version is newer than the source
//     has seen. Kubernetes: "Too large resource version". etcd: a future
//     revision. The reflector relists with [ReadLatest]. A list must fail
//     with it, never serve an older state. A watch may fail with it
//     (returned, or as the first event) or wait until the source reaches
//     the version and then deliver the changes after it (the Kubernetes
//     watch cache does); it never delivers a change at or before it.
//   - [ErrInvalidOptions]: the request is malformed: a version or continue
//     token the source never produced, a plain watch without a version, an
//     unknown [ReadMode], a negative Limit.
//   - [ErrTransient]: the source is unreachable or pushing back for now
//     (connection refused, 429 Too Many Requests, no leader). The reflector
//     backs off and retries from the same version, without relisting.
//   - [ErrInternal]: an internal server error that may pass (500). The
//     reflector retries a watch failing with it for a bounded time.
//   - errors.ErrUnsupported: the source does not implement an optional part of
//     the contract ([WatchOptions.SendInitialEvents]). The reflector falls back
//     to the plain list.
//
// Any other error is treated as "unknown": logged, then the reflector backs
// off and relists.
type Source[T any] interface {
	// List returns one page of the collection.
	List(ctx context.Context, opts ListOptions) (ListPage[T], error)
	// Watch opens a stream of changes. ctx bounds the whole stream: when it
	// is done, the stream ends and its channel is closed.
	Watch(ctx context.Context, opts WatchOptions) (Watcher[T], error)
}

// ReachabilityWaiter is implemented by a [Source] that can tell, more
// cheaply than a list or a watch, that it answers again after an outage:
// the etcd source probes its endpoints for one with a leader. It is
// optional: a reflector detects it with a type assertion. While a reflector
// waits out its backoff after a list or watch failed with [ErrTransient]
// or [ErrInternal], it calls WaitReachable and retries as soon as it
// returns nil (though never sooner than [Backoff.Initial] after the
// failure), so that a long backoff grown during an outage does not delay
// the recovery.
type ReachabilityWaiter interface {
	// WaitReachable blocks until the source would likely answer a list
	// or a watch, or ctx is done (then it returns ctx's error). It is
	// called on a goroutine of its own, without locks held, and its ctx
	// is cancelled as soon as the backoff is over.
	WaitReachable(ctx context.Context) error
}

// LivenessBounder is implemented by a [Source] that bounds how long a dead
// watch can go unnoticed. A watch that delivers nothing may be quiet or
// dead (its connection cut without a close: a half-open TCP flow, a
// partition); a source that checks its watches' liveness (the etcd
// source's progress probes, a client's pings) finds a dead one within a
// bound, and says so. It is optional: an informer detects it on its source
// with a type assertion, when [NewSharedInformer] builds it, and shows the
// bound in [Health.LivenessBound]; [Health.StaleFor] uses it.
//
// The promise: a watch stream that stops hearing from the source (no
// event, no answer to the source's own probes) is ended with an Error
// event, or reported with [ReportSourceError] as a failure of class
// transient, within LivenessBound of the last thing it heard. Either way
// the informer's [Health.FailingSince] is then set. So while FailingSince
// is zero, the cache lags the source by at most about LivenessBound plus
// the time to deliver what was sent; a source with no such check promises
// nothing and returns 0.
type LivenessBounder interface {
	// LivenessBound returns the bound, 0 (or a negative duration, taken
	// as 0) when the source makes no such promise (its liveness checks
	// are off, or it has none). It must not change over the source's life:
	// an informer reads it once. It must be safe for concurrent use and
	// must not block.
	LivenessBound() time.Duration
}

// VersionComparer is implemented by a [Source] whose versions are totally
// ordered, such as etcd revisions. An informer detects it on its source with
// a type assertion; only [SharedInformer.WaitForVersion] uses it, and fails
// with [errors.ErrUnsupported] without it. A [SourceFuncs] has none: embed it
// in a type with a CompareVersions method to wait for versions.
//
// The order must agree with the source's history: if the source reports
// version b after version a (in one watch stream, or a list read after a
// write that returned a), then CompareVersions(a, b) <= 0.
type VersionComparer interface {
	// CompareVersions returns -1 if version a is older than b, 0 if they
	// name the same state and +1 if a is newer. It must be a pure function,
	// safe for concurrent use: it is called without locks held, on the
	// goroutines of the callers of WaitForVersion.
	//
	// Possible errors: an error wrapping [ErrInvalidVersion] if a or b is not
	// a version of the source (so CompareVersions(v, v) validates v).
	CompareVersions(a, b string) (int, error)
}

// ObjectVersioner is implemented by a [Source] that can tell the version of
// an object's own last change: a Kubernetes resourceVersion, an etcd
// ModRevision, the memory source's revision of the write. It is optional: an
// informer whose [Options.ObjectVersion] is not set detects it on its source
// with a type assertion and uses it to drop, page by page, the objects of a
// relist that the cache already holds at the same version, so that a relist
// delivers only what changed.
type ObjectVersioner[T any] interface {
	// ObjectVersion returns the version of obj's last change, "" if the
	// source cannot tell (then obj is taken as changed). Two objects of one
	// key with the same non-empty version must be the same state. It is
	// called without locks held, on objects the source delivered (listed or
	// watched, possibly transformed by [Options.Transform] since), and must
	// be safe for concurrent use.
	ObjectVersion(obj T) string
}
