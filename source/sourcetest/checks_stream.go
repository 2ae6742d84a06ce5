package sourcetest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
)

// checkCancel: cancelling the watch's context closes the stream promptly,
// whether it is idle or has undelivered events.
func checkCancel[T any](k *kit[T]) {
	_, v := k.listAll(informer.ListOptions{})
	for _, busy := range []bool{false, true} {
		ctx, cancel := context.WithCancel(k.ctx)
		s := k.watch(ctx, informer.WatchOptions{Version: v})
		after := "its context was cancelled (idle stream)"
		if busy {
			for i := range 5 {
				k.create(fmt.Sprintf("c%d", i))
			}
			after = "its context was cancelled (5 events undelivered)"
		}
		cancel()
		s.expectClosed(after)
	}
}

// checkStop: Stop closes the stream promptly and is idempotent, also when
// called concurrently.
func checkStop[T any](k *kit[T]) {
	_, v := k.listAll(informer.ListOptions{})
	s := k.watch(k.ctx, informer.WatchOptions{Version: v})
	k.create("a")
	var wg sync.WaitGroup
	panics := make(chan any, 3)
	for range 3 {
		wg.Go(func() {
			if p := safeStop(s.w); p != nil {
				panics <- p
			}
		})
	}
	wg.Wait()
	close(panics)
	for p := range panics {
		k.t.Fatalf("%s: Stop panicked when called three times concurrently: %v; the contract requires Stop to be "+
			"idempotent and safe to call concurrently", s.desc, p)
	}
	s.expectClosed("Stop")
	if p := safeStop(s.w); p != nil {
		k.t.Fatalf("%s: Stop panicked when called after the stream closed: %v; the contract requires Stop to be "+
			"idempotent", s.desc, p)
	}
}

// initialEvents reads the initial events of a streaming list up to its
// InitialEventsEnd bookmark, checking each is an Added of a new object, and
// returns the state they give and the bookmark.
func (s *stream[T]) initialEvents() (map[string]int, informer.Event[T]) {
	s.k.t.Helper()
	k := s.k
	got := map[string]int{}
	var versions []string
	for {
		ev, ok := s.next("the next initial event or the InitialEventsEnd bookmark")
		if !ok || ev.Type == informer.EventError {
			k.t.Fatalf("%s: expected the initial events, then a Bookmark with InitialEventsEnd; got %s",
				s.desc, s.describe(ev, ok))
		}
		if ev.Type == informer.EventBookmark {
			if !ev.InitialEventsEnd {
				continue
			}
			if c := k.h.CompareVersions; c != nil {
				for _, v := range versions {
					if c(v, ev.Version) > 0 {
						k.t.Fatalf("%s: %s is older than an initial event at %q; the bookmark ending the initial "+
							"events carries the version of the state they describe", s.desc, k.describeEvent(ev), v)
					}
				}
			}
			return got, ev
		}
		if ev.Type != informer.EventAdded {
			k.t.Fatalf("%s: %s among the initial events; the contract requires an Added event per object, then the "+
				"InitialEventsEnd bookmark, then the changes", s.desc, k.describeEvent(ev))
		}
		name, gen := k.describeObject(ev.Object, s.desc+": an initial event")
		if _, dup := got[name]; dup {
			k.t.Fatalf("%s: %s is the second initial event for %s; the contract requires one per object",
				s.desc, k.describeEvent(ev), name)
		}
		got[name] = gen
		versions = append(versions, ev.Version)
	}
}

// checkStreamingList: SendInitialEvents gives an Added event per object,
// then a Bookmark with InitialEventsEnd, then the later changes.
func checkStreamingList[T any](k *kit[T]) {
	if k.h.DisableStreamingList {
		w, err := k.h.Source.Watch(k.ctx, informer.WatchOptions{SendInitialEvents: true})
		if err == nil {
			safeStop(w)
		}
		if !isUnsupported(err) {
			k.t.Fatalf("Harness.DisableStreamingList: a streaming list returned %v; the contract requires errors.ErrUnsupported "+
				"from a source that cannot serve one", err)
		}
		return
	}
	k.create("a")
	va := k.update("a")
	k.create("b")
	k.create("c")
	k.del("c")
	for _, version := range []string{"", va} {
		opts := informer.WatchOptions{SendInitialEvents: true, Version: version}
		w, err := k.h.Source.Watch(k.ctx, opts)
		require.False(k.t, isUnsupported(err), "streaming list unsupported: set Harness.DisableStreamingList")
		require.NoError(k.t, err, "%s", describeWatch(opts))
		s := k.newStream(w, opts)
		got, end := s.initialEvents()
		require.Equal(k.t, map[string]int{"a": 2, "b": 1}, got, "%s: the initial events must give the state "+
			"(at least as new as the version)", s.desc)
		s, w = k.afterMarker(s, w, end)
		vd := k.create("d" + version)
		s.expect(change{informer.EventAdded, "d" + version, 1, vd})
		w.Stop()
		s.expectClosed("Stop")
		k.del("d" + version)
	}
}

// checkStreamingListOrder: the initial events may come in any order of
// objects and versions (Kubernetes sends each object at its own version),
// but the InitialEventsEnd bookmark carries a version covering every write
// they include, and the changes after it are exactly the later writes.
func checkStreamingListOrder[T any](k *kit[T]) {
	if k.h.DisableStreamingList {
		k.t.Skip("harness: streaming lists unsupported")
	}
	// Written in reverse key order, so key order and version order differ.
	k.create("z")
	k.create("y")
	k.create("x")
	k.update("z")
	k.del("y")
	vlast := k.update("x")
	s := k.watch(k.ctx, informer.WatchOptions{SendInitialEvents: true})
	got, end := s.initialEvents()
	require.Equal(k.t, map[string]int{"x": 2, "z": 2}, got, "%s: the initial events must give the latest state", s.desc)
	if c := k.h.CompareVersions; c != nil && c(end.Version, vlast) < 0 {
		k.t.Fatalf("%s: %s is older than the write at %q its initial events include; a reflector resuming from it "+
			"would replay that write", s.desc, k.describeEvent(end), vlast)
	}
	s, w := k.afterMarker(s, nil, end)
	if w != nil {
		k.t.Cleanup(func() { safeStop(w) })
	}
	vw := k.create("w")
	vz := k.del("z")
	s.expect(change{informer.EventAdded, "w", 1, vw}, change{informer.EventDeleted, "z", 2, vz})
}

// afterMarker returns the stream on which the changes after a streaming
// list's InitialEventsEnd bookmark (end) arrive: s itself (and w), or, for
// a source that ends the stream at the marker
// (Harness.StreamingListEndsAtMarker), a watch from the marker's version,
// once s has closed without an error.
func (k *kit[T]) afterMarker(s *stream[T], w informer.Watcher[T], end informer.Event[T]) (*stream[T], informer.Watcher[T]) {
	k.t.Helper()
	if !k.h.StreamingListEndsAtMarker {
		return s, w
	}
	s.expectClosed("its InitialEventsEnd bookmark (Harness.StreamingListEndsAtMarker)")
	opts := informer.WatchOptions{Version: end.Version}
	w2, err := k.h.Source.Watch(k.ctx, opts)
	require.NoError(k.t, err, "%s", describeWatch(opts))
	return k.newStream(w2, opts), w2
}

// checkWatchTimeout: a watch with a Timeout ends normally after about that
// long: closed, without an Error event.
func checkWatchTimeout[T any](k *kit[T]) {
	_, v := k.listAll(informer.ListOptions{})
	start := time.Now()
	s := k.watch(k.ctx, informer.WatchOptions{Version: v, Timeout: 100 * time.Millisecond})
	s.expectClosed("its Timeout of 100ms")
	if d := time.Since(start); d < 50*time.Millisecond {
		k.t.Fatalf("%s: closed after %v, long before the timeout", s.desc, d)
	}
}
