package natskv_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/natskv"
	"github.com/ginformer/ginformer/source/natskv/natstest"
)

// The caught-up marker of a watch asked for NotifyCaughtUp, where NATS KV
// makes it delicate: the last messages before the watch are markers
// (deletes, purges, a delete of a key already absent, which the watch turns
// into a plain bookmark), nothing changed, or the messages were removed
// before the watch delivered them. The conformance kit checks the rest.

// caughtUpEvents renders the events of w up to the caught-up marker:
// "Added b@5", "Deleted a@6", "Bookmark@7", "CaughtUp@7".
func caughtUpEvents(t *testing.T, w informer.Watcher[*natskv.Object[obj]]) []string {
	t.Helper()
	timer := time.NewTimer(20 * time.Second)
	defer timer.Stop()
	var got []string
	for {
		select {
		case ev, ok := <-w.Events():
			require.True(t, ok, "closed after %v", got)
			switch {
			case ev.Type == informer.EventError:
				t.Fatalf("Error event after %v: %v", got, ev.Err)
			case ev.InitialEventsEnd:
				return append(got, "CaughtUp@"+ev.Version)
			case ev.Type == informer.EventBookmark:
				got = append(got, "Bookmark@"+ev.Version)
			default:
				got = append(got, fmt.Sprintf("%v %s@%s", ev.Type, ev.Object.Key, ev.Version))
			}
		case <-timer.C:
			t.Fatalf("no caught-up marker within 20s; got %v", got)
		}
	}
}

func TestCaughtUpAfterMarkers(t *testing.T) {
	for _, tc := range []struct {
		name string
		// writes writes after the watch's version and returns the events
		// due before the marker, and the marker's version.
		writes func(t *testing.T, ctx context.Context, w writer) ([]string, string)
	}{
		{"nothing changed", func(t *testing.T, ctx context.Context, w writer) ([]string, string) {
			return nil, ""
		}},
		{"a delete last", func(t *testing.T, ctx context.Context, w writer) ([]string, string) {
			vb := ok(t)(w.create(ctx, "b"))
			vd := ok(t)(w.del(ctx, "a"))
			return []string{"Added b@" + vb, "Deleted a@" + vd}, vd
		}},
		{"a purge last", func(t *testing.T, ctx context.Context, w writer) ([]string, string) {
			vb := ok(t)(w.create(ctx, "b"))
			vp := ok(t)(w.purge(ctx, "a")) // removes a's put, which the watch need not see
			return []string{"Added b@" + vb, "Deleted a@" + vp}, vp
		}},
		{"a delete of an absent key last", func(t *testing.T, ctx context.Context, w writer) ([]string, string) {
			vc := ok(t)(w.create(ctx, "c"))
			vd := ok(t)(w.del(ctx, "c"))
			vd2 := ok(t)(rev(natstest.Delete(ctx, w.js, w.kv.Bucket(), "c")))
			return []string{"Added c@" + vc, "Deleted c@" + vd, "Bookmark@" + vd2}, vd2
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, w := fixture(t, jetstream.KeyValueConfig{}, natskv.Options[obj]{})
			ctx := t.Context()
			from := ok(t)(w.create(ctx, "a"))
			want, marker := tc.writes(t, ctx, w)
			if marker == "" {
				marker = from
			}
			wt, err := src.Watch(ctx, informer.WatchOptions{Version: from, NotifyCaughtUp: true})
			require.NoError(t, err)
			defer wt.Stop()
			require.Equal(t, append(want, "CaughtUp@"+marker), caughtUpEvents(t, wt))
			vz := ok(t)(w.create(ctx, "z"))
			ev := next(t, wt)
			require.Equal(t, "Added z@"+vz, fmt.Sprintf("%v %s@%s", ev.Type, ev.Object.Key, ev.Version))
		})
	}
}

// Messages after the watch's version removed before it starts (here the
// KV's PurgeDeletes, which leaves no marker): a plain watch cannot see it
// and waits; one asked for NotifyCaughtUp cannot reach the stream's last
// revision, and fails with ErrExpired, so that the informer lists.
func TestCaughtUpMessagesRemovedBeforeWatch(t *testing.T) {
	src, w := fixture(t, jetstream.KeyValueConfig{}, natskv.Options[obj]{})
	ctx := t.Context()
	from := ok(t)(w.create(ctx, "keep"))
	ok(t)(w.create(ctx, "gone"))
	ok(t)(w.del(ctx, "gone"))
	require.NoError(t, w.kv.PurgeDeletes(ctx, jetstream.DeleteMarkersOlderThan(-1)))

	_, err := src.Watch(ctx, informer.WatchOptions{Version: from, NotifyCaughtUp: true})
	require.ErrorIs(t, err, informer.ErrExpired)
	wt, err := src.Watch(ctx, informer.WatchOptions{Version: from})
	require.NoError(t, err, "a plain watch")
	wt.Stop()
}

// Messages removed while the watch is catching up (a purge of the whole
// stream, once the client holds some of the backlog): the watch delivers a
// gapless prefix, then ends with ErrExpired, or, if it held the whole
// backlog already, delivers it and the marker. It never waits for ever.
func TestCaughtUpMessagesRemovedDuringWatch(t *testing.T) {
	src, w := fixture(t, jetstream.KeyValueConfig{}, natskv.Options[obj]{WatchBuffer: -1})
	ctx := t.Context()
	from := ok(t)(w.create(ctx, "first"))
	const n = 1500
	for i := range n {
		b, _ := json.Marshal(obj{Name: "k", Gen: i + 1})
		_, err := w.kv.Put(ctx, fmt.Sprintf("k%d", i%50), b)
		require.NoError(t, err)
	}
	wt, err := src.Watch(ctx, informer.WatchOptions{Version: from, NotifyCaughtUp: true})
	require.NoError(t, err)
	defer wt.Stop()
	st, err := w.js.Stream(ctx, "KV_"+w.kv.Bucket())
	require.NoError(t, err)
	require.NoError(t, st.Purge(ctx))

	want, err := strconv.ParseUint(from, 10, 64) // the revision of the last event
	require.NoError(t, err)
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	for got := 0; ; got++ {
		select {
		case ev, open := <-wt.Events():
			require.True(t, open, "closed after %d events, without an error or the marker", got)
			switch {
			case ev.Type == informer.EventError:
				require.ErrorIs(t, ev.Err, informer.ErrExpired)
				t.Logf("ErrExpired after %d of %d changes", got, n)
				return
			case ev.InitialEventsEnd:
				require.Equal(t, n, got, "the marker after %d of %d changes", got, n)
				t.Logf("the whole backlog was delivered before the purge, then the marker")
				return
			}
			want++
			require.Equal(t, fmt.Sprint(want), ev.Version, "event %d", got)
		case <-timer.C:
			t.Fatalf("neither the marker nor an error within 30s")
		}
	}
}
