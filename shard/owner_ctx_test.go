package shard_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/shard"
)

// TestOwnerRunWithDoneContext: Run with a context already done returns its
// error at once without registering, and the owner can still run.
func TestOwnerRunWithDoneContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(4)
		tb := &table{owner: map[int]string{}}
		o, err := shard.NewOwner(shard.OwnerOptions{Membership: c.member("a"), Shards: c.n, OnChange: tb.onChange("a"), Logger: discard()})
		require.NoError(t, err)

		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		require.ErrorIs(t, o.Run(ctx), context.Canceled)
		synctest.Wait()
		c.mu.Lock()
		epochs := c.epochs
		c.mu.Unlock()
		require.Zero(t, epochs, "the membership did not register")

		ctx, cancel = context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- o.Run(ctx) }()
		synctest.Wait()
		tb.mu.Lock()
		owned := len(tb.owner)
		tb.mu.Unlock()
		require.Equal(t, c.n, owned, "the owner ran")
		require.ErrorIs(t, o.Run(ctx), shard.ErrAlreadyStarted)
		cancel()
		require.NoError(t, <-done)
	})
}
