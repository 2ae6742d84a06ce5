package etcd

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/metadata"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd/internal/classify"
)

// streamKey is the gRPC metadata key that gives each watch its own gRPC
// stream in etcd's client (which shares one stream between watches with
// equal metadata), so progress requests and stream failures of one watch do
// not reach the others.
const streamKey = "ginformer-watch"

// Watch opens a watch of the prefix: every change after opts.Version, in
// revision order, then live. See the package doc for bookmarks, connections
// and liveness, filters and bad values. The stream ends (its channel closed)
// when ctx is done, on Stop, after opts.Timeout, or after an Error event:
// wrapping [informer.ErrExpired] when the start revision is compacted,
// [informer.ErrVersionTooLarge] when the member has not reached it within
// LivenessInterval plus LivenessTimeout (a lagging member catches up before,
// an etcd restored from a backup never does),
// [informer.ErrTransient] when etcd has no leader or does not answer, or the
// watch's connection is lost.
//
// With opts.NotifyCaughtUp (and without SendInitialEvents, whose end marker
// already says it), the watch asks etcd for a progress notification as soon
// as it is open, and resends the request until answered: etcd answers only
// once the watch has sent every change up to its current revision, so the
// answer becomes the one Bookmark with InitialEventsEnd set, at that
// revision, after every change it covers. On a local etcd it comes within
// about 100–200 ms of Watch when little changed (etcd syncs a watch that
// starts in the past every 100 ms and drops progress requests until then).
// Later progress notifications are plain bookmarks. Without a Filter, the
// deletions the watch sends before that marker (and the puts of bad values,
// sent as deletions) carry the key only ([Object.ValueUnknown]): their
// previous values are not read (see the package doc, "Warm restarts").
//
// Possible errors (returned): [informer.ErrInvalidOptions] for a bad version;
// with SendInitialEvents, those of [Source.List].
func (s *Source[T]) Watch(ctx context.Context, opts informer.WatchOptions) (informer.Watcher[*Object[T]], error) {
	return s.watchKeys(ctx, opts, nil)
}

// watchKeys is Watch keeping only the keys keep accepts (nil: all): the
// events of other keys are dropped before anything is decoded or read for
// them, in the streaming list as in the watch.
func (s *Source[T]) watchKeys(ctx context.Context, opts informer.WatchOptions, keep keyFilter) (informer.Watcher[*Object[T]], error) {
	var rev int64
	if opts.Version != "" || !opts.SendInitialEvents {
		r, err := parseRev(opts.Version)
		if err != nil {
			return nil, err
		}
		rev = r
	}
	w := informer.NewWatchStream[*Object[T]](ctx, s.opts.WatchBuffer)
	ow, remove := s.addWatch(w.Done()) // open now, for RequestProgress
	go func() {
		defer remove()
		s.run(w, ow, rev, opts, keep)
	}()
	return w, nil
}

// run is the goroutine of one watch: the initial events of a streaming
// list, if asked, then the etcd watch from rev+1, each on a connection of
// its own (see watchconn.go). A watch that fails for a reason that another
// member may not share (its connection lost, no answer, no leader) moves at
// once, from the last revision it delivered, within the same stream, to the
// first member that answers a probe of all of them (see answering); the
// stream ends with the error only when none answers, or after as many
// failures in a row as there are endpoints without the watch delivering
// anything, so that the reflector backs off only when no member answers.
func (s *Source[T]) run(w *informer.WatchStream[*Object[T]], ow *openWatch, rev int64, opts informer.WatchOptions, keep keyFilter) {
	defer w.Close()
	ctx := w.Context()
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	defer ow.end()
	if opts.SendInitialEvents {
		var ok bool
		if rev, ok = s.sendInitial(ctx, w, rev, keep); !ok {
			return
		}
	}
	live := newLiveness(s.opts.LivenessInterval, s.opts.LivenessTimeout)
	defer live.stop()
	// catchUp: the caught-up marker is still to be sent (NotifyCaughtUp);
	// it survives a move to another member.
	catchUp := opts.NotifyCaughtUp && !opts.SendInitialEvents
	failed := 0 // watches failed in a row without a delivery
	next := ""  // the endpoint of the next watch; "": the next in turn
	// after is the revision whose successor is known to exist, compacted at
	// (see errCompactedAtNext): while rev is still it, the watch starts
	// after rev, not at it. -1: none.
	after := int64(-1)
	for {
		conn := s.dialWatch(next)
		from := rev
		err := s.watch(ctx, w, ow, conn, live, &rev, after == rev, &catchUp, keep)
		switch {
		case err == nil, w.Context().Err() != nil:
			return
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
			return // opts.Timeout: a normal end.
		case errors.Is(err, errCompactedAtNext) && rev == from:
			after, next = rev, conn.endpoint // nothing was lost: again, from rev+1
			continue
		}
		if rev != from {
			failed = 0
		}
		failed++
		var ok bool
		want := max(rev, 1) // the revision the next watch starts at
		if after == rev {
			want = rev + 1
		}
		if next, ok = s.failover(ctx, "watch", conn.endpoint, err, failed, want); ok {
			continue
		}
		w.Send(informer.Event[*Object[T]]{Type: informer.EventError, Err: err})
		return
	}
}

// errCompactedAtNext ends a watch that started at the revision it had
// delivered up to, rev, when etcd answered that rev is compacted and
// history starts at rev+1: every change after rev is still there, so the
// watch starts again from rev+1 (see watch) instead of ending with
// [informer.ErrExpired] and making the reflector relist for nothing.
var errCompactedAtNext = errors.New("compacted at the next revision")

// watch streams etcd's changes after *delivered into w, on conn, until ctx
// is done (nil) or the watch fails (the error to send). It keeps *delivered
// at the revision up to which it has delivered every change (events and
// bookmarks). The etcd watch starts at *delivered (see openEtcdWatch), or
// after it when next is set, which the caller knows is safe: the cluster has
// the next revision. While *catchUp is set, it asks for a progress
// notification at once and sends the first one as the caught-up marker (a
// Bookmark with InitialEventsEnd), then clears *catchUp. It closes conn.
//
// Possible errors: errCompactedAtNext (only when next is not set); those
// the package doc lists for the stream.
func (s *Source[T]) watch(ctx context.Context, w *informer.WatchStream[*Object[T]], ow *openWatch, conn *watchConn, live *liveness, delivered *int64, next bool, catchUp *bool, keep keyFilter) error {
	rev := *delivered
	start := max(rev, 1)
	if next {
		start = rev + 1
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends etcd's watch, closing its channel
	md := metadata.Pairs(streamKey, strconv.FormatUint(s.watchSeq.Add(1), 10))
	wctx := clientv3.WithRequireLeader(metadata.NewOutgoingContext(ctx, md))
	md, _ = metadata.FromOutgoingContext(wctx)
	defer conn.close() // before the caller sends the error: a re-watch dials anew
	defer ow.detach()

	wch, err := s.openEtcdWatch(wctx, conn, start)
	if err != nil {
		return err
	}
	// etcd may drop a progress request (see progressRetry): RequestProgress's
	// and liveness probes are resent until a progress notification answers.
	retry := newProgressRetry()
	defer retry.answered()
	// etcd answers a progress request only once the watch is synced (has
	// sent every change up to its current revision): the answer to this one
	// is the caught-up marker.
	if ow.confirmed(conn, md) || *catchUp { // RequestProgress was called meanwhile, or NotifyCaughtUp
		if *catchUp {
			retry.hurry() // a restored informer waits for the marker
		}
		s.requestProgress(wctx, conn, s.opts.LivenessTimeout)
		retry.sent()
	}
	l := watchLoop[T]{s: s, w: w, conn: conn, live: live, retry: retry,
		rev: rev, start: start, next: next, delivered: delivered, catchUp: catchUp, keep: keep}
	return l.receive(ctx, wctx, ow, wch)
}

// openEtcdWatch waits until conn is ready and opens etcd's watch of the
// prefix on it from revision start, with progress and created
// notifications (and previous values, if the source reads them so).
func (s *Source[T]) openEtcdWatch(wctx context.Context, conn *watchConn, start int64) (clientv3.WatchChan, error) {
	// The watch starts AT rev, not after it, and drops the events of rev
	// itself: etcd sends no progress notification (periodic or requested)
	// to a watch whose start revision is above the store's revision, so a
	// watch from rev+1 on a quiet cluster would never answer a liveness
	// probe nor give a bookmark. etcd must confirm it within the liveness
	// timeout, as it must answer a probe. When etcd has compacted rev
	// itself, but not rev+1, the caller starts the watch again after rev
	// (next): the cluster then has rev+1, so that watch does not start in
	// the future.
	wopts := []clientv3.OpOption{clientv3.WithRange(s.end), clientv3.WithRev(start),
		clientv3.WithProgressNotify(), clientv3.WithCreatedNotify()}
	if s.watchPrevKV() {
		wopts = append(wopts, clientv3.WithPrevKV()) // else see prev.go
	}
	if err := conn.awaitReady(wctx, s.readyTimeout()); err != nil {
		return nil, fmt.Errorf("etcd source: watch of %q: %w", s.opts.Prefix, err)
	}
	wch, err := conn.create(wctx, s.opts.LivenessTimeout, s.start, wopts...)
	if err != nil {
		return nil, fmt.Errorf("etcd source: watch of %q: %w", s.opts.Prefix, err)
	}
	s.health.ok(conn.endpoint)
	return wch, nil
}

// watchLoop is the state of one etcd watch while it receives: what watch
// was given, and what the responses so far have taught. Used by the watch's
// goroutine only.
type watchLoop[T any] struct {
	s     *Source[T]
	w     *informer.WatchStream[*Object[T]]
	conn  *watchConn
	live  *liveness
	retry *progressRetry
	keep  keyFilter
	// rev is *delivered when the watch opened, start the revision it
	// started at, next whether that is rev+1 (see watch).
	rev, start int64
	next       bool
	delivered  *int64
	catchUp    *bool
	// ahead is the member's revision when it confirmed a watch from a
	// revision it has not reached, 0 once it has.
	ahead int64
	outs  []converted[T] // reused between responses
}

// receive is watch's loop on etcd's watch channel wch: it takes the
// responses, resends the progress requests etcd has not answered, probes a
// silent watch and ends it when the probe is not answered in time. Its
// results are watch's.
func (l *watchLoop[T]) receive(ctx, wctx context.Context, ow *openWatch, wch clientv3.WatchChan) error {
	s, conn, live, retry := l.s, l.conn, l.live, l.retry
	live.rest()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-conn.lostc():
			return fmt.Errorf("etcd source: watch of %q: %w", s.opts.Prefix, conn.lostErr())
		case <-ow.requested:
			retry.sent()
		case <-retry.due():
			// A resend never holds the loop past a pending probe's deadline.
			s.requestProgress(wctx, conn, live.budget(s.opts.LivenessTimeout))
			retry.resent()
		case <-live.idle():
			live.probe(func() { s.requestProgress(wctx, conn, s.opts.LivenessTimeout) })
			retry.sent()
		case <-live.deadline():
			if l.ahead != 0 {
				return fmt.Errorf("etcd source: watch of %q from revision %d: the member stayed at %d: %w",
					s.opts.Prefix, l.rev, l.ahead, informer.ErrVersionTooLarge)
			}
			return fmt.Errorf("etcd source: watch of %q: no answer from etcd to a progress request within %v: %w",
				s.opts.Prefix, live.probeTimeout(), informer.ErrTransient)
		case resp, ok := <-wch:
			live.heard()
			if !ok {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return fmt.Errorf("etcd source: watch of %q closed by the client: %w", s.opts.Prefix, informer.ErrTransient)
			}
			if done, err := l.handle(ctx, &resp); done {
				return err
			}
		}
	}
}

// handle takes one response of etcd's watch. It returns done, with the
// watch's result, when the watch ends: on an error response, or when the
// consumer has gone (nil).
func (l *watchLoop[T]) handle(ctx context.Context, resp *clientv3.WatchResponse) (done bool, err error) {
	if rerr := resp.Err(); rerr != nil {
		return true, l.responseErr(ctx, resp, rerr)
	}
	if resp.Created {
		if resp.Header.Revision < l.start {
			// A lagging member catches up soon; a restored etcd
			// never does. etcd waits silently either way (no progress
			// notifications): see the deadline in receive.
			l.ahead = resp.Header.Revision
		}
		return false, nil
	}
	l.ahead = 0
	if resp.IsProgressNotify() {
		l.retry.answered()
		// A progress notification comes only to a synced watch: every
		// change up to its revision was in the responses before it.
		if !l.w.Send(informer.Event[*Object[T]]{Type: informer.EventBookmark, Version: formatRev(resp.Header.Revision),
			InitialEventsEnd: *l.catchUp}) {
			return true, nil
		}
		*l.catchUp = false
		*l.delivered = max(*l.delivered, resp.Header.Revision)
		return false, nil
	}
	return l.deliver(ctx, resp.Events)
}

// responseErr is the error that ends the watch on a response carrying err:
// a compaction of the start revision is errCompactedAtNext when only rev
// itself is gone (and the watch did not already start after it), else
// [informer.ErrExpired]; an error etcd's client does not classify is
// [informer.ErrTransient].
func (l *watchLoop[T]) responseErr(ctx context.Context, resp *clientv3.WatchResponse, err error) error {
	prefix := l.s.opts.Prefix
	if resp.CompactRevision != 0 {
		if !l.next && resp.CompactRevision == l.rev+1 {
			return errCompactedAtNext
		}
		return fmt.Errorf("etcd source: watch of %q from revision %d: compacted at %d: %w: %w",
			prefix, l.rev+1, resp.CompactRevision, informer.ErrExpired, err)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	cerr := classify.Error(err)
	if cerr == err { // unknown: the watch is gone, retrying is the best bet
		cerr = fmt.Errorf("%w: %w", informer.ErrTransient, err)
	}
	return fmt.Errorf("etcd source: watch of %q: %w", prefix, cerr)
}

// deliver sends the events of one response that come after rev and that
// keep accepts, converted, then records their revision in *delivered. It
// returns done, with the watch's result, when the watch ends: the
// conversion failed, or the consumer has gone (nil).
func (l *watchLoop[T]) deliver(ctx context.Context, evs []*clientv3.Event) (done bool, err error) {
	rev := l.rev
	for len(evs) > 0 && evs[0].Kv.ModRevision <= rev {
		evs = evs[1:] // already seen by the consumer (see openEtcdWatch)
	}
	last := rev // etcd never splits a revision's events between responses
	if n := len(evs); n > 0 {
		last = evs[n-1].Kv.ModRevision
	}
	evs = l.s.keepEvents(l.keep, evs)
	// Before the caught-up marker, deletions go out with the key
	// only: no previous value is read (see prev.go).
	if l.outs, err = l.s.convertAll(ctx, l.conn.kv(l.s.opts.Client), evs, l.outs, *l.catchUp); err != nil {
		return true, err
	}
	for i, o := range l.outs {
		if o.ok && !l.w.Send(o.ev) {
			return true, nil
		}
		l.outs[i] = converted[T]{} // let the collector have it
	}
	*l.delivered = max(*l.delivered, last)
	l.live.rest() // time spent blocked on the consumer is not silence
	return false, nil
}
