package informer_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/memory"
)

// putV writes an item and returns the source's version after the write.
func putV(t *testing.T, src *memory.Store[string, *item], name string, v int) string {
	t.Helper()
	version, err := src.Put(&item{Name: name, Group: "g", V: v})
	require.NoError(t, err)
	return version
}

// Write, wait, read: the cache shows every write as soon as WaitForVersion
// returns, with real goroutine interleavings (no bubble).
func TestWaitForVersionReadYourWrites(t *testing.T) {
	src := newSource(t)
	inf := newInformer(t, src, func(o *informer.Options[string, *item]) { o.BatchSize = 3 })
	start(t, inf)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for i := range 300 {
		name := "k" + strconv.Itoa(i%7)
		version := putV(t, src, name, i)
		require.NoError(t, inf.WaitForVersion(ctx, version))
		got, ok := inf.Lister().Get(name)
		require.True(t, ok, "write %d", i)
		require.Equal(t, i, got.V, "write %d", i)
		if i%50 == 49 {
			version, _ := src.Delete(name)
			require.NoError(t, inf.WaitForVersion(ctx, version))
			_, ok := inf.Lister().Get(name)
			require.False(t, ok, "deleted at %s", version)
		}
	}
	// A version already applied returns at once, however old.
	require.NoError(t, inf.WaitForVersion(ctx, "2"))
}

// The version of the first list is applied by the initial sync; an older one
// too (the source orders versions).
func TestWaitForVersionReachedByList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		for i := range 5 {
			putV(t, src, "k"+strconv.Itoa(i), i)
		}
		inf := newInformer(t, src, nil)
		waited := make(chan error, 1)
		go func() { waited <- inf.WaitForVersion(t.Context(), src.Version()) }() // before Run
		synctest.Wait()
		select {
		case err := <-waited:
			t.Fatalf("returned before Run: %v", err)
		default:
		}
		start(t, inf)
		require.NoError(t, <-waited)
		assert.Equal(t, 5, inf.Lister().Len(), "the whole list is in the cache")
		require.NoError(t, inf.WaitForVersion(t.Context(), "3"))
	})
}

// A version at which the informer's view did not change is reached through
// a bookmark carrying it (or any later version).
func TestWaitForVersionReachedByBookmark(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		view := src.Filtered(func(it *item) bool { return it.Group != "hidden" })
		inf := newInformer(t, view, nil)
		start(t, inf)
		require.NoError(t, informer.WaitForSync(t.Context(), inf))

		v, err := src.Put(&item{Name: "h", Group: "hidden"}) // not in the view: no event
		require.NoError(t, err)
		waited := make(chan error, 1)
		go func() { waited <- inf.WaitForVersion(t.Context(), v) }()
		synctest.Wait()
		select {
		case err := <-waited:
			t.Fatalf("returned before the view reached %s: %v", v, err)
		default:
		}
		src.RequestBookmarks()
		require.NoError(t, <-waited)
		assert.Equal(t, 0, inf.Lister().Len())
	})
}

// A wait ended by its context says what it waited for and how far the cache
// got, and wraps the context's error.
func TestWaitForVersionContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		inf := newInformer(t, src, nil)
		start(t, inf)
		applied := putV(t, src, "a", 1)
		require.NoError(t, inf.WaitForVersion(t.Context(), applied))

		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		err := inf.WaitForVersion(ctx, "99")
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.NotErrorIs(t, err, informer.ErrClosed)
		assert.Contains(t, err.Error(), `"99"`)
		assert.Contains(t, err.Error(), `version "`+applied+`"`)

		// A cancelled context still lets an applied version through.
		done, stop := context.WithCancel(t.Context())
		stop()
		require.NoError(t, inf.WaitForVersion(done, applied))
		require.ErrorIs(t, inf.WaitForVersion(done, "99"), context.Canceled)
	})
}

// Waits end with ErrClosed when the informer stops, whether they started
// before or after; versions applied before the stop still succeed.
func TestWaitForVersionClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		inf := newInformer(t, src, nil)
		stop := start(t, inf)
		applied := putV(t, src, "a", 1)
		require.NoError(t, inf.WaitForVersion(t.Context(), applied))

		waited := make(chan error, 1)
		go func() { waited <- inf.WaitForVersion(t.Context(), "99") }()
		synctest.Wait()
		stop()
		err := <-waited
		require.ErrorIs(t, err, informer.ErrClosed)
		assert.Contains(t, err.Error(), `"99"`)

		require.ErrorIs(t, inf.WaitForVersion(t.Context(), "99"), informer.ErrClosed)
		require.NoError(t, inf.WaitForVersion(t.Context(), applied))
	})
}

// Malformed versions are refused before any wait, even on an informer that
// never runs.
func TestWaitForVersionInvalid(t *testing.T) {
	ordered := newInformer(t, newSource(t), nil)
	plain, _ := plainSource()
	unordered := newInformer(t, plain, nil)
	for _, tt := range []struct {
		name    string
		inf     *informer.SharedInformer[string, *item]
		version string
	}{
		{"empty", ordered, ""},
		{"not a revision", ordered, "abc"},
		{"negative", ordered, "-1"},
		{"empty, no comparer", unordered, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.inf.WaitForVersion(t.Context(), tt.version)
			require.ErrorIs(t, err, informer.ErrInvalidVersion)
			assert.Contains(t, err.Error(), strconv.Quote(tt.version))
		})
	}
}

// plainSource is a Source without a VersionComparer: its list is empty at
// version "v0" and its watches are fed by the test through the returned
// channel.
func plainSource() (informer.Source[*item], chan *informer.WatchStream[*item]) {
	streams := make(chan *informer.WatchStream[*item], 1)
	return informer.SourceFuncs[*item]{
		ListFunc: func(context.Context, informer.ListOptions) (informer.ListPage[*item], error) {
			return informer.ListPage[*item]{Version: "v0"}, nil
		},
		WatchFunc: func(ctx context.Context, _ informer.WatchOptions) (informer.Watcher[*item], error) {
			w := informer.NewWatchStream[*item](ctx, 16)
			streams <- w
			return w, nil
		},
	}, streams
}

// Without a VersionComparer the wait is refused at once, whatever the
// informer has received: opaque versions cannot tell "this one or later".
func TestWaitForVersionNeedsAComparer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, streams := plainSource()
		inf := newInformer(t, src, nil)
		start(t, inf)
		<-streams // listed at "v0", watching
		synctest.Wait()
		assert.Equal(t, "v0", inf.LastSyncVersion())
		err := inf.WaitForVersion(t.Context(), "v0")
		require.ErrorIs(t, err, errors.ErrUnsupported)
		assert.Contains(t, err.Error(), `wait for version "v0": the source does not implement VersionComparer`)
	})
}

// Many goroutines wait for many versions at once while a writer writes;
// each sees its own write in the cache.
func TestWaitForVersionConcurrentWaiters(t *testing.T) {
	src := newSource(t)
	inf := newInformer(t, src, nil)
	start(t, inf)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var writers, waiters sync.WaitGroup
	errs := make(chan error, 105)
	// Waiters for a future version, woken as the writers make progress.
	future := strconv.Itoa(1 + 100 + 1) // the store starts at 1; 100 writes, then one more
	for range 5 {
		waiters.Go(func() {
			if err := inf.WaitForVersion(ctx, future); err != nil {
				errs <- err
			}
		})
	}
	for w := range 10 {
		writers.Go(func() {
			for i := range 10 {
				name := fmt.Sprintf("w%d-%d", w, i)
				version, err := src.Put(&item{Name: name, Group: "g", V: i})
				if err == nil {
					err = inf.WaitForVersion(ctx, version)
				}
				if err == nil {
					if got, ok := inf.Lister().Get(name); !ok || got.V != i {
						err = fmt.Errorf("%s not in the cache after version %s", name, version)
					}
				}
				if err != nil {
					errs <- err
				}
			}
		})
	}
	writers.Wait()
	require.Equal(t, future, putV(t, src, "last", 1))
	waiters.Wait()
	_, ok := inf.Lister().Get("last")
	assert.True(t, ok)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// The wait does not return while the batch holding the write is still being
// prepared: the reflector has received the version (LastSyncVersion says
// so) but the cache has not applied it.
func TestWaitForVersionWaitsForTheCache(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		gate := make(chan struct{})
		slow := informer.Index[*item]{Name: "slow", Func: func(dst []string, it *item) ([]string, error) {
			if it.Group == "slow" {
				<-gate
			}
			return append(dst, it.Group), nil
		}}
		inf := newInformer(t, src, func(o *informer.Options[string, *item]) { o.Indexes = append(o.Indexes, slow) })
		start(t, inf)
		require.NoError(t, informer.WaitForSync(t.Context(), inf))

		version, err := src.Put(&item{Name: "s", Group: "slow", V: 1})
		require.NoError(t, err)
		waited := make(chan error, 1)
		go func() { waited <- inf.WaitForVersion(t.Context(), version) }()
		synctest.Wait() // the processing loop is stuck in the index function
		assert.Equal(t, version, inf.LastSyncVersion(), "received")
		select {
		case err := <-waited:
			t.Fatalf("WaitForVersion returned %v before the cache had the object", err)
		default:
		}
		_, ok := inf.Lister().Get("s")
		require.False(t, ok)

		close(gate)
		require.NoError(t, <-waited)
		got, ok := inf.Lister().Get("s")
		require.True(t, ok, "the cache has the object once the wait returns")
		assert.Equal(t, 1, got.V)
	})
}

// Handlers have been handed a change once the wait for its version returns.
func TestWaitForVersionNotificationsQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newSource(t)
		inf := newInformer(t, src, nil)
		gate := make(chan struct{})
		h := &calls{gate: gate}
		reg, err := inf.AddHandler(h, informer.HandlerOptions{})
		require.NoError(t, err)
		start(t, inf)
		require.NoError(t, informer.WaitForSync(t.Context(), inf))
		putV(t, src, "a", 1)
		synctest.Wait() // the handler is stuck delivering "add a"
		require.Zero(t, reg.Backlog())

		version := putV(t, src, "b", 1)
		require.NoError(t, inf.WaitForVersion(t.Context(), version))
		assert.Equal(t, 1, reg.Backlog(), "add b is queued for the handler")
		close(gate)
		synctest.Wait()
		assert.Equal(t, []string{"add a=1", "add b=1"}, h.got())
	})
}
