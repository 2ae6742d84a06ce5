package sourcetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
)

// Run checks the source made by newHarness against the source contract, one
// subtest per check, each with a fresh harness. newHarness must return a
// harness over an empty, isolated collection, and register its own cleanup
// with t.Cleanup.
func Run[T any](t *testing.T, newHarness func(t *testing.T) Harness[T]) {
	t.Helper()
	checks := []struct {
		name string
		fn   func(k *kit[T])
	}{
		{"ListLatest", checkListLatest[T]},
		{"ListExact", checkListExact[T]},
		{"ListModes", checkListModes[T]},
		{"ListPagesConsistent", checkListPages[T]},
		{"WatchFromList", checkWatchFromList[T]},
		{"WatchReplay", checkWatchReplay[T]},
		{"WatchConcurrentWrites", checkWatchConcurrentWrites[T]},
		{"Expired", checkExpired[T]},
		{"Bookmarks", checkBookmarks[T]},
		{"CancelContext", checkCancel[T]},
		{"StopIdempotent", checkStop[T]},
		{"StreamingList", checkStreamingList[T]},
		{"WatchTimeout", checkWatchTimeout[T]},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			require.NotNil(t, h.Source, "Harness.Source")
			require.NotNil(t, h.Create, "Harness.Create")
			require.NotNil(t, h.Update, "Harness.Update")
			require.NotNil(t, h.Delete, "Harness.Delete")
			require.NotNil(t, h.Name, "Harness.Name")
			require.NotNil(t, h.Generation, "Harness.Generation")
			c.fn(&kit[T]{t: t, h: h, ctx: t.Context()})
		})
	}
}

// kit carries one check's harness and helpers.
type kit[T any] struct {
	t   *testing.T
	h   Harness[T]
	ctx context.Context
}

func (k *kit[T]) create(name string) string {
	k.t.Helper()
	v, err := k.h.Create(k.ctx, name)
	require.NoError(k.t, err, "create %s", name)
	return v
}

func (k *kit[T]) update(name string) string {
	k.t.Helper()
	v, err := k.h.Update(k.ctx, name)
	require.NoError(k.t, err, "update %s", name)
	return v
}

func (k *kit[T]) del(name string) string {
	k.t.Helper()
	v, err := k.h.Delete(k.ctx, name)
	require.NoError(k.t, err, "delete %s", name)
	return v
}

// listAll reads every page of a list and checks the pages agree: one
// version, no duplicate, at most Limit items each. It returns the
// generation of each object by name, and the version.
func (k *kit[T]) listAll(opts informer.ListOptions) (map[string]int, string) {
	k.t.Helper()
	state := map[string]int{}
	version := ""
	for page := 0; ; page++ {
		require.Less(k.t, page, 10_000, "list does not end")
		p, err := k.list(opts)
		require.NoError(k.t, err, "list page %d (%+v)", page, opts)
		if page == 0 {
			version = p.Version
			require.NotEmpty(k.t, version, "list version")
		} else {
			require.Equal(k.t, version, p.Version, "page %d version differs from the first page's", page)
		}
		if opts.Limit > 0 {
			require.LessOrEqual(k.t, len(p.Items), opts.Limit, "page %d longer than Limit", page)
		}
		for _, obj := range p.Items {
			name := k.h.Name(obj)
			_, dup := state[name]
			require.False(k.t, dup, "page %d: %s listed twice", page, name)
			state[name] = k.h.Generation(obj)
		}
		if p.Continue == "" {
			return state, version
		}
		opts.Continue = p.Continue
	}
}

// list reads one page with a bounded wait.
func (k *kit[T]) list(opts informer.ListOptions) (informer.ListPage[T], error) {
	ctx, cancel := context.WithTimeout(k.ctx, k.h.wait())
	defer cancel()
	return k.h.Source.List(ctx, opts)
}

// stream is an open watch under test; it checks versions never go back.
type stream[T any] struct {
	k    *kit[T]
	w    informer.Watcher[T]
	last string
}

// watch opens a watch stopped at the end of the test.
func (k *kit[T]) watch(ctx context.Context, opts informer.WatchOptions) *stream[T] {
	k.t.Helper()
	w, err := k.h.Source.Watch(ctx, opts)
	require.NoError(k.t, err, "watch %+v", opts)
	k.t.Cleanup(w.Stop)
	return &stream[T]{k: k, w: w}
}

// next returns the next event, or false when the stream is closed. It fails
// the test when nothing comes within the wait timeout.
func (s *stream[T]) next() (informer.Event[T], bool) {
	s.k.t.Helper()
	timer := time.NewTimer(s.k.h.wait())
	defer timer.Stop()
	select {
	case ev, ok := <-s.w.Events():
		if ok && ev.Type != informer.EventError {
			s.checkVersion(ev)
		}
		return ev, ok
	case <-timer.C:
		s.k.t.Fatalf("no event within %v", s.k.h.wait())
		return informer.Event[T]{}, false
	}
}

// checkVersion fails when ev's version is older than the previous event's.
func (s *stream[T]) checkVersion(ev informer.Event[T]) {
	s.k.t.Helper()
	require.NotEmpty(s.k.t, ev.Version, "%v event without a version", ev.Type)
	if c := s.k.h.CompareVersions; c != nil && s.last != "" {
		require.GreaterOrEqual(s.k.t, c(ev.Version, s.last), 0,
			"%v event version %s older than the previous %s", ev.Type, ev.Version, s.last)
	}
	s.last = ev.Version
}

// nextChange returns the next event that is not a bookmark; an Error event
// or a closed stream fails the test.
func (s *stream[T]) nextChange() informer.Event[T] {
	s.k.t.Helper()
	for {
		ev, ok := s.next()
		require.True(s.k.t, ok, "stream closed early")
		require.NotEqual(s.k.t, informer.EventError, ev.Type, "error event: %v", ev.Err)
		if ev.Type != informer.EventBookmark {
			return ev
		}
	}
}

// change is an expected watch event; an empty version is not checked.
type change struct {
	typ     informer.EventType
	name    string
	gen     int
	version string
}

func (c change) String() string {
	return fmt.Sprintf("%v %s gen %d at %q", c.typ, c.name, c.gen, c.version)
}

// expect checks that the next changes are exactly want, in order.
func (s *stream[T]) expect(want ...change) {
	s.k.t.Helper()
	for i, w := range want {
		ev := s.nextChange()
		got := change{typ: ev.Type, name: s.k.h.Name(ev.Object), gen: s.k.h.Generation(ev.Object), version: ev.Version}
		if w.version == "" {
			got.version = ""
		}
		require.Equal(s.k.t, w.String(), got.String(), "change %d of %d", i+1, len(want))
	}
}

// expectClosed drains the stream until it is closed, failing on an Error
// event or when it stays open past the wait timeout.
func (s *stream[T]) expectClosed() {
	s.k.t.Helper()
	for {
		ev, ok := s.next()
		if !ok {
			return
		}
		require.NotEqual(s.k.t, informer.EventError, ev.Type, "error event: %v", ev.Err)
	}
}

// isExpired reports whether a Watch result is ErrExpired, returned or as the
// first event; any other outcome fails the test.
func (k *kit[T]) requireWatchExpired(opts informer.WatchOptions) {
	k.t.Helper()
	w, err := k.h.Source.Watch(k.ctx, opts)
	if err != nil {
		require.ErrorIs(k.t, err, informer.ErrExpired, "watch from a compacted version")
		return
	}
	defer w.Stop()
	s := &stream[T]{k: k, w: w}
	ev, ok := s.next()
	require.True(k.t, ok, "watch from a compacted version: closed without an Error event")
	require.Equal(k.t, informer.EventError, ev.Type, "watch from a compacted version: first event")
	require.ErrorIs(k.t, ev.Err, informer.ErrExpired, "watch from a compacted version: first event")
	_, ok = s.next()
	require.False(k.t, ok, "an event follows the Error event")
}

// isUnsupported reports errors.ErrUnsupported.
func isUnsupported(err error) bool { return errors.Is(err, errors.ErrUnsupported) }
