package etcd_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd"
)

// A key updated to a value that does not decode leaves the cache the way a
// deleted key does, on a resuming watch (NotifyCaughtUp) as on any: before
// the caught-up marker, the update and a deletion both arrive as Deleted,
// with the key only (no previous value is read during a catch-up), or with
// the key's last state when a Filter makes etcd send it (prev_kv).
func TestNotifyCaughtUpBadUpdate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		filter func(string, obj) bool
		want   []string
	}{
		{"no filter", nil, []string{
			`Modified k0 gen 2 "gold" unknown=false`,
			`Deleted k0 gen 0 "" unknown=true`,
			`Deleted k1 gen 0 "" unknown=true`,
		}},
		{"filter", func(string, obj) bool { return true }, []string{
			`Modified k0 gen 2 "gold" unknown=false`,
			`Deleted k0 gen 2 "gold" unknown=false`,
			`Deleted k1 gen 1 "" unknown=false`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := writer{c: client(t), prefix: newPrefix(t)}
			ctx := t.Context()
			w.seed(t, 3, "k%d", 1)
			resp, err := w.c.Get(ctx, w.prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
			require.NoError(t, err)
			v := fmt.Sprint(resp.Header.Revision)
			_, err = w.put(ctx, obj{Name: "k0", Gen: 2, Tier: "gold"})
			require.NoError(t, err)
			_, err = w.putRaw(ctx, "k0", "garbage")
			require.NoError(t, err)
			_, err = w.del(ctx, "k1")
			require.NoError(t, err)

			src := newSource(t, etcd.Options[obj]{Client: w.c, Prefix: w.prefix, StripPrefix: true, Filter: tc.filter})
			watch, err := src.Watch(ctx, informer.WatchOptions{Version: v, NotifyCaughtUp: true})
			require.NoError(t, err)
			defer watch.Stop()
			var got []string
			for ev := range watch.Events() {
				require.NotEqual(t, informer.EventError, ev.Type, "%v", ev.Err)
				if ev.InitialEventsEnd {
					break
				}
				if ev.Type != informer.EventBookmark {
					got = append(got, fmt.Sprintf("%v %s gen %d %q unknown=%v", ev.Type, ev.Object.Key, ev.Object.Value.Gen, ev.Object.Value.Tier, ev.Object.ValueUnknown))
				}
			}
			require.Equal(t, tc.want, got)
			require.Equal(t, uint64(1), src.DecodeErrors())
		})
	}
}

// TestWarmRestartBadUpdate: a key updated while the program was down to a
// value that does not decode is not in the cache once it has caught up,
// and no handler hears of it; a key updated so after the sync is delivered
// to the handler as a delete and leaves the cache: an update that does not
// decode is a deletion, warm or not.
func TestWarmRestartBadUpdate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snapshot")
	w := writer{c: client(t), prefix: newPrefix(t)}
	ctx := t.Context()
	w.seed(t, 20, "k%02d", 1)
	first := startWarm(t, srv.Endpoint(), w.prefix, path, nil)
	first.waitSynced(t)
	first.stop()
	_, err := w.putRaw(ctx, "k00", "garbage")
	require.NoError(t, err)

	second := startWarm(t, srv.Endpoint(), w.prefix, path, nil)
	second.waitSynced(t)
	require.Zero(t, second.src.lists.Load()+second.src.streams.Load(), "resumed")
	cache := second.cache()
	require.NotContains(t, cache, w.key("k00"), "the bad value's key left the cache")
	require.Len(t, cache, 19)
	present, initial, other := second.seen.get()
	require.Equal(t, 19, initial)
	require.Empty(t, other)
	require.Zero(t, present[w.key("k00")])

	v, err := w.putRaw(ctx, "k01", "garbage")
	require.NoError(t, err)
	require.NoError(t, second.inf.WaitForVersion(ctx, v))
	require.Eventually(t, func() bool {
		_, _, other := second.seen.get()
		return slices.Contains(other, "delete "+w.key("k01"))
	}, 10*time.Second, time.Millisecond, "the handler is told of a deletion")
	_, found := second.inf.Lister().Get(w.key("k01"))
	assert.False(t, found, "and the key left the cache")
	_, _, other = second.seen.get()
	assert.Equal(t, []string{"delete " + w.key("k01")}, other)
}
