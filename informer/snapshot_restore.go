package informer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"
	"time"
)

// Restoring a snapshot at start.
//
// Run calls restore before it builds its reflector: the snapshot is loaded
// and its header checked (layout, identity) before the first request to the
// source. Then, while the reflector opens its watch from the snapshot's
// version (reading nothing from it yet), a goroutine checks the rest
// (checksums; see snapshot_format.go), decodes the objects and their keys on
// every core, and applies them to the empty cache as one batch, the way a
// first list is applied; the reflector reads the watch once that is done.
// Any failure leaves the cache empty and is reported (ErrorClassSnapshot,
// wrapping ErrSnapshot): a bad header starts the informer cold; a failure
// while decoding makes the reflector list instead of resuming.
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

// restore opens the informer's snapshot: it loads the file and checks its
// header (layout, identity) before the first request to the source. It
// returns what the reflector needs to resume from the snapshot's version,
// and the work that decodes the objects and applies them to the cache,
// which Run runs on a goroutine of its own while the reflector opens its
// watch (the reflector reads nothing from it before the cache holds the
// snapshot: resumeOptions.ready). It returns a zero resumeOptions and a nil
// func when it starts cold (inf.restoring is then false again). If the
// decoding fails, the cache stays empty, restored reports false and the
// reflector lists instead; handlers are still held back until the first
// list is applied, and receive it as initial adds.
func (inf *SharedInformer[K, T]) restore(ctx context.Context) (resumeOptions, func()) {
	s := inf.snap
	data, version, err := inf.openSnapshot(ctx)
	if err != nil || version == "" {
		inf.mu.Lock()
		inf.restoring = false // the cache is empty: nothing was withheld
		inf.mu.Unlock()
		if err != nil {
			inf.report(ErrorClassSnapshot, fmt.Errorf("informer %q: starting cold: %w", inf.name, err))
		}
		return resumeOptions{}, nil
	}
	ready := make(chan struct{})
	var ok atomic.Bool
	resume := resumeOptions{
		version:  version,
		caughtUp: func() { s.closeUp.Do(func() { close(s.caughtUp) }) },
		ready:    ready,
		restored: ok.Load,
	}
	apply := func() {
		defer close(ready)
		if err := inf.applySnapshot(data); err != nil {
			inf.report(ErrorClassSnapshot, fmt.Errorf("informer %q: starting cold (listing instead of resuming): %w", inf.name, err))
			return
		}
		ok.Store(true)
	}
	return resume, apply
}

// openSnapshot loads the snapshot and checks its header against the
// informer's identity; it returns the file's bytes and the snapshot's
// version, "" (and no error) when there is none.
//
// Possible errors: [ErrSnapshot] (wrapped).
func (inf *SharedInformer[K, T]) openSnapshot(ctx context.Context) ([]byte, string, error) {
	s := inf.snap
	id, err := s.cfg.identity(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("%w: cannot check a snapshot against the source: %w", ErrSnapshot, err)
	}
	s.mu.Lock()
	s.identity = id
	s.mu.Unlock()
	data, err := s.cfg.store.Load(ctx)
	if errors.Is(err, fs.ErrNotExist) {
		inf.log.V(1).Info("no snapshot to restore, starting cold")
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("%w: load: %w", ErrSnapshot, err)
	}
	h, _, err := readSnapshotHeader(data)
	if err != nil {
		return nil, "", err
	}
	if h.identity != id {
		return nil, "", identityMismatch(h.identity, id)
	}
	if h.version == "" {
		return nil, "", errSnapshotCorrupt("no version")
	}
	return data, h.version, nil
}

// applySnapshot checks and decodes the whole snapshot in data and applies
// it to the empty cache; on error the cache is left empty.
//
// Possible errors: [ErrSnapshot] (wrapped).
func (inf *SharedInformer[K, T]) applySnapshot(data []byte) error {
	s := inf.snap
	start := time.Now()
	s.mu.Lock()
	id := s.identity
	s.mu.Unlock()
	dec, err := decodeSnapshot(data, id, s.cfg.codec, s.keyFunc, snapshotWorkers())
	if err != nil {
		return err
	}
	decoded := time.Since(start)
	data = nil // let the file's bytes go before the cache grows
	// One batch of Replaced deltas, applied like a first list: the empty
	// cache is built whole, out of the readers' sight, and published at
	// once. inf.restoring holds the notifications back. Nothing else
	// processes a batch meanwhile: the reflector queues nothing before
	// resumeOptions.ready.
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
	return nil
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
