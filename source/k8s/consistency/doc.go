// Package consistency lets a controller read its own writes from an
// informer's cache: read-your-writes, the way client-go's util/consistency
// and controller-runtime's EnableReadYourWritesConsistency do it, typed.
//
// A [Writer] wraps a typed client-go client and the informer whose cache
// holds the objects that client writes. Each write made through it records
// what the cache must show before a read may answer: for a create, an
// update, a patch or an apply ([Apply]), the resourceVersion the API server
// returned for the object;
// for a delete, the object's UID, so that the cache must have dropped that
// object (not merely any object of that name: one recreated at once under
// the same name is another object). Its reads then wait:
//
//   - [Writer.Get] of a key until the cache has applied the version this
//     writer last wrote to that key and dropped the objects it deleted
//     there;
//   - [Writer.List] and [Writer.WaitForWrites] until the cache has applied
//     the highest version this writer recorded and dropped every object it
//     deleted.
//
// A wait is bounded ([Options.MaxWait], 5 s by default; [MaxWait] per
// call), may be skipped per call ([NoWait]) and ends with the read's
// context. When it ends before the cache caught up, the read returns the
// cache's answer as it is and an error saying so ([ErrStale], or the
// context's error). Each read's wait is observed by [Options.Metrics].
//
// Only this writer's writes are waited for: reads do not wait for writes
// made by other clients or other writers (make one Writer per controller and
// share it). The versions waited for are those of writes, which the
// informer's watch delivers as events; a List's resourceVersion is not
// (see docs/k8s.md, "Read your writes", for when one can be waited on).
package consistency
