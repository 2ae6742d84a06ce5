package lease_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/shard"
	"github.com/ginformer/ginformer/source/etcd/lease"
)

func TestMembershipOptions(t *testing.T) {
	c := client(t)
	for _, o := range []lease.Options{
		{Prefix: "/p/", Name: "a"},
		{Client: c, Name: "a"},
		{Client: c, Prefix: "/p/"},
		{Client: c, Prefix: "/p/", Name: "a/b"},
		{Client: c, Prefix: "/p/", Name: "a", TTL: -1},
		{Client: c, Prefix: "/p/", Name: "a", MaxClockDrift: 0.5},
	} {
		_, err := lease.New(o)
		require.ErrorIs(t, err, informer.ErrInvalidOptions, "%+v", o)
	}
}

// TestMembershipNameTaken: a second registration of a live name waits for
// the first to end; the first owns nothing after it left.
func TestMembershipNameTaken(t *testing.T) {
	c := client(t)
	prefix := newPrefix(t)
	newOwner := func() (*shard.Owner, *lease.Membership) {
		m, err := lease.New(lease.Options{Client: c, Prefix: prefix, Name: "same", TTL: shardTTL, Logger: quiet()})
		require.NoError(t, err)
		o, err := shard.NewOwner(shard.OwnerOptions{Membership: m, Shards: 4, Logger: quiet()})
		require.NoError(t, err)
		return o, m
	}
	first, m1 := newOwner()
	second, _ := newOwner()
	ctx1, cancel1 := context.WithCancel(t.Context())
	ctx2, cancel2 := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = first.Run(ctx1) })
	require.Eventually(t, func() bool { return first.Held().Len() == 4 }, 10*time.Second, 10*time.Millisecond)
	wg.Go(func() { _ = second.Run(ctx2) })
	v, _, ok := m1.Current()
	require.True(t, ok)
	require.NotZero(t, v.Epoch)
	require.True(t, m1.ValidUntil(v.Epoch).After(time.Now()))
	require.True(t, m1.ValidUntil(v.Epoch+1).IsZero())
	require.Never(t, func() bool { return !second.Held().Empty() }, 300*time.Millisecond, 10*time.Millisecond, "the name is taken")
	cancel1()
	require.Eventually(t, func() bool { return second.Held().Len() == 4 }, 10*time.Second, 10*time.Millisecond)
	require.False(t, first.Owns("x"))
	require.True(t, second.Owns("x"))
	cancel2()
	wg.Wait()
}

// TestMembershipLeaseLost: when the lease goes (revoked behind the member's
// back, as an expiry would), the owner stops owning at once, the member
// registers again under a new lease and acquires its shards anew.
func TestMembershipLeaseLost(t *testing.T) {
	c := client(t)
	prefix := newPrefix(t)
	m, err := lease.New(lease.Options{Client: c, Prefix: prefix, Name: "solo", TTL: shardTTL, Logger: quiet()})
	require.NoError(t, err)
	var mu sync.Mutex
	var changes []shard.OwnershipChange
	o, err := shard.NewOwner(shard.OwnerOptions{Membership: m, Shards: 8, Logger: quiet(), OnChange: func(ch shard.OwnershipChange) {
		mu.Lock()
		changes = append(changes, ch)
		mu.Unlock()
	}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = o.Run(ctx) })
	defer wg.Wait()
	defer cancel()
	require.Eventually(t, func() bool { return o.Owns("x") }, 10*time.Second, 10*time.Millisecond)
	v, _, _ := m.Current()
	first := v.Epoch

	_, err = c.Revoke(t.Context(), clientv3.LeaseID(first))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		v, _, _ := m.Current()
		return v.Epoch != 0 && v.Epoch != first && o.Owns("x")
	}, 10*time.Second, 10*time.Millisecond, "registered again and owning")
	require.True(t, m.ValidUntil(first).Before(time.Now()), "the lost lease's validity has ended")
	mu.Lock()
	defer mu.Unlock()
	require.GreaterOrEqual(t, len(changes), 3, "acquired, released on loss, acquired again")
	require.Equal(t, 8, changes[0].Acquired.Len())
	require.Equal(t, 8, changes[1].Released.Len())
	require.Equal(t, 8, changes[2].Acquired.Len())
}
