package informer

import (
	"os"
	"runtime"
	"strconv"
	"time"
)

var lockMode, _ = strconv.Atoi(os.Getenv("LOCKMODE"))

func init() {
	if c, _ := strconv.Atoi(os.Getenv("CHUNK")); c > 0 {
		commitChunk = c
	}
}

// Locking of [Indexer]: spin briefly, then block.
//
// Every hold of mu is short: a reader holds the read lock for one lookup or
// one chunk copy (at most chunkSize entries; List excepted), a writer holds
// the write lock for one write or one chunk of a batch (commitChunk writes;
// an atomic relist batch excepted). What makes a sync.RWMutex slow here is
// not the holds but the blocking: a goroutine that blocks on the lock is
// parked, and once the lock is free it waits in the scheduler's run queue
// behind every runnable goroutine, each of which may run a whole time slice
// (10 ms). With more busy goroutines than CPUs (8 querying readers, a
// writer, the informer's goroutines, on 2 cores) that turned a wait of a
// few µs into milliseconds, at the tail of every reader's latency.
//
// So both sides first spin, with TryLock and TryRLock, for at most
// spinFor, and only then block:
//
//   - A writer announces itself in writers, then tries TryLock until the
//     readers in progress are done. Readers that see a writer announced do
//     not enter (they spin), so the writer is not starved; it is not parked
//     either, so it does not wait to be scheduled again once the readers
//     are out.
//   - A reader tries TryRLock while no writer is announced. A reader that
//     has to spin counts itself in spinners; a writer committing a batch in
//     chunks, between two chunks, waits (briefly) until no reader spins, so
//     that the readers that waited for one chunk get in before the next one
//     (see unlockChunk): a reader waits for at most about one chunk.
//
// The spin is bounded (spinFor): a holder that is not running (preempted,
// or a List copying 100k entries) costs the spinner that long, then it
// blocks on mu as before.

// spinFor bounds how long a reader or a writer spins for mu before blocking.
// It is several chunk holds long (a chunk of commitChunk writes of full pods
// with three indexes takes about 10-30 µs on the benchmark machine).
const spinFor = 50 * time.Microsecond

// spinCheck is how many lock attempts a spinner makes between two clock
// readings.
const spinCheck = 64

// handoffSpins bounds how many times unlockChunk checks for spinning
// readers (about a microsecond): enough for a running spinner to take the
// read lock; a spinner that is not running is not waited for.
const handoffSpins = 512

// rlock takes the read lock: at once if no writer is announced and the lock
// is free, else see rlockSlow.
func (s *Indexer[K, T]) rlock() {
	if lockMode == 0 {
		if s.writers.Load() != 0 {
			runtime.Gosched()
		}
		s.mu.RLock()
		return
	}
	if lockMode == 2 {
		s.mu.RLock()
		return
	}
	if s.writers.Load() == 0 && s.mu.TryRLock() {
		return
	}
	s.rlockSlow()
}

// rlockSlow spins for the read lock while a writer is announced or holds it,
// for at most spinFor, then blocks on it.
func (s *Indexer[K, T]) rlockSlow() {
	s.spinners.Add(1)
	var start time.Time
	for i := 1; ; i++ {
		if s.writers.Load() == 0 && s.mu.TryRLock() {
			s.spinners.Add(-1)
			return
		}
		if i%spinCheck == 0 {
			if start.IsZero() {
				start = time.Now()
			} else if time.Since(start) > spinFor {
				break
			}
		}
	}
	s.spinners.Add(-1)
	s.mu.RLock()
}

// lock takes the write lock, announcing the writer to readers (rlock) while
// it waits.
func (s *Indexer[K, T]) lock() {
	if lockMode != 1 {
		s.writers.Add(1)
		s.mu.Lock()
		s.writers.Add(-1)
		return
	}
	s.writers.Add(1)
	if !s.mu.TryLock() {
		s.lockSlow()
	}
	s.writers.Add(-1)
}

// lockSlow spins for the write lock for at most spinFor, then blocks on it.
func (s *Indexer[K, T]) lockSlow() {
	var start time.Time
	for i := 1; ; i++ {
		if s.mu.TryLock() {
			return
		}
		if i%spinCheck == 0 {
			if start.IsZero() {
				start = time.Now()
			} else if time.Since(start) > spinFor {
				break
			}
		}
	}
	s.mu.Lock()
}

// unlockChunk releases the write lock between two chunks of a batch and
// lets the readers that spun during the chunk take the read lock before the
// writer takes the write lock again (bounded by handoffSpins).
func (s *Indexer[K, T]) unlockChunk() {
	s.mu.Unlock()
	if lockMode != 1 {
		return
	}
	for i := 0; i < handoffSpins && s.spinners.Load() != 0; i++ {
	}
}

var noFresh = os.Getenv("NOFRESH") != ""
