package informer_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
)

// warmStarted returns an informer over src restarted from a snapshot
// written by a first, stopped run, synced without a list; the source has
// changed while it was down. Called inside a synctest bubble.
func warmStarted(t *testing.T, src *histSource, opts informer.Options[string, *snapItem]) *runSnap {
	t.Helper()
	path := filepath.Join(t.TempDir(), "snap")
	for i := range 5 {
		src.put(fmt.Sprintf("k%d", i), i)
	}
	first := startSnap(t, src, snapOpts(path))
	first.waitSynced(t)
	first.stop()
	src.put("k1", 10)
	src.del("k2")

	opts.Snapshot = snapOpts(path).Snapshot
	second := startSnap(t, src, opts)
	second.waitSynced(t)
	require.Equal(t, src.state(), second.cache())
	require.EqualValues(t, 0, second.inf.Health().Lists, "resumed from the snapshot")
	return second
}

// TestWarmRestartKeepsWatchingAfterCatchUp: once a warm-started informer
// has caught up, a watch that ends (the server's timeout, a proxy cutting
// it, an outage) is followed by a watch from the last version, as after a
// cold start: no list. Each subtest ends several watches, each well past
// the catch-up's stall bound.
func TestWarmRestartKeepsWatchingAfterCatchUp(t *testing.T) {
	// A watch that ends within a second with no event is very short: a
	// cold-started informer relists after it too. So each cut comes after
	// the watch has lasted 2 s.
	for _, tt := range []struct {
		name     string
		minWatch time.Duration
		end      func(src *histSource) // ends the current watch, one way
	}{
		{"watch timeout", time.Second, func(*histSource) { time.Sleep(3 * time.Second) }},
		{"watch cut", time.Hour, func(src *histSource) { time.Sleep(2 * time.Second); src.endWatches() }},
		{"outage", time.Hour, func(src *histSource) {
			time.Sleep(2 * time.Second)
			src.outage(true)
			time.Sleep(10 * time.Second)
			src.outage(false)
			time.Sleep(time.Minute) // past the backoff
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := newHistSource()
				var opts informer.Options[string, *snapItem]
				opts.ListWatch.MinWatchTimeout = tt.minWatch
				opts.ListWatch.StreamingListTimeout = 200 * time.Millisecond
				r := warmStarted(t, src, opts)
				_, before := src.calls()
				for i := range 4 {
					tt.end(src)
					src.put(fmt.Sprintf("later%d", i), i)
					time.Sleep(time.Second)
					synctest.Wait()
				}
				assert.Equal(t, src.state(), r.cache())
				lists, watches := src.calls()
				assert.Equal(t, 1, lists, "only the first run's list")
				assert.EqualValues(t, 0, r.inf.Health().Lists, "the warm-started informer never listed")
				assert.GreaterOrEqual(t, len(watches)-len(before), 4, "it re-watched")
				for _, w := range watches[len(before):] {
					assert.False(t, w.NotifyCaughtUp, "caught up: later watches are plain")
				}
			})
		})
	}
}

// TestWarmRestartCatchUpBoundHoldsAcrossRewatches: a source that ignores
// NotifyCaughtUp and ends its watches more often than the stall bound,
// while events keep coming, still gets the informer synced (by a relist)
// within catchUpLimit stall periods of the first resume watch: re-watches
// do not push the bound back.
func TestWarmRestartCatchUpBoundHoldsAcrossRewatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "snap")
		src := newHistSource()
		src.put("a", 1)
		first := startSnap(t, src, snapOpts(path))
		first.waitSynced(t)
		first.stop()

		src.mode = caughtUpIgnored
		opts := snapOpts(path)
		const stall = 300 * time.Millisecond
		opts.ListWatch.StreamingListTimeout = stall
		ctx, cancel := context.WithCancel(t.Context())
		busy := make(chan struct{})
		defer func() { cancel(); <-busy }()
		go func() { // a busy source whose watches end every 100 ms
			defer close(busy)
			for i := 0; ctx.Err() == nil; i++ {
				time.Sleep(50 * time.Millisecond)
				src.put(fmt.Sprintf("busy%d", i%10), i)
				time.Sleep(50 * time.Millisecond)
				src.endWatches()
			}
		}()
		start := time.Now()
		second := startSnap(t, src, opts)
		second.waitSynced(t)
		took := time.Since(start)
		assert.LessOrEqual(t, took, 6*stall+time.Second, "bounded from the first resume watch")
		lists, _ := src.calls()
		assert.Equal(t, 2, lists, "one cold list, one relist when the marker was overdue")
	})
}
