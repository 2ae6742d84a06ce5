package etcd_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd"
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
)

// A watch from revision v asks for the changes after v. Compacted at
// exactly v+1, etcd has lost none of them: the watch delivers them, plain
// or resuming (NotifyCaughtUp), instead of ending with ErrExpired, which
// would make a reflector relist for nothing.
func TestWatchCompactedAtNextRevision(t *testing.T) {
	for _, caughtUp := range []bool{false, true} {
		t.Run(fmt.Sprintf("NotifyCaughtUp=%v", caughtUp), func(t *testing.T) {
			s := etcdtest.New(t, etcdtest.Config{})
			c := s.NewTestClient(t)
			w := writer{c: c, prefix: "/compacted/"}
			ctx := t.Context()
			v, err := w.create(ctx, "a")
			require.NoError(t, err)
			next, err := w.update(ctx, "a")
			require.NoError(t, err)
			require.Equal(t, 1, compareVersions(next, v))
			at, err := etcdtest.Compact(ctx, c)
			require.NoError(t, err)
			require.Equal(t, next, fmt.Sprint(at), "compacted at v+1")

			src := newSource(t, etcd.Options[obj]{Client: c, Prefix: w.prefix, StripPrefix: true})
			watch, err := src.Watch(ctx, informer.WatchOptions{Version: v, NotifyCaughtUp: caughtUp})
			require.NoError(t, err)
			defer watch.Stop()
			var got []string
			timeout := time.After(10 * time.Second)
			for done := false; !done; {
				select {
				case ev, ok := <-watch.Events():
					require.True(t, ok, "stream closed")
					require.NotEqual(t, informer.EventError, ev.Type, "%v", ev.Err)
					switch {
					case ev.Type != informer.EventBookmark:
						got = append(got, fmt.Sprintf("%v %s gen %d at %s", ev.Type, ev.Object.Key, ev.Object.Value.Gen, ev.Version))
						done = !caughtUp
					case ev.InitialEventsEnd:
						require.Equal(t, next, ev.Version, "the marker")
						done = true
					}
				case <-timeout:
					t.Fatalf("nothing more within 10s; got %v", got)
				}
			}
			require.Equal(t, []string{"Modified a gen 2 at " + next}, got)

			// And it goes on from there.
			v3, err := w.update(ctx, "a")
			require.NoError(t, err)
			ev := next2(t, watch)
			require.Equal(t, v3, ev.Version)
			require.Equal(t, 3, ev.Object.Value.Gen)
		})
	}
}

// next2 is next, failing on an Error event.
func next2(t *testing.T, w informer.Watcher[*etcd.Object[obj]]) informer.Event[*etcd.Object[obj]] {
	t.Helper()
	ev := next(t, w)
	require.NotEqual(t, informer.EventError, ev.Type, "%v", ev.Err)
	return ev
}
