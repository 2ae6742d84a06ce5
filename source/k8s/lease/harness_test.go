package lease_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"

	"github.com/ginformer/ginformer/shard"
	"github.com/ginformer/ginformer/shard/shardtest"
	"github.com/ginformer/ginformer/source/k8s/k8stest"
	"github.com/ginformer/ginformer/source/k8s/lease"
)

// leaseClient returns a clientset with connections of its own through n.
func leaseClient(t testing.TB, n *k8stest.Net) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(n.Config(env.Config))
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
	net    *k8stest.Net
	m      *lease.Membership
	owner  *shard.Owner
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

func startLeaseReplica(t *testing.T, ns, group, name string, rec *shardtest.Ownership) *leaseReplica {
	t.Helper()
	r := &leaseReplica{name: name, net: &k8stest.Net{}}
	var err error
	r.m, err = lease.New(lease.Options{
		Client: leaseClient(t, r.net).CoordinationV1().Leases(ns), Group: group, Name: name,
		LeaseDuration: k8stest.LeaseDuration, Logger: k8stest.Quiet(),
	})
	require.NoError(t, err)
	r.owner, err = shard.NewOwner(shard.OwnerOptions{
		Membership: r.m, OnChange: rec.OnChange(name), RetryInterval: 100 * time.Millisecond, Logger: k8stest.Quiet(),
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
