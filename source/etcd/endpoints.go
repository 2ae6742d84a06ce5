package etcd

import (
	"sync"
	"sync/atomic"
	"time"
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
