package lease_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ginformer/ginformer/shard"
	"github.com/ginformer/ginformer/shard/shardtest"
	"github.com/ginformer/ginformer/source/k8s/lease"
)

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

// leaseClient returns a clientset with connections of its own (a custom
// dialer keeps client-go from sharing a cached transport) through n.
func leaseClient(t testing.TB, n *leaseNet) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Dial = n.dial
	c, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return c
}

// leaseWaitFor waits until cond returns nil, checking it on every ownership
// change, at most timeout; it returns how long that took.
func leaseWaitFor(t *testing.T, o *shardtest.Ownership, timeout time.Duration, cond func() error) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		ch := o.Changed()
		err := cond()
		if err == nil {
			return time.Since(start)
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("not settled after %v: %v", timeout, err)
		}
	}
}

// leaseKeys returns one key per shard of the default space.
func leaseKeys() []string {
	keys := make([]string, shard.DefaultShards)
	found := 0
	for i := 0; found < len(keys); i++ {
		k := "key-" + strconv.Itoa(i)
		if s := shard.ShardOf(shard.HashKey(k), shard.DefaultShards); keys[s] == "" {
			keys[s] = k
			found++
		}
	}
	return keys
}

// leaseReplica is a Membership and an Owner with a client and a
// network of their own, and a sampler calling Owns on one key per shard
// every few milliseconds, as handlers would.
type leaseReplica struct {
	name   string
	net    *leaseNet
	m      *lease.Membership
	owner  *shard.Owner
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

func startLeaseReplica(t *testing.T, ns, group, name string, rec *shardtest.Ownership) *leaseReplica {
	t.Helper()
	r := &leaseReplica{name: name, net: &leaseNet{}}
	var err error
	r.m, err = lease.New(lease.Options{
		Client: leaseClient(t, r.net).CoordinationV1().Leases(ns), Group: group, Name: name,
		LeaseDuration: testLeaseDuration, Logger: leaseQuiet(),
	})
	require.NoError(t, err)
	r.owner, err = shard.NewOwner(shard.OwnerOptions{
		Membership: r.m, OnChange: rec.OnChange(name), RetryInterval: 100 * time.Millisecond, Logger: leaseQuiet(),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.wg.Go(func() { _ = r.owner.Run(ctx) })
	keys := leaseKeys()
	r.wg.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			for s, k := range keys {
				before := time.Now()
				if r.owner.Owns(k) {
					after := time.Now()
					rec.Sample(name, s, before, after)
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	})
	t.Cleanup(r.stop)
	return r
}

// stop leaves gracefully: the owner stops owning, the membership deletes
// its Lease and its record.
func (r *leaseReplica) stop() {
	r.once.Do(func() {
		r.cancel()
		r.wg.Wait()
		r.net.Cut() // close the idle connections
	})
}

// settled reports whether the replicas hold exactly the assignment of their
// names: every shard held once.
func leaseSettled(rs ...*leaseReplica) error {
	var names []string
	for _, r := range rs {
		names = append(names, r.name)
	}
	a, _ := shard.Assign(0, names)
	var union shard.Set
	total := 0
	for _, r := range rs {
		held := r.owner.Held()
		if want := a.Set(r.name); !held.Equal(want) {
			return fmt.Errorf("%s holds %d shards, assigned %d", r.name, held.Len(), want.Len())
		}
		union = union.Union(held)
		total += held.Len()
	}
	if union.Len() != shard.DefaultShards || total != shard.DefaultShards {
		return fmt.Errorf("%d shards held, %d distinct, want %d once each", total, union.Len(), shard.DefaultShards)
	}
	return nil
}
