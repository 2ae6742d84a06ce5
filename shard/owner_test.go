package shard_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/shard"
)

// table records who owns each shard from the OnChange reports and fails
// when a shard is acquired while another member still owns it.
type table struct {
	mu    sync.Mutex
	owner map[int]string
	err   error
}

func (tb *table) onChange(name string) func(shard.OwnershipChange) {
	return func(c shard.OwnershipChange) {
		tb.mu.Lock()
		defer tb.mu.Unlock()
		for s := range c.Released.All() {
			if tb.owner[s] == name {
				delete(tb.owner, s)
			}
		}
		for s := range c.Acquired.All() {
			if o, ok := tb.owner[s]; ok && tb.err == nil {
				tb.err = fmt.Errorf("%s acquired shard %d still owned by %s", name, s, o)
			}
			tb.owner[s] = name
		}
	}
}

type replica struct {
	m      *member
	o      *shard.Owner
	cancel context.CancelFunc
	done   chan error
}

func start(t *testing.T, c *cluster, tb *table, name string) *replica {
	t.Helper()
	m := c.member(name)
	o, err := shard.NewOwner(shard.OwnerOptions{Membership: m, Shards: c.n, OnChange: tb.onChange(name), Logger: discard()})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	r := &replica{m: m, o: o, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- o.Run(ctx) }()
	return r
}

func (r *replica) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	// A stop before the goroutine reached Run: Run refuses the done context.
	if err := <-r.done; !errors.Is(err, context.Canceled) {
		require.NoError(t, err)
	}
}

// checkSettled: the owners hold exactly their assignment, every shard is
// owned once, and Owns agrees.
func checkSettled(t *testing.T, c *cluster, tb *table, rs ...*replica) {
	t.Helper()
	require.NoError(t, c.violation())
	tb.mu.Lock()
	err, owned := tb.err, len(tb.owner)
	tb.mu.Unlock()
	require.NoError(t, err)
	require.Equal(t, c.n, owned)
	var names []string
	for _, r := range rs {
		names = append(names, r.o.Name())
	}
	a, err := shard.Assign(c.n, names)
	require.NoError(t, err)
	for _, r := range rs {
		require.True(t, r.o.Held().Equal(a.Set(r.o.Name())), "%s holds %s, assigned %s", r.o.Name(), r.o.Held(), a.Set(r.o.Name()))
		sl, ok := r.o.CurrentSlice()
		require.True(t, ok)
		require.True(t, sl.Shards.Equal(a.Set(r.o.Name())))
	}
	for i := range 1000 {
		key := fmt.Sprintf("key-%d", i)
		owners := 0
		for _, r := range rs {
			if r.o.Owns(key) {
				owners++
				require.Equal(t, a.OwnerOf(shard.HashKey(key)), r.o.Name())
			}
		}
		require.Equal(t, 1, owners, key)
	}
}

func TestOwnerHandoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(64)
		tb := &table{owner: map[int]string{}}
		a := start(t, c, tb, "a")
		b := start(t, c, tb, "b")
		cr := start(t, c, tb, "c")
		synctest.Wait()
		checkSettled(t, c, tb, a, b, cr)

		// A join: the newcomer gets its shards once their owners released them.
		d := start(t, c, tb, "d")
		synctest.Wait()
		checkSettled(t, c, tb, a, b, cr, d)

		// A graceful leave: its shards are taken at once.
		b.stop(t)
		synctest.Wait()
		checkSettled(t, c, tb, a, cr, d)

		// A crash: the record stays until the lease expires, and nobody
		// takes the crashed member's shards before that.
		held := cr.o.Held()
		cr.m.crash()
		require.False(t, cr.o.Owns(anyKeyIn(held)), "a lapsed lease owns nothing")
		synctest.Wait()
		for _, r := range []*replica{a, d} {
			require.True(t, r.o.Held().Intersect(held).Empty(), "%s took a crashed member's shards before its lease expired", r.o.Name())
		}
		c.expire("c")
		synctest.Wait()
		checkSettled(t, c, tb, a, d)
		cr.stop(t)

		for _, r := range []*replica{a, d} {
			r.stop(t)
		}
		tb.mu.Lock()
		owned := len(tb.owner)
		tb.mu.Unlock()
		require.Zero(t, owned, "a stopped owner owns nothing")
	})
}

// TestOwnerClaimReplyLost: a claim recorded whose reply was lost leaves the
// record holding shards the owner does not act on; the owner acquires them
// later by a claim against a newer view, not from the record.
func TestOwnerClaimReplyLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(32)
		tb := &table{owner: map[int]string{}}
		a := start(t, c, tb, "a")
		synctest.Wait()
		checkSettled(t, c, tb, a)
		m := c.member("b")
		m.lostReplies = 1
		o, err := shard.NewOwner(shard.OwnerOptions{Membership: m, Shards: c.n, OnChange: tb.onChange("b"), Logger: discard()})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		b := &replica{m: m, o: o, cancel: cancel, done: make(chan error, 1)}
		go func() { b.done <- o.Run(ctx) }()
		// b's first claim is recorded and its reply lost; the view that
		// shows it brings a new claim against that view, which succeeds.
		synctest.Wait()
		m.mu.Lock()
		lost := m.lostReplies
		m.mu.Unlock()
		// Asserted after the unlock: a failure stops this goroutine, and
		// m.mu held then would block b's membership forever (a hang, not
		// a failure: synctest cannot see a goroutine blocked on a mutex).
		require.Zero(t, lost, "the lost reply happened")
		time.Sleep(time.Second) // any retry
		synctest.Wait()
		checkSettled(t, c, tb, a, b)
		a.stop(t)
		b.stop(t)
	})
}

// TestOwnerSliceFollowsAssignment: the slice changes with the members at
// once, with a new generation, before the handoff completes.
func TestOwnerSliceFollowsAssignment(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(16)
		tb := &table{owner: map[int]string{}}
		a := start(t, c, tb, "a")
		sl, changed, err := a.o.Slice(t.Context())
		require.NoError(t, err)
		require.Equal(t, 16, sl.Shards.Len(), "alone, a member is assigned everything")
		b := start(t, c, tb, "b")
		<-changed
		sl2, _, err := a.o.Slice(t.Context())
		require.NoError(t, err)
		require.Greater(t, sl2.Gen, sl.Gen)
		synctest.Wait()
		checkSettled(t, c, tb, a, b)
		a.stop(t)
		b.stop(t)
	})
}

func TestOwnerOptions(t *testing.T) {
	_, err := shard.NewOwner(shard.OwnerOptions{})
	require.ErrorIs(t, err, shard.ErrInvalidOptions)
	_, err = shard.NewOwner(shard.OwnerOptions{Membership: newCluster(1).member("x"), Shards: -3})
	require.ErrorIs(t, err, shard.ErrInvalidShards)
	o, err := shard.NewOwner(shard.OwnerOptions{Membership: newCluster(1).member("x"), Logger: discard()})
	require.NoError(t, err)
	require.False(t, o.Owns("k"), "an owner not started owns nothing")
	_, ok := o.CurrentSlice()
	require.False(t, ok)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, _, err = o.Slice(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, o.Run(ctx), context.Canceled, "not started: see TestOwnerRunWithDoneContext")
}

func anyKeyIn(s shard.Set) string {
	for i := 0; ; i++ {
		k := fmt.Sprintf("k%d", i)
		if s.Contains(shard.HashKey(k)) {
			return k
		}
	}
}
