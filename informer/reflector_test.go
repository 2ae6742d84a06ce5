package informer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runReflector starts r.Run in the bubble and returns a stop function that
// cancels it and checks that Run returned nil.
func runReflector(t *testing.T, r *Reflector[string]) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var runErr error
	wg.Go(func() { runErr = r.Run(ctx) })
	return func() {
		cancel()
		wg.Wait()
		if !errors.Is(runErr, context.Canceled) { // a stop before Run began: Run refuses the done context
			require.NoError(t, runErr)
		}
	}
}

func newTestReflector(t *testing.T, src Source[string], store ReflectorStore[string], mod func(*ReflectorOptions[string])) *Reflector[string] {
	t.Helper()
	opts := ReflectorOptions[string]{Source: src, Store: store, Name: "test"}
	if mod != nil {
		mod(&opts)
	}
	r, err := NewReflector(opts)
	require.NoError(t, err)
	return r
}

func TestNewReflectorValidates(t *testing.T) {
	_, err := NewReflector(ReflectorOptions[string]{Store: &recordStore{}})
	require.ErrorIs(t, err, ErrInvalidOptions)
	_, err = NewReflector(ReflectorOptions[string]{Source: newScriptSource()})
	require.ErrorIs(t, err, ErrInvalidOptions)
	_, err = NewReflector(ReflectorOptions[string]{Source: newScriptSource(), Store: &recordStore{}, ResyncPeriod: -1})
	require.ErrorIs(t, err, ErrInvalidOptions)
	_, err = NewReflector(ReflectorOptions[string]{Source: newScriptSource(), Store: &recordStore{},
		ListWatchOptions: ListWatchOptions{MinWatchTimeout: -1}})
	require.ErrorIs(t, err, ErrInvalidOptions)
}

func TestReflectorListThenWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newScriptSource(), &recordStore{}
		r := newTestReflector(t, src, store, nil)
		stop := runReflector(t, r)
		w := <-src.streams
		require.Equal(t, "10", r.LastSyncVersion())
		require.True(t, w.Send(Event[string]{Type: EventAdded, Object: "c", Version: "11"}))
		require.True(t, w.Send(Event[string]{Type: EventModified, Object: "a", Version: "12"}))
		require.True(t, w.Send(Event[string]{Type: EventBookmark, Version: "13"}))
		require.True(t, w.Send(Event[string]{Type: EventDeleted, Object: "b", Version: "14"}))
		synctest.Wait()
		stop()
		assert.Equal(t, []string{"replace [a b] @10", "add c", "update a", "delete b"}, store.calls())
		assert.Equal(t, "14", r.LastSyncVersion())
		lists := src.listCalls()
		require.Len(t, lists, 1)
		assert.Equal(t, ListOptions{Mode: ReadAny, Limit: 500}, lists[0], "the first list may be served from a cache")
		watches := src.watchCalls()
		require.Len(t, watches, 2, "a streaming list is tried first, then the plain watch")
		assert.True(t, watches[0].SendInitialEvents)
		assert.Equal(t, "10", watches[1].Version)
		assert.GreaterOrEqual(t, watches[1].Timeout, 5*time.Minute)
		assert.LessOrEqual(t, watches[1].Timeout, 10*time.Minute)
	})
}

// TestReflectorRecordsVersions: a store that applies events itself (the
// informer's) records each event's version and is told each bookmark's.
func TestReflectorRecordsVersions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newScriptSource(), &applierStore{}
		r := newTestReflector(t, src, store, nil)
		stop := runReflector(t, r)
		w := <-src.streams
		require.True(t, w.Send(Event[string]{Type: EventAdded, Object: "c", Version: "11"}))
		require.True(t, w.Send(Event[string]{Type: EventModified, Object: "a", Version: "12"}))
		require.True(t, w.Send(Event[string]{Type: EventBookmark, Version: "13"}))
		require.True(t, w.Send(Event[string]{Type: EventDeleted, Object: "b", Version: "14"}))
		synctest.Wait()
		stop()
		assert.Equal(t, []string{"replace [a b] @10", "add c", "update a", "delete b"}, store.calls())
		assert.Equal(t, []string{"11", "12", "13", "14"}, store.recorded(), "every event's version, bookmarks too")
	})
}

func TestReflectorRewatchesAfterNormalCloseWithoutRelist(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newScriptSource(), &recordStore{}
		r := newTestReflector(t, src, store, func(o *ReflectorOptions[string]) { o.DisableStreamingList = true })
		stop := runReflector(t, r)
		w := <-src.streams
		require.True(t, w.Send(Event[string]{Type: EventAdded, Object: "c", Version: "11"}))
		w.Close() // normal end, after an event
		w2 := <-src.streams
		time.Sleep(2 * time.Second) // a long-lived watch with no events
		w2.Close()
		w3 := <-src.streams
		synctest.Wait()
		stop()
		_ = w3
		assert.Len(t, src.listCalls(), 1, "no relist after a normal close")
		watches := src.watchCalls()
		require.Len(t, watches, 3)
		assert.Equal(t, "11", watches[1].Version, "re-watch from the last version seen")
		assert.Equal(t, "11", watches[2].Version)
	})
}

func TestReflectorVeryShortWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newScriptSource(), &recordStore{}
		var errs []error
		var mu sync.Mutex
		r := newTestReflector(t, src, store, func(o *ReflectorOptions[string]) {
			o.DisableStreamingList = true
			o.ErrorHandler = func(_ context.Context, err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }
		})
		stop := runReflector(t, r)
		// A server shutting down closes the watch at once, with no events:
		// the reflector backs off and watches again from the last version.
		// Only a run of maxShortWatches relists.
		for i := range maxShortWatches {
			w := <-src.streams
			w.Close() // at once, with no events
			if i < maxShortWatches-1 {
				synctest.Wait()
				assert.Len(t, src.listCalls(), 1, "very short watch %d: a re-watch, no relist", i+1)
			}
		}
		<-src.streams
		synctest.Wait()
		stop()
		require.Len(t, errs, maxShortWatches)
		var short *VeryShortWatchError
		require.ErrorAs(t, errs[0], &short)
		assert.Equal(t, "test", short.Name)
		assert.Len(t, src.listCalls(), 2, "a run of very short watches leads to a relist")
	})
}

// TestReflectorVeryShortWatchThenEvents: a very short watch followed by a
// watch that delivers starts the count again.
func TestReflectorVeryShortWatchThenEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newScriptSource(), &recordStore{}
		r := newTestReflector(t, src, store, func(o *ReflectorOptions[string]) { o.DisableStreamingList = true })
		stop := runReflector(t, r)
		for round := range 3 {
			for range maxShortWatches - 1 {
				w := <-src.streams
				w.Close()
			}
			w := <-src.streams
			w.Send(Event[string]{Type: EventAdded, Object: fmt.Sprint(round), Version: fmt.Sprint(20 + round)})
			time.Sleep(2 * time.Second)
			w.Close()
		}
		<-src.streams
		synctest.Wait()
		stop()
		assert.Len(t, src.listCalls(), 1, "never a run of maxShortWatches: no relist")
	})
}

func TestReflectorRelistVersionChoice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newScriptSource(), &recordStore{}
		src.listFn = func(n int, opts ListOptions) (ListPage[string], error) {
			switch n {
			case 2: // the relist at the last version finds it expired
				return ListPage[string]{}, fmt.Errorf("gone: %w", ErrExpired)
			}
			return ListPage[string]{Items: []string{"a"}, Version: fmt.Sprint(10 * n)}, nil
		}
		r := newTestReflector(t, src, store, func(o *ReflectorOptions[string]) { o.DisableStreamingList = true })
		stop := runReflector(t, r)
		w := <-src.streams
		require.True(t, w.Send(Event[string]{Type: EventModified, Object: "a", Version: "15"}))
		require.True(t, w.Send(Event[string]{Type: EventError, Err: fmt.Errorf("too old: %w", ErrExpired)}))
		w2 := <-src.streams
		require.True(t, w2.Send(Event[string]{Type: EventError, Err: fmt.Errorf("too old: %w", ErrExpired)}))
		<-src.streams
		synctest.Wait()
		stop()
		lists := src.listCalls()
		require.Len(t, lists, 4)
		assert.Equal(t, ReadAny, lists[0].Mode)
		assert.Equal(t, ListOptions{Mode: ReadNotOlderThan, Version: "15", Limit: 500}, lists[1])
		assert.Equal(t, ReadLatest, lists[2].Mode, "after ErrExpired: a consistent read, at once")
		assert.Equal(t, ListOptions{Mode: ReadNotOlderThan, Version: "30", Limit: 500}, lists[3], "then back to normal")
	})
}

func TestReflectorPagination(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newScriptSource(), &recordStore{}
		src.listFn = func(n int, opts ListOptions) (ListPage[string], error) {
			switch {
			case opts.Continue == "" && opts.Limit == 2:
				return ListPage[string]{Items: []string{"a", "b"}, Version: "7", Continue: "p2"}, nil
			case opts.Continue == "p2" && n == 2:
				return ListPage[string]{}, fmt.Errorf("continue expired: %w", ErrExpired)
			case opts.Continue == "" && opts.Limit == 0:
				return ListPage[string]{Items: []string{"a", "b", "c"}, Version: "8"}, nil
			}
			return ListPage[string]{}, fmt.Errorf("unexpected list %d %+v", n, opts)
		}
		r := newTestReflector(t, src, store, func(o *ReflectorOptions[string]) { o.DisableStreamingList = true; o.PageSize = 2 })
		stop := runReflector(t, r)
		<-src.streams
		stop()
		assert.Equal(t, []string{"replace [a b c] @8"}, store.calls(), "an expired continue token falls back to a full list")
	})
}

func TestReflectorPagesAreJoined(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newScriptSource(), &recordStore{}
		src.listFn = func(n int, opts ListOptions) (ListPage[string], error) {
			if opts.Continue == "" {
				return ListPage[string]{Items: []string{"a"}, Version: "7", Continue: "x"}, nil
			}
			return ListPage[string]{Items: []string{"b"}, Version: "7"}, nil
		}
		r := newTestReflector(t, src, store, func(o *ReflectorOptions[string]) { o.DisableStreamingList = true; o.PageSize = 1 })
		stop := runReflector(t, r)
		<-src.streams
		stop()
		assert.Equal(t, []string{"replace [a b] @7"}, store.calls())
	})
}

func TestReflectorBackoffGrowsAndResets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newScriptSource(), &recordStore{}
		var times []time.Time
		var mu sync.Mutex
		failing := true
		src.listFn = func(n int, opts ListOptions) (ListPage[string], error) {
			mu.Lock()
			defer mu.Unlock()
			times = append(times, time.Now())
			if failing {
				return ListPage[string]{}, errors.New("boom")
			}
			return ListPage[string]{Items: []string{"a"}, Version: "1"}, nil
		}
		r := newTestReflector(t, src, store, func(o *ReflectorOptions[string]) {
			o.DisableStreamingList = true
			o.ErrorHandler = func(context.Context, error) {}
		})
		stop := runReflector(t, r)
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		mu.Lock()
		gaps := make([]time.Duration, 0, len(times))
		for i := 1; i < len(times); i++ {
			gaps = append(gaps, times[i].Sub(times[i-1]))
		}
		failing = false
		mu.Unlock()
		want := 800 * time.Millisecond
		for i, g := range gaps {
			assert.GreaterOrEqual(t, g, want, "gap %d", i)
			assert.LessOrEqual(t, g, 2*want, "gap %d (jitter at most 1.0)", i)
			want = min(2*want, 30*time.Second)
		}
		require.Greater(t, len(gaps), 8, "the delay reaches its cap")
		// Now healthy: the next list succeeds and its watch lives long.
		w := <-src.streams
		time.Sleep(3 * time.Minute)
		failedAt := time.Now()
		require.True(t, w.Send(Event[string]{Type: EventError, Err: errors.New("broken")}))
		<-src.streams
		stop()
		mu.Lock()
		defer mu.Unlock()
		// The relist after a healthy period waits the initial delay again.
		relistDelay := times[len(times)-1].Sub(failedAt)
		assert.GreaterOrEqual(t, relistDelay, 800*time.Millisecond)
		assert.LessOrEqual(t, relistDelay, 1600*time.Millisecond)
	})
}

func TestReflectorBackoffResetsAfterHealthyPeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackoffTimer(Backoff{Jitter: -1})
		assert.Equal(t, 800*time.Millisecond, b.delay())
		assert.Equal(t, 1600*time.Millisecond, b.delay())
		assert.Equal(t, 3200*time.Millisecond, b.delay())
		for range 10 {
			b.delay()
		}
		assert.Equal(t, 30*time.Second, b.delay(), "capped")
		time.Sleep(2 * time.Minute)
		assert.Equal(t, 800*time.Millisecond, b.delay(), "reset after 2 minutes of health")
	})
}

func TestReflectorResyncCadence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newScriptSource(), &recordStore{}
		var allow sync.Mutex
		skip := false
		r := newTestReflector(t, src, store, func(o *ReflectorOptions[string]) {
			o.DisableStreamingList = true
			o.ResyncPeriod = 30 * time.Second
			o.ShouldResync = func() bool { allow.Lock(); defer allow.Unlock(); return !skip }
		})
		stop := runReflector(t, r)
		w := <-src.streams
		time.Sleep(95 * time.Second)
		synctest.Wait()
		assert.Equal(t, 3, store.count("resync"))
		allow.Lock()
		skip = true
		allow.Unlock()
		time.Sleep(60 * time.Second)
		synctest.Wait()
		assert.Equal(t, 3, store.count("resync"), "ShouldResync false skips")
		_ = w
		stop()
	})
}

func TestReflectorTransientWatchErrorRewatchesWithoutRelist(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newScriptSource(), &recordStore{}
		base := src.watchFn
		src.watchFn = func(ctx context.Context, n int, opts WatchOptions) (Watcher[string], error) {
			if n == 1 {
				return nil, fmt.Errorf("connection refused: %w", ErrTransient)
			}
			return base(ctx, n, opts)
		}
		r := newTestReflector(t, src, store, func(o *ReflectorOptions[string]) { o.DisableStreamingList = true })
		stop := runReflector(t, r)
		w := <-src.streams
		require.True(t, w.Send(Event[string]{Type: EventAdded, Object: "x", Version: "11"}))
		require.True(t, w.Send(Event[string]{Type: EventError, Err: fmt.Errorf("429: %w", ErrTransient)}))
		<-src.streams
		stop()
		assert.Len(t, src.listCalls(), 1, "transient errors never relist")
		watches := src.watchCalls()
		require.Len(t, watches, 3)
		assert.Equal(t, "10", watches[1].Version)
		assert.Equal(t, "11", watches[2].Version)
	})
}

func TestReflectorInternalErrorRetryIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newScriptSource(), &recordStore{}
		r := newTestReflector(t, src, store, func(o *ReflectorOptions[string]) {
			o.DisableStreamingList = true
			o.MaxInternalErrorRetryDuration = 10 * time.Second
			o.Backoff = Backoff{Initial: time.Second, Factor: 1, Jitter: -1}
			o.ErrorHandler = func(context.Context, error) {}
		})
		stop := runReflector(t, r)
		for time.Since(time.Time{}) > 0 {
			w := <-src.streams
			if len(src.listCalls()) > 1 {
				break
			}
			require.True(t, w.Send(Event[string]{Type: EventError, Err: fmt.Errorf("500: %w", ErrInternal)}))
		}
		stop()
		// Retries one second apart for 10 seconds, then a relist.
		assert.InDelta(t, 12, len(src.watchCalls()), 1)
	})
}

func TestReflectorStreamingList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newScriptSource(), &recordStore{}
		src.watchFn = func(ctx context.Context, _ int, opts WatchOptions) (Watcher[string], error) {
			w := NewWatchStream[string](ctx, 0)
			src.streams <- w
			return w, nil
		}
		r := newTestReflector(t, src, store, nil)
		stop := runReflector(t, r)
		w := <-src.streams
		require.True(t, w.Send(Event[string]{Type: EventAdded, Object: "b", Version: "9"}))
		require.True(t, w.Send(Event[string]{Type: EventAdded, Object: "a", Version: "7"}))
		synctest.Wait()
		assert.Empty(t, store.calls(), "nothing is applied before the end marker")
		assert.Equal(t, "", r.LastSyncVersion())
		require.True(t, w.Send(Event[string]{Type: EventBookmark, Version: "9", InitialEventsEnd: true}))
		require.True(t, w.Send(Event[string]{Type: EventModified, Object: "a", Version: "12"}))
		synctest.Wait()
		stop()
		assert.Equal(t, []string{"replace [b a] @9", "update a"}, store.calls(), "the same stream goes on as the watch")
		assert.Empty(t, src.listCalls())
		require.Len(t, src.watchCalls(), 1)
		assert.True(t, src.watchCalls()[0].SendInitialEvents)
		assert.Equal(t, "", src.watchCalls()[0].Version)
	})
}

func TestReflectorStreamingListStallFallsBackToList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newScriptSource(), &recordStore{}
		src.watchFn = func(ctx context.Context, _ int, opts WatchOptions) (Watcher[string], error) {
			w := NewWatchStream[string](ctx, 0)
			src.streams <- w
			return w, nil
		}
		r := newTestReflector(t, src, store, nil)
		stop := runReflector(t, r)
		start := time.Now()
		w := <-src.streams
		require.True(t, w.Send(Event[string]{Type: EventAdded, Object: "x", Version: "3"}))
		// The end marker never comes: after 10 s of silence, a plain list.
		w2 := <-src.streams
		assert.Equal(t, 10*time.Second, time.Since(start))
		assert.False(t, src.watchCalls()[1].SendInitialEvents)
		select {
		case <-w.Done():
		default:
			t.Error("the stalled stream was not stopped")
		}
		_ = w2
		stop()
		assert.Equal(t, []string{"replace [a b] @10"}, store.calls())
		assert.Len(t, src.listCalls(), 1)
	})
}

func TestReflectorStreamingUnsupportedIsRemembered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newScriptSource(), &recordStore{}
		r := newTestReflector(t, src, store, func(o *ReflectorOptions[string]) { o.ErrorHandler = func(context.Context, error) {} })
		stop := runReflector(t, r)
		w := <-src.streams
		require.True(t, w.Send(Event[string]{Type: EventError, Err: fmt.Errorf("%w", ErrExpired)}))
		<-src.streams
		stop()
		var streaming int
		for _, c := range src.watchCalls() {
			if c.SendInitialEvents {
				streaming++
			}
		}
		assert.Equal(t, 1, streaming, "after ErrUnsupported the reflector never asks again")
	})
}

func TestReflectorListPanicSurfaces(t *testing.T) {
	src, store := newScriptSource(), &recordStore{}
	src.listFn = func(int, ListOptions) (ListPage[string], error) { panic("list exploded") }
	r := newTestReflector(t, src, store, func(o *ReflectorOptions[string]) { o.DisableStreamingList = true })
	assert.PanicsWithValue(t, "list exploded", func() { _ = r.Run(t.Context()) })
}

func TestReflectorCancelDuringSlowList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newScriptSource(), &recordStore{}
		release := make(chan struct{})
		src.listFn = func(int, ListOptions) (ListPage[string], error) {
			<-release // a source that ignores ctx
			return ListPage[string]{}, nil
		}
		r := newTestReflector(t, src, store, func(o *ReflectorOptions[string]) { o.DisableStreamingList = true })
		ctx, cancel := context.WithCancel(t.Context())
		returned := make(chan error, 1)
		go func() { returned <- r.ListAndWatch(ctx) }()
		synctest.Wait()
		cancel()
		synctest.Wait()
		select {
		case err := <-returned:
			require.NoError(t, err, "ListAndWatch returns nil when ctx is done")
		default:
			t.Error("ListAndWatch did not return while the list was still running")
		}
		close(release)
		r.lists.Wait()
		assert.Empty(t, store.calls(), "a list that completes after cancel is not applied")
	})
}

func TestReflectorStoreErrorsAreReportedAndSkipped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src, store := newScriptSource(), &recordStore{failAdd: fmt.Errorf("bad key: %w", ErrKeyFunc)}
		var errs []error
		var mu sync.Mutex
		r := newTestReflector(t, src, store, func(o *ReflectorOptions[string]) {
			o.DisableStreamingList = true
			o.ErrorHandler = func(_ context.Context, err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }
		})
		stop := runReflector(t, r)
		w := <-src.streams
		require.True(t, w.Send(Event[string]{Type: EventAdded, Object: "bad", Version: "11"}))
		require.True(t, w.Send(Event[string]{Type: EventModified, Object: "a", Version: "12"}))
		synctest.Wait()
		stop()
		require.Len(t, errs, 1)
		assert.ErrorIs(t, errs[0], ErrKeyFunc)
		assert.Contains(t, errs[0].Error(), `"11"`)
		assert.Equal(t, "12", r.LastSyncVersion(), "the watch keeps going")
	})
}
