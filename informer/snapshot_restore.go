package informer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"time"
)

// Restoring a snapshot at start.
//
// Run calls restore before it builds its reflector, so the cache is loaded
// before the first request to the source. restore loads the snapshot,
// checks it whole (layout, checksums, identity; see snapshot_format.go),
// decodes it and its keys on every core, and applies it to the empty cache
// as one batch, the way a first list is applied. Any failure leaves the
// cache empty, is reported (ErrorClassSnapshot, wrapping ErrSnapshot) and
// the informer starts cold.
//
// Handlers are told nothing while the restored cache catches up. From
// restore until finishRestore, inf.restoring (under inf.mu) makes the
// processing loop commit batches without queuing their notifications, and
// AddHandler register handlers without their initial adds. The reflector
// watches from the snapshot's version (see reflector_resume.go) and calls
// caughtUp once every change up to the source's current version is queued
// (or once a relist is applied, if it could not resume). awaitCaughtUp then
// waits until the cache has applied everything received so far and calls
// finishRestore, which, under inf.mu, tells every handler the cache's
// contents as initial adds followed by the sync marker, turns notifications
// back on and marks the informer synced. A handler therefore receives what
// a cold start would have given it: the caught-up state as initial adds,
// then every later change. A key deleted while the program was down is
// removed from the cache during the catch-up and never reaches a handler.
//
// Readers are not held back: before the informer has synced, the Lister
// serves the restored state, possibly stale; [Health] says so (Restored).

// snapshotState is an informer's warm-restart state.
type snapshotState[K comparable, T any] struct {
	cfg      snapshotConfig[T]
	keyFunc  KeyFunc[K, T]
	caughtUp chan struct{} // closed by the reflector's caughtUp
	closeUp  sync.Once

	// mu guards the fields below: the restore, the writes and Health.
	mu          sync.Mutex
	identity    string    // "" until known (the source may be unreachable at start)
	restoredVer string    // the version restored; "" after a cold start
	restoredAt  time.Time // when the restored cache was loaded
	written     string    // version of the last snapshot written or restored
	writtenAt   time.Time
	writtenSize int64
}

// restore loads the informer's snapshot into the cache and returns what
// the reflector needs to resume from it; a zero resumeOptions when it
// starts cold (inf.restoring is then false again).
func (inf *SharedInformer[K, T]) restore(ctx context.Context) resumeOptions {
	s := inf.snap
	version, err := inf.loadSnapshot(ctx)
	if err != nil || version == "" {
		inf.mu.Lock()
		inf.restoring = false // the cache is empty: nothing was withheld
		inf.mu.Unlock()
		if err != nil {
			inf.report(ErrorClassSnapshot, fmt.Errorf("informer %q: starting cold: %w", inf.name, err))
		}
		return resumeOptions{}
	}
	return resumeOptions{version: version, caughtUp: func() { s.closeUp.Do(func() { close(s.caughtUp) }) }}
}

// loadSnapshot loads, checks and applies the snapshot, and returns its
// version; "" (and no error) when there is none.
//
// Possible errors: [ErrSnapshot] (wrapped).
func (inf *SharedInformer[K, T]) loadSnapshot(ctx context.Context) (string, error) {
	s := inf.snap
	start := time.Now()
	id, err := s.cfg.identity(ctx)
	if err != nil {
		return "", fmt.Errorf("%w: cannot check a snapshot against the source: %w", ErrSnapshot, err)
	}
	s.mu.Lock()
	s.identity = id
	s.mu.Unlock()
	data, err := s.cfg.store.Load(ctx)
	if errors.Is(err, fs.ErrNotExist) {
		inf.log.V(1).Info("no snapshot to restore, starting cold")
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("%w: load: %w", ErrSnapshot, err)
	}
	dec, err := decodeSnapshot(data, id, s.cfg.codec, s.keyFunc, snapshotWorkers())
	if err != nil {
		return "", err
	}
	decoded := time.Since(start)
	data = nil // let the file's bytes go before the cache grows
	// One batch of Replaced deltas, applied like a first list: the empty
	// cache is built whole, out of the readers' sight, and published at
	// once. inf.restoring holds the notifications back.
	deltas := make([]Delta[T], len(dec.objs))
	items := make([]Item[K, T], len(dec.objs))
	for i, obj := range dec.objs {
		deltas[i] = Delta[T]{Type: Replaced, Object: obj}
		items[i] = Item[K, T]{Key: dec.keys[i], Deltas: deltas[i : i+1 : i+1]}
	}
	dec.objs, dec.keys = nil, nil
	inf.processBatch(&inf.proc, items, false)
	inf.versions.record(dec.version) // applied at once: the queue is empty
	now := time.Now()
	s.mu.Lock()
	s.restoredVer, s.restoredAt = dec.version, now
	s.written = dec.version // what is on disk already
	s.mu.Unlock()
	inf.log.V(1).Info("restored the cache from a snapshot; catching up with the source",
		"version", dec.version, "objects", len(items), "decoded", decoded, "took", now.Sub(start))
	return dec.version, nil
}

// awaitCaughtUp waits for the reflector's caughtUp and for the cache to
// apply everything received until then, then ends the restore.
func (inf *SharedInformer[K, T]) awaitCaughtUp(ctx context.Context, started time.Time) {
	select {
	case <-inf.snap.caughtUp:
	case <-ctx.Done():
		return
	}
	if inf.versions.waitReceived(ctx) != nil {
		return // stopping
	}
	inf.finishRestore(started)
}

// finishRestore tells every handler the caught-up cache as initial adds and
// the sync marker, turns notifications back on and marks the informer
// synced, all under inf.mu: no batch commits in between, so each handler
// then receives every later change, with no gap and no duplicate.
func (inf *SharedInformer[K, T]) finishRestore(started time.Time) {
	inf.mu.Lock()
	if inf.HasSynced() {
		inf.mu.Unlock()
		return
	}
	inf.restoring = false
	for _, l := range inf.listeners {
		l.enqueue(inf.initialNotesLocked(true)...)
	}
	close(inf.syncedCh) // only here and in markSynced, under mu
	inf.mu.Unlock()
	took := time.Since(started)
	inf.metrics.Synced(inf.name, took)
	s := inf.snap
	s.mu.Lock()
	restored := s.restoredVer
	s.mu.Unlock()
	inf.log.V(1).Info("cache synced from a restored snapshot", "restored", restored,
		"version", inf.LastSyncVersion(), "objects", inf.indexer.Len(), "after", took)
}

// restoredHealth fills the warm-restart fields of h.
func (inf *SharedInformer[K, T]) restoredHealth(h *Health) {
	s := inf.snap
	if s == nil {
		return
	}
	inf.mu.Lock()
	restoring := inf.restoring
	inf.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	h.Restored = restoring && s.restoredVer != ""
	h.RestoredVersion, h.RestoredAt = s.restoredVer, s.restoredAt
	h.SnapshotVersion, h.SnapshotAt, h.SnapshotBytes = s.written, s.writtenAt, s.writtenSize
}
