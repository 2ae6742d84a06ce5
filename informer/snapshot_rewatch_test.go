package informer_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
)

// snapshotOf runs a first informer over src until it has synced and stops
// it, and returns the snapshot it wrote when it stopped; first is that run.
func snapshotOf(t *testing.T, src *histSource) (path string, first *runSnap) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "snap")
	first = startSnap(t, src, snapOpts(path))
	first.waitSynced(t)
	first.stop()
	return path, first
}

// warmStarted returns an informer over src restarted from a snapshot
// written by a first, stopped run, synced without a list; the source has
// changed while it was down. Called inside a synctest bubble.
func warmStarted(t *testing.T, src *histSource, opts informer.Options[string, *snapItem]) *runSnap {
	t.Helper()
	for i := range 5 {
		src.put(fmt.Sprintf("k%d", i), i)
	}
	path, _ := snapshotOf(t, src)
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
	// A watch that ends within a second with no event is very short (a run
	// of them relists, cold or warm). So each cut comes after the watch has
	// lasted 2 s.
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
		src := newHistSource()
		src.put("a", 1)
		path, _ := snapshotOf(t, src)

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

// TestWarmStartWhileSourceDown: a warm start while the source is down does
// not hang and is not silent: the restored cache is served at once,
// unconfirmed and not synced, handlers wait; once the source answers with
// the snapshot's identity, the informer catches up without a list.
// Stopping before that is quiet.
func TestWarmStartWhileSourceDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newHistSource()
		src.put("a", 1)
		src.put("b", 2)
		path, first := snapshotOf(t, src)
		assert.Equal(t, informer.StartCold, first.inf.Health().Start)

		src.outage(true)
		src.del("a") // a change the server made before going down
		// Stopped while the source is still down: quiet.
		early := startSnap(t, src, snapOpts(path))
		time.Sleep(time.Minute)
		synctest.Wait()
		h := early.inf.Health()
		assert.Equal(t, informer.StartVerifying, h.Start)
		assert.True(t, h.Restored)
		assert.False(t, h.Synced)
		assert.Equal(t, map[string]snapItem{"a": {Name: "a", Val: 1, Ver: 1}, "b": {Name: "b", Val: 2, Ver: 2}}, early.cache(),
			"the restored cache is served while the source is down")
		assert.Empty(t, early.notes.all(), "handlers wait for the catch-up")
		errsBefore := len(early.errs.all())
		assert.Positive(t, errsBefore, "the outage is reported")
		early.stop()
		assert.Len(t, early.errs.all(), errsBefore, "stopping is no error")

		second := startSnap(t, src, snapOpts(path))
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, informer.StartVerifying, second.inf.Health().Start)
		src.outage(false)
		time.Sleep(2 * time.Minute) // past the backoff of the attempts made while down
		second.waitSynced(t)
		assert.Equal(t, src.state(), second.cache())
		h = second.inf.Health()
		assert.Equal(t, informer.StartResumed, h.Start)
		assert.EqualValues(t, 0, h.Lists)
		assert.Equal(t, []string{"add b=2 initial=true"}, second.notes.all())
	})
}

// TestWarmStartSourceOfAnotherIdentityAfterOutage: a snapshot restored while
// the source was down, which the source then says is another collection's,
// is dropped before any handler hears of it, and the informer lists.
func TestWarmStartSourceOfAnotherIdentityAfterOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newHistSource()
		src.put("a", 1)
		src.put("b", 2)
		path, _ := snapshotOf(t, src)

		other := newHistSource() // another cluster at the same address
		other.identity = "hist of another cluster"
		other.put("b", 20) // same key, same version, other content
		other.put("c", 3)
		other.outage(true)
		second := startSnap(t, other, snapOpts(path))
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, informer.StartVerifying, second.inf.Health().Start)
		other.outage(false)
		time.Sleep(2 * time.Minute) // past the backoff of the attempts made while down
		second.waitSynced(t)
		assert.Equal(t, other.state(), second.cache())
		h := second.inf.Health()
		assert.Equal(t, informer.StartRefused, h.Start)
		assert.Contains(t, h.StartReason, "hist of another cluster")
		got := second.notes.all()
		slices.Sort(got)
		assert.Equal(t, []string{"add b=20 initial=true", "add c=3 initial=true"}, got)
	})
}

// TestSnapshotWrittenSoonAfterSync: the first periodic snapshot is written
// as soon as the informer has synced, not an Interval later: a process
// that dies minutes after each start still leaves a fresh one.
func TestSnapshotWrittenSoonAfterSync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "snap")
		src := newHistSource()
		src.put("a", 1)
		opts := snapOpts(path)
		opts.Snapshot.Interval = time.Hour
		r := startSnap(t, src, opts)
		r.waitSynced(t)
		time.Sleep(time.Second)
		synctest.Wait()
		h := r.inf.Health()
		assert.Equal(t, "1", h.SnapshotVersion)
		assert.False(t, h.SnapshotAt.IsZero(), "written while running, not restored")
	})
}
