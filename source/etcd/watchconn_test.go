package etcd_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/namespace"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd"
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
)

// proxied returns a proxy in front of the shared member and a client
// through it, both closed after the test.
func proxied(t *testing.T) (*etcdtest.Proxy, *clientv3.Client) {
	t.Helper()
	proxy, err := etcdtest.NewProxy(srv.Etcd().Clients[0].Addr().String())
	require.NoError(t, err)
	t.Cleanup(proxy.Close)
	cli, err := etcdtest.NewClient(proxy.Endpoint())
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() })
	return proxy, cli
}

// errorWithin waits for the watch's Error event, skipping bookmarks, and
// returns it with the time it took.
func errorWithin(t *testing.T, w informer.Watcher[*etcd.Object[obj]], timeout time.Duration) (time.Duration, error) {
	t.Helper()
	start := time.Now()
	ev := next(t, w)
	took := time.Since(start)
	require.Equal(t, informer.EventError, ev.Type, "got %v %v", ev.Type, ev.Object)
	require.ErrorIs(t, ev.Err, informer.ErrTransient)
	require.Less(t, took, timeout, "error after %v: %v", took, ev.Err)
	_, ok := <-w.Events()
	require.False(t, ok, "closed after the Error event")
	return took, ev.Err
}

// A watch opened while the network drops everything fails within
// LivenessTimeout (its connection never ready) instead of waiting for
// etcd's confirmation forever; once
// the network heals, the next watch works on a fresh connection although the
// client's own connection is still dead.
func TestWatchCreationDeadline(t *testing.T) {
	proxy, cli := proxied(t)
	direct := writer{c: client(t), prefix: newPrefix(t)}
	src := newSource(t, etcd.Options[obj]{Client: cli, Prefix: direct.prefix, StripPrefix: true,
		LivenessInterval: 10 * time.Second, LivenessTimeout: 500 * time.Millisecond})
	page, err := src.List(t.Context(), informer.ListOptions{}) // the client connects
	require.NoError(t, err)

	proxy.SetBlackhole(true)
	w, err := src.Watch(t.Context(), informer.WatchOptions{Version: page.Version})
	require.NoError(t, err)
	defer w.Stop()
	took, err := errorWithin(t, w, 3*time.Second)
	require.ErrorContains(t, err, "not ready") // the handshake never completes
	t.Logf("creation on a dead network failed in %v: %v", took, err)

	proxy.SetBlackhole(false)
	w2, err := src.Watch(t.Context(), informer.WatchOptions{Version: page.Version})
	require.NoError(t, err)
	defer w2.Stop()
	_, err = direct.create(t.Context(), "a")
	require.NoError(t, err)
	ev := next(t, w2)
	require.Equal(t, informer.EventAdded, ev.Type, "%v", ev.Err)
	require.Equal(t, "a", ev.Object.Key)
}

// A watch whose connection is closed (its member went away) ends at once,
// long before a liveness probe would notice.
func TestWatchConnectionLost(t *testing.T) {
	proxy, cli := proxied(t)
	direct := writer{c: client(t), prefix: newPrefix(t)}
	src := newSource(t, etcd.Options[obj]{Client: cli, Prefix: direct.prefix, StripPrefix: true,
		LivenessInterval: 10 * time.Second, LivenessTimeout: 10 * time.Second})
	w := watchFrom(t, src)
	_, err := direct.create(t.Context(), "a")
	require.NoError(t, err)
	require.Equal(t, "a", next(t, w).Object.Key)

	proxy.SetRefuse(true)
	took, err := errorWithin(t, w, 3*time.Second)
	require.ErrorContains(t, err, "connection to")
	t.Logf("lost connection reported in %v: %v", took, err)
}

// Closing the client ends the source's watches, open or new, with
// ErrTransient, as it ends watches on the client's own connections.
func TestWatchClientClosed(t *testing.T) {
	cli := srv.NewTestClient(t)
	direct := writer{c: client(t), prefix: newPrefix(t)}
	src := newSource(t, etcd.Options[obj]{Client: cli, Prefix: direct.prefix})
	w := watchFrom(t, src)
	_, err := direct.create(t.Context(), "a")
	require.NoError(t, err)
	require.Equal(t, informer.EventAdded, next(t, w).Type)

	require.NoError(t, cli.Close())
	errorWithin(t, w, 3*time.Second)
	w2, err := src.Watch(t.Context(), informer.WatchOptions{Version: "1"})
	require.NoError(t, err)
	defer w2.Stop()
	errorWithin(t, w2, 3*time.Second)
}

// A client whose Watcher was replaced (here by etcd's namespace package) is
// used as it is: the watch sees the namespaced keys, like the list.
func TestWatchReplacedWatcher(t *testing.T) {
	cli := srv.NewTestClient(t)
	ns := newPrefix(t)
	cli.KV = namespace.NewKV(cli.KV, ns)
	cli.Watcher = namespace.NewWatcher(cli.Watcher, ns)
	direct := writer{c: client(t), prefix: ns + "p/"}
	src := newSource(t, etcd.Options[obj]{Client: cli, Prefix: "p/", StripPrefix: true})
	_, err := direct.create(t.Context(), "a")
	require.NoError(t, err)
	page, err := src.List(t.Context(), informer.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	w, err := src.Watch(t.Context(), informer.WatchOptions{Version: page.Version})
	require.NoError(t, err)
	defer w.Stop()
	_, err = direct.create(t.Context(), "b")
	require.NoError(t, err)
	ev := next(t, w)
	require.Equal(t, informer.EventAdded, ev.Type, "%v", ev.Err)
	require.Equal(t, "b", ev.Object.Key)
	require.NoError(t, src.RequestProgress(t.Context()))
}

// A streaming list (a relist) runs on the watch's own connection: right
// after the network heals it completes at once although the client's
// connection is still dead (its flow was blackholed and gRPC has not noticed
// yet); while the network drops everything it fails within LivenessTimeout.
func TestStreamingListFreshConnection(t *testing.T) {
	proxy, cli := proxied(t)
	direct := writer{c: client(t), prefix: newPrefix(t)}
	_, err := direct.create(t.Context(), "a")
	require.NoError(t, err)
	src := newSource(t, etcd.Options[obj]{Client: cli, Prefix: direct.prefix, StripPrefix: true,
		LivenessInterval: 10 * time.Second, LivenessTimeout: 500 * time.Millisecond})
	_, err = src.List(t.Context(), informer.ListOptions{}) // the client connects
	require.NoError(t, err)

	proxy.SetBlackhole(true)
	w, err := src.Watch(t.Context(), informer.WatchOptions{SendInitialEvents: true})
	require.NoError(t, err)
	defer w.Stop()
	took, err := errorWithin(t, w, 3*time.Second)
	t.Logf("streaming list on a dead network failed in %v: %v", took, err)

	proxy.SetBlackhole(false) // the client's connection stays dead
	start := time.Now()
	w2, err := src.Watch(t.Context(), informer.WatchOptions{SendInitialEvents: true})
	require.NoError(t, err)
	defer w2.Stop()
	var keys []string
	for done := false; !done; {
		select {
		case ev, ok := <-w2.Events():
			require.True(t, ok, "stream closed")
			switch ev.Type {
			case informer.EventAdded:
				keys = append(keys, ev.Object.Key)
			case informer.EventBookmark:
				done = ev.InitialEventsEnd
			default:
				t.Fatalf("unexpected %v event: %v", ev.Type, ev.Err)
			}
		case <-time.After(3 * time.Second):
			t.Fatal("no initial events within 3s: the list waits on the client's dead connection")
		}
	}
	require.Equal(t, []string{"a"}, keys)
	t.Logf("streaming list after the heal took %v", time.Since(start))
	_, err = direct.create(t.Context(), "b")
	require.NoError(t, err)
	ev := next(t, w2)
	require.Equal(t, informer.EventAdded, ev.Type, "%v", ev.Err)
	require.Equal(t, "b", ev.Object.Key)
}
