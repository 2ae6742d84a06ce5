package informer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ginformer/ginformer/internal/snapshotfmt"
)

// Restoring a snapshot at start.
//
// Run calls restore before it builds its reflector: the snapshot is loaded
// and its header checked (layout, checksum, and every part of its identity
// the informer knows itself: object type, codec, user identity) before the
// first request to the source. Then a goroutine checks the rest (checksums:
// the layout is internal/snapshotfmt's), decodes the objects and their keys
// on every core, and applies them to the empty cache as one batch, the way a
// first list is applied; beside it another asks the source to confirm its
// identity (confirmIdentity). Once the source has confirmed it, the
// reflector opens its watch from the snapshot's version (a version of
// another collection means nothing: no watch from it is ever opened there),
// reading nothing from it yet; it reads the watch once the restore is
// applied too. Any failure leaves the cache empty and is reported
// (ErrorClassSnapshot, wrapping ErrSnapshot): a bad header starts the
// informer cold; a failure while decoding, or a source of another identity,
// makes the reflector list instead of resuming.
//
// A source that does not answer at start (an outage, which is when a
// snapshot is worth most) does not hold the restore back: the restored
// cache is served to readers at once, not synced, and Health says it is
// unconfirmed (StartVerifying); the identity is confirmed when the source
// first answers. If it turns out to be another collection's, the restored
// cache is emptied again (before the handlers, which have been told
// nothing, hear of it) and the informer lists.
//
// Warm restart is a layer over the cold path: the restored snapshot is
// committed the way a first list is, and the informer becomes synced the one
// way it always does (markSynced). Handlers are told nothing while the
// restored cache catches up: from Run until the informer has synced, every
// handler waits (inf.waiting, see admitLocked), registered and running but
// not among the handlers processBatch notifies (inf.listeners), which are
// then none. The reflector watches from the snapshot's version (see
// reflector_resume.go) and calls caughtUp once every change up to the
// source's current version is queued (or once a relist is applied, if it
// could not resume). awaitCaughtUp then waits until the cache has applied
// everything received so far and calls finishRestore, whose markSynced,
// under inf.mu, gives every waiting handler the cache's contents as initial
// adds followed by the sync marker and attaches it. A handler therefore
// receives what a cold start would have given it: the caught-up state as
// initial adds, then every later change. A key deleted while the program
// was down is removed from the cache during the catch-up and never reaches
// a handler. When there is no snapshot to restore (or its header is
// refused), the start is cold from the outset: restore attaches the waiting
// handlers at once, before the reflector starts.
//
// Readers are not held back: before the informer has synced, the Lister
// serves the restored state, possibly stale; [Health] says so (Restored,
// Start).

// snapshotState is an informer's warm-restart state.
type snapshotState[K comparable, T any] struct {
	cfg      snapshotConfig[T]
	keyFunc  KeyFunc[K, T]
	caughtUp chan struct{} // closed by the reflector's caughtUp
	closeUp  sync.Once

	// mu guards the fields below: the restore, the writes and Health.
	mu          sync.Mutex
	identity    string    // "" until confirmed (the source may be unreachable at start)
	restoredVer string    // the version restored; "" after a cold start
	loadStart   time.Time // when restore began loading the snapshot
	restoredAt  time.Time // when the restored cache was loaded
	written     string    // version of the last snapshot written or restored
	writtenAt   time.Time
	writtenSize int64
	start       StartOutcome // see Health.Start
	startAt     time.Time
	startReason string
}

// restore opens the informer's snapshot: it loads the file and checks its
// header before the first request to the source. It returns what the
// reflector needs to resume from the snapshot's version, and the work that
// decodes the objects, applies them to the cache and has the source
// confirm the snapshot's identity, which Run runs on a goroutine of its own
// while the reflector opens its watch (the reflector reads nothing from it
// before that work is done: resumeOptions.ready). It returns a zero
// resumeOptions and a nil func when it starts cold, having attached the
// waiting handlers (attachWaitingLocked). If the decoding or the identity
// fails, the cache is left empty, restored reports false and the reflector
// lists instead; handlers still wait until the first list is applied (the
// informer syncs through awaitCaughtUp), and receive it as initial adds.
func (inf *SharedInformer[K, T]) restore(ctx context.Context) (resumeOptions, func()) {
	s := inf.snap
	s.mu.Lock()
	s.loadStart = time.Now()
	s.mu.Unlock()
	data, h, src, err := inf.openSnapshot(ctx)
	if err != nil || data == nil {
		inf.mu.Lock()
		inf.attachWaitingLocked(false) // a cold start: the cache is empty
		inf.mu.Unlock()
		switch {
		case ctx.Err() != nil:
		case err != nil:
			err = fmt.Errorf("informer %q: starting cold: %w", inf.name, err)
			inf.report(ErrorClassSnapshot, err)
			inf.setStart(StartRefused, err)
		default:
			inf.setStart(StartCold, nil)
		}
		return resumeOptions{}, nil
	}
	ready, confirmed := make(chan struct{}), make(chan struct{})
	var ok atomic.Bool
	resume := resumeOptions{
		version:   h.Version,
		confirmed: confirmed,
		caughtUp:  func() { s.closeUp.Do(func() { close(s.caughtUp) }) },
		ready:     ready,
		restored:  ok.Load,
		abandoned: func(err error) { inf.setStart(StartRelisted, err) },
	}
	apply := func() {
		defer close(ready)
		if err := inf.restoreConfirmed(ctx, data, h.Identity, src, confirmed); err != nil {
			if ctx.Err() == nil {
				err = fmt.Errorf("informer %q: starting cold (listing instead of resuming): %w", inf.name, err)
				inf.report(ErrorClassSnapshot, err)
				inf.setStart(StartRefused, err)
			}
			return
		}
		inf.setStart(StartCatchingUp, nil)
		ok.Store(true)
	}
	return resume, apply
}

// openSnapshot loads the snapshot and checks its header against what the
// informer knows of its identity without asking the source; it returns the
// file's bytes, its header and the source's identity the snapshot records
// (for confirmIdentity); nil bytes (and no error) when there is none.
//
// Possible errors: [ErrSnapshot] (wrapped).
func (inf *SharedInformer[K, T]) openSnapshot(ctx context.Context) (data []byte, h snapshotfmt.Header, src string, err error) {
	s := inf.snap
	data, err = s.cfg.store.Load(ctx)
	if errors.Is(err, fs.ErrNotExist) {
		inf.log.V(1).Info("no snapshot to restore, starting cold")
		return nil, h, "", nil
	}
	if err != nil {
		return nil, h, "", fmt.Errorf("%w: load: %w", ErrSnapshot, err)
	}
	if h, err = snapshotfmt.ReadHeader(data); err != nil {
		return nil, h, "", refuseSnapshot(err)
	}
	if src, err = s.cfg.sourceOf(h.Identity); err != nil {
		return nil, h, "", err
	}
	if s.cfg.source == nil {
		s.mu.Lock()
		s.identity = h.Identity
		s.mu.Unlock()
	}
	return data, h, src, nil
}

// restoreConfirmed decodes and applies the snapshot in data, whose header
// carries identity, while the source confirms its part of it, src
// (confirmIdentity, which closes ok when it does); it returns once both are
// done. When the source answers first with another identity, nothing is
// applied; when it answers after the restore (it was down), the restored
// cache is emptied again. On error the cache is empty.
//
// Possible errors: [ErrSnapshot] (wrapped); ctx.Err().
func (inf *SharedInformer[K, T]) restoreConfirmed(ctx context.Context, data []byte, identity, src string, ok chan<- struct{}) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()                   // before Wait: a decoding failure stops the confirmation
	confirmed := make(chan struct{}) // the identity is known, either way
	var idErr error
	wg.Go(func() {
		defer close(confirmed)
		if idErr = inf.confirmIdentity(ctx, src); idErr == nil {
			close(ok) // the reflector may open its watch
		}
	})
	dec, err := inf.decodeSnapshotData(data, identity)
	if err != nil {
		return err
	}
	select {
	case <-confirmed:
		if idErr != nil {
			return idErr
		}
	default:
	}
	inf.applySnapshot(dec)
	select {
	case <-confirmed:
	default:
		inf.setStart(StartVerifying, nil) // served, unconfirmed
		<-confirmed
	}
	if idErr != nil {
		inf.dropRestored()
		return idErr
	}
	return nil
}

// decodeSnapshotData checks and decodes the whole snapshot in data, whose
// header openSnapshot has checked: it carries identity.
//
// Possible errors: [ErrSnapshot] (wrapped).
func (inf *SharedInformer[K, T]) decodeSnapshotData(data []byte, identity string) (*decodedSnapshot[K, T], error) {
	s := inf.snap
	start := time.Now()
	dec, err := decodeSnapshot(data, identity, s.cfg.codec, s.keyFunc, snapshotWorkers())
	if err != nil {
		return nil, err
	}
	inf.log.V(2).Info("snapshot decoded", "version", dec.version, "objects", len(dec.objs), "took", time.Since(start))
	return dec, nil
}

// applySnapshot applies a decoded snapshot to the empty cache.
func (inf *SharedInformer[K, T]) applySnapshot(dec *decodedSnapshot[K, T]) {
	s := inf.snap
	// One batch of Replaced deltas, applied like a first list: the empty
	// cache is built whole, out of the readers' sight, and published at
	// once. Every handler is waiting: none is notified. Nothing else
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
	took := now.Sub(s.loadStart)
	s.mu.Unlock()
	inf.log.V(1).Info("restored the cache from a snapshot; catching up with the source",
		"version", dec.version, "objects", len(items), "took", took)
}

// dropRestored empties a restored cache whose snapshot the source did not
// confirm, before the reflector lists: handlers have been told nothing of
// it (they are all waiting, see admitLocked), and the list must not keep
// any of it.
func (inf *SharedInformer[K, T]) dropRestored() {
	var items []Item[K, T]
	for k, obj := range inf.indexer.All() {
		items = append(items, Item[K, T]{Key: k, Deltas: []Delta[T]{{Type: Deleted, Object: obj}}})
	}
	inf.processBatch(&inf.proc, items, false)
	s := inf.snap
	s.mu.Lock()
	s.restoredVer, s.restoredAt, s.written = "", time.Time{}, ""
	s.mu.Unlock()
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

// finishRestore ends a warm start that has caught up: the informer is
// synced, and markSynced gives every waiting handler the caught-up cache.
func (inf *SharedInformer[K, T]) finishRestore(started time.Time) {
	// Recorded before the informer counts as synced, so that whoever saw
	// it synced sees how the start went. Ignored if it relisted.
	inf.setStart(StartResumed, nil)
	if !inf.markSynced(started) {
		return
	}
	s := inf.snap
	s.mu.Lock()
	restored := s.restoredVer
	s.mu.Unlock()
	inf.log.V(1).Info("cache synced from a restored snapshot", "restored", restored,
		"version", inf.LastSyncVersion(), "objects", inf.indexer.Len(), "after", time.Since(started))
}

// attachWaitingLocked ends the warm start's wait: it gives each waiting
// handler the cache's contents as initial adds (and the sync marker if
// synced) and moves it to the handlers processBatch notifies. The caller
// holds inf.mu.
func (inf *SharedInformer[K, T]) attachWaitingLocked(synced bool) {
	inf.warm = false
	if len(inf.waiting) == 0 {
		return
	}
	for _, l := range inf.waiting {
		l.enqueue(inf.initialNotesLocked(synced)...) // one slice each: the listener keeps it
	}
	inf.listeners = append(inf.listeners, inf.waiting...)
	inf.waiting = nil
}

// restoredHealth fills the warm-restart fields of h.
func (inf *SharedInformer[K, T]) restoredHealth(h *Health) {
	s := inf.snap
	if s == nil {
		return
	}
	synced := inf.HasSynced()
	s.mu.Lock()
	defer s.mu.Unlock()
	h.Restored = !synced && s.restoredVer != ""
	h.RestoredVersion, h.RestoredAt = s.restoredVer, s.restoredAt
	h.SnapshotVersion, h.SnapshotAt, h.SnapshotBytes = s.written, s.writtenAt, s.writtenSize
	h.Start, h.StartReason, h.StartAt = s.start, s.startReason, s.startAt
}
