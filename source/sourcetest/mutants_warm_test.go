package sourcetest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
)

// The broken and legal variants of what warm restarts ask of a source:
// watches that notify when they have caught up (CaughtUp, CaughtUpIdle,
// CaughtUpExpired) and the snapshot codec and identity (SnapshotSource).

type events = []informer.Event[item]

func isMarker(ev informer.Event[item]) bool {
	return ev.Type == informer.EventBookmark && ev.InitialEventsEnd
}

// onCaughtUp makes each watch asked for NotifyCaughtUp pass its events
// through a function made for the watch by newFn; other watches are the
// store's.
func (e *env) onCaughtUp(newFn func(o informer.WatchOptions) func(informer.Event[item]) events) {
	e.source(nil, func(ctx context.Context, o informer.WatchOptions) (informer.Watcher[item], error) {
		w, err := e.s.Watch(ctx, o)
		if err != nil || !o.NotifyCaughtUp {
			return w, err
		}
		return rewatch(ctx, w, newFn(o)), nil
	})
}

// keyOnlyDeletes makes each watch asked for NotifyCaughtUp deliver its
// deletions with the key only (generation 0): those before its caught-up
// marker, and also those after it when always is set.
func (e *env) keyOnlyDeletes(always bool) {
	e.onCaughtUp(func(informer.WatchOptions) func(informer.Event[item]) events {
		caughtUp := false
		return func(ev informer.Event[item]) events {
			caughtUp = caughtUp || isMarker(ev)
			if ev.Type == informer.EventDeleted && (always || !caughtUp) {
				ev.Object = item{name: ev.Object.name}
			}
			return events{ev}
		}
	})
}

var warmMutations = []mutation{
	{"key-only deletions before the caught-up marker, undeclared", "CaughtUp", "expected Deleted b gen 1 at version", func(e *env) {
		e.keyOnlyDeletes(false)
	}},
	{"a key-only deletion after the caught-up marker", "CaughtUp", "after the caught-up marker: expected Deleted d gen 2", func(e *env) {
		e.h.KeyOnlyDeletesBeforeCaughtUp = true
		e.keyOnlyDeletes(true)
	}},
	{"ignores NotifyCaughtUp", "CaughtUpIdle", "expected a Bookmark with InitialEventsEnd", func(e *env) {
		e.source(nil, func(ctx context.Context, o informer.WatchOptions) (informer.Watcher[item], error) {
			o.NotifyCaughtUp = false
			return e.s.Watch(ctx, o)
		})
	}},
	{"caught-up marker at the head, ahead of the replayed changes", "CaughtUp", "arrived before", func(e *env) {
		e.onCaughtUp(func(informer.WatchOptions) func(informer.Event[item]) events {
			head, first := e.head(), true
			return func(ev informer.Event[item]) events {
				if isMarker(ev) {
					return nil
				}
				if first {
					first = false
					return events{{Type: informer.EventBookmark, Version: head, InitialEventsEnd: true}, ev}
				}
				return events{ev}
			}
		})
	}},
	{"caught-up marker at the watch's version", "CaughtUp", "older than", func(e *env) {
		e.onCaughtUp(func(o informer.WatchOptions) func(informer.Event[item]) events {
			return func(ev informer.Event[item]) events {
				if isMarker(ev) {
					ev.Version = o.Version
				}
				return events{ev}
			}
		})
	}},
	{"caught-up marker sent twice", "CaughtUp", "a second Bookmark with InitialEventsEnd", func(e *env) {
		e.onCaughtUp(func(informer.WatchOptions) func(informer.Event[item]) events {
			return func(ev informer.Event[item]) events {
				if isMarker(ev) {
					return events{ev, ev}
				}
				return events{ev}
			}
		})
	}},
	{"every bookmark of a caught-up watch is a marker", "CaughtUp", "sends the caught-up marker once", func(e *env) {
		e.onCaughtUp(func(informer.WatchOptions) func(informer.Event[item]) events {
			return func(ev informer.Event[item]) events {
				if ev.Type == informer.EventBookmark {
					ev.InitialEventsEnd = true
				}
				return events{ev}
			}
		})
	}},
	{"NotifyCaughtUp served though declared unsupported", "CaughtUp", "opened a stream whose first event is", func(e *env) {
		e.h.DisableNotifyCaughtUp = true
	}},
	{"NotifyCaughtUp refused with another error", "CaughtUp", "wraps neither errors.ErrUnsupported nor ErrRelistRequested", func(e *env) {
		e.h.DisableNotifyCaughtUp = true
		e.source(nil, func(ctx context.Context, o informer.WatchOptions) (informer.Watcher[item], error) {
			if o.NotifyCaughtUp {
				return nil, fmt.Errorf("no caught-up marker: %w", informer.ErrInvalidOptions)
			}
			return e.s.Watch(ctx, o)
		})
	}},
	{"caught-up watch from a compacted version starts at the oldest", "CaughtUpExpired", "ErrExpired", func(e *env) {
		e.source(nil, func(ctx context.Context, o informer.WatchOptions) (informer.Watcher[item], error) {
			w, err := e.s.Watch(ctx, o)
			if errors.Is(err, informer.ErrExpired) && o.NotifyCaughtUp {
				o.Version = e.lastCompacted()
				return e.s.Watch(ctx, o)
			}
			return w, err
		})
	}},
	{"Decode retains its input", "SnapshotSource", "retains its input", func(e *env) {
		e.snapshotWith(codecFuncs{decode: func(data []byte) (item, error) {
			i, err := itemCodec{}.Decode(data)
			if err == nil && len(i.name) > 0 {
				i.name = unsafe.String(&data[len(data)-len(i.name)], len(i.name)) // aliases data
			}
			return i, err
		}}, nil)
	}},
	{"the codec loses the generation", "SnapshotSource", "must round-trip every object", func(e *env) {
		e.snapshotWith(codecFuncs{encode: func(dst []byte, i item) ([]byte, error) {
			i.gen = 1
			return itemCodec{}.AppendEncode(dst, i)
		}}, nil)
	}},
	{"AppendEncode overwrites dst", "SnapshotSource", "it appends to dst", func(e *env) {
		e.snapshotWith(codecFuncs{encode: func(dst []byte, i item) ([]byte, error) {
			return itemCodec{}.AppendEncode(dst[:0], i)
		}}, nil)
	}},
	{"an identity of its own at every call", "SnapshotSource", "stable across calls", func(e *env) {
		n := 0
		e.snapshotWith(nil, func() string { n++; return fmt.Sprint("call ", n) })
	}},
	{"an identity that follows the writes", "SnapshotSource", "before the kit's writes", func(e *env) {
		e.snapshotWith(nil, func() string { return "memory at " + e.head() })
	}},
	{"an empty identity", "SnapshotSource", `returned ""`, func(e *env) {
		e.snapshotWith(nil, func() string { return "" })
	}},
}

var warmLegalVariants = []legalVariant{
	{"key-only deletions before the caught-up marker, declared", []string{"CaughtUp", "CaughtUpIdle", "CaughtUpExpired"}, func(e *env) {
		e.h.KeyOnlyDeletesBeforeCaughtUp = true
		e.keyOnlyDeletes(false)
	}},
	{"plain bookmarks around the caught-up marker", []string{"CaughtUp", "CaughtUpIdle", "CaughtUpExpired"}, func(e *env) {
		e.onCaughtUp(func(o informer.WatchOptions) func(informer.Event[item]) events {
			first := true
			return func(ev informer.Event[item]) events {
				out := events{ev}
				if isMarker(ev) {
					out = append(out, informer.Event[item]{Type: informer.EventBookmark, Version: ev.Version})
				}
				if first {
					first = false
					out = append(events{{Type: informer.EventBookmark, Version: o.Version}}, out...)
				}
				return out
			}
		})
	}},
	{"NotifyCaughtUp unsupported, and declared so", []string{"CaughtUp"}, func(e *env) {
		e.h.DisableNotifyCaughtUp = true
		e.source(nil, func(ctx context.Context, o informer.WatchOptions) (informer.Watcher[item], error) {
			if o.NotifyCaughtUp {
				return nil, fmt.Errorf("no caught-up marker: %w", errors.ErrUnsupported)
			}
			return e.s.Watch(ctx, o)
		})
	}},
	{"NotifyCaughtUp refused with ErrRelistRequested as the first event", []string{"CaughtUp"}, func(e *env) {
		e.h.DisableNotifyCaughtUp = true
		e.source(nil, func(ctx context.Context, o informer.WatchOptions) (informer.Watcher[item], error) {
			if !o.NotifyCaughtUp {
				return e.s.Watch(ctx, o)
			}
			s := informer.NewWatchStream[item](ctx, 1)
			s.Send(informer.Event[item]{Type: informer.EventError,
				Err: fmt.Errorf("no marker here: %w: %w", informer.ErrRelistRequested, informer.ErrExpired)})
			s.Close()
			return s, nil
		})
	}},
	{"a caught-up marker past the collection's last change", []string{"CaughtUp", "CaughtUpIdle"}, func(e *env) {
		// A view of the store without the objects named "_...": a watch
		// asked for NotifyCaughtUp first writes one of those, as other
		// prefixes of an etcd store advance the revision its marker carries.
		view := e.s.Filtered(func(i item) bool { return !strings.HasPrefix(i.name, "_") })
		e.h.Source = informer.SourceFuncs[item]{ListFunc: view.List, StreamingList: true,
			WatchFunc: func(ctx context.Context, o informer.WatchOptions) (informer.Watcher[item], error) {
				if o.NotifyCaughtUp {
					cur, _, _ := e.s.Get("_other")
					if _, err := e.s.Put(item{name: "_other", gen: cur.gen + 1}); err != nil {
						return nil, err
					}
				}
				return view.Watch(ctx, o)
			}}
	}},
	{"a snapshot codec that copies more than it must", []string{"SnapshotSource"}, func(e *env) {
		e.snapshotWith(codecFuncs{decode: func(data []byte) (item, error) {
			return itemCodec{}.Decode(append([]byte(nil), data...))
		}}, nil)
	}},
}

// TestCaughtUpFailureSaysHowToPass: a source written before NotifyCaughtUp
// existed (it ignores the option, or refuses it without the harness saying
// so) fails the caught-up checks with a message that names both ways to
// pass: implement the marker, or refuse the option and set
// Harness.DisableNotifyCaughtUp.
func TestCaughtUpFailureSaysHowToPass(t *testing.T) {
	ignores := func(e *env) {
		e.source(nil, func(ctx context.Context, o informer.WatchOptions) (informer.Watcher[item], error) {
			o.NotifyCaughtUp = false
			return e.s.Watch(ctx, o)
		})
	}
	refusesUndeclared := func(e *env) {
		e.source(nil, func(ctx context.Context, o informer.WatchOptions) (informer.Watcher[item], error) {
			if o.NotifyCaughtUp {
				return nil, fmt.Errorf("no caught-up marker: %w", errors.ErrUnsupported)
			}
			return e.s.Watch(ctx, o)
		})
	}
	for _, tc := range []struct {
		name, check, msg string
		mutate           func(*env)
	}{
		{"ignores NotifyCaughtUp", "CaughtUp", "expected a Bookmark with InitialEventsEnd (the watch has caught up) within", ignores},
		{"ignores NotifyCaughtUp", "CaughtUpIdle", "expected a Bookmark with InitialEventsEnd (the watch has caught up) within", ignores},
		{"ignores NotifyCaughtUp", "CaughtUpExpired", "expected a Bookmark with InitialEventsEnd (the watch has caught up) within", ignores},
		{"refuses NotifyCaughtUp, undeclared", "CaughtUp", "but the harness does not set Harness.DisableNotifyCaughtUp", refusesUndeclared},
		{"refuses NotifyCaughtUp, undeclared", "CaughtUpIdle", "but the harness does not set Harness.DisableNotifyCaughtUp", refusesUndeclared},
	} {
		t.Run(tc.name+"/"+tc.check, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			tc.mutate(e)
			r := runRecorded(t, e.h, tc.check)
			require.True(t, r.Failed(), "%s passed a source that %s", tc.check, tc.name)
			out := r.output()
			require.Contains(t, out, tc.msg)
			for _, way := range []string{
				"must answer informer.WatchOptions.NotifyCaughtUp, in one of two ways",
				"implement it",
				"send one Bookmark with InitialEventsEnd",
				"refuse it (Watch returns an error wrapping errors.ErrUnsupported when opts.NotifyCaughtUp is set)",
				"and set Harness.DisableNotifyCaughtUp",
			} {
				require.Contains(t, out, way, "the message does not tell how to pass")
			}
			t.Logf("%s: %s", tc.check, out)
		})
	}
}
