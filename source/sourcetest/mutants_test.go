package sourcetest_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/sourcetest"
)

// mutation is a broken variant of the memory source, with the check that
// must catch it and a part of the message it must give.
type mutation struct {
	name, check, msg string
	mutate           func(e *env)
}

// mutations are the broken variants of the memory source the checks of
// lists, watches, bookmarks and streaming lists must catch (those of
// caught-up watches and snapshots are in mutants_warm_test.go).
var mutations = []mutation{
	{"drops a change", "WatchFromList", "expected Deleted b gen 1", func(e *env) {
		e.perWatch(func() func(informer.Event[item]) []informer.Event[item] {
			n := 0
			return func(ev informer.Event[item]) []informer.Event[item] {
				if n++; n == 3 {
					return nil
				}
				return []informer.Event[item]{ev}
			}
		})
	}},
	{"duplicate delivery", "WatchFromList", "exactly once", func(e *env) {
		e.mapEvents(func(ev informer.Event[item]) []informer.Event[item] {
			if ev.Type == informer.EventModified {
				return []informer.Event[item]{ev, ev}
			}
			return []informer.Event[item]{ev}
		})
	}},
	{"lost delete", "WatchFromList", "expected Deleted b", func(e *env) {
		e.mapEvents(func(ev informer.Event[item]) []informer.Event[item] {
			if ev.Type == informer.EventDeleted {
				return nil
			}
			return []informer.Event[item]{ev}
		})
	}},
	{"Deleted without its object", "WatchFromList", "carries no object", func(e *env) {
		e.mapEvents(func(ev informer.Event[item]) []informer.Event[item] {
			if ev.Type == informer.EventDeleted {
				ev.Object = item{}
			}
			return []informer.Event[item]{ev}
		})
	}},
	{"wrong version on events", "WatchReplay", "with the version of its write", func(e *env) {
		e.mapEvents(func(ev informer.Event[item]) []informer.Event[item] {
			if ev.Type != informer.EventBookmark && ev.Type != informer.EventError {
				ev.Version = e.head()
			}
			return []informer.Event[item]{ev}
		})
	}},
	{"off-by-one resume (replays its version)", "WatchReplay", "expected Modified a gen 2", func(e *env) {
		e.source(nil, func(ctx context.Context, o informer.WatchOptions) (informer.Watcher[item], error) {
			if r := rev(o.Version); r > 0 {
				o.Version = strconv.FormatInt(r-1, 10)
			}
			return e.s.Watch(ctx, o)
		})
	}},
	{"off-by-one resume (skips one)", "WatchReplay", "expected Modified a gen 2", func(e *env) {
		e.source(nil, func(ctx context.Context, o informer.WatchOptions) (informer.Watcher[item], error) {
			if r := rev(o.Version); r > 0 {
				o.Version = strconv.FormatInt(r+1, 10)
			}
			return e.s.Watch(ctx, o)
		})
	}},
	{"unpinned pages", "ListPagesConsistent", "the continue token pins the version", func(e *env) {
		e.source(func(ctx context.Context, o informer.ListOptions) (informer.ListPage[item], error) {
			if o.Continue == "" {
				return e.s.List(ctx, o)
			}
			// Cut the next page from the latest state, not the token's.
			tokenRev, offset, _ := strings.Cut(strings.TrimPrefix(o.Continue, "mem1:"), ":")
			all, err := e.s.List(ctx, informer.ListOptions{})
			n, _ := strconv.Atoi(offset)
			end := min(len(all.Items), n+o.Limit)
			all.Items, all.Version = all.Items[min(len(all.Items), n):end], tokenRev
			if end < len(all.Items)+n {
				all.Continue = "mem1:" + tokenRev + ":" + strconv.Itoa(end)
			}
			return all, err
		}, nil)
	}},
	{"page without a version", "ListLatest", "has no Version", func(e *env) {
		e.source(func(ctx context.Context, o informer.ListOptions) (informer.ListPage[item], error) {
			p, err := e.s.List(ctx, o)
			p.Version = ""
			return p, err
		}, nil)
	}},
	{"exact read serves the latest state", "ListExact", "state at", func(e *env) {
		e.source(func(ctx context.Context, o informer.ListOptions) (informer.ListPage[item], error) {
			if o.Mode == informer.ReadExact {
				o.Mode = informer.ReadLatest
			}
			return e.s.List(ctx, o)
		}, nil)
	}},
	{"future list served as latest", "ListFutureVersion", "ErrVersionTooLarge", func(e *env) {
		e.source(func(ctx context.Context, o informer.ListOptions) (informer.ListPage[item], error) {
			if o.Version != "" && rev(o.Version) > rev(e.head()) {
				o.Mode, o.Version = informer.ReadLatest, ""
			}
			return e.s.List(ctx, o)
		}, nil)
	}},
	{"future watch starts at the latest version", "WatchFutureVersion", "ErrVersionTooLarge", func(e *env) {
		e.source(nil, func(ctx context.Context, o informer.WatchOptions) (informer.Watcher[item], error) {
			if rev(o.Version) > rev(e.head()) {
				o.Version = e.head()
			}
			return e.s.Watch(ctx, o)
		})
	}},
	{"future watch starts at the latest version, claiming to wait", "WatchFutureVersion", "must deliver only the changes after it", func(e *env) {
		e.h.WatchFutureWaits = true
		e.source(nil, func(ctx context.Context, o informer.WatchOptions) (informer.Watcher[item], error) {
			if rev(o.Version) > rev(e.head()) {
				o.Version = e.head()
			}
			return e.s.Watch(ctx, o)
		})
	}},
	{"malformed version read as latest", "MalformedVersion", "ErrInvalidOptions", func(e *env) {
		e.source(func(ctx context.Context, o informer.ListOptions) (informer.ListPage[item], error) {
			if o.Version != "" && rev(o.Version) < 0 {
				o.Mode, o.Version = informer.ReadLatest, ""
			}
			return e.s.List(ctx, o)
		}, nil)
	}},
	{"malformed token restarts the list", "MalformedContinue", "returned a page", func(e *env) {
		e.source(func(ctx context.Context, o informer.ListOptions) (informer.ListPage[item], error) {
			if !strings.HasPrefix(o.Continue, "mem1:") {
				o.Continue = ""
			}
			return e.s.List(ctx, o)
		}, nil)
	}},
	{"plain watch without a version starts now", "WatchNeedsVersion", "ErrInvalidOptions", func(e *env) {
		e.source(nil, func(ctx context.Context, o informer.WatchOptions) (informer.Watcher[item], error) {
			if o.Version == "" && !o.SendInitialEvents {
				o.Version = e.head()
			}
			return e.s.Watch(ctx, o)
		})
	}},
	{"compacted watch starts at the oldest version", "Expired", "ErrExpired", func(e *env) {
		e.source(nil, func(ctx context.Context, o informer.WatchOptions) (informer.Watcher[item], error) {
			w, err := e.s.Watch(ctx, o)
			if errors.Is(err, informer.ErrExpired) {
				o.Version = e.lastCompacted()
				return e.s.Watch(ctx, o)
			}
			return w, err
		})
	}},
	{"no ErrExpired when behind compaction", "WatchFallsBehindCompaction", "skipped", func(e *env) {
		e.pullWatch(func(*informer.WatchStream[item], error) (string, bool) { return e.lastCompacted(), true })
	}},
	{"events after an Error event", "WatchFallsBehindCompaction", "arrived after the Error event", func(e *env) {
		e.pullWatch(func(out *informer.WatchStream[item], err error) (string, bool) {
			out.Send(informer.Event[item]{Type: informer.EventError, Err: err})
			return e.lastCompacted(), true
		})
	}},
	{"bookmark ahead of the delivered changes", "BookmarkNotAhead", "a reflector resuming from it would lose", func(e *env) {
		e.bookmarkAhead()
	}},
	{"bookmark at the next version on an idle watch", "BookmarkNotAhead", "completed at a version not after that of the Bookmark", func(e *env) {
		e.bookmarkNext()
	}},
	{"bookmark goes backwards", "Bookmarks", "older than", func(e *env) {
		e.mapEvents(func(ev informer.Event[item]) []informer.Event[item] {
			if ev.Type == informer.EventBookmark && !ev.InitialEventsEnd {
				ev.Version = "1"
			}
			return []informer.Event[item]{ev}
		})
	}},
	{"ignores its context", "CancelContext", "context was cancelled", func(e *env) {
		e.source(nil, func(ctx context.Context, o informer.WatchOptions) (informer.Watcher[item], error) {
			return e.s.Watch(context.WithoutCancel(ctx), o)
		})
	}},
	{"Stop is not idempotent", "StopIdempotent", "Stop panicked", func(e *env) {
		e.source(nil, func(ctx context.Context, o informer.WatchOptions) (informer.Watcher[item], error) {
			w, err := e.s.Watch(ctx, o)
			if err != nil {
				return nil, err
			}
			return &panickyStop{Watcher: w, stopped: make(chan struct{})}, nil
		})
	}},
	{"ignores the watch timeout", "WatchTimeout", "Timeout of 100ms", func(e *env) {
		e.source(nil, func(ctx context.Context, o informer.WatchOptions) (informer.Watcher[item], error) {
			o.Timeout = 0
			return e.s.Watch(ctx, o)
		})
	}},
	{"Modified among the initial events", "StreamingList", "among the initial events", func(e *env) {
		e.perWatch(func() func(informer.Event[item]) []informer.Event[item] {
			n := 0
			return func(ev informer.Event[item]) []informer.Event[item] {
				if n++; n == 2 && ev.Type == informer.EventAdded {
					ev.Type = informer.EventModified
				}
				return []informer.Event[item]{ev}
			}
		})
	}},
	{"initial events end at an old version", "StreamingListOrder", "older than", func(e *env) {
		e.mapEvents(func(ev informer.Event[item]) []informer.Event[item] {
			if ev.InitialEventsEnd {
				ev.Version = "1"
			}
			return []informer.Event[item]{ev}
		})
	}},
}

// TestMutationsFailTheirCheck runs each broken variant of the memory source
// against the check that must catch it, and expects that check to fail
// with a message naming the fault.
func TestMutationsFailTheirCheck(t *testing.T) {
	for _, m := range slices.Concat(mutations, warmMutations) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			m.mutate(e)
			r := runRecorded(t, e.h, m.check)
			require.False(t, r.Skipped(), "%s skipped: %s", m.check, r.output())
			require.True(t, r.Failed(), "%s passed a source whose fault is: %s", m.check, m.name)
			require.Contains(t, r.output(), m.msg, "the message of %s", m.check)
			t.Logf("%s: %s", m.check, r.output())
		})
	}
}

// TestUnmutatedPassesEveryCheck: the env's harness, unmutated, passes every
// check, so each mutation fails its check because of its fault.
func TestUnmutatedPassesEveryCheck(t *testing.T) {
	for _, check := range sourcetest.Checks() {
		t.Run(check, func(t *testing.T) {
			t.Parallel()
			r := runRecorded(t, newEnv(t).h, check)
			require.False(t, r.Failed(), "%s", r.output())
			require.False(t, r.Skipped(), "%s", r.output())
		})
	}
}

// legalVariant behaves differently from the memory source in a way the
// contract allows; it must pass the listed checks.
type legalVariant struct {
	name   string
	checks []string
	mutate func(e *env)
}

// legalVariants are the legal variants of lists, watches and bookmarks
// (those of caught-up watches are in mutants_warm_test.go).
var legalVariants = []legalVariant{
	{"ErrExpired as the first event instead of from Watch", []string{"Expired", "WatchFromList", "WatchReplay"}, func(e *env) {
		e.source(nil, func(ctx context.Context, o informer.WatchOptions) (informer.Watcher[item], error) {
			w, err := e.s.Watch(ctx, o)
			if errors.Is(err, informer.ErrExpired) {
				s := informer.NewWatchStream[item](ctx, 1)
				s.Send(informer.Event[item]{Type: informer.EventError, Err: err})
				s.Close()
				return s, nil
			}
			return w, err
		})
	}},
	{"a watch from a future version waits for it", []string{"WatchFutureVersion", "WatchFromList"}, func(e *env) {
		e.h.WatchFutureWaits = true
		e.source(nil, func(ctx context.Context, o informer.WatchOptions) (informer.Watcher[item], error) {
			future := rev(o.Version)
			if future <= rev(e.head()) {
				return e.s.Watch(ctx, o)
			}
			o.Version = e.head()
			w, err := e.s.Watch(ctx, o)
			if err != nil {
				return nil, err
			}
			return rewatch(ctx, w, func(ev informer.Event[item]) []informer.Event[item] {
				if ev.Type != informer.EventError && rev(ev.Version) <= future {
					return nil // not there yet
				}
				return []informer.Event[item]{ev}
			}), nil
		})
	}},
	{"a watcher behind compaction ends with ErrExpired", []string{
		"WatchFallsBehindCompaction", "Expired", "WatchFromList", "WatchReplay", "WatchConcurrentWrites",
		"CancelContext", "StopIdempotent", "WatchTimeout",
	}, func(e *env) {
		e.pullWatch(func(out *informer.WatchStream[item], err error) (string, bool) {
			out.Send(informer.Event[item]{Type: informer.EventError, Err: err})
			return "", false
		})
	}},
	{"bookmarks at the whole store's version, past the collection's last change", []string{
		"BookmarkNotAhead", "Bookmarks", "WatchFromList",
	}, func(e *env) {
		// A view of the store without the objects named "_..."; a bookmark
		// request first writes one of those, as other prefixes of an etcd
		// store advance the revision its progress notifications carry.
		e.h.Source = e.s.Filtered(func(i item) bool { return !strings.HasPrefix(i.name, "_") })
		e.h.Bookmark = func(context.Context) error {
			cur, _, _ := e.s.Get("_other")
			if _, err := e.s.Put(item{name: "_other", gen: cur.gen + 1}); err != nil {
				return err
			}
			e.s.RequestBookmarks()
			return nil
		}
	}},
}

func TestLegalVariantsPass(t *testing.T) {
	for _, v := range slices.Concat(legalVariants, warmLegalVariants) {
		for _, check := range v.checks {
			t.Run(v.name+"/"+check, func(t *testing.T) {
				t.Parallel()
				e := newEnv(t)
				v.mutate(e)
				r := runRecorded(t, e.h, check)
				require.False(t, r.Failed(), "%s", r.output())
				require.False(t, r.Skipped(), "%s", r.output())
			})
		}
	}
}
