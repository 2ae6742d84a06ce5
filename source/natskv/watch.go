package natskv

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ginformer/ginformer/informer"
)

// Watch streams the changes of the bucket after opts.Version, in revision
// order, from an ordered consumer of the bucket's stream starting at the
// next revision; with SendInitialEvents, it first sends the state of a
// snapshot (see [Source.List]) as Added events and a Bookmark with
// InitialEventsEnd. See the package doc (Watches) for how messages become
// events, and for when a watch ends with ErrExpired.
//
// With opts.NotifyCaughtUp (and without SendInitialEvents), once the watch
// has delivered the message at the stream's last revision when Watch was
// called, it sends a Bookmark with InitialEventsEnd at that revision, then
// goes on; at once when nothing was written after opts.Version. If the
// messages up to that revision are removed before the watch delivers them
// (a purge of deleted keys, max age, a message deleted from the stream)
// and nothing follows them, the watch cannot tell what they changed: it
// ends with ErrExpired (at once when they were gone before the watch
// started, else after 2 s without a message). A streaming list ignores
// NotifyCaughtUp: its InitialEventsEnd bookmark marks the same moment.
//
// A watch ends with an Error event wrapping [informer.ErrTransient] as soon
// as the client's connection is lost (the server restarts, the network
// fails: see the package doc, Errors), rather than let the client's
// consumer resume unseen: the reflector counts the outage and watches
// again from the last revision delivered, or relists if the stream no
// longer holds the revisions after it.
//
// Possible errors: [informer.ErrInvalidOptions] (a bad or missing
// version); [informer.ErrVersionTooLarge] (a version newer than the
// stream's last revision); [informer.ErrExpired] (a version older than the
// revision before the stream's first); the client's, classified (a lost
// connection: ErrTransient); ctx.Err().
func (s *Source[T]) Watch(ctx context.Context, opts informer.WatchOptions) (informer.Watcher[*Object[T]], error) {
	w := &watcher[T]{s: s, known: make(map[string]keyState[T])}
	var wctx context.Context
	if opts.Timeout > 0 {
		wctx, w.cancel = context.WithTimeout(ctx, opts.Timeout)
	} else {
		wctx, w.cancel = context.WithCancel(ctx)
	}
	// Every request to the server runs under lctx, which a lost connection
	// ends: the watch then ends with ErrTransient (see bindConn).
	lctx, release := s.bindConn(wctx)
	cons, it, start, err := w.open(lctx, opts)
	if err != nil {
		release()
		w.cancel()
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	w.ch = make(chan informer.Event[*Object[T]], s.opts.WatchBuffer)
	w.wg.Go(func() {
		defer s.deleteConsumer(cons) // after the channel is closed: it may wait
		defer w.cancel()
		defer release()
		defer close(w.ch)
		defer it.Stop()
		w.run(wctx, lctx, cons, it, start)
	})
	return w, nil
}

// open reads what the watch starts from (a streaming list's snapshot, or
// the stream's bounds) and opens its ordered consumer after the start
// revision, which it returns.
func (w *watcher[T]) open(ctx context.Context, opts informer.WatchOptions) (jetstream.Consumer, jetstream.MessagesContext, uint64, error) {
	s := w.s
	var start uint64
	if opts.SendInitialEvents {
		var want uint64
		if opts.Version != "" {
			v, err := parseRev(opts.Version)
			if err != nil {
				return nil, nil, 0, err
			}
			want = v
		}
		snap, err := s.snapshot(ctx, want, false)
		if err != nil {
			return nil, nil, 0, err
		}
		start, w.initial, w.complete = snap.version, snap.items, true
		for _, o := range snap.items {
			w.known[o.Key] = keyState[T]{present: true, obj: o}
		}
		for _, key := range snap.bad {
			w.known[key] = keyState[T]{present: true}
		}
	} else {
		if opts.Version == "" {
			return nil, nil, 0, fmt.Errorf("natskv source: watch without a version: %w", informer.ErrInvalidOptions)
		}
		v, err := parseRev(opts.Version)
		if err != nil {
			return nil, nil, 0, err
		}
		b, err := s.bounds(ctx)
		if err != nil {
			return nil, nil, 0, err
		}
		if err := b.check(v); err != nil {
			return nil, nil, 0, err
		}
		start, w.noLookup = v, !b.direct
		if opts.NotifyCaughtUp {
			w.caughtUp, w.target = true, b.last
		}
	}
	cons, err := s.opts.JetStream.OrderedConsumer(ctx, s.stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{s.prefix + ">"},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    start + 1,
	})
	if err != nil {
		return nil, nil, 0, classify(ctx, "watch: create consumer", err)
	}
	if info := cons.CachedInfo(); w.caughtUp && start < w.target && info != nil && info.NumPending == 0 {
		s.deleteConsumer(cons)
		return nil, nil, 0, fmt.Errorf("natskv source: revisions %d to %d were removed from the stream before the watch started: %w", start+1, w.target, informer.ErrExpired)
	}
	it, err := cons.Messages()
	if err != nil {
		s.deleteConsumer(cons)
		return nil, nil, 0, classify(ctx, "watch: consume", err)
	}
	return cons, it, start, nil
}

// watcher is one open watch.
type watcher[T any] struct {
	s      *Source[T]
	ch     chan informer.Event[*Object[T]]
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// Owned by the watch's goroutine.
	initial  []*Object[T]           // the initial events of a streaming list
	known    map[string]keyState[T] // the state of each key the watch has seen
	complete bool                   // known holds every key present (a streaming list's)
	noLookup bool                   // the stream allows no direct gets: previous values are unknown
	caughtUp bool                   // the NotifyCaughtUp marker is due, once target is delivered
	target   uint64                 // the stream's last revision when Watch was called
}

// Events returns the stream; it is closed when the watch ends.
func (w *watcher[T]) Events() <-chan informer.Event[*Object[T]] { return w.ch }

// Stop ends the watch; idempotent, safe for concurrent use.
func (w *watcher[T]) Stop() { w.cancel() }

// send delivers ev unless the watch ends first.
func (w *watcher[T]) send(ctx context.Context, ev informer.Event[*Object[T]]) bool {
	select {
	case w.ch <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

// fail sends an Error event (unless the watch was stopped).
func (w *watcher[T]) fail(ctx context.Context, err error) {
	if ctx.Err() == nil {
		w.send(ctx, informer.Event[*Object[T]]{Type: informer.EventError, Err: err})
	}
}

// run delivers the initial events, if any, then the messages after start
// (and the caught-up marker, when asked for). ctx is the stream's; lctx,
// under which it reads the server, is also ended by a lost connection (see
// bindConn), which ends the watch with an Error event wrapping
// ErrTransient.
func (w *watcher[T]) run(ctx, lctx context.Context, cons jetstream.Consumer, it jetstream.MessagesContext, start uint64) {
	for _, o := range w.initial {
		if !w.send(ctx, informer.Event[*Object[T]]{Type: informer.EventAdded, Object: o, Version: formatRev(o.Revision)}) {
			return
		}
	}
	if w.complete { // a streaming list
		w.initial = nil
		if !w.send(ctx, informer.Event[*Object[T]]{Type: informer.EventBookmark, Version: formatRev(start), InitialEventsEnd: true}) {
			return
		}
	}
	next := start + 1
	if !w.markCaughtUp(ctx, start) {
		return
	}
	for {
		var m jetstream.Msg
		err := connLost(lctx)
		if err == nil {
			m, err = w.next(lctx, cons, it)
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if lost := connLost(lctx); lost != nil {
				w.fail(ctx, fmt.Errorf("natskv source: watch after revision %d: %w: %w", next-1, informer.ErrTransient, lost))
				return
			}
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return
			}
			w.fail(ctx, err)
			return
		}
		e, err := w.s.entryOf(m)
		if err != nil {
			w.fail(ctx, err)
			return
		}
		switch {
		case e.seq < next: // delivered already (not expected of an ordered consumer)
			continue
		case e.seq > next:
			w.fail(ctx, fmt.Errorf("natskv source: revisions %d to %d were removed from the stream before the watch delivered them: %w", next, e.seq-1, informer.ErrExpired))
			return
		}
		next = e.seq + 1
		ev, err := w.convert(ctx, e)
		if err != nil {
			w.fail(ctx, err)
			return
		}
		if !w.send(ctx, ev) || !w.markCaughtUp(ctx, e.seq) {
			return
		}
	}
}

// markCaughtUp sends the NotifyCaughtUp marker at revision rev, the last
// delivered, if it is due and rev has reached the target. It returns false
// when the watch ends first.
func (w *watcher[T]) markCaughtUp(ctx context.Context, rev uint64) bool {
	if !w.caughtUp || rev < w.target {
		return true
	}
	w.caughtUp = false
	return w.send(ctx, informer.Event[*Object[T]]{Type: informer.EventBookmark, Version: formatRev(rev), InitialEventsEnd: true})
}

// next returns the next message of the consumer. While the caught-up
// marker is due, it asks the server, after listIdle without a message,
// whether the consumer still has messages pending: if not, the revisions up
// to the target were removed before delivery, and the watch cannot tell
// what they changed: ErrExpired. (Messages the client holds are delivered
// long before listIdle passes.)
//
// Possible errors: the client's, classified; ErrExpired.
func (w *watcher[T]) next(ctx context.Context, cons jetstream.Consumer, it jetstream.MessagesContext) (jetstream.Msg, error) {
	if !w.caughtUp {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return nil, classify(ctx, "watch", err)
		}
		return m, nil
	}
	for {
		nctx, cancel := context.WithTimeout(ctx, listIdle)
		m, err := it.Next(jetstream.NextContext(nctx))
		cancel()
		switch {
		case err == nil:
			return m, nil
		case ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded):
			return nil, classify(ctx, "watch", err)
		}
		info, err := cons.Info(ctx)
		if err != nil {
			return nil, classify(ctx, "watch: consumer info", err)
		}
		if info.NumPending == 0 {
			return nil, fmt.Errorf("natskv source: the revisions up to %d were removed from the stream before the watch delivered them: %w", w.target, informer.ErrExpired)
		}
	}
}
