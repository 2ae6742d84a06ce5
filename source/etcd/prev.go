package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd/internal/classify"
)

// Previous values.
//
// A Deleted event carries the last state of the key, so a watch needs the
// value a key had before a deletion. etcd can send it with every event
// (prev_kv), but then it reads and sends the previous value of every put
// too: per event, one more read in etcd's watch sender and twice the bytes
// on the wire and in the client's protobuf decoding. With a Filter every put
// needs it (to tell an object entering the selection from one staying in
// it), so such a watch asks for prev_kv. Without a Filter only deletions
// (and puts of bad values, which leave the cache as deletions) need it, so
// the source reads those previous values itself: for the events of one
// watch response, key by key at the revision before the event, in
// transactions of prevBatch reads, prevParallel at a time. That is exactly
// the read etcd does for prev_kv. A revision compacted in the meantime gives
// a deletion with the key only (Object.ValueUnknown), as a prev_kv lost to
// compaction would.
//
// Nothing is read before the caught-up marker of a NotifyCaughtUp watch
// (the catch-up of an informer restored from a snapshot): its deletions go
// out with the key only. The informer tells its handlers nothing before the
// marker and deletes by key, so the reads, one per key deleted while it was
// down, would buy nothing (100k deletions: a catch-up of 3.4 s with them, 0.76 s
// without; see docs/benchmarks.md). With a Filter etcd sends prev_kv anyway,
// and the deletions carry the last state as usual.

// prevBatch is the number of reads per transaction (etcd's --max-txn-ops
// defaults to 128).
const prevBatch = 64

// prevParallel is the number of transactions in flight.
const prevParallel = 4

// watchPrevKV reports whether the source's watches ask etcd for prev_kv.
func (s *Source[T]) watchPrevKV() bool { return s.opts.Filter != nil }

// needsPrev reports whether convert needs the previous value of an event
// etcd sent without one: a deletion, or a put of a value that is not
// visible, of a key that existed before the event. (convertAll asks only
// after the caught-up marker.)
func needsPrev(ev *clientv3.Event, v verdict) bool {
	if ev.PrevKv != nil || ev.IsCreate() {
		return false
	}
	return ev.Type == clientv3.EventTypeDelete || v != visible
}

// fetchPrev sets the PrevKv of the events of evs whose index is in idx to
// the key's value at the revision before the event (nil when compacted),
// reading through kv: the watch's own connection (see watchconn.go), so that
// a re-watch after a dead connection does not read over another dead one.
// Each transaction gives up after the liveness timeout, so a dead
// connection cannot hold the watch, whatever the number of deletions.
//
// Possible errors: [informer.ErrTransient] (etcd unreachable or slow, and
// errors it does not classify), those of [classify.Error]; ctx.Err().
func (s *Source[T]) fetchPrev(ctx context.Context, kv clientv3.KV, evs []*clientv3.Event, idx []int) error {
	var wg sync.WaitGroup
	errs := make([]error, (len(idx)+prevBatch-1)/prevBatch)
	sem := make(chan struct{}, prevParallel)
	for b := range errs {
		part := idx[b*prevBatch : min((b+1)*prevBatch, len(idx))]
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[b] = s.fetchPrevBatch(ctx, kv, evs, part)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("etcd source: watch of %q: read previous values: %w", s.opts.Prefix, err)
	}
	return nil
}

// fetchPrevBatch reads the previous values of one transaction's worth of
// events: serializable first (no quorum round), linearizable if the member
// answering is behind.
func (s *Source[T]) fetchPrevBatch(ctx context.Context, kv clientv3.KV, evs []*clientv3.Event, idx []int) error {
	for _, serializable := range []bool{true, false} {
		tctx, cancel := ctx, context.CancelFunc(func() {})
		if s.opts.LivenessTimeout > 0 {
			tctx, cancel = context.WithTimeout(ctx, s.opts.LivenessTimeout)
		}
		ops := make([]clientv3.Op, len(idx))
		for j, i := range idx {
			opts := []clientv3.OpOption{clientv3.WithRev(evs[i].Kv.ModRevision - 1)}
			if serializable {
				opts = append(opts, clientv3.WithSerializable())
			}
			ops[j] = clientv3.OpGet(string(evs[i].Kv.Key), opts...)
		}
		resp, err := kv.Txn(tctx).Then(ops...).Commit()
		timedOut := tctx.Err() != nil && ctx.Err() == nil
		cancel()
		switch ev := rpctypes.Error(err); {
		case err == nil:
			for j, i := range idx {
				if kvs := resp.Responses[j].GetResponseRange().GetKvs(); len(kvs) == 1 {
					evs[i].PrevKv = kvs[0]
				}
			}
			return nil
		case errors.Is(ev, rpctypes.ErrCompacted):
			return nil // unknown: deletions with the key only
		case serializable && errors.Is(ev, rpctypes.ErrFutureRev):
			continue
		case timedOut:
			return fmt.Errorf("%w: no answer within %v: %w", informer.ErrTransient, s.opts.LivenessTimeout, err)
		default:
			cerr := classify.Error(err)
			if cerr == err { // unknown: re-watching is the best bet, as for the watch's own errors
				cerr = fmt.Errorf("%w: %w", informer.ErrTransient, err)
			}
			return cerr
		}
	}
	return nil
}
