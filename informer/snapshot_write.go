package informer

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/ginformer/ginformer/internal/snapshotfmt"
)

// Writing snapshots.
//
// A snapshot is the cache's objects with the version the cache had applied
// when they were read. The objects are read with the Lister's lock-free
// iterator, so neither readers nor the processing loop wait for a write;
// the iterator is weakly consistent, so each object is at that version or
// newer. Restoring it and watching from that version is still exact: the
// watch replays every change after the version, and replaying a change onto
// an object that already has it leaves the same state (an upsert of the
// same object, a delete of an absent key). The encoding runs on one
// goroutine while the informer runs (so it leaves the other cores to the
// informer), on every core when it stops.
//
// Writes happen once as soon as the informer has synced (so that a process
// that dies minutes after each start still leaves a fresh snapshot for the
// next), then every SnapshotOptions.Interval (both paced: see
// pacedWriter), and once more when Run's context ends, after the processing
// loop has stopped; a write is skipped when the cache has applied nothing
// since the last snapshot written (or restored). A failure is reported
// (ErrorClassSnapshot) and the previous snapshot stays.

// finalSnapshotTimeout bounds the snapshot written when Run's context ends:
// Run waits for it.
const finalSnapshotTimeout = time.Minute

// snapshotLoop writes a snapshot once the informer has synced, then every
// interval, until ctx is done.
func (inf *SharedInformer[K, T]) snapshotLoop(ctx context.Context) {
	select {
	case <-inf.syncedCh:
	case <-ctx.Done():
		return
	}
	inf.writeSnapshot(ctx, 1)
	every(ctx, inf.snap.cfg.interval, func() { inf.writeSnapshot(ctx, 1) })
}

// writeFinalSnapshot writes the snapshot of a stopping informer, if it
// synced, on every core.
func (inf *SharedInformer[K, T]) writeFinalSnapshot(runCtx context.Context) {
	if !inf.HasSynced() {
		return // a restore still catching up, or a cold start not done: keep what is on disk
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(runCtx), finalSnapshotTimeout)
	defer cancel()
	inf.writeSnapshot(ctx, snapshotWorkers())
}

// writeSnapshot writes one snapshot, encoding on up to workers goroutines.
func (inf *SharedInformer[K, T]) writeSnapshot(ctx context.Context, workers int) {
	s := inf.snap
	version, _ := inf.appliedVersion() // first: every object read below is at least this new
	s.mu.Lock()
	id, written := s.identity, s.written
	s.mu.Unlock()
	if version == "" || version == written {
		return
	}
	if id == "" {
		var err error
		if id, err = s.cfg.identity(ctx); err != nil {
			if ctx.Err() != nil {
				// Stopping: the snapshot written at stop follows.
				inf.log.V(1).Info("snapshot write abandoned: the informer is stopping", "version", version)
				return
			}
			inf.report(ErrorClassSnapshot, fmt.Errorf("informer %q: %w: not written: %w", inf.name, ErrSnapshot, err))
			return
		}
		s.mu.Lock()
		s.identity = id
		s.mu.Unlock()
	}
	start := time.Now()
	objs := make([]T, 0, inf.indexer.Len())
	for _, obj := range inf.indexer.All() {
		objs = append(objs, obj)
	}
	var st snapshotfmt.Stats
	err := s.cfg.store.Save(ctx, func(w io.Writer) error {
		if workers == 1 {
			w = &pacedWriter{ctx: ctx, w: w, last: time.Now()}
		}
		var err error
		st, err = encodeSnapshot(w, id, version, objs, s.cfg.codec, workers)
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			// Stopping: the snapshot written at stop follows.
			inf.log.V(1).Info("snapshot write abandoned: the informer is stopping", "version", version)
			return
		}
		inf.report(ErrorClassSnapshot, fmt.Errorf("informer %q: %w: write at version %q: %w", inf.name, ErrSnapshot, version, err))
		return
	}
	now := time.Now()
	s.mu.Lock()
	s.written, s.writtenAt, s.writtenSize = version, now, st.Bytes
	s.mu.Unlock()
	inf.metrics.SnapshotWritten(inf.name, st.Bytes, now)
	inf.log.V(2).Info("snapshot written", "version", version, "objects", st.Objects, "bytes", st.Bytes, "took", now.Sub(start))
}

// pacedShare is the share of one core a periodic snapshot write may use:
// it runs beside the informer, the program and, often, the source's server,
// and nothing waits for it.
const pacedShare = 10 // one part in 10

// pacedWriter paces a periodic snapshot: before each write (one chunk of
// 256 objects), it sleeps (pacedShare-1) times the time spent since the
// previous write returned (encoding the chunk), so that the encoding uses
// about 1/pacedShare of a core. A write at 100k objects then takes a few
// seconds instead of a fraction of one. The snapshot written at stop is not
// paced.
type pacedWriter struct {
	ctx  context.Context
	w    io.Writer
	last time.Time
}

func (p *pacedWriter) Write(b []byte) (int, error) {
	busy := time.Since(p.last)
	if d := busy * (pacedShare - 1); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-p.ctx.Done():
			t.Stop()
			return 0, p.ctx.Err()
		}
	}
	n, err := p.w.Write(b)
	p.last = time.Now()
	return n, err
}
