package etcd

import (
	"context"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// avoidFor is how long an endpoint that failed a watch or a read is passed
// over for new connections while another endpoint is not.
const avoidFor = 3 * time.Second

// endpointHealth picks the endpoint of each connection the source dials (a
// watch's, a list's) and remembers which endpoints failed lately, so that a
// connection goes to a member that has not just failed, at once, instead of
// a retry backing off on a dead one while healthy members wait. A failure
// also ends the list connections open on that endpoint: a list never waits
// on a connection a watch has already found dead. Safe for concurrent use.
type endpointHealth struct {
	seq atomic.Uint64 // turns over the endpoints

	// mu guards the fields below.
	mu      sync.Mutex
	failed  map[string]time.Time               // endpoint → its last failure
	readers map[string]map[*watchConn]struct{} // list connections open per endpoint
}

func newEndpointHealth(seed uint64) *endpointHealth {
	h := &endpointHealth{failed: map[string]time.Time{}, readers: map[string]map[*watchConn]struct{}{}}
	h.seq.Store(seed)
	return h
}

// pick returns the endpoint for a new connection: the next one in turn that
// has not failed within avoidFor, or, when all have, the one whose last
// failure is the oldest.
func (h *endpointHealth) pick(eps []string) string {
	n := uint64(len(eps))
	first := h.seq.Add(1)
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	best, bestAt := "", time.Time{}
	for i := range n {
		ep := eps[(first+i)%n]
		at, ok := h.failed[ep]
		if !ok || now.Sub(at) >= avoidFor {
			return ep
		}
		if best == "" || at.Before(bestAt) {
			best, bestAt = ep, at
		}
	}
	return best
}

// fail records a failure of ep (a connection lost, a watch or a read that
// got no answer) and ends the list connections open on it, each with cause.
func (h *endpointHealth) fail(ep string, cause error) {
	if ep == "" {
		return
	}
	h.mu.Lock()
	h.failed[ep] = time.Now()
	var open []*watchConn
	for c := range h.readers[ep] {
		open = append(open, c)
	}
	h.mu.Unlock()
	for _, c := range open {
		c.setLost(cause)
	}
}

// ok records that ep answered: it is no longer passed over.
func (h *endpointHealth) ok(ep string) {
	h.mu.Lock()
	delete(h.failed, ep)
	h.mu.Unlock()
}

// addReader registers a list connection, ended by a failure of its
// endpoint until removeReader.
func (h *endpointHealth) addReader(c *watchConn) {
	h.mu.Lock()
	m := h.readers[c.endpoint]
	if m == nil {
		m = map[*watchConn]struct{}{}
		h.readers[c.endpoint] = m
	}
	m[c] = struct{}{}
	h.mu.Unlock()
}

func (h *endpointHealth) removeReader(c *watchConn) {
	h.mu.Lock()
	delete(h.readers[c.endpoint], c)
	h.mu.Unlock()
}

// get runs one read of a list on a connection of its own to an endpoint
// that has not failed lately, closed after it: a relist after a network
// failure does not wait on the client's connections, which may still be
// dead (gRPC takes keepalive's time to notice), nor on an endpoint a watch
// has found dead. A read that fails for a reason another member may not
// share moves at once to a member that answers (see failover). A client without endpoints, or whose KV is not etcd's own, reads
// through its KV as it is.
//
// Possible errors: the client's, unclassified; one wrapping
// [informer.ErrTransient] when the connection was lost or did not become
// ready within the liveness timeout.
func (s *Source[T]) get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	cli := s.opts.Client
	eps := cli.Endpoints()
	if len(eps) == 0 || reflect.TypeOf(cli.KV) != etcdKV || cli.Ctx().Err() != nil {
		return cli.Get(ctx, key, opts...)
	}
	ep := s.health.pick(eps)
	for failed := 1; ; failed++ {
		c, err := s.dial(ep)
		if err != nil { // options grpc.NewClient refuses: the client's own
			return cli.Get(ctx, key, opts...)
		}
		resp, err := s.getOn(ctx, c, key, opts...)
		c.close()
		if err == nil {
			return resp, nil
		}
		var ok bool
		if ep, ok = s.failover(ctx, "list read", c.endpoint, classify(err), failed); !ok {
			return nil, err
		}
	}
}

// getOn runs a read on c, once c is ready (see awaitReady),
// ending it if c is lost or its endpoint fails another connection.
func (s *Source[T]) getOn(ctx context.Context, c *watchConn, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	s.health.addReader(c)
	defer s.health.removeReader(c)
	lctx, release := c.bind(ctx)
	defer release()
	if err := c.awaitReady(lctx, s.readyTimeout()); err != nil && ctx.Err() == nil {
		return nil, err
	}
	resp, err := c.kv(s.opts.Client).Get(lctx, key, opts...)
	if err != nil && lctx.Err() != nil && ctx.Err() == nil {
		return nil, c.lostErr()
	}
	return resp, err
}
