package sourcetest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
)

// stream is an open watch under test. Every event it receives is checked
// against the stream rules of the contract: a change carries an object and
// a version, versions never go backwards (outside the initial events of a
// streaming list, when the harness orders versions), and nothing follows an
// Error event; on a stream made by newStream, every bookmark is also held to
// the bookmark rule (written.go).
type stream[T any] struct {
	k    *kit[T]
	w    informer.Watcher[T]
	desc string // "watch from 7", for messages
	// last is the version of the last event received, lastDesc the event.
	last, lastDesc string
	// initial is true during the initial events of a streaming list.
	initial bool
	// errEv is the Error event received, if any.
	errEv *informer.Event[T]

	// The bookmark rule (written.go). started is set once the stream
	// delivers every change after version from: when opened, or at the end
	// of its initial events; startWrites is the number of the check's writes
	// completed then. future marks a watch from a version the source has not
	// reached, on which no write of the check is due. delivered holds the
	// changes received, bookmark the version of the newest bookmark received
	// since the start.
	started, future bool
	from            string
	startWrites     int
	delivered       map[delivery]struct{}
	bookmark        string
}

// describeWatch renders watch options for messages.
func describeWatch(o informer.WatchOptions) string {
	s := fmt.Sprintf("watch from %q", o.Version)
	if o.SendInitialEvents {
		s = fmt.Sprintf("streaming list from %q", o.Version)
	}
	if o.NotifyCaughtUp {
		s += " with NotifyCaughtUp"
	}
	if o.Timeout > 0 {
		s += fmt.Sprintf(" timeout %v", o.Timeout)
	}
	return s
}

// watch opens a watch stopped at the end of the check.
func (k *kit[T]) watch(ctx context.Context, opts informer.WatchOptions) *stream[T] {
	k.t.Helper()
	w, err := k.h.Source.Watch(ctx, opts)
	if err != nil && opts.NotifyCaughtUp && isUnsupported(err) {
		k.t.Fatalf("%s: Watch returned %q, but the harness does not set Harness.DisableNotifyCaughtUp%s",
			describeWatch(opts), err, caughtUpHowToPass)
	}
	require.NoError(k.t, err, "%s", describeWatch(opts))
	k.t.Cleanup(func() { safeStop(w) })
	return k.newStream(w, opts)
}

// newStream returns the stream of w, opened with opts, and subjects it to
// the bookmark rule.
func (k *kit[T]) newStream(w informer.Watcher[T], opts informer.WatchOptions) *stream[T] {
	s := &stream[T]{k: k, w: w, desc: describeWatch(opts), initial: opts.SendInitialEvents, delivered: map[delivery]struct{}{}}
	if !opts.SendInitialEvents {
		s.start(opts.Version)
	}
	k.streams = append(k.streams, s)
	return s
}

// safeStop calls w.Stop, returning what it panicked with, if it did.
func safeStop[T any](w informer.Watcher[T]) (panicked any) {
	defer func() { panicked = recover() }()
	w.Stop()
	return nil
}

// recv returns the next event, or false when the stream is closed, without
// checking it. It fails the check when nothing comes within the wait
// timeout, saying what was awaited.
func (s *stream[T]) recv(awaiting string) (informer.Event[T], bool) {
	s.k.t.Helper()
	return s.recvWithin(awaiting, s.k.h.wait(), "")
}

// recvWithin is recv with a wait of d; hint, if any, ends the message of
// a failure (what the source author can do about it).
func (s *stream[T]) recvWithin(awaiting string, d time.Duration, hint string) (informer.Event[T], bool) {
	s.k.t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case ev, ok := <-s.w.Events():
		return ev, ok
	case <-timer.C:
		after := ""
		if s.lastDesc != "" {
			after = " (the last event was " + s.lastDesc + ")"
		}
		s.k.t.Fatalf("%s: expected %s within %v; got nothing%s%s", s.desc, awaiting, d, after, hint)
		return informer.Event[T]{}, false
	}
}

// next returns the next event, or false when the stream is closed, and
// checks it against the stream rules.
func (s *stream[T]) next(awaiting string) (informer.Event[T], bool) {
	s.k.t.Helper()
	ev, ok := s.recv(awaiting)
	if !ok {
		return ev, false
	}
	s.checkEvent(ev)
	return ev, true
}

// checkEvent applies the stream rules to a received event.
func (s *stream[T]) checkEvent(ev informer.Event[T]) {
	s.k.t.Helper()
	k := s.k
	desc := k.describeEvent(ev)
	if s.errEv != nil {
		k.t.Fatalf("%s: %s arrived after the %s; the contract requires the stream to end at an Error event: "+
			"no event follows it and the channel is closed", s.desc, desc, k.describeEvent(*s.errEv))
	}
	switch {
	case ev.Type == informer.EventError:
		s.errEv = &ev
		if ev.Err == nil {
			k.t.Fatalf("%s: an Error event without Err; the contract requires Err on Error events", s.desc)
		}
		return
	case isChange(ev.Type):
		if _, _, problem := k.objectOf(ev.Object); problem != "" {
			state := "the object's new state"
			if ev.Type == informer.EventDeleted {
				state = "the object's last known state (the reflector needs at least its key to delete it)"
			}
			k.t.Fatalf("%s: the %v event at version %q %s; the contract requires %s", s.desc, ev.Type, ev.Version,
				problem, state)
		}
	case ev.Type != informer.EventBookmark:
		k.t.Fatalf("%s: an event of unknown type %v", s.desc, ev.Type)
	}
	if ev.Version == "" {
		k.t.Fatalf("%s: %s has no version; the contract requires a version on every event but Error", s.desc, desc)
	}
	if c := k.h.CompareVersions; c != nil && s.last != "" && !s.initial && c(ev.Version, s.last) < 0 {
		k.t.Fatalf("%s: %s is older than the previous event, %s; the contract requires the versions of a stream "+
			"never to go backwards", s.desc, desc, s.lastDesc)
	}
	switch {
	case isChange(ev.Type):
		if s.delivered != nil {
			name, _, _ := k.objectOf(ev.Object)
			s.delivered[delivery{name, ev.Version}] = struct{}{}
		}
	case s.initial:
		if ev.InitialEventsEnd {
			s.initial = false
			if s.delivered != nil {
				s.start(ev.Version)
			}
		}
	case s.delivered != nil:
		s.checkBookmark(ev.Version, desc)
	}
	s.last, s.lastDesc = ev.Version, desc
}

// nextChange returns the next event that is not a bookmark; an Error event
// or a closed stream fails the check.
func (s *stream[T]) nextChange(awaiting string) informer.Event[T] {
	s.k.t.Helper()
	for {
		ev, ok := s.next(awaiting)
		if !ok {
			s.k.t.Fatalf("%s: expected %s; the stream was closed (the last event was %s)", s.desc, awaiting, s.lastDesc)
		}
		if ev.Type == informer.EventError {
			s.k.t.Fatalf("%s: expected %s; got an %s", s.desc, awaiting, s.k.describeEvent(ev))
		}
		if ev.Type != informer.EventBookmark {
			return ev
		}
	}
}

// got turns a change event into a change, comparable with an expected one.
func (s *stream[T]) got(ev informer.Event[T], withVersion bool) change {
	name, gen, _ := s.k.objectOf(ev.Object)
	c := change{typ: ev.Type, name: name, gen: gen}
	if withVersion {
		c.version = ev.Version
	}
	return c
}

// expect checks that the next changes are exactly want, in order.
func (s *stream[T]) expect(want ...change) {
	s.k.t.Helper()
	for i, w := range want {
		ev := s.nextChange(w.String())
		if got := s.got(ev, w.version != ""); got != w {
			s.k.t.Fatalf("%s: change %d of %d: expected %s; got %s. The contract requires every change after the "+
				"watch's version, exactly once, in order, each with the version of its write", s.desc, i+1, len(want), w, got)
		}
	}
}

// expectClosed drains the stream until it is closed, failing on an Error
// event or when it stays open past the wait timeout.
func (s *stream[T]) expectClosed(after string) {
	s.k.t.Helper()
	deadline := time.Now().Add(s.k.h.wait())
	for {
		ev, ok := s.next("the channel closed after " + after)
		if !ok {
			return
		}
		if ev.Type == informer.EventError {
			s.k.t.Fatalf("%s: expected the channel closed after %s; got an %s", s.desc, after, s.k.describeEvent(ev))
		}
		if time.Now().After(deadline) {
			s.k.t.Fatalf("%s: expected the channel closed after %s within %v; events still arrive (the last was %s)",
				s.desc, after, s.k.h.wait(), s.lastDesc)
		}
	}
}

// requireWatchError checks that a Watch with opts fails with sentinel:
// returned by Watch, or as the first event, an Error one, after which the
// channel is closed. Both are allowed by the contract.
func (k *kit[T]) requireWatchError(opts informer.WatchOptions, sentinel error, why string) {
	k.t.Helper()
	desc := describeWatch(opts)
	name := sentinelName(sentinel)
	w, err := k.h.Source.Watch(k.ctx, opts)
	if err != nil {
		if !errors.Is(err, sentinel) {
			k.t.Fatalf("%s (%s): Watch returned %q, which does not wrap %s; the contract requires %s",
				desc, why, err, name, name)
		}
		return
	}
	defer safeStop(w)
	s := &stream[T]{k: k, w: w, desc: desc + " (" + why + ")"}
	ev, ok := s.recv(fmt.Sprintf("%s: returned by Watch, or as the first event, an Error event", name))
	switch {
	case !ok:
		k.t.Fatalf("%s: the channel was closed without an Error event; the contract requires %s, "+
			"returned by Watch or as the first event", s.desc, name)
	case ev.Type != informer.EventError:
		k.t.Fatalf("%s: the first event is %s; the contract requires %s, returned by Watch or as the first event "+
			"(an Error event)", s.desc, k.describeEvent(ev), name)
	case !errors.Is(ev.Err, sentinel):
		k.t.Fatalf("%s: the first event is an Error event with %q, which does not wrap %s", s.desc, ev.Err, name)
	}
	s.errEv = &ev
	if ev, ok := s.next("the channel closed after the Error event"); ok {
		k.t.Fatalf("%s: %s follows the Error event", s.desc, k.describeEvent(ev))
	}
}

// isUnsupported reports errors.ErrUnsupported.
func isUnsupported(err error) bool { return errors.Is(err, errors.ErrUnsupported) }

// sentinelName names the contract's sentinel errors in messages.
func sentinelName(err error) string {
	for _, s := range []struct {
		err  error
		name string
	}{
		{informer.ErrExpired, "ErrExpired"},
		{informer.ErrVersionTooLarge, "ErrVersionTooLarge"},
		{informer.ErrInvalidOptions, "ErrInvalidOptions"},
		{informer.ErrTransient, "ErrTransient"},
		{informer.ErrInternal, "ErrInternal"},
	} {
		if err == s.err {
			return s.name
		}
	}
	return err.Error()
}
