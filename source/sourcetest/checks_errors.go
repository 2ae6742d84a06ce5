package sourcetest

import (
	"errors"
	"strconv"
	"time"

	"github.com/ginformer/ginformer/informer"
)

// malformed is a version and a continue token no source produces.
const malformed = "sourcetest: not a version"

// futureVersion returns a version the source has not reached, after
// current; false when the harness cannot make one.
func (k *kit[T]) futureVersion(current string) (string, bool) {
	if k.h.FutureVersion != nil {
		return k.h.FutureVersion(current), true
	}
	n, err := strconv.ParseUint(current, 10, 63)
	if err != nil {
		return "", false
	}
	return strconv.FormatUint(n+1_000_000_000, 10), true
}

// checkListFuture: a list at a version newer than the source has seen fails
// with ErrVersionTooLarge (never a page of an older state).
func checkListFuture[T any](k *kit[T]) {
	v := k.create("a")
	future, ok := k.futureVersion(v)
	if !ok {
		k.t.Skip("harness: no FutureVersion, and versions are not decimal integers")
	}
	for _, mode := range k.versionedModes() {
		opts := informer.ListOptions{Mode: mode, Version: future}
		p, err := k.list(opts)
		if err == nil {
			k.t.Fatalf("List %s (a version the source has not reached; the latest write is at %s) returned a page of %d items "+
				"at version %q; the contract requires an error wrapping ErrVersionTooLarge",
				describeList(opts), v, len(p.Items), p.Version)
		}
		if !errors.Is(err, informer.ErrVersionTooLarge) {
			k.t.Fatalf("List %s (a version the source has not reached): %q does not wrap ErrVersionTooLarge, which the "+
				"contract requires (a reflector then relists with ReadLatest)", describeList(opts), err)
		}
	}
}

// checkWatchFuture: a watch from a version newer than the source has seen
// fails with ErrVersionTooLarge (returned, or as the first event); with
// Harness.WatchFutureWaits, it may wait instead, but never delivers a change
// at or before its version.
func checkWatchFuture[T any](k *kit[T]) {
	v := k.create("a")
	future, ok := k.futureVersion(v)
	if !ok {
		k.t.Skip("harness: no FutureVersion, and versions are not decimal integers")
	}
	if !k.h.WatchFutureWaits {
		k.requireWatchError(informer.WatchOptions{Version: future}, informer.ErrVersionTooLarge,
			"a version the source has not reached")
		return
	}
	// The future watch must stay silent while a write lands: once a watch
	// from v has delivered the write, give the future watch a tenth of the
	// wait timeout to show it, which a source starting early would.
	fw := k.watch(k.ctx, informer.WatchOptions{Version: future})
	fw.future = true // no write of the check is due on it
	s := k.watch(k.ctx, informer.WatchOptions{Version: v})
	vb := k.create("b")
	s.expect(change{informer.EventAdded, "b", 1, vb})
	window := time.NewTimer(k.h.wait() / 10)
	defer window.Stop()
	for {
		select {
		case ev, ok := <-fw.w.Events():
			if ok {
				fw.checkEvent(ev)
			}
			if !ok || ev.Type != informer.EventBookmark {
				k.t.Fatalf("%s (a version the source has not reached; Harness.WatchFutureWaits): got %s while a write "+
					"at %q landed; a watch that waits for its version must deliver only the changes after it",
					fw.desc, fw.describe(ev, ok), vb)
			}
		case <-window.C:
			return
		}
	}
}

// checkMalformedVersion: a version the source never produced fails with
// ErrInvalidOptions, from List and from Watch (returned, or as the first
// event).
func checkMalformedVersion[T any](k *kit[T]) {
	k.create("a")
	for _, mode := range k.versionedModes() {
		opts := informer.ListOptions{Mode: mode, Version: malformed}
		p, err := k.list(opts)
		if err == nil {
			k.t.Fatalf("List %s (a malformed version) returned a page of %d items at version %q; the contract requires an "+
				"error wrapping ErrInvalidOptions", describeList(opts), len(p.Items), p.Version)
		}
		if !errors.Is(err, informer.ErrInvalidOptions) {
			k.t.Fatalf("List %s (a malformed version): %q does not wrap ErrInvalidOptions, which the contract requires",
				describeList(opts), err)
		}
	}
	k.requireWatchError(informer.WatchOptions{Version: malformed}, informer.ErrInvalidOptions, "a malformed version")
}

// checkMalformedContinue: a continue token the source never produced fails
// with ErrInvalidOptions or ErrExpired, never returns a page (a list
// restarted from its first item, at another version, would mix states).
func checkMalformedContinue[T any](k *kit[T]) {
	k.create("a")
	k.create("b")
	opts := informer.ListOptions{Limit: 1, Continue: malformed}
	p, err := k.list(opts)
	if err == nil {
		k.t.Fatalf("List %s (a malformed token) returned a page of %d items at version %q; the contract requires an error "+
			"wrapping ErrInvalidOptions (or ErrExpired)", describeList(opts), len(p.Items), p.Version)
	}
	if !errors.Is(err, informer.ErrInvalidOptions) && !errors.Is(err, informer.ErrExpired) {
		k.t.Fatalf("List %s (a malformed token): %q wraps neither ErrInvalidOptions nor ErrExpired, one of which the "+
			"contract requires", describeList(opts), err)
	}
}

// checkWatchNeedsVersion: a plain watch (no streaming list) from version ""
// fails with ErrInvalidOptions: "from now" would lose the changes between a
// list and the watch.
func checkWatchNeedsVersion[T any](k *kit[T]) {
	k.create("a")
	k.requireWatchError(informer.WatchOptions{}, informer.ErrInvalidOptions, "a plain watch without a version")
}

// versionedModes are the read modes whose List takes a version: NotOlderThan,
// and Exact unless the harness disables it.
func (k *kit[T]) versionedModes() []informer.ReadMode {
	if k.h.DisableReadExact {
		return []informer.ReadMode{informer.ReadNotOlderThan}
	}
	return []informer.ReadMode{informer.ReadNotOlderThan, informer.ReadExact}
}
