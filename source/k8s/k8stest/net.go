package k8stest

import (
	"context"
	"errors"
	"net"
	"sync"

	"k8s.io/client-go/rest"
)

// ErrCut is the error of a dial through a [Net] that has been cut.
var ErrCut = errors.New("k8stest: network cut")

// Net is one replica's network in a test: the clients of [Net.Config] dial
// through it, and [Net.Cut] closes every connection they hold and refuses
// new ones, as a partition would while the replica's process keeps running.
// The zero value is a network that is up. A Net is safe for concurrent use.
type Net struct {
	mu    sync.Mutex // guards conns and cut
	conns []net.Conn
	cut   bool
}

// DialContext dials addr, remembering the connection for [Net.Cut].
//
// Possible errors: [ErrCut], and those of [net.Dialer.DialContext].
func (n *Net) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cut {
		return nil, ErrCut
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err == nil {
		n.conns = append(n.conns, c)
	}
	return c, err
}

// Cut closes every connection dialled through n and makes later dials fail
// with [ErrCut]. It is idempotent; a Net once cut stays cut.
func (n *Net) Cut() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut = true
	for _, c := range n.conns {
		_ = c.Close()
	}
	n.conns = nil
}

// Config returns a copy of cfg whose clients dial through n. The custom
// dialer also keeps client-go from sharing a cached transport with clients
// of other configurations, so the connections are n's alone.
func (n *Net) Config(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Dial = n.DialContext
	return c
}
