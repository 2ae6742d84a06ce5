// Package memory is an in-process, concurrent, versioned collection that
// implements [informer.Source]: the embedded default for demos and the fast
// source for tests.
//
// A [Store] behaves like a tiny etcd. Every write (a [Store.Put] or a
// [Store.Delete] of an existing key) increments the store revision, a strictly
// increasing int64 starting at 1 for the empty store; versions are that
// revision formatted in decimal, and compare as integers
// ([Store.CompareVersions], an [informer.VersionComparer]). The store keeps the last HistorySize changes,
// which serve watches that resume from an older version and lists at an exact
// older version; anything older has been compacted and yields
// [informer.ErrExpired].
//
// Lists are returned in key order (see [Options.Compare]) and can be paged;
// every page of one list reflects the state at the version of its first
// page. Watches deliver every change after their start version exactly once,
// in revision order, with backpressure: each watcher reads the shared history
// by revision, so a slow watcher never makes the store buffer events for it.
//
// An informer's cache over a store can be kept in a snapshot (warm
// restarts, [informer.SnapshotOptions]): the store and its views implement
// [informer.SnapshotSource], and watches honour
// [informer.WatchOptions.NotifyCaughtUp]. A snapshot is restored only over
// the same store, in the same process (see [Store.SnapshotIdentity]).
//
// [Store.Filtered] gives a view of the same store restricted to the objects
// matching a predicate, with Kubernetes-style enter/leave event synthesis.
//
// Test aids ([Store.FailNextList], [Store.FailNextWatch], [Store.DropWatches],
// [Store.BreakWatches], [Store.SetDelay], [Store.RequestBookmarks]) let tests
// drive a client through source failures.
package memory
