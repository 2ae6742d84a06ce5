package natskv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ginformer/ginformer/informer"
)

// errConnLost is the cause of a list or a watch ended because the client's
// connection to the server was lost; classify wraps it with
// [informer.ErrTransient].
var errConnLost = errors.New("connection to the NATS server lost")

// bindConn returns a context that is ctx until the client's connection is
// lost (it disconnects or starts reconnecting: the server restarted or the
// network failed; or it closes or drains), then done with an error wrapping
// errConnLost as its cause; and the function that releases it, which waits
// for the goroutine it started. A list or a watch runs under it, so that a
// disconnect ends it with [informer.ErrTransient] instead of going on
// unseen: the client's ordered consumer would resume on its own after a
// reconnect, but the informer would not know there had been an outage, and
// the watch would not check again that the stream still holds the
// revisions after the last one delivered (a server that lost its store, a
// stream purged meanwhile). The reflector counts the error, backs off
// (see [Source.WaitReachable]) and watches again from the last revision,
// or relists when that revision is gone. A JetStream without a connection
// (Conn returns nil) is not watched.
func (s *Source[T]) bindConn(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	nc := s.opts.JetStream.Conn()
	if nc == nil {
		return ctx, func() { cancel(nil) }
	}
	ch := nc.StatusChanged(nats.DISCONNECTED, nats.RECONNECTING, nats.CLOSED, nats.DRAINING_SUBS, nats.DRAINING_PUBS)
	lost := func(st nats.Status) {
		cancel(fmt.Errorf("%w (%s)", errConnLost, strings.ToLower(st.String())))
	}
	if st := nc.Status(); st != nats.CONNECTED { // lost before the listener was in place
		lost(st)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer nc.RemoveStatusListener(ch)
		select {
		case st, ok := <-ch:
			if !ok {
				st = nats.CLOSED
			}
			lost(st)
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(nil); <-done }
}

// connLost returns the cause of ctx's end if it is a lost connection
// (see bindConn), nil otherwise.
func connLost(ctx context.Context) error {
	if cause := context.Cause(ctx); ctx.Err() != nil && errors.Is(cause, errConnLost) {
		return cause
	}
	return nil
}

var _ informer.ReachabilityWaiter = (*Source[int])(nil)

const (
	probeEvery   = 250 * time.Millisecond // between probes of the server
	probeTimeout = time.Second            // for one probe's answer
)

// WaitReachable blocks until the server answers a request for the bucket's
// stream (the client has reconnected and JetStream serves the stream), or
// ctx is done (then it returns ctx's error). It probes every 250 ms, each
// probe given a second. A reflector calls it while it backs off after an
// outage, so that its watch is back as soon as the server is, whatever its
// backoff had grown to (see [informer.ReachabilityWaiter]).
func (s *Source[T]) WaitReachable(ctx context.Context) error {
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	for {
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		_, err := s.bounds(pctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
