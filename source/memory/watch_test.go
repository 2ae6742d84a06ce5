package memory_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/memory"
)

// recv returns the next event, failing after a bounded wait.
func recv(t *testing.T, w informer.Watcher[*obj]) (informer.Event[*obj], bool) {
	t.Helper()
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	select {
	case ev, ok := <-w.Events():
		return ev, ok
	case <-timer.C:
		t.Fatal("no event")
		return informer.Event[*obj]{}, false
	}
}

// drain reads until the channel is closed.
func drain(t *testing.T, w informer.Watcher[*obj]) []informer.Event[*obj] {
	t.Helper()
	var evs []informer.Event[*obj]
	for {
		ev, ok := recv(t, w)
		if !ok {
			return evs
		}
		evs = append(evs, ev)
	}
}

// describe renders an event compactly for comparisons.
func describe(ev informer.Event[*obj]) string {
	switch ev.Type {
	case informer.EventBookmark:
		return fmt.Sprintf("Bookmark@%s end=%v", ev.Version, ev.InitialEventsEnd)
	case informer.EventError:
		return fmt.Sprintf("Error %v", ev.Err)
	}
	return fmt.Sprintf("%v %s/%d/%s@%s", ev.Type, ev.Object.Name, ev.Object.Gen, ev.Object.Tier, ev.Version)
}

func TestWatchValidates(t *testing.T) {
	s := newStore(t, memory.Options[string, *obj]{})
	tests := []struct {
		name string
		opts informer.WatchOptions
		want error
	}{
		{"no version", informer.WatchOptions{}, informer.ErrInvalidOptions},
		{"bad version", informer.WatchOptions{Version: "v"}, informer.ErrInvalidOptions},
		{"future", informer.WatchOptions{Version: "2"}, informer.ErrVersionTooLarge},
		{"streaming future", informer.WatchOptions{Version: "2", SendInitialEvents: true}, informer.ErrVersionTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Watch(t.Context(), tt.opts)
			require.ErrorIs(t, err, tt.want)
		})
	}
}

func TestFilteredSynthesis(t *testing.T) {
	s := newStore(t, memory.Options[string, *obj]{})
	tierA := func(o *obj) bool { return o.Tier == "a" }
	f := s.Filtered(tierA)
	putT := func(name string, gen int, tier string) string {
		v, err := s.Put(&obj{Name: name, Gen: gen, Tier: tier})
		require.NoError(t, err)
		return v
	}
	putT("pre", 1, "a")
	putT("other", 1, "b")
	w, err := f.Watch(t.Context(), informer.WatchOptions{Version: s.Version()})
	require.NoError(t, err)
	defer w.Stop()

	var want []string
	v := putT("x", 1, "a") // created matching
	want = append(want, "Added x/1/a@"+v)
	v = putT("x", 2, "a") // matches before and after
	want = append(want, "Modified x/2/a@"+v)
	v = putT("x", 3, "b") // leaves: Deleted with the old state
	want = append(want, "Deleted x/2/a@"+v)
	putT("x", 4, "b")     // outside before and after: nothing
	v = putT("x", 5, "a") // enters
	want = append(want, "Added x/5/a@"+v)
	v, _ = s.Delete("x")
	want = append(want, "Deleted x/5/a@"+v)
	putT("y", 1, "b")
	s.Delete("y")
	v = putT("z", 1, "a")
	want = append(want, "Added z/1/a@"+v)
	for i, w0 := range want {
		ev, ok := recv(t, w)
		require.True(t, ok)
		require.Equal(t, w0, describe(ev), "event %d", i)
	}

	page, err := f.List(t.Context(), informer.ListOptions{Limit: 1})
	require.NoError(t, err)
	got := names(page.Items)
	for page.Continue != "" {
		page, err = f.List(t.Context(), informer.ListOptions{Limit: 1, Continue: page.Continue})
		require.NoError(t, err)
		got = append(got, names(page.Items)...)
	}
	assert.Equal(t, []string{"pre", "z"}, got)

	sw, err := f.Watch(t.Context(), informer.WatchOptions{SendInitialEvents: true})
	require.NoError(t, err)
	defer sw.Stop()
	var initial []string
	for {
		ev, _ := recv(t, sw)
		initial = append(initial, describe(ev))
		if ev.Type == informer.EventBookmark {
			break
		}
	}
	cur := s.Version()
	assert.Equal(t, []string{"Added pre/1/a@" + cur, "Added z/1/a@" + cur, "Bookmark@" + cur + " end=true"}, initial)
}

func TestSlowWatcherIsClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStore(t, memory.Options[string, *obj]{WatchBuffer: 2, SlowWatcherTimeout: time.Second})
		w, err := s.Watch(t.Context(), informer.WatchOptions{Version: s.Version()})
		require.NoError(t, err)
		for i := range 5 {
			put(t, s, fmt.Sprint(i), 1)
		}
		synctest.Wait() // the watcher is blocked on its third event
		time.Sleep(2 * time.Second)
		synctest.Wait()
		evs := drain(t, w)
		require.Len(t, evs, 2, "the buffered events, then closed without an Error event")
		assert.Equal(t, "Added 0/1/@2", describe(evs[0]))
		assert.Equal(t, "Added 1/1/@3", describe(evs[1]))
	})
}

func TestSlowWatcherFallsOutOfHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStore(t, memory.Options[string, *obj]{WatchBuffer: 1, HistorySize: 3, SlowWatcherTimeout: -1})
		w, err := s.Watch(t.Context(), informer.WatchOptions{Version: s.Version()})
		require.NoError(t, err)
		put(t, s, "a", 1)
		synctest.Wait() // first event buffered, watcher idle
		put(t, s, "b", 1)
		synctest.Wait() // watcher blocked sending the second
		for i := range 5 {
			put(t, s, fmt.Sprint(i), 1)
		}
		evs := drain(t, w)
		require.Len(t, evs, 3)
		assert.Equal(t, "Added a/1/@2", describe(evs[0]))
		assert.Equal(t, "Added b/1/@3", describe(evs[1]))
		require.Equal(t, informer.EventError, evs[2].Type)
		require.ErrorIs(t, evs[2].Err, informer.ErrExpired)

		_, err = s.Watch(t.Context(), informer.WatchOptions{Version: "2"})
		require.ErrorIs(t, err, informer.ErrExpired, "history holds versions 6..8")
		_, err = s.List(t.Context(), informer.ListOptions{Mode: informer.ReadExact, Version: "4"})
		require.ErrorIs(t, err, informer.ErrExpired)
	})
}

func TestPeriodicBookmarksAndTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newStore(t, memory.Options[string, *obj]{BookmarkInterval: time.Second})
		f := s.Filtered(func(o *obj) bool { return o.Tier == "a" })
		w, err := f.Watch(t.Context(), informer.WatchOptions{Version: s.Version(), Timeout: 2500 * time.Millisecond})
		require.NoError(t, err)
		put(t, s, "x", 1) // filtered out
		time.Sleep(1100 * time.Millisecond)
		put(t, s, "y", 1)
		evs := drain(t, w) // two bookmarks, then the timeout ends the stream
		got := make([]string, len(evs))
		for i, ev := range evs {
			got[i] = describe(ev)
		}
		assert.Equal(t, []string{"Bookmark@2 end=false", "Bookmark@3 end=false"}, got)
	})
}

func TestFaultInjection(t *testing.T) {
	s := newStore(t, memory.Options[string, *obj]{})
	boom := fmt.Errorf("boom: %w", informer.ErrTransient)

	s.FailNextList(boom)
	_, err := s.List(t.Context(), informer.ListOptions{})
	require.ErrorIs(t, err, boom)
	_, err = s.List(t.Context(), informer.ListOptions{})
	require.NoError(t, err, "one-shot")

	s.FailNextWatch(boom)
	_, err = s.Filtered(nil).Watch(t.Context(), informer.WatchOptions{Version: s.Version()})
	require.ErrorIs(t, err, boom)

	open := func() informer.Watcher[*obj] {
		w, err := s.Watch(t.Context(), informer.WatchOptions{Version: s.Version()})
		require.NoError(t, err)
		t.Cleanup(w.Stop)
		return w
	}
	w := open()
	s.DropWatches()
	for _, ev := range drain(t, w) {
		require.NotEqual(t, informer.EventError, ev.Type)
	}

	w1, w2 := open(), open()
	s.BreakWatches(boom)
	for _, w := range []informer.Watcher[*obj]{w1, w2} {
		evs := drain(t, w)
		require.Len(t, evs, 1)
		require.Equal(t, informer.EventError, evs[0].Type)
		require.ErrorIs(t, evs[0].Err, boom)
	}
	w = open()
	s.BreakWatches(nil)
	evs := drain(t, w)
	require.Len(t, evs, 1)
	require.ErrorIs(t, evs[0].Err, informer.ErrTransient)

	s.SetDelay(time.Hour)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = s.List(ctx, informer.ListOptions{})
	require.ErrorIs(t, err, context.Canceled)
	_, err = s.Watch(ctx, informer.WatchOptions{Version: s.Version()})
	require.ErrorIs(t, err, context.Canceled)
	s.SetDelay(time.Millisecond)
	_, err = s.List(t.Context(), informer.ListOptions{})
	require.NoError(t, err)
	s.SetDelay(0)
}

// Writers race many watchers: every watcher's stream is the history, as
// replayed afterwards, and each writer's changes appear in its order.
func TestConcurrentWritersAndWatchers(t *testing.T) {
	const writers, ops, watchers = 4, 300, 8
	s := newStore(t, memory.Options[string, *obj]{WatchBuffer: 3})
	start := s.Version()
	streams := make([][]string, watchers)
	var readers sync.WaitGroup
	for i := range watchers {
		w, err := s.Watch(t.Context(), informer.WatchOptions{Version: start})
		require.NoError(t, err)
		readers.Go(func() {
			defer w.Stop()
			for ev := range w.Events() {
				if ev.Type == informer.EventError {
					streams[i] = append(streams[i], describe(ev))
					return
				}
				if ev.Type == informer.EventBookmark {
					continue
				}
				streams[i] = append(streams[i], describe(ev))
				if ev.Object.Name == "done" {
					return
				}
			}
		})
	}
	var wg sync.WaitGroup
	for wr := range writers {
		wg.Go(func() {
			for i := range ops {
				name := fmt.Sprintf("w%d-%d", wr, i%7)
				if i%5 == 4 {
					s.Delete(name)
					continue
				}
				if _, err := s.Put(&obj{Name: name, Gen: i}); err != nil {
					panic(err)
				}
			}
		})
	}
	wg.Wait()
	put(t, s, "done", 1)
	readers.Wait()

	replay, err := s.Watch(t.Context(), informer.WatchOptions{Version: start})
	require.NoError(t, err)
	defer replay.Stop()
	var history []string
	lastGen := map[string]int{}
	for ev := range replay.Events() {
		history = append(history, describe(ev))
		if ev.Type != informer.EventDeleted {
			if last, ok := lastGen[ev.Object.Name]; ok {
				require.Greater(t, ev.Object.Gen, last, "writer order of %s", ev.Object.Name)
			}
			lastGen[ev.Object.Name] = ev.Object.Gen
		}
		if ev.Object != nil && ev.Object.Name == "done" {
			break
		}
	}
	for i := range history {
		require.Equal(t, fmt.Sprint(int64(i)+2), versionOf(history[i]), "versions are consecutive")
	}
	for i, st := range streams {
		require.Equal(t, history, st, "watcher %d", i)
	}
}

func versionOf(desc string) string {
	for i := len(desc) - 1; i >= 0; i-- {
		if desc[i] == '@' {
			return desc[i+1:]
		}
	}
	return ""
}
