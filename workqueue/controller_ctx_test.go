package workqueue

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
)

// TestControllerRunWithDoneContext: Run with a context already done returns
// its error at once, starts no worker and leaves the queue as it was (not
// shut down, its keys kept), so the controller can still run.
func TestControllerRunWithDoneContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		got := make(chan string, 1)
		c, err := NewController(func(_ context.Context, key string) error {
			got <- key
			return nil
		}, ControllerOptions{Queue: Options{Name: "things"}})
		require.NoError(t, err)
		c.Queue().Add("a")

		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		err = c.Run(ctx)
		require.ErrorIs(t, err, context.Canceled)
		require.Contains(t, err.Error(), `controller "things"`)
		require.False(t, c.Queue().ShuttingDown(), "the queue is not shut down")
		require.Equal(t, 1, c.Queue().Len(), "its keys are kept")

		ctx, cancel = context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		require.Equal(t, "a", <-got)
		cancel()
		require.NoError(t, <-done)
	})
}
