package sourcetest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
)

// checkWatchFromList: a watch from a list's version sees exactly the later
// changes, in order, once each, with the versions of their writes; Deleted
// carries the last state.
func checkWatchFromList[T any](k *kit[T]) {
	k.create("a")
	k.create("b")
	_, v := k.listAll(informer.ListOptions{})
	s := k.watch(k.ctx, informer.WatchOptions{Version: v})
	vc1 := k.create("c")
	va2 := k.update("a")
	vb := k.del("b")
	vc2 := k.update("c")
	vc := k.del("c")
	va3 := k.update("a")
	s.expect(
		change{informer.EventAdded, "c", 1, vc1},
		change{informer.EventModified, "a", 2, va2},
		change{informer.EventDeleted, "b", 1, vb},
		change{informer.EventModified, "c", 2, vc2},
		change{informer.EventDeleted, "c", 2, vc},
		change{informer.EventModified, "a", 3, va3},
	)
	// Nothing else came in between: the next change is the next write.
	vz := k.create("z")
	s.expect(change{informer.EventAdded, "z", 1, vz})
}

// checkWatchReplay: a watch from an older version first replays the changes
// after it, then continues live.
func checkWatchReplay[T any](k *kit[T]) {
	v1 := k.create("a")
	v2 := k.update("a")
	v3 := k.create("b")
	v4 := k.del("a")
	s := k.watch(k.ctx, informer.WatchOptions{Version: v1})
	s.expect(
		change{informer.EventModified, "a", 2, v2},
		change{informer.EventAdded, "b", 1, v3},
		change{informer.EventDeleted, "a", 2, v4},
	)
	v5 := k.update("b")
	s.expect(change{informer.EventModified, "b", 2, v5})

	// Two watches from the same version see the same stream.
	s2 := k.watch(k.ctx, informer.WatchOptions{Version: v3})
	s2.expect(change{informer.EventDeleted, "a", 2, v4}, change{informer.EventModified, "b", 2, v5})
}

// checkWatchConcurrentWrites: while a writer races a watch opened before it,
// the watch sees every write once, in the writer's order.
func checkWatchConcurrentWrites[T any](k *kit[T]) {
	_, v := k.listAll(informer.ListOptions{})
	s := k.watch(k.ctx, informer.WatchOptions{Version: v})
	const n = 50
	type write struct {
		c   change
		err error
	}
	writes := make(chan write, 3*n)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(writes)
		for i := range n {
			name := fmt.Sprintf("w%02d", i)
			v, err := k.h.Create(k.ctx, name)
			writes <- write{change{informer.EventAdded, name, 1, v}, err}
			if i%2 == 0 {
				v, err = k.h.Update(k.ctx, name)
				writes <- write{change{informer.EventModified, name, 2, v}, err}
			}
			if i%3 == 0 {
				v, err = k.h.Delete(k.ctx, name)
				gen := 1
				if i%2 == 0 {
					gen = 2
				}
				writes <- write{change{informer.EventDeleted, name, gen, v}, err}
			}
		}
	})
	defer wg.Wait()
	for w := range writes {
		require.NoError(k.t, w.err, "write %v", w.c)
		s.expect(w.c)
	}
}

// checkBookmarks: bookmarks carry versions that never go backwards and do
// not reorder the changes around them.
func checkBookmarks[T any](k *kit[T]) {
	if k.h.Bookmark == nil {
		k.t.Skip("harness: no Bookmark hook")
	}
	_, v := k.listAll(informer.ListOptions{})
	s := k.watch(k.ctx, informer.WatchOptions{Version: v})
	var last string
	for round := range 3 {
		name := fmt.Sprintf("b%d", round)
		vc := k.create(name)
		s.expect(change{informer.EventAdded, name, 1, vc})
		require.NoError(k.t, k.h.Bookmark(k.ctx))
		ev, ok := s.next() // checks versions never go back
		require.True(k.t, ok, "stream closed")
		require.Equal(k.t, informer.EventBookmark, ev.Type, "round %d: want a bookmark, got %v", round, ev.Type)
		require.False(k.t, ev.InitialEventsEnd, "InitialEventsEnd on a plain watch")
		if c := k.h.CompareVersions; c != nil {
			require.GreaterOrEqual(k.t, c(ev.Version, vc), 0, "bookmark %s before the delivered change %s", ev.Version, vc)
			if last != "" {
				require.GreaterOrEqual(k.t, c(ev.Version, last), 0, "bookmark %s before bookmark %s", ev.Version, last)
			}
		}
		last = ev.Version
	}
	vu := k.update("b0")
	s.expect(change{informer.EventModified, "b0", 2, vu})
}

// checkCancel: cancelling the watch's context closes the stream promptly,
// whether it is idle or has undelivered events.
func checkCancel[T any](k *kit[T]) {
	_, v := k.listAll(informer.ListOptions{})
	for _, busy := range []bool{false, true} {
		ctx, cancel := context.WithCancel(k.ctx)
		s := k.watch(ctx, informer.WatchOptions{Version: v})
		if busy {
			for i := range 5 {
				k.create(fmt.Sprintf("c%d", i))
			}
		}
		cancel()
		s.expectClosed()
	}
}

// checkStop: Stop closes the stream promptly and is idempotent, also when
// called concurrently.
func checkStop[T any](k *kit[T]) {
	_, v := k.listAll(informer.ListOptions{})
	s := k.watch(k.ctx, informer.WatchOptions{Version: v})
	k.create("a")
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(s.w.Stop)
	}
	wg.Wait()
	s.expectClosed()
	s.w.Stop()
}

// checkStreamingList: SendInitialEvents gives an Added event per object,
// then a Bookmark with InitialEventsEnd, then the later changes.
func checkStreamingList[T any](k *kit[T]) {
	if k.h.DisableStreamingList {
		w, err := k.h.Source.Watch(k.ctx, informer.WatchOptions{SendInitialEvents: true})
		if err == nil {
			w.Stop()
		}
		require.True(k.t, isUnsupported(err), "streaming list disabled: want errors.ErrUnsupported, got %v", err)
		return
	}
	k.create("a")
	va := k.update("a")
	k.create("b")
	k.create("c")
	k.del("c")
	for _, version := range []string{"", va} {
		w, err := k.h.Source.Watch(k.ctx, informer.WatchOptions{SendInitialEvents: true, Version: version})
		require.False(k.t, isUnsupported(err), "streaming list unsupported: set Harness.DisableStreamingList")
		require.NoError(k.t, err)
		s := &stream[T]{k: k, w: w}
		got := map[string]int{}
		for {
			ev, ok := s.next()
			require.True(k.t, ok, "stream closed during the initial events")
			require.NotEqual(k.t, informer.EventError, ev.Type, "error event: %v", ev.Err)
			if ev.Type == informer.EventBookmark {
				if ev.InitialEventsEnd {
					break
				}
				continue
			}
			require.Equal(k.t, informer.EventAdded, ev.Type, "initial event type")
			name := k.h.Name(ev.Object)
			_, dup := got[name]
			require.False(k.t, dup, "initial events: %s twice", name)
			got[name] = k.h.Generation(ev.Object)
		}
		require.Equal(k.t, map[string]int{"a": 2, "b": 1}, got, "initial events from version %q", version)
		vd := k.create("d" + version)
		s.expect(change{informer.EventAdded, "d" + version, 1, vd})
		w.Stop()
		s.expectClosed()
		k.del("d" + version)
	}
}

// checkWatchTimeout: a watch with a Timeout ends normally after about that
// long: closed, without an Error event.
func checkWatchTimeout[T any](k *kit[T]) {
	_, v := k.listAll(informer.ListOptions{})
	start := time.Now()
	s := k.watch(k.ctx, informer.WatchOptions{Version: v, Timeout: 100 * time.Millisecond})
	s.expectClosed()
	require.GreaterOrEqual(k.t, time.Since(start), 50*time.Millisecond, "closed long before the timeout")
}
