package informer

import "errors"

// Sentinel errors. Every error the package returns wraps at most a few of
// these with %w, so callers test with [errors.Is], never by string.
var (
	// ErrClosed is returned by operations on a queue or informer that has
	// been closed or has stopped.
	ErrClosed = errors.New("informer: closed")

	// ErrIndexNotFound is returned by index queries naming an index the
	// store does not have.
	ErrIndexNotFound = errors.New("informer: index not found")

	// ErrIndexExists is returned when adding an index whose name is already
	// taken (or appears twice in one call).
	ErrIndexExists = errors.New("informer: index already exists")

	// ErrKeyFunc wraps an error (or recovered panic) of a user key function.
	// The write that needed the key was refused; nothing was changed.
	ErrKeyFunc = errors.New("informer: key function failed")

	// ErrIndexFunc wraps an error (or recovered panic) of a user index
	// function. The write that needed it was refused; the store and every
	// index are unchanged.
	ErrIndexFunc = errors.New("informer: index function failed")

	// ErrRequeue may be returned (wrapped or not) by a process function given
	// to [DeltaFIFO.Pop]: the popped deltas go back to the queue, ahead of any
	// newer deltas for the same key that arrived meanwhile.
	ErrRequeue = errors.New("informer: requeue")

	// ErrAlreadyStarted is returned by Run on an informer or group that has
	// already been started: each runs once.
	ErrAlreadyStarted = errors.New("informer: already started")

	// ErrCacheMutated is wrapped by the error the cache mutation detector
	// reports (see [MutationDetectorOptions]): an object in an informer's
	// cache was modified in place. The error names the object's key.
	ErrCacheMutated = errors.New("informer: cached object modified in place")

	// ErrInvalidOptions is wrapped by constructors when their Options fail
	// validation.
	ErrInvalidOptions = errors.New("informer: invalid options")

	// ErrExpired means a requested version is older than the oldest version
	// the source can still serve (Kubernetes 410 Gone / Expired, etcd
	// compacted revision). A reflector relists when it sees it.
	ErrExpired = errors.New("informer: version expired")

	// ErrRelistRequested is wrapped by a source that ends a watch (with an
	// Error event) or a list because the informer must list again for a
	// reason that is no failure: a sharded source whose slice changed. The
	// reflector relists at once, without backing off, and does not count
	// it as an error. Such an error may wrap [ErrExpired] too, for
	// consumers that only know that one.
	ErrRelistRequested = errors.New("informer: relist requested")

	// ErrVersionTooLarge means a requested version is newer than anything the
	// source has seen yet (Kubernetes "Too large resource version", etcd
	// future revision). A reflector relists with a consistent read.
	ErrVersionTooLarge = errors.New("informer: version too large")

	// ErrTransient marks a temporary failure to reach the source (connection
	// refused, too many requests, leader change). A reflector backs off and
	// watches again from the same version, without relisting.
	ErrTransient = errors.New("informer: transient source error")

	// ErrInternal marks an internal server error that may go away by itself.
	// A reflector retries a watch that fails with it for a bounded time
	// before relisting.
	ErrInternal = errors.New("informer: internal source error")
)

// ErrSnapshot is wrapped by the error reported when a snapshot found at
// start is refused (it does not match the informer, is truncated or
// damaged: the message says which) or cannot be read or written (see
// [SnapshotOptions]). The informer then starts cold, or keeps the previous
// snapshot; it never fails for it.
var ErrSnapshot = errors.New("informer: snapshot")

// ErrDecode is wrapped by the error a source reports with
// [ReportSourceError] when it skipped an object it could not decode (a
// value its codec or transform refused): the source treats the object as
// absent and goes on. That is one policy for every source in this
// repository: a watch event whose object does not decode (an add or an
// update) is delivered as an [EventDeleted] of its key, carrying the last
// state the source knows (or the key only), so the cache never keeps
// serving a state it knows is outdated; a list leaves the object out; the
// key comes back with its next value that decodes. The report names the
// key and the version. The informer counts it under [ErrorClassDecode]. A
// source's own decode error type (etcd.DecodeError, natskv.DecodeError,
// k8s.DecodeError) wraps it besides the source's sentinel.
var ErrDecode = errors.New("informer: cannot decode object")

// ErrTransform wraps an error (or recovered panic) of a user transform
// function. The object it was given is not stored.
var ErrTransform = errors.New("informer: transform function failed")

// ErrHandlerStuck is reported (never returned) when a handler call runs
// longer than [Options.StuckHandlerThreshold]: the handler has not
// returned, and its backlog grows until it does.
var ErrHandlerStuck = errors.New("informer: handler call stuck")

// ErrHandlerPanic wraps the value of a panic recovered from a handler. The
// handler's goroutine goes on with its next notification.
var ErrHandlerPanic = errors.New("informer: handler panicked")

// ErrInvalidVersion is wrapped when a version is malformed: not a version
// the source could have produced (for example "" or, for a source whose
// versions are integers, "abc"). See [VersionComparer] and
// [SharedInformer.WaitForVersion].
var ErrInvalidVersion = errors.New("informer: invalid version")

// ErrOptionsMismatch is returned by [InformerFor] when the group already has
// an informer of that name made from other key or object types or other
// options: see [InformerFor] for when options are the same.
var ErrOptionsMismatch = errors.New("informer: options differ from the existing informer's")
