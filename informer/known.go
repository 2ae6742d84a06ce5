package informer

import "iter"

// KnownObjects is what a [DeltaFIFO] consults to learn which objects its
// consumer already holds (normally the Indexer the consumer writes to).
// Implementations must be safe for concurrent use.
//
// The queue calls these methods while holding its internal lock (so that a
// Replace or Resync sees a state consistent with what it has handed out), so
// implementations must not call back into the queue and should not block.
type KnownObjects[K comparable, T any] interface {
	// Get returns the object stored under key, and whether there is one.
	Get(key K) (T, bool)
	// All yields every known key and object, in no particular order. It may
	// be weakly consistent: writes concurrent with the iteration may or may
	// not be seen, but writes completed before it started are.
	All() iter.Seq2[K, T]
}
