package informer

import "runtime"

// Locking of [Indexer].
//
// mu is a sync.RWMutex; every hold is short. A reader holds the read lock
// for one lookup or one chunk copy (at most chunkSize entries; List
// excepted). A writer holds the write lock for one write, or for one chunk
// of a batch (commitChunk writes; see tryCommit), except for a batch that
// must be atomic (an informer's relist), which is applied under one hold.
//
// A spinning lock (readers and writers retrying TryRLock/TryLock for a few
// tens of µs before blocking) was measured and rejected: with more busy
// goroutines than CPUs, spinners keep descheduled lock holders (a reader
// preempted in the middle of a chunk copy) off the CPU, and one run of
// 8 querying readers and one committing writer on 2 cores fell from about
// 350k to 5k writes/s.

// rlock takes the read lock for a lookup or an iteration's first chunk:
// plainly, even while a writer waits. Yielding the CPU first (as
// rlockAgain does) was measured to cost point reads their tail: with more
// busy goroutines than CPUs, runtime.Gosched puts the reader behind every
// runnable goroutine, each with a time slice of up to 10 ms (bench "Read
// under writes" with busy readers: query p99 3.2 ms with the yield, 74 µs
// without, client-go 45 µs). A writer waits for such a reader's single
// short hold only.
func (s *Indexer[K, T]) rlock() { s.mu.RLock() }

// rlockAgain takes the read lock for an iteration's next chunk. If a writer
// is waiting for the lock, the reader first lets other goroutines run
// (runtime.Gosched) instead of blocking in RLock. Without this, a
// sync.RWMutex hands the read lock, at the writer's Unlock, to every reader
// that blocked meanwhile, runnable or not; the writer's next Lock then
// waits until each of them has been scheduled and has copied a chunk. With
// 10 readers iterating over large stores on 2 CPUs that made a write cost
// about 10 chunk copies plus 10 goroutine wake-ups (about 50k writes/s
// instead of 200k-400k in BenchmarkIndexerWritesWithListers). When no
// writer waits, the cost is one atomic load per chunk.
func (s *Indexer[K, T]) rlockAgain() {
	if s.writers.Load() != 0 {
		runtime.Gosched()
	}
	s.mu.RLock()
}

// lock takes the write lock, announcing the writer to readers (rlock) while
// it waits.
func (s *Indexer[K, T]) lock() {
	s.writers.Add(1)
	s.mu.Lock()
	s.writers.Add(-1)
}
