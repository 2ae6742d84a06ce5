package etcd_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd"
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
)

// noStreamKV serves etcd's KV API without RangeStream, as etcd before 3.7
// and the gRPC proxy do: Range and Txn are forwarded to a real member.
type noStreamKV struct {
	pb.UnimplementedKVServer
	kv pb.KVClient
}

func (s noStreamKV) Range(ctx context.Context, r *pb.RangeRequest) (*pb.RangeResponse, error) {
	return s.kv.Range(ctx, r)
}

func (s noStreamKV) Txn(ctx context.Context, r *pb.TxnRequest) (*pb.TxnResponse, error) {
	return s.kv.Txn(ctx, r)
}

// noStreamClient returns a client of srv through a server without
// RangeStream.
func noStreamClient(t *testing.T) *clientv3.Client {
	t.Helper()
	conn, err := grpc.NewClient(srv.Etcd().Clients[0].Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	gs := grpc.NewServer()
	pb.RegisterKVServer(gs, noStreamKV{kv: pb.NewKVClient(conn)})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = gs.Serve(l) }()
	t.Cleanup(gs.Stop)
	c, err := etcdtest.NewClient("http://" + l.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A streaming list sends the state at one revision, in key order, whether
// etcd has RangeStream or the source falls back to pages: writes made while
// the list is being read (the consumer holds the stream back) do not show.
func TestStreamingListOneRevision(t *testing.T) {
	for _, tc := range []struct {
		name     string
		noStream bool
		pageSize int
	}{
		{"RangeStream", false, 0},
		{"pages grown", true, 0},
		{"PageSize 7", true, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := writer{c: client(t), prefix: newPrefix(t)}
			ctx := t.Context()
			const n = 2500
			w.seed(t, n, "k%05d", 1)
			c := w.c
			if tc.noStream {
				c = noStreamClient(t)
			}
			src := newSource(t, etcd.Options[obj]{Client: c, Prefix: w.prefix, StripPrefix: true, PageSize: tc.pageSize, WatchBuffer: -1})
			watch, err := src.Watch(ctx, informer.WatchOptions{SendInitialEvents: true})
			require.NoError(t, err)
			t.Cleanup(watch.Stop)

			first := next(t, watch)
			require.Equal(t, informer.EventAdded, first.Type)
			require.Equal(t, "k00000", first.Object.Key)
			// Writes after the list's revision: a new key, a deleted key
			// and an update, all after the first page.
			_, err = w.put(ctx, obj{Name: "k99999", Gen: 1})
			require.NoError(t, err)
			_, err = w.del(ctx, "k02000")
			require.NoError(t, err)
			_, err = w.put(ctx, obj{Name: "k02001", Gen: 2})
			require.NoError(t, err)

			got := []string{first.Object.Key}
			var end informer.Event[*etcd.Object[obj]]
			for end.Type == 0 {
				select {
				case ev := <-watch.Events():
					switch ev.Type {
					case informer.EventAdded:
						require.Equal(t, first.Version, ev.Version)
						require.Equal(t, 1, ev.Object.Value.Gen, ev.Object.Key)
						got = append(got, ev.Object.Key)
					case informer.EventBookmark:
						require.True(t, ev.InitialEventsEnd)
						end = ev
					default:
						t.Fatalf("unexpected %v during the initial events", ev.Type)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("no end marker")
				}
			}
			require.Equal(t, first.Version, end.Version)
			require.Len(t, got, n)
			for i, k := range got {
				require.Equal(t, fmt.Sprintf("k%05d", i), k)
			}
			if tc.noStream {
				return // the Watch API is not served there
			}
			// Then the watch goes on from the list's revision.
			require.Equal(t, seen{informer.EventAdded, "k99999", "", false}, see(next(t, watch)))
			ev := next(t, watch)
			require.Equal(t, seen{informer.EventDeleted, "k02000", "", false}, see(ev))
			require.Equal(t, 1, ev.Object.Value.Gen, "the deletion carries the last state")
			ev = next(t, watch)
			require.Equal(t, seen{informer.EventModified, "k02001", "", false}, see(ev))
			require.Equal(t, 2, ev.Object.Value.Gen)
		})
	}
}

// Without a Filter the watch reads the previous values of deleted keys
// itself: a DeleteRange of more keys than one read transaction holds
// arrives with every last state; a deletion whose previous revision was
// compacted before the source read it arrives with the key only.
func TestDeletePreviousValues(t *testing.T) {
	w := writer{c: client(t), prefix: newPrefix(t)}
	ctx := t.Context()
	const n = 300
	for i := range n {
		_, err := w.put(ctx, obj{Name: fmt.Sprintf("k%03d", i), Gen: i, Tier: "gold"})
		require.NoError(t, err)
	}
	src := newSource(t, etcd.Options[obj]{Client: w.c, Prefix: w.prefix, StripPrefix: true})
	watch := watchFrom(t, src)
	_, err := w.c.Delete(ctx, w.prefix, clientv3.WithPrefix())
	require.NoError(t, err)
	for i := range n {
		ev := next(t, watch)
		require.Equal(t, seen{informer.EventDeleted, fmt.Sprintf("k%03d", i), "gold", false}, see(ev))
		require.Equal(t, i, ev.Object.Value.Gen)
	}

	// Compaction between the event and the read: once "a" has arrived (the
	// watch is open), the source cannot read the deletion of "b" before the
	// consumer has taken "b" (the stream is unbuffered), which it does after
	// the compaction.
	src = newSource(t, etcd.Options[obj]{Client: w.c, Prefix: w.prefix, StripPrefix: true, WatchBuffer: -1})
	watch = watchFrom(t, src)
	_, err = w.put(ctx, obj{Name: "a", Tier: "gold"})
	require.NoError(t, err)
	require.Equal(t, seen{informer.EventAdded, "a", "gold", false}, see(next(t, watch)))
	_, err = w.put(ctx, obj{Name: "b", Tier: "gold"})
	require.NoError(t, err)
	_, err = w.del(ctx, "b")
	require.NoError(t, err)
	_, err = etcdtest.Compact(ctx, w.c)
	require.NoError(t, err)
	require.Equal(t, seen{informer.EventAdded, "b", "gold", false}, see(next(t, watch)))
	ev := next(t, watch)
	require.NoError(t, ev.Err)
	require.Equal(t, seen{informer.EventDeleted, "b", "", true}, see(ev), "previous value compacted")
}

// A previous value that cannot be read (the connection to etcd silently
// dropped) fails that etcd watch after the liveness timeout rather than
// holding it: the stream moves to a fresh connection, from the last
// revision it delivered, reads the value there and delivers the deletion
// with it; when no fresh connection answers either, the stream ends with
// ErrTransient, so the reflector backs off.
func TestDeletePreviousValueUnreachable(t *testing.T) {
	proxy, err := etcdtest.NewProxy(srv.Etcd().Clients[0].Addr().String())
	require.NoError(t, err)
	defer proxy.Close()
	viaProxy, err := etcdtest.NewClient(proxy.Endpoint())
	require.NoError(t, err)
	defer viaProxy.Close()
	direct := writer{c: client(t), prefix: newPrefix(t)}
	ctx := t.Context()
	src := newSource(t, etcd.Options[obj]{Client: viaProxy, Prefix: direct.prefix, StripPrefix: true, WatchBuffer: -1,
		LivenessInterval: time.Minute, LivenessTimeout: time.Second})
	watch := watchFrom(t, src)
	_, err = direct.create(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, "a", next(t, watch).Object.Key)

	// A second watch through the same proxy tells when the deletion has
	// reached the client; the source, held on "b" by the unbuffered
	// stream, has not read it yet. The source's watch runs on a connection
	// of its own (watchconn.go), which etcd serves at the same moment but
	// which nothing here can observe: give it a second to arrive before
	// the network goes silent.
	wch := viaProxy.Watch(ctx, direct.key("b"), clientv3.WithCreatedNotify())
	require.True(t, (<-wch).Created)
	_, err = direct.create(ctx, "b")
	require.NoError(t, err)
	_, err = direct.del(ctx, "b")
	require.NoError(t, err)
	for deleted := false; !deleted; {
		for _, ev := range (<-wch).Events {
			deleted = deleted || ev.Type == clientv3.EventTypeDelete
		}
	}
	time.Sleep(time.Second)
	proxy.Blackhole() // the open flows only: new connections work
	start := time.Now()
	require.Equal(t, "b", next(t, watch).Object.Key)
	ev := next(t, watch)
	require.Equal(t, informer.EventDeleted, ev.Type, "got %v %v %v", ev.Type, ev.Object, ev.Err)
	require.Equal(t, "b", ev.Object.Key)
	require.False(t, ev.Object.ValueUnknown, "the previous value, read on the new connection")
	require.Less(t, time.Since(start), 5*time.Second)
	t.Logf("deletion delivered %v after the cut", time.Since(start))

	// Every connection silent, new ones too: the stream ends.
	proxy.SetBlackhole(true)
	_, err = direct.create(ctx, "c")
	require.NoError(t, err)
	_, err = direct.del(ctx, "c")
	require.NoError(t, err)
	start = time.Now()
	for {
		ev = next(t, watch)
		if ev.Type == informer.EventError {
			break
		}
		require.Equal(t, "c", ev.Object.Key, "got %v %v", ev.Type, ev.Object) // its creation may arrive first
	}
	require.ErrorIs(t, ev.Err, informer.ErrTransient)
	require.Less(t, time.Since(start), 5*time.Second)
}
