package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd/internal/classify"
)

// The initial events of a streaming list.
//
// They are read at one revision, fixed first by a single-key read (so that
// every event carries it), with etcd's RangeStream (etcd 3.7 and later): one
// request answered in chunks the server sizes, without counting the rest of
// the range. A limited Range request counts every key after the page, so a
// list paged with Range costs the square of the key count over the page
// size in etcd's index walk; RangeStream costs the key count. While the
// source decodes a chunk, gRPC keeps receiving the next ones.
//
// A server without RangeStream (older than 3.7, or the gRPC proxy) answers
// Unimplemented before the first chunk; the source then reads pages with
// Range (PageSize keys, or pages grown to about pageBytes), fetching page
// n+1 while it decodes page n, and keeps using pages from then on.

// pageBytes is the size the paged fallback aims its pages at.
const pageBytes = 2 << 20

// firstPage is the first page of the paged fallback when PageSize is zero.
const firstPage = 1000

// sendInitial sends the state not older than min (0: the latest) as Added
// events, then the end marker, reading it on a connection of its own: a
// relist after a network failure runs on a fresh connection, as the watch
// after it, not on the client's, which may still be dead (see watchconn.go).
// Until the first event is sent, a failure that another member may not
// share moves the read to another endpoint at once (see run). It returns
// the revision of the state, or false if the stream ended.
func (s *Source[T]) sendInitial(ctx context.Context, w *informer.WatchStream[*Object[T]], min int64, keep keyFilter) (int64, bool) {
	conn, rev, err := s.initialConn(ctx, min)
	if err == nil {
		defer conn.close()
		lctx, release := conn.bind(ctx) // ends the reads if the connection is lost
		defer release()
		version := formatRev(rev)
		var objs []*Object[T]
		stopped := false
		err = s.readRange(lctx, conn.kv(s.opts.Client), rev, func(kvs []*mvccpb.KeyValue) bool {
			objs = s.decodeChunk(ctx, kvs, objs[:0], keep)
			for _, obj := range objs {
				if !w.Send(informer.Event[*Object[T]]{Type: informer.EventAdded, Object: obj, Version: version}) {
					stopped = true
					return false
				}
			}
			clear(objs)
			return true
		})
		if stopped {
			return 0, false
		}
		if err != nil && ctx.Err() == nil && lctx.Err() != nil {
			err = fmt.Errorf("etcd source: list of %q: %w", s.opts.Prefix, conn.lostErr())
		}
		if errors.Is(err, informer.ErrTransient) {
			s.health.fail(conn.endpoint, err)
		}
	}
	if err != nil {
		if ctx.Err() == nil {
			w.Send(informer.Event[*Object[T]]{Type: informer.EventError, Err: err})
		}
		return 0, false
	}
	if !w.Send(informer.Event[*Object[T]]{Type: informer.EventBookmark, Version: formatRev(rev), InitialEventsEnd: true}) {
		return 0, false
	}
	return rev, true
}

// initialConn dials the connection of a streaming list and reads the
// revision of its state on it (see initialRevision). While the read fails
// for a reason another member may not share, it moves at once to the first
// member that answers a probe (see failover), as a watch does.
//
// Possible errors: those of initialRevision (the last attempt's).
func (s *Source[T]) initialConn(ctx context.Context, min int64) (*watchConn, int64, error) {
	next := ""
	for failed := 1; ; failed++ {
		conn := s.dialWatch(next)
		lctx, release := conn.bind(ctx)
		err := conn.awaitReady(lctx, s.readyTimeout())
		var rev int64
		if err == nil {
			rev, err = s.initialRevision(lctx, conn.kv(s.opts.Client), min)
		}
		if err != nil && ctx.Err() == nil && lctx.Err() != nil {
			err = fmt.Errorf("etcd source: list of %q: %w", s.opts.Prefix, conn.lostErr())
		}
		release()
		if err == nil {
			return conn, rev, nil
		}
		conn.close()
		var ok bool
		if next, ok = s.failover(ctx, "streaming list", conn.endpoint, err, failed, 0); !ok {
			return nil, 0, err
		}
	}
}

// initialRevision picks the revision of a streaming list, reading through
// kv: the current one (min 0: a linearizable read), or one not older than
// min (a serializable read, then a linearizable one if the member was
// behind).
//
// Possible errors: those of [Source.List]; [informer.ErrTransient] when etcd
// does not answer within the liveness timeout.
func (s *Source[T]) initialRevision(ctx context.Context, kv clientv3.KV, min int64) (int64, error) {
	if min > 0 {
		rev, err := s.currentRevision(ctx, kv, clientv3.WithSerializable())
		if err != nil || rev >= min {
			return rev, err
		}
	}
	rev, err := s.currentRevision(ctx, kv)
	if err == nil && rev < min {
		return 0, fmt.Errorf("etcd source: revision %d not reached (at %d): %w", min, rev, informer.ErrVersionTooLarge)
	}
	return rev, err
}

// currentRevision reads the store's revision with a single-key read (an
// index lookup, whatever the size of the prefix), which etcd must answer
// within the liveness timeout, as it must confirm a watch: a connection that
// went silent fails the list at once rather than holding it.
func (s *Source[T]) currentRevision(ctx context.Context, kv clientv3.KV, extra ...clientv3.OpOption) (int64, error) {
	rctx, cancel := ctx, context.CancelFunc(func() {})
	if s.opts.LivenessTimeout > 0 {
		rctx, cancel = context.WithTimeout(ctx, s.opts.LivenessTimeout)
	}
	defer cancel()
	resp, err := kv.Get(rctx, s.start, append(extra, clientv3.WithKeysOnly())...)
	if err != nil {
		if rctx.Err() != nil && ctx.Err() == nil {
			return 0, fmt.Errorf("etcd source: read the revision for a list of %q: no answer within %v: %w: %w",
				s.opts.Prefix, s.opts.LivenessTimeout, informer.ErrTransient, err)
		}
		return 0, fmt.Errorf("etcd source: read the revision for a list of %q: %w", s.opts.Prefix, classify.Error(err))
	}
	return resp.Header.Revision, nil
}

// readRange reads every key of the prefix at revision rev through kv and
// passes them to yield in key order, chunk by chunk, until yield returns
// false. yield may keep nothing of the slice it is given but the key-values
// themselves.
//
// Possible errors: those of [Source.List].
func (s *Source[T]) readRange(ctx context.Context, kv clientv3.KV, rev int64, yield func([]*mvccpb.KeyValue) bool) error {
	if !s.noRangeStream.Load() {
		err, unsupported := s.readStream(ctx, kv, rev, yield)
		if !unsupported {
			return err
		}
		s.noRangeStream.Store(true)
		s.log.V(1).Info("etcd has no RangeStream (older than 3.7, or a proxy): streaming lists read pages")
	}
	return s.readPages(ctx, kv, rev, yield)
}

// readStream reads the range with one RangeStream request. unsupported is
// true when the server does not know the method (nothing was yielded).
func (s *Source[T]) readStream(ctx context.Context, kv clientv3.KV, rev int64, yield func([]*mvccpb.KeyValue) bool) (err error, unsupported bool) {
	ctx, cancel := context.WithCancel(ctx)
	ch, err := kv.GetStream(ctx, s.start, clientv3.WithRange(s.end), clientv3.WithRev(rev))
	if err != nil {
		cancel()
		if status.Code(err) == codes.Unimplemented {
			return nil, true
		}
		return s.listError(rev, err), false
	}
	defer func() {
		cancel()
		for range ch { // the client's goroutine sends until it sees the cancel
		}
	}()
	first := true
	for resp := range ch {
		if err := resp.Err(); err != nil {
			if first && status.Code(err) == codes.Unimplemented {
				return nil, true
			}
			return s.listError(rev, err), false
		}
		first = false
		if len(resp.Kvs) > 0 && !yield(resp.Kvs) {
			return nil, false
		}
	}
	return nil, false
}

// readPages reads the range with limited Range requests at rev, one page
// ahead of yield.
func (s *Source[T]) readPages(ctx context.Context, kv clientv3.KV, rev int64, yield func([]*mvccpb.KeyValue) bool) error {
	type page struct {
		kvs []*mvccpb.KeyValue
		err error
	}
	ctx, cancel := context.WithCancel(ctx)
	pages := make(chan page, 1) // the fetcher's page n+1 waits here while page n is decoded
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	wg.Go(func() {
		defer close(pages)
		from, limit := s.start, int64(firstPage)
		if s.opts.PageSize > 0 {
			limit = int64(s.opts.PageSize)
		}
		for {
			resp, err := kv.Get(ctx, from, clientv3.WithRange(s.end), clientv3.WithLimit(limit), clientv3.WithRev(rev))
			p := page{err: err}
			if err != nil {
				p.err = s.listError(rev, err)
			} else {
				p.kvs = resp.Kvs
			}
			select {
			case pages <- p:
			case <-ctx.Done():
				return
			}
			if err != nil || !resp.More || len(resp.Kvs) == 0 {
				return
			}
			from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
			if s.opts.PageSize == 0 {
				limit = nextLimit(limit, resp.Kvs)
			}
		}
	})
	for p := range pages {
		if p.err != nil {
			return p.err
		}
		if !yield(p.kvs) {
			return nil
		}
	}
	return nil
}

// nextLimit sizes the next page so that it holds about pageBytes, judging by
// the last one.
func nextLimit(limit int64, kvs []*mvccpb.KeyValue) int64 {
	size := 0
	for _, kv := range kvs {
		size += len(kv.Key) + len(kv.Value) + 32 // and the revisions
	}
	if size == 0 {
		return limit
	}
	return max(1, min(int64(len(kvs))*pageBytes/int64(size), 4*limit))
}

func (s *Source[T]) listError(rev int64, err error) error {
	return fmt.Errorf("etcd source: list %q at revision %d: %w", s.opts.Prefix, rev, classify.Error(err))
}

// decodeChunk appends the visible objects of kvs to out, in key order,
// decoding those keep accepts in parallel.
func (s *Source[T]) decodeChunk(ctx context.Context, kvs []*mvccpb.KeyValue, out []*Object[T], keep keyFilter) []*Object[T] {
	start := len(out)
	out = append(out, make([]*Object[T], len(kvs))...)
	slots := out[start:]
	inParts(len(kvs), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if s.keeps(keep, kvs[i]) {
				slots[i], _ = s.decode(ctx, kvs[i], true)
			}
		}
	})
	// Drop the invisible ones (nil), keeping the order.
	j := start
	for _, o := range slots {
		if o != nil {
			out[j] = o
			j++
		}
	}
	clear(out[j:])
	return out[:j]
}
