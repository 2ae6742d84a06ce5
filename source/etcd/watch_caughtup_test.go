package etcd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd"
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
)

// untilCaughtUp applies the events of watch to state (key → object) until
// the caught-up marker, checking that each change is newer than the one
// before and not newer than the marker, and returns the marker.
func untilCaughtUp(t *testing.T, watch informer.Watcher[*etcd.Object[obj]], state map[string]*etcd.Object[obj]) (marker informer.Event[*etcd.Object[obj]], changes int) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	last := "0"
	for {
		select {
		case ev, ok := <-watch.Events():
			require.True(t, ok, "stream closed before the caught-up marker")
			switch ev.Type {
			case informer.EventBookmark:
				require.GreaterOrEqual(t, compareVersions(ev.Version, last), 0, "a bookmark behind a delivered change")
				if ev.InitialEventsEnd {
					return ev, changes
				}
			case informer.EventAdded, informer.EventModified:
				state[ev.Object.Key] = ev.Object
			case informer.EventDeleted:
				delete(state, ev.Object.Key)
			default:
				t.Fatalf("unexpected %v event: %v", ev.Type, ev.Err)
			}
			if ev.Type != informer.EventBookmark {
				require.Equal(t, ev.Version, strconv.FormatInt(ev.Object.ModRevision, 10))
				require.GreaterOrEqual(t, compareVersions(ev.Version, last), 0, "changes out of order")
				changes++
			}
			last = ev.Version
		case <-timeout:
			t.Fatal("no caught-up marker within 20s")
		}
	}
}

// stateAt reads the prefix at revision rev, as the source's objects.
func stateAt(t *testing.T, w writer, rev string) map[string]*etcd.Object[obj] {
	t.Helper()
	r, err := strconv.ParseInt(rev, 10, 64)
	require.NoError(t, err)
	resp, err := w.c.Get(t.Context(), w.prefix, clientv3.WithPrefix(), clientv3.WithRev(r))
	require.NoError(t, err)
	state := make(map[string]*etcd.Object[obj], len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var v obj
		require.NoError(t, json.Unmarshal(kv.Value, &v))
		state[string(kv.Key)] = &etcd.Object[obj]{Key: string(kv.Key), Value: v, ModRevision: kv.ModRevision, CreateRevision: kv.CreateRevision}
	}
	return state
}

// A watch with NotifyCaughtUp from a version followed by many changes
// (creations, updates, deletions, one large transaction) delivers all of
// them, then the marker at a revision not older than the last write, at
// which the state it delivered equals etcd's; then it goes on as usual, and
// later bookmarks are plain ones.
func TestNotifyCaughtUpAfterChanges(t *testing.T) {
	w := writer{c: client(t), prefix: newPrefix(t)}
	ctx := t.Context()
	w.seed(t, 50, "k%03d", 1)
	src := newSource(t, etcd.Options[obj]{Client: w.c, Prefix: w.prefix, WatchBuffer: 2})
	page, err := src.List(ctx, informer.ListOptions{})
	require.NoError(t, err)
	state := make(map[string]*etcd.Object[obj])
	for _, o := range page.Items {
		state[o.Key] = o
	}

	// While the informer is "down".
	for i := range 50 {
		name := fmt.Sprintf("k%03d", i)
		switch i % 3 {
		case 0:
			_, err = w.update(ctx, name)
		case 1:
			_, err = w.del(ctx, name)
		default:
			_, err = w.put(ctx, obj{Name: fmt.Sprintf("n%03d", i), Gen: 1})
		}
		require.NoError(t, err)
	}
	w.seed(t, 300, "t%03d", 2) // transactions of 100 puts: many events per revision
	ops := []clientv3.Op{clientv3.OpDelete(w.key("t"), clientv3.WithPrefix())}
	_, err = w.c.Txn(ctx).Then(ops...).Commit()
	require.NoError(t, err)
	_, err = w.update(ctx, "k000")
	require.NoError(t, err)
	last, err := w.del(ctx, "k000") // the last write
	require.NoError(t, err)

	watch, err := src.Watch(ctx, informer.WatchOptions{Version: page.Version, NotifyCaughtUp: true})
	require.NoError(t, err)
	defer watch.Stop()
	marker, changes := untilCaughtUp(t, watch, state)
	require.Equal(t, informer.EventBookmark, marker.Type)
	require.GreaterOrEqual(t, compareVersions(marker.Version, last), 0, "the marker is not older than the last write")
	require.Greater(t, changes, 50+300+300)
	require.Equal(t, stateAt(t, w, marker.Version), state, "the state delivered up to the marker is etcd's at its revision")

	// Then as usual: new changes, plain bookmarks.
	v, err := w.put(ctx, obj{Name: "after", Gen: 1})
	require.NoError(t, err)
	ev := next(t, watch)
	require.Equal(t, informer.EventAdded, ev.Type)
	require.Equal(t, w.key("after"), ev.Object.Key)
	require.Equal(t, v, ev.Version)
	require.NoError(t, src.RequestProgress(ctx))
	for ev := range watch.Events() {
		require.Equal(t, informer.EventBookmark, ev.Type)
		require.False(t, ev.InitialEventsEnd, "one caught-up marker only")
		require.GreaterOrEqual(t, compareVersions(ev.Version, v), 0)
		break
	}
}

// With nothing changed since the version, the marker comes promptly, first,
// at the version (or later, as other prefixes are written); a watch without
// NotifyCaughtUp never sends one.
func TestNotifyCaughtUpNothingChanged(t *testing.T) {
	w := writer{c: client(t), prefix: newPrefix(t)}
	ctx := t.Context()
	v, err := w.create(ctx, "a")
	require.NoError(t, err)
	src := newSource(t, etcd.Options[obj]{Client: w.c, Prefix: w.prefix})
	for range 3 {
		start := time.Now()
		watch, err := src.Watch(ctx, informer.WatchOptions{Version: v, NotifyCaughtUp: true})
		require.NoError(t, err)
		select {
		case ev := <-watch.Events():
			took := time.Since(start)
			require.Equal(t, informer.EventBookmark, ev.Type, "%v", ev.Err)
			require.True(t, ev.InitialEventsEnd)
			require.GreaterOrEqual(t, compareVersions(ev.Version, v), 0)
			t.Logf("caught-up marker after %v", took)
		case <-time.After(10 * time.Second):
			t.Fatal("no caught-up marker")
		}
		watch.Stop()
	}

	// Without NotifyCaughtUp: bookmarks on request, never the marker.
	watch, err := src.Watch(ctx, informer.WatchOptions{Version: v})
	require.NoError(t, err)
	defer watch.Stop()
	require.NoError(t, src.RequestProgress(ctx))
	ev := <-watch.Events()
	require.Equal(t, informer.EventBookmark, ev.Type, "%v", ev.Err)
	require.False(t, ev.InitialEventsEnd)
}

// A compacted version ends the watch with ErrExpired, before any marker.
func TestNotifyCaughtUpCompacted(t *testing.T) {
	s := etcdtest.New(t, etcdtest.Config{})
	c := s.NewTestClient(t)
	w := writer{c: c, prefix: "/compacted/"}
	ctx := t.Context()
	v, err := w.create(ctx, "a")
	require.NoError(t, err)
	_, err = w.update(ctx, "a")
	require.NoError(t, err)
	_, err = w.update(ctx, "a") // compacted past v+1 (a compaction at v+1 loses nothing: see watch_compact_test.go)
	require.NoError(t, err)
	_, err = etcdtest.Compact(ctx, c)
	require.NoError(t, err)
	src := newSource(t, etcd.Options[obj]{Client: c, Prefix: w.prefix})
	watch, err := src.Watch(ctx, informer.WatchOptions{Version: v, NotifyCaughtUp: true})
	if err != nil {
		require.ErrorIs(t, err, informer.ErrExpired)
		return
	}
	defer watch.Stop()
	select {
	case ev, ok := <-watch.Events():
		require.True(t, ok)
		require.Equal(t, informer.EventError, ev.Type, "the first event")
		require.ErrorIs(t, ev.Err, informer.ErrExpired)
	case <-time.After(10 * time.Second):
		t.Fatal("no error")
	}
	_, ok := <-watch.Events()
	require.False(t, ok, "closed after the Error event")
}

// A sharded source refuses a watch resuming a restored cache, whether or
// not it listed before, with the error that makes a reflector relist at
// once and quietly.
func TestShardedNotifyCaughtUpRefused(t *testing.T) {
	w := writer{c: client(t), prefix: newPrefix(t)}
	v, err := w.create(t.Context(), "a")
	require.NoError(t, err)
	base := newSource(t, etcd.Options[obj]{Client: w.c, Prefix: w.prefix, StripPrefix: true, Logger: quiet()})
	src, err := etcd.NewSharded(etcd.ShardedOptions[obj]{Source: base, Slices: newFixedSlices(t, 0, 1)})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err = src.Watch(ctx, informer.WatchOptions{Version: v, NotifyCaughtUp: true})
	require.ErrorIs(t, err, informer.ErrRelistRequested)
	require.ErrorIs(t, err, informer.ErrExpired)

	page, err := src.List(ctx, informer.ListOptions{})
	require.NoError(t, err)
	_, err = src.Watch(ctx, informer.WatchOptions{Version: page.Version, NotifyCaughtUp: true})
	require.ErrorIs(t, err, informer.ErrRelistRequested, "also after a list")
	watch, err := src.Watch(ctx, informer.WatchOptions{Version: page.Version})
	require.NoError(t, err, "a plain watch after the list still works")
	watch.Stop()
}
