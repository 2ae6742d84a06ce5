package etcd

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"

	"github.com/ginformer/ginformer/informer"
)

// etcdWatcher is the type of the Watcher of a client made by clientv3.New:
// only such a client's watches may move to a connection of their own (a
// replaced Watcher, such as namespace.NewWatcher's, is used as it is).
var etcdWatcher = reflect.TypeOf(clientv3.NewWatchFromWatchClient(nil, nil))

// etcdKV is the type of the KV of a client made by clientv3.New: reads move
// to the watch's connection only from such a KV (a replaced one, such as
// namespace.NewKV's, is used as it is).
var etcdKV = reflect.TypeOf(clientv3.NewKVFromKVClient(nil, nil))

// watchConn is what one watch runs on: its streaming list, its etcd watch
// and the reads of previous values (prev.go). Normally it is a gRPC
// connection of its own to one endpoint of the client, dialled with the
// client's settings ([clientv3.Client.Dial]: TLS, credentials, keepalive,
// dial options) and closed when the watch ends: a re-watch or a relist after
// a silent connection then starts on a fresh TCP connection instead of
// waiting for gRPC to notice that the old ones are dead (keepalive, 10 s at
// least, one connection at a time). When the client has no endpoints or its
// Watcher is not etcd's own, the watch uses the client's Watcher, shared, as
// it is (and the client's KV).
type watchConn struct {
	clientv3.Watcher
	endpoint string           // the connection's endpoint; "" when shared
	conn     *grpc.ClientConn // nil when shared
	kvc      clientv3.KV      // a KV on conn, made on first use by the watch's goroutine

	// lost is done, with the reason as its cause, once the connection is
	// lost (closed, failed, or the client closed); nil when shared.
	lost       context.Context
	setLost    context.CancelCauseFunc
	stopClient func() bool        // stops watching the client's context
	release    context.CancelFunc // ends the watch's context (see create)
	wg         sync.WaitGroup     // the monitor
	closed     bool               // by close (called by the watch's goroutine only)
}

// errClientClosed is the cause of a connection lost to the client's Close.
var errClientClosed = errors.New("the client was closed")

// dialWatch returns the connection for a new watch: its own, on ep or
// ("") an endpoint that has not failed lately (see endpointHealth), or the
// client's shared one (see watchConn).
func (s *Source[T]) dialWatch(ep string) *watchConn {
	cli := s.opts.Client
	eps := cli.Endpoints()
	if len(eps) == 0 || reflect.TypeOf(cli.Watcher) != etcdWatcher || cli.Ctx().Err() != nil {
		return &watchConn{Watcher: cli.Watcher}
	}
	if ep == "" {
		ep = s.health.pick(eps)
	}
	c, err := s.dial(ep)
	if err != nil { // grpc.NewClient refused the options: it does not connect
		s.log.V(1).Info("cannot dial a connection for the watch; using the client's", "err", err)
		return &watchConn{Watcher: cli.Watcher}
	}
	return c
}

// dial returns a connection of its own to ep, with its monitor running.
//
// Possible errors: those of [clientv3.Client.Dial] (options it refuses).
func (s *Source[T]) dial(ep string) (*watchConn, error) {
	cli := s.opts.Client
	conn, err := cli.Dial(ep)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", ep, err)
	}
	c := &watchConn{
		Watcher:  clientv3.NewWatchFromWatchClient(pb.NewWatchClient(conn), cli),
		endpoint: ep,
		conn:     conn,
	}
	c.lost, c.setLost = context.WithCancelCause(context.Background())
	// Closing the client ends the watch, as it ends a watch on the client's
	// own connections.
	c.stopClient = context.AfterFunc(cli.Ctx(), func() { c.setLost(errClientClosed) })
	c.wg.Go(c.monitor)
	return c, nil
}

// kv returns a KV on the watch's connection, or cli's when the watch uses
// the client's shared connections or cli's KV is not etcd's own.
func (c *watchConn) kv(cli *clientv3.Client) clientv3.KV {
	if c.conn == nil || reflect.TypeOf(cli.KV) != etcdKV {
		return cli.KV
	}
	if c.kvc == nil {
		c.kvc = clientv3.NewKVFromKVClient(pb.NewKVClient(c.conn), cli)
	}
	return c.kvc
}

// monitor marks the connection lost when it leaves the ready state after
// reaching it (the member closed it or went away), fails to connect, or the
// client is closed. etcd's watcher would wait for the one endpoint to come
// back; the reflector re-watches on the next one instead.
func (c *watchConn) monitor() {
	ready := false
	for {
		st := c.conn.GetState()
		switch {
		case st == connectivity.Ready:
			ready = true
		case ready:
			c.setLost(fmt.Errorf("connection to %s lost (%s)", c.endpoint, strings.ToLower(st.String())))
			return
		case st == connectivity.TransientFailure || st == connectivity.Shutdown:
			c.setLost(fmt.Errorf("connection to %s failed (%s)", c.endpoint, strings.ToLower(st.String())))
			return
		}
		if !c.conn.WaitForStateChange(c.lost, st) {
			return // lost, or closing
		}
	}
}

// lostc is closed once the connection is lost; nil (never) when shared.
func (c *watchConn) lostc() <-chan struct{} {
	if c.lost == nil {
		return nil
	}
	return c.lost.Done()
}

// bind returns a context done when ctx is or when the connection is lost,
// and the function that releases it.
func (c *watchConn) bind(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if c.lost == nil {
		return ctx, cancel
	}
	stop := context.AfterFunc(c.lost, cancel)
	return ctx, func() { stop(); cancel() }
}

// lostErr describes why the connection was lost.
func (c *watchConn) lostErr() error {
	return fmt.Errorf("%w: %w", context.Cause(c.lost), informer.ErrTransient)
}

// errNotConfirmed is the cause of a watch creation cut by its deadline.
var errNotConfirmed = errors.New("watch not confirmed")

// create opens an etcd watch on c (clientv3.Watcher.Watch blocks until etcd
// confirms it). It gives up when etcd has not confirmed it within timeout
// (negative: no limit), when the connection is lost first, or when ctx is
// done: a watch that cannot be created on a dead connection fails like an
// open one that goes silent. The watch's context is ctx until close.
//
// Possible errors (all but ctx's wrap [informer.ErrTransient]): the watch was
// not confirmed in time; the connection was lost; ctx.Err().
func (c *watchConn) create(ctx context.Context, timeout time.Duration, key string, opts ...clientv3.OpOption) (clientv3.WatchChan, error) {
	wctx, cancel := context.WithCancelCause(ctx)
	c.release = func() { cancel(nil) }
	stopTimer, stopLost := func() bool { return true }, func() bool { return true }
	if timeout >= 0 {
		stopTimer = time.AfterFunc(timeout, func() { cancel(errNotConfirmed) }).Stop
	}
	if c.lost != nil {
		stopLost = context.AfterFunc(c.lost, func() { cancel(context.Cause(c.lost)) })
	}
	wch := c.Watch(wctx, key, opts...)
	// Whether either fired, known once both are stopped: a watch confirmed
	// as the deadline passed fails all the same, rather than being cut later.
	timedOut, lost := !stopTimer(), !stopLost()
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case timedOut:
		cancel(errNotConfirmed)
		return nil, fmt.Errorf("%w by %s within %v: %w", errNotConfirmed, c.describe(), timeout, informer.ErrTransient)
	case lost:
		cancel(context.Cause(c.lost))
		return nil, c.lostErr()
	}
	return wch, nil
}

// requestProgress asks the watch on conn (ctx carries its stream's
// metadata) for a progress notification, waiting at most wait when it is
// positive: a lost request shows as a missed liveness deadline.
func (s *Source[T]) requestProgress(ctx context.Context, conn *watchConn, wait time.Duration) {
	if wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	_ = conn.RequestProgress(ctx)
}

// describe names the connection in errors.
func (c *watchConn) describe() string {
	if c.conn == nil {
		return "etcd"
	}
	return c.endpoint
}

// close ends the watch, closes the connection if it is the watch's own and
// waits for the monitor. It is idempotent.
func (c *watchConn) close() {
	if c.closed {
		return
	}
	c.closed = true
	if c.release != nil {
		c.release()
	}
	if c.conn == nil {
		return
	}
	_ = c.Watcher.Close()
	c.stopClient()
	c.setLost(nil)
	c.wg.Wait()
	_ = c.conn.Close()
}

// errNotReady is the cause of a connection that did not become ready (its
// handshake done) in time.
var errNotReady = errors.New("connection not ready")

// readyTimeout is how long a new connection may take to become ready: the
// liveness timeout, at most 1 s (a handshake takes a round trip or two; a
// silent network never completes one). Negative: no limit.
func (s *Source[T]) readyTimeout() time.Duration {
	if s.opts.LivenessTimeout < 0 {
		return -1
	}
	return min(s.opts.LivenessTimeout, time.Second)
}

// awaitReady waits until c is ready, for at most timeout (negative: no
// wait), so that a watch or a read on a silent network fails in a second
// rather than after the liveness timeout; a shared connection is not
// waited for.
//
// Possible errors (wrapping [informer.ErrTransient]): not ready in time;
// the connection was lost; ctx.Err().
func (c *watchConn) awaitReady(ctx context.Context, timeout time.Duration) error {
	if c.conn == nil || timeout < 0 {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c.conn.Connect()
	for st := c.conn.GetState(); st != connectivity.Ready; st = c.conn.GetState() {
		if !c.conn.WaitForStateChange(rctx, st) {
			switch {
			case c.lost.Err() != nil: // before ctx: a bound ctx ends with it
				return c.lostErr()
			case ctx.Err() != nil:
				return ctx.Err()
			}
			return fmt.Errorf("%w: %s within %v: %w", errNotReady, c.endpoint, timeout, informer.ErrTransient)
		}
	}
	return nil
}
