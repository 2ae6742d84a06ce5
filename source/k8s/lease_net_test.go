package k8s_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// What the sharded lease tests (sharded_lease_test.go) take from the lease
// membership's own test harness (lease/harness_test.go), which moved with
// it to package lease.

// testLeaseDuration is the members' lease duration in the tests: the shortest
// the API allows is 1 s, renewed every 333 ms, which a loaded machine
// under -race misses now and then.
const testLeaseDuration = 2 * time.Second

func leaseQuiet() logr.Logger { return logr.FromSlogHandler(slog.DiscardHandler) }

// leaseNet is a replica's network: its client dials through it, and Cut
// closes every connection and refuses new ones, as a partition would (the
// replica's process keeps running).
type leaseNet struct {
	mu    sync.Mutex
	conns []net.Conn
	cut   bool
}

var errLeaseCut = errors.New("test: network cut")

func (n *leaseNet) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cut {
		return nil, errLeaseCut
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err == nil {
		n.conns = append(n.conns, c)
	}
	return c, err
}

func (n *leaseNet) Cut() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut = true
	for _, c := range n.conns {
		_ = c.Close()
	}
	n.conns = nil
}
