// Package etcdtest runs etcd for tests, benchmarks and demos of the etcd
// source: an embedded single member started in-process on loopback with
// free ports and fast ticks ([Start]), a TCP proxy that can blackhole its
// flows to simulate half-open connections ([NewProxy]), and a cluster of
// separate etcd processes that can be killed and restarted ([StartCluster]).
//
// Nothing here is meant for production: the embedded member skips fsync.
package etcdtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Config tunes an embedded member. The zero value is a good default.
type Config struct {
	// Dir is the data directory. Zero: a new temporary directory, removed
	// by Close.
	Dir string
	// ProgressNotifyInterval is the server's periodic progress notification
	// interval for watches asking for them. Zero: etcd's default (10 min).
	ProgressNotifyInterval time.Duration
	// QuotaBackendBytes is the backend quota. Zero: 8 GiB, enough for
	// benchmarks.
	QuotaBackendBytes int64
	// ClusterToken is the initial cluster token, from which (with the
	// member's configured peer URL, the same for every embedded member)
	// etcd derives the cluster ID. Zero: etcd's default, so every embedded
	// member has the same cluster ID; give two members different tokens to
	// tell their clusters apart.
	ClusterToken string
}

// Server is an embedded single-member etcd. Its methods are safe for
// concurrent use.
type Server struct {
	etcd     *embed.Etcd
	endpoint string
	tmpDir   string
	close    sync.Once
}

// Start starts an embedded member listening on 127.0.0.1 with free ports,
// with fast ticks (10 ms heartbeat, 50 ms election), and waits until it
// serves. It takes well under a second.
//
// Possible errors: the member failed to start or to become ready in 10 s.
func Start(cfg Config) (*Server, error) {
	s := &Server{}
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "etcdtest-")
		if err != nil {
			return nil, fmt.Errorf("etcdtest: %w", err)
		}
		dir, s.tmpDir = d, d
	}
	ec := embed.NewConfig()
	ec.Name = "etcdtest"
	ec.Dir = dir
	local := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	ec.ListenClientUrls = []url.URL{local}
	ec.AdvertiseClientUrls = []url.URL{local}
	ec.ListenPeerUrls = []url.URL{local}
	ec.AdvertisePeerUrls = []url.URL{local}
	ec.InitialCluster = ec.Name + "=" + local.String()
	ec.TickMs = 10
	ec.ElectionMs = 50
	ec.UnsafeNoFsync = true
	ec.LogLevel = "error"
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	ec.WatchProgressNotifyInterval = cfg.ProgressNotifyInterval
	ec.QuotaBackendBytes = cfg.QuotaBackendBytes
	if cfg.ClusterToken != "" {
		ec.InitialClusterToken = cfg.ClusterToken
	}
	if ec.QuotaBackendBytes == 0 {
		ec.QuotaBackendBytes = 8 << 30
	}
	e, err := embed.StartEtcd(ec)
	if err != nil {
		s.removeDir()
		return nil, fmt.Errorf("etcdtest: start: %w", err)
	}
	s.etcd = e
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		s.Close()
		return nil, fmt.Errorf("etcdtest: start: %w", err)
	case <-time.After(10 * time.Second):
		s.Close()
		return nil, fmt.Errorf("etcdtest: not ready after 10s")
	}
	s.endpoint = "http://" + e.Clients[0].Addr().String()
	return s, nil
}

// New starts a member for a test and closes it at the end of the test.
func New(t testing.TB, cfg Config) *Server {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	s, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Endpoint returns the client URL, "http://127.0.0.1:port".
func (s *Server) Endpoint() string { return s.endpoint }

// Etcd returns the embedded member, for tests that need its internals.
func (s *Server) Etcd() *embed.Etcd { return s.etcd }

// Client returns a new client of the member; the caller closes it.
//
// Possible errors: those of [clientv3.New].
func (s *Server) Client() (*clientv3.Client, error) {
	return NewClient(s.endpoint)
}

// NewTestClient returns a client of the member closed at the end of the test.
func (s *Server) NewTestClient(t testing.TB) *clientv3.Client {
	t.Helper()
	c, err := s.Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Close stops the member and removes its temporary directory. It is
// idempotent (embed.Etcd.Close panics when called twice).
func (s *Server) Close() {
	s.close.Do(func() {
		if s.etcd != nil {
			s.etcd.Close()
		}
		s.removeDir()
	})
}

func (s *Server) removeDir() {
	if s.tmpDir != "" {
		_ = os.RemoveAll(s.tmpDir)
	}
}

// NewClient returns a client of the given endpoints with settings suited to
// tests: a 2 s dial timeout, gRPC keepalive at its 10 s floor with a 2 s
// timeout (so a dead transport is replaced), and no client logs.
//
// Possible errors: those of [clientv3.New].
func NewClient(endpoints ...string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          2 * time.Second,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 2 * time.Second,
		Logger:               zap.NewNop(),
	})
}

// Compact compacts the member's history up to its current revision,
// physically, so lists and watches at older revisions fail.
//
// Possible errors: those of the client's Get and Compact.
func Compact(ctx context.Context, c *clientv3.Client) (int64, error) {
	resp, err := c.Get(ctx, "compact-probe")
	if err != nil {
		return 0, err
	}
	rev := resp.Header.Revision
	if _, err := c.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		return 0, err
	}
	return rev, nil
}
