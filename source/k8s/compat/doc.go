// Package compat implements client-go's cache.SharedIndexInformer on the
// ginformer engine ([informer.SharedInformer]), so that code written against
// client-go, and controller-runtime through cache.Options.NewInformer, can
// swap the engine without changing its handlers:
//
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
//		Cache: crcache.Options{NewInformer: compat.NewSharedIndexInformer},
//	})
//
// Handlers receive client-go's interface{} objects (the objects the
// ListerWatcher decodes); deletions inferred from a relist arrive as
// cache.DeletedFinalStateUnknown, as with client-go. The objects are what
// client-go's cache holds: managedFields kept (unlike the engine's own
// Kubernetes source; [Options.DropManagedFields] drops them to save
// memory), nothing shared between two objects, and GetStore hands out the
// cached object itself (not to be modified, as with client-go).
//
// Differences from client-go's informer: GetStore and GetIndexer are
// read-only views; handler panics are recovered and reported instead of
// crashing the process; a relisted object whose resourceVersion did not
// change is not delivered as an update; RemoveEventHandler stops deliveries
// at once; index functions that fail refuse the object instead of
// panicking; a nil handler is refused when added instead of panicking at
// the first event; the watch error handler receives a nil
// *cache.Reflector. See docs/k8s.md.
//
// [Options.Snapshot] keeps the cache on disk between runs: a restarted
// informer loads it, then lists again, and its handlers see a cold start;
// before it has synced, GetStore serves the restored state.
package compat
