package sourcetest

import (
	"errors"

	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
)

// The checks of [informer.WatchOptions.NotifyCaughtUp]: a watch from v asked
// for it delivers every change after v, in order, then one Bookmark with
// InitialEventsEnd (the marker) at a version at least as new as those
// changes, then the later changes as any watch does. The changes are
// written before Watch is called, so the source's current version when it
// answers covers them all: the marker comes after every one of them. The
// marker is awaited for twice Harness.WaitTimeout; how soon it comes is not
// checked. With Harness.KeyOnlyDeletesBeforeCaughtUp, a deletion before the
// marker may carry only the key (generation 0); one after it may not.

// caughtUpHowToPass ends the message of a failure to get the caught-up
// marker: a source written before NotifyCaughtUp existed fails there, and
// its author must learn the two ways to pass.
const caughtUpHowToPass = ". Every source must answer informer.WatchOptions.NotifyCaughtUp, in one of two ways: " +
	"implement it (once the watch has delivered every change up to the source's version when Watch was called, " +
	"send one Bookmark with InitialEventsEnd at a version at least that new, then go on as any watch), or refuse " +
	"it (Watch returns an error wrapping errors.ErrUnsupported when opts.NotifyCaughtUp is set) and set " +
	"Harness.DisableNotifyCaughtUp, so that an informer resuming from a snapshot relists instead"

// isMarker reports whether ev is the Bookmark that ends initial events or
// says a watch caught up.
func isMarker[T any](ev informer.Event[T]) bool {
	return ev.Type == informer.EventBookmark && ev.InitialEventsEnd
}

// untilCaughtUp reads the changes want, exactly and in order, then the
// caught-up marker, and returns the marker. Bookmarks without
// InitialEventsEnd may come anywhere. A marker before the last of want, any
// other change, an Error event or the end of the stream fails the check.
func (s *stream[T]) untilCaughtUp(want []change) informer.Event[T] {
	s.k.t.Helper()
	k := s.k
	for i := 0; ; {
		awaiting, d, hint := "a Bookmark with InitialEventsEnd (the watch has caught up)", 2*k.h.wait(), caughtUpHowToPass
		if i < len(want) {
			awaiting, d, hint = want[i].String(), k.h.wait(), ""
		}
		ev, ok := s.recvWithin(awaiting, d, hint)
		if ok && isMarker(ev) && i < len(want) {
			k.t.Fatalf("%s: %s arrived before %s (change %d of %d after the watch's version, all written before "+
				"Watch was called); the marker promises that every change up to the source's current version was "+
				"delivered: an informer counting itself synced there would miss it", s.desc, k.describeEvent(ev),
				want[i], i+1, len(want))
		}
		if ok {
			s.checkEvent(ev) // the stream rules, the bookmark rule among them
		}
		switch {
		case !ok || ev.Type == informer.EventError:
			k.t.Fatalf("%s: expected %s; got %s%s", s.desc, awaiting, s.describe(ev, ok), hint)
		case isMarker(ev):
			return ev
		case ev.Type == informer.EventBookmark:
			continue
		case i == len(want):
			k.t.Fatalf("%s: expected a Bookmark with InitialEventsEnd after the %d changes since the watch's version; "+
				"got %s, which nobody wrote", s.desc, len(want), k.describeEvent(ev))
		}
		if got := s.got(ev, true); got != want[i] && !k.keyOnlyDelete(got, want[i]) {
			k.t.Fatalf("%s: change %d of %d: expected %s; got %s. The contract requires every change after the "+
				"watch's version, exactly once, in order, each with the version of its write, before the marker",
				s.desc, i+1, len(want), want[i], got)
		}
		i++
	}
}

// keyOnlyDelete reports whether got is want, a deletion, with only the key
// (generation 0), which Harness.KeyOnlyDeletesBeforeCaughtUp allows before
// the caught-up marker.
func (k *kit[T]) keyOnlyDelete(got, want change) bool {
	if !k.h.KeyOnlyDeletesBeforeCaughtUp || want.typ != informer.EventDeleted || got.gen != 0 {
		return false
	}
	got.gen = want.gen
	return got == want
}

// expectAfterMarker is expect for a stream that has sent its caught-up
// marker: a second marker fails the check.
func (s *stream[T]) expectAfterMarker(want ...change) {
	s.k.t.Helper()
	k := s.k
	for i, w := range want {
		for {
			ev, ok := s.next(w.String())
			if !ok || ev.Type == informer.EventError {
				k.t.Fatalf("%s: expected %s after the caught-up marker; got %s", s.desc, w, s.describe(ev, ok))
			}
			if isMarker(ev) {
				k.t.Fatalf("%s: a second Bookmark with InitialEventsEnd (%s), while %s was due; the contract sends "+
					"the caught-up marker once", s.desc, k.describeEvent(ev), w)
			}
			if ev.Type == informer.EventBookmark {
				continue
			}
			if got := s.got(ev, true); got != w {
				k.t.Fatalf("%s: change %d of %d after the caught-up marker: expected %s; got %s. The watch goes on "+
					"as usual after the marker: every change, once, in order", s.desc, i+1, len(want), w, got)
			}
			break
		}
	}
}

// checkCaughtUp: a watch from a version behind the source, asked for
// NotifyCaughtUp, replays the changes since (the last one a deletion), then
// sends one marker at a version at least as new as the last change, then
// goes on (a deletion after the marker carrying the last state); a source that cannot do it (Harness.DisableNotifyCaughtUp)
// returns errors.ErrUnsupported.
func checkCaughtUp[T any](k *kit[T]) {
	if k.h.DisableNotifyCaughtUp {
		k.requireCaughtUpRefused()
		return
	}
	k.create("a")
	k.create("b")
	k.create("c")
	v := k.update("a")
	var want []change
	want = append(want, change{informer.EventAdded, "d", 1, k.create("d")})
	want = append(want, change{informer.EventModified, "a", 3, k.update("a")})
	want = append(want, change{informer.EventDeleted, "b", 1, k.del("b")})
	want = append(want, change{informer.EventModified, "d", 2, k.update("d")})
	want = append(want, change{informer.EventDeleted, "c", 1, k.del("c")})
	last := want[len(want)-1]
	s := k.watch(k.ctx, informer.WatchOptions{Version: v, NotifyCaughtUp: true})
	marker := s.untilCaughtUp(want)
	if c := k.h.CompareVersions; c != nil && c(marker.Version, last.version) < 0 {
		k.t.Fatalf("%s: %s is older than %s, a change made before the watch opened; the marker carries the "+
			"source's version when the watch caught up", s.desc, k.describeEvent(marker), writeOf(last))
	}
	ve := k.create("e")
	va := k.update("a")
	vd := k.del("d")
	s.expectAfterMarker(change{informer.EventAdded, "e", 1, ve}, change{informer.EventModified, "a", 4, va},
		change{informer.EventDeleted, "d", 2, vd})
	if k.h.Bookmark == nil {
		return
	}
	// A requested bookmark is a plain one: the marker is sent once.
	require.NoError(k.t, k.h.Bookmark(k.ctx), "harness: bookmark")
	ev, ok := s.next("a Bookmark after Harness.Bookmark")
	switch {
	case !ok || ev.Type != informer.EventBookmark:
		k.t.Fatalf("%s: expected a Bookmark after Harness.Bookmark; got %s", s.desc, s.describe(ev, ok))
	case ev.InitialEventsEnd:
		k.t.Fatalf("%s: %s after Harness.Bookmark; the contract sends the caught-up marker once, and other "+
			"bookmarks without InitialEventsEnd", s.desc, k.describeEvent(ev))
	}
}

// checkCaughtUpIdle: a watch asked for NotifyCaughtUp from the source's
// current version (nothing changed since) sends the marker all the same,
// then the changes; from a list's version and from a write's.
func checkCaughtUpIdle[T any](k *kit[T]) {
	if k.h.DisableNotifyCaughtUp {
		k.t.Skip("harness: NotifyCaughtUp unsupported")
	}
	k.create("a")
	k.update("a")
	k.create("b")
	k.del("b")
	_, v := k.listAll(informer.ListOptions{})
	s := k.watch(k.ctx, informer.WatchOptions{Version: v, NotifyCaughtUp: true})
	marker := s.untilCaughtUp(nil)
	if c := k.h.CompareVersions; c != nil && c(marker.Version, v) < 0 {
		k.t.Fatalf("%s: %s is older than the watch's version; the marker carries the source's version when the "+
			"watch caught up", s.desc, k.describeEvent(marker))
	}
	vc := k.create("c")
	s.expectAfterMarker(change{informer.EventAdded, "c", 1, vc})

	s2 := k.watch(k.ctx, informer.WatchOptions{Version: vc, NotifyCaughtUp: true})
	s2.untilCaughtUp(nil)
	vd := k.create("d")
	s.expectAfterMarker(change{informer.EventAdded, "d", 1, vd})
	s2.expectAfterMarker(change{informer.EventAdded, "d", 1, vd})
}

// checkCaughtUpExpired: NotifyCaughtUp from a compacted version fails with
// ErrExpired like any watch (returned, or as the first event); the current
// version is still served, with its marker.
func checkCaughtUpExpired[T any](k *kit[T]) {
	if k.h.DisableNotifyCaughtUp {
		k.t.Skip("harness: NotifyCaughtUp unsupported")
	}
	if k.h.Compact == nil {
		k.t.Skip("harness: no Compact")
	}
	v1 := k.create("a")
	k.create("b")
	k.update("a")
	k.update("b")
	require.NoError(k.t, k.h.Compact(k.ctx), "compact")
	k.requireWatchError(informer.WatchOptions{Version: v1, NotifyCaughtUp: true}, informer.ErrExpired, "a compacted version")

	_, v := k.listAll(informer.ListOptions{})
	s := k.watch(k.ctx, informer.WatchOptions{Version: v, NotifyCaughtUp: true})
	s.untilCaughtUp(nil)
	vc := k.create("c")
	s.expectAfterMarker(change{informer.EventAdded, "c", 1, vc})
}

// requireCaughtUpRefused checks that a source declared without
// NotifyCaughtUp (Harness.DisableNotifyCaughtUp) refuses it: Watch returns
// errors.ErrUnsupported, or an error wrapping ErrRelistRequested, returned
// or as the first event, after which the stream ends.
func (k *kit[T]) requireCaughtUpRefused() {
	k.t.Helper()
	v := k.create("a")
	opts := informer.WatchOptions{Version: v, NotifyCaughtUp: true}
	desc := "Harness.DisableNotifyCaughtUp: " + describeWatch(opts)
	const want = "errors.ErrUnsupported from Watch (or ErrRelistRequested, returned or as the first event) from a " +
		"source that cannot say when a watch has caught up"
	w, err := k.h.Source.Watch(k.ctx, opts)
	if err != nil {
		if !isUnsupported(err) && !errors.Is(err, informer.ErrRelistRequested) {
			k.t.Fatalf("%s returned %q, which wraps neither errors.ErrUnsupported nor ErrRelistRequested; the contract "+
				"requires %s", desc, err, want)
		}
		return
	}
	defer safeStop(w)
	s := &stream[T]{k: k, w: w, desc: desc}
	ev, ok := s.recv("ErrRelistRequested as the first event, an Error event")
	switch {
	case !ok:
		k.t.Fatalf("%s: the channel was closed without an Error event; the contract requires %s", desc, want)
	case ev.Type != informer.EventError || !errors.Is(ev.Err, informer.ErrRelistRequested):
		k.t.Fatalf("%s opened a stream whose first event is %s; the contract requires %s", desc, k.describeEvent(ev), want)
	}
	s.errEv = &ev
	if ev, ok := s.next("the channel closed after the Error event"); ok {
		k.t.Fatalf("%s: %s follows the Error event", desc, k.describeEvent(ev))
	}
}
