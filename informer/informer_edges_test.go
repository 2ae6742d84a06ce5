package informer_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
)

// Edges a new user hits when an error is ignored or a context is spent
// (issue 21).

// TestWaitForSyncRefusesMissingSyncers: a nil, typed nil or zero syncer, or
// none at all, is a mistake WaitForSync reports with ErrInvalidOptions, at
// once, instead of panicking or blocking until ctx ends.
func TestWaitForSyncRefusesMissingSyncers(t *testing.T) {
	var nilReg *informer.Registration[string, *item]
	var nilInf *informer.SharedInformer[string, *item]
	tests := []struct {
		name    string
		syncers func(valid informer.Syncer) []informer.Syncer
	}{
		{"none", func(informer.Syncer) []informer.Syncer { return nil }},
		{"nil", func(informer.Syncer) []informer.Syncer { return []informer.Syncer{nil} }},
		{"nil Registration", func(informer.Syncer) []informer.Syncer { return []informer.Syncer{nilReg} }},
		{"nil SharedInformer", func(informer.Syncer) []informer.Syncer { return []informer.Syncer{nilInf} }},
		{"zero Registration", func(informer.Syncer) []informer.Syncer {
			return []informer.Syncer{&informer.Registration[string, *item]{}}
		}},
		{"zero SharedInformer", func(informer.Syncer) []informer.Syncer {
			return []informer.Syncer{&informer.SharedInformer[string, *item]{}}
		}},
		{"nil after a valid one", func(valid informer.Syncer) []informer.Syncer { return []informer.Syncer{valid, nilReg} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				inf := newInformer(t, newSource(t), nil) // never started: never syncs
				ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
				defer cancel()
				err := informer.WaitForSync(ctx, tt.syncers(inf)...)
				require.ErrorIs(t, err, informer.ErrInvalidOptions)
				assert.NotErrorIs(t, err, context.DeadlineExceeded, "refused at once, not after waiting")
			})
		})
	}
}

// TestWaitForSyncOfAFailedAddHandler is the new user's program: the error of
// AddHandler ignored, its nil registration waited for.
func TestWaitForSyncOfAFailedAddHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inf := newInformer(t, newSource(t), nil)
		reg, err := inf.AddHandler(nil, informer.HandlerOptions{})
		require.ErrorIs(t, err, informer.ErrInvalidOptions)
		start(t, inf)
		synctest.Wait() // Run has begun (the test's stop expects nil)
		err = informer.WaitForSync(t.Context(), inf, reg)
		require.ErrorIs(t, err, informer.ErrInvalidOptions)
		assert.Contains(t, err.Error(), "syncer 1")
	})
}

// TestNilRegistrationDoesNotPanic: a nil or zero Registration never syncs,
// has no backlog and no goroutine, and Remove does nothing.
func TestNilRegistrationDoesNotPanic(t *testing.T) {
	for name, r := range map[string]*informer.Registration[string, *item]{
		"nil":  nil,
		"zero": {},
	} {
		t.Run(name, func(t *testing.T) {
			assert.False(t, r.HasSynced())
			select {
			case <-r.Synced():
				t.Fatal("a nil Registration never syncs")
			default:
			}
			assert.Zero(t, r.Backlog())
			r.Remove()
			<-r.Done() // no goroutine: closed
		})
	}
}

// TestGroupWaitForSyncWithoutInformers: waiting on an empty group is a
// mistake (informers obtained after the wait are not waited for).
func TestGroupWaitForSyncWithoutInformers(t *testing.T) {
	err := informer.NewGroup().WaitForSync(t.Context())
	require.ErrorIs(t, err, informer.ErrInvalidOptions)
	assert.Contains(t, err.Error(), "no informers")
}

// TestInformerRunWithDoneContext: Run with a context already done returns
// its error at once, starts nothing, and leaves the informer able to run.
func TestInformerRunWithDoneContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		put(t, src, "a", "g", 1)
		inf := newInformer(t, src, nil)
		h := &calls{}
		reg, err := inf.AddHandler(h, informer.HandlerOptions{})
		require.NoError(t, err)

		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		err = inf.Run(ctx)
		require.ErrorIs(t, err, context.Canceled)
		assert.Contains(t, err.Error(), `informer "items"`)
		synctest.Wait()
		assert.False(t, inf.HasSynced())
		assert.Empty(t, h.got(), "nothing ran")

		// Not spent: handlers may still be added, and Run with a live
		// context runs it.
		h2 := &calls{}
		reg2, err := inf.AddHandler(h2, informer.HandlerOptions{})
		require.NoError(t, err)
		start(t, inf)
		require.NoError(t, informer.WaitForSync(t.Context(), inf, reg, reg2))
		assert.Equal(t, []string{"add* a=1"}, h.got())
		assert.Equal(t, []string{"add* a=1"}, h2.got())
	})
}

// TestGroupRunWithDoneContext: as for an informer, Run with a context
// already done returns its error, starts nothing, and the group can run.
func TestGroupRunWithDoneContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		put(t, src, "a", "g", 1)
		g := informer.NewGroup()
		inf, err := informer.InformerFor(g, informer.Options[string, *item]{Source: src, KeyFunc: itemKey, Name: "items"})
		require.NoError(t, err)

		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		err = g.Run(ctx)
		require.ErrorIs(t, err, context.Canceled)
		synctest.Wait()
		assert.False(t, inf.HasSynced())
		_, err = informer.InformerFor(g, informer.Options[string, *item]{Source: src, KeyFunc: itemKey, Name: "more"})
		require.NoError(t, err, "the group has not started, so it has not stopped either")

		ctx, cancel = context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- g.Run(ctx) }()
		require.NoError(t, g.WaitForSync(t.Context()))
		assert.Equal(t, 1, inf.Lister().Len())
		cancel()
		require.NoError(t, <-done)
	})
}
