package informer

// Locking of [Indexer].
//
// Readers take no lock. Writers serialize on mu (its write side); a write
// holds it for one write, or for one chunk of a batch (commitChunk writes;
// see tryCommit), except a batch that must be atomic (an informer's relist),
// applied under one hold with relists odd.
//
// The read side of mu is taken only by List (a consistent copy of the whole
// store, which must keep writers off), by a chunk copy that finds a relist
// being applied (outsideRelist, copyBucket: the reader waits for the
// relist's end, see lockedCopy), and by an index chunk copy that concurrent
// writes kept changing chunkLockTries times in a row (copyBucket; it yields
// the CPU between tries after chunkTries): that reader then waits for the
// chunk of writes in progress.
//
// Before readers went lock-free, every read took the read side, and a
// reader arriving while a writer waited parked behind it: with more busy
// goroutines than CPUs a parked reader waits for the scheduler, which gave
// millisecond query tails on 2 cores whenever the writer sped up (bench
// "Read under writes"; docs/design.md).

// lock takes the writers' lock.
func (s *Indexer[K, T]) lock() { s.mu.Lock() }
