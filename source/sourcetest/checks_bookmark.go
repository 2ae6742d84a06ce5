package sourcetest

import (
	"fmt"

	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
)

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
		require.NoError(k.t, k.h.Bookmark(k.ctx), "harness: bookmark")
		ev, ok := s.next("a Bookmark after Harness.Bookmark") // checks versions never go back
		if !ok || ev.Type != informer.EventBookmark {
			k.t.Fatalf("%s: round %d: expected a Bookmark after Harness.Bookmark; got %s", s.desc, round, s.describe(ev, ok))
		}
		if ev.InitialEventsEnd {
			k.t.Fatalf("%s: %s on a plain watch; InitialEventsEnd belongs to streaming lists and to watches asked for "+
				"NotifyCaughtUp only", s.desc, k.describeEvent(ev))
		}
		if c := k.h.CompareVersions; c != nil {
			if c(ev.Version, vc) < 0 {
				k.t.Fatalf("%s: %s is older than the change already delivered at %q", s.desc, k.describeEvent(ev), vc)
			}
			if last != "" && c(ev.Version, last) < 0 {
				k.t.Fatalf("%s: %s is older than the previous bookmark at %q", s.desc, k.describeEvent(ev), last)
			}
		}
		last = ev.Version
	}
	vu := k.update("b0")
	s.expect(change{informer.EventModified, "b0", 2, vu})
}

// checkBookmarkNotAhead: a bookmark never carries a version beyond the
// changes delivered before it, whether changes are still on their way when
// it is asked for or the stream is idle. A reflector resuming from such a
// bookmark would silently lose the changes in between. The rule is the
// stream's (written.go): this check sets up both cases.
func checkBookmarkNotAhead[T any](k *kit[T]) {
	if k.h.Bookmark == nil {
		k.t.Skip("harness: no Bookmark hook")
	}
	_, v := k.listAll(informer.ListOptions{})
	s := k.watch(k.ctx, informer.WatchOptions{Version: v})
	// Write without reading, then ask for a bookmark: it must not overtake
	// the changes still on their way.
	var pending []change
	for i := range 10 {
		name := fmt.Sprintf("n%d", i)
		pending = append(pending, change{informer.EventAdded, name, 1, k.create(name)})
	}
	require.NoError(k.t, k.h.Bookmark(k.ctx), "harness: bookmark")
	bookmarks := 0
	for len(pending) > 0 || bookmarks == 0 {
		awaiting := "a Bookmark after Harness.Bookmark"
		if len(pending) > 0 {
			awaiting = pending[0].String()
		}
		ev, ok := s.next(awaiting) // applies the bookmark rule
		if !ok || ev.Type == informer.EventError {
			k.t.Fatalf("%s: expected %s; got %s", s.desc, awaiting, s.describe(ev, ok))
		}
		if ev.Type == informer.EventBookmark {
			bookmarks++
			continue
		}
		if len(pending) == 0 {
			k.t.Fatalf("%s: expected %s; got %s, which nobody wrote", s.desc, awaiting, k.describeEvent(ev))
		}
		if got := s.got(ev, true); got != pending[0] {
			k.t.Fatalf("%s: expected %s; got %s. The contract requires every change after the watch's version, "+
				"exactly once, in order", s.desc, pending[0], got)
		}
		pending = pending[1:]
	}
	// Every write delivered, ask again: the bookmark must not run ahead of
	// the next write either (recording the write applies the rule).
	require.NoError(k.t, k.h.Bookmark(k.ctx), "harness: bookmark")
	if ev, ok := s.next("a Bookmark after Harness.Bookmark, on an idle watch"); !ok || ev.Type != informer.EventBookmark {
		k.t.Fatalf("%s: expected a Bookmark after Harness.Bookmark, on an idle watch; got %s", s.desc, s.describe(ev, ok))
	}
	vm := k.create("m")
	s.expect(change{informer.EventAdded, "m", 1, vm})
}

// describe renders the result of a receive for messages.
func (s *stream[T]) describe(ev informer.Event[T], ok bool) string {
	if !ok {
		return "the channel closed"
	}
	return s.k.describeEvent(ev)
}
