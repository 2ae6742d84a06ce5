package etcd_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd"
)

// txnReads counts the reads the transactions sent through a client carry:
// the source's reads of previous values (see prev.go).
type txnReads struct{ n atomic.Int64 }

func (c *txnReads) dialOption() grpc.DialOption {
	return grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if t, ok := req.(*pb.TxnRequest); ok {
			for _, op := range t.Success {
				if op.GetRequestRange() != nil {
					c.n.Add(1)
				}
			}
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	})
}

// A catch-up (a watch with NotifyCaughtUp) reads no previous value: the
// deletions before the caught-up marker, single or in a transaction, carry
// the key only (ValueUnknown, at the deletion's revision), as does a put of
// a bad value; a deletion after the marker is read as before and carries the
// key's last state.
func TestNotifyCaughtUpReadsNoPreviousValues(t *testing.T) {
	w := writer{c: client(t), prefix: newPrefix(t)}
	ctx := t.Context()
	w.seed(t, 200, "k%03d", 1)
	resp, err := w.c.Get(ctx, w.prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	require.NoError(t, err)
	v := strconv.FormatInt(resp.Header.Revision, 10)
	// While the informer is "down": 100 deletions in one transaction, 20
	// single ones, a bad value.
	ops := make([]clientv3.Op, 0, 100)
	for i := range 100 {
		ops = append(ops, clientv3.OpDelete(w.key(fmt.Sprintf("k%03d", i))))
	}
	_, err = w.c.Txn(ctx).Then(ops...).Commit()
	require.NoError(t, err)
	for i := 100; i < 120; i++ {
		_, err = w.del(ctx, fmt.Sprintf("k%03d", i))
		require.NoError(t, err)
	}
	_, err = w.putRaw(ctx, "k120", "garbage")
	require.NoError(t, err)

	var reads txnReads
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint()}, DialTimeout: 2 * time.Second,
		Logger: zap.NewNop(), DialOptions: []grpc.DialOption{reads.dialOption()}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	src := newSource(t, etcd.Options[obj]{Client: c, Prefix: w.prefix, Logger: quiet()})
	watch, err := src.Watch(ctx, informer.WatchOptions{Version: v, NotifyCaughtUp: true})
	require.NoError(t, err)
	defer watch.Stop()
	deleted := map[string]bool{}
	timeout := time.After(20 * time.Second)
	for caughtUp := false; !caughtUp; {
		select {
		case ev, ok := <-watch.Events():
			require.True(t, ok, "stream closed before the caught-up marker")
			switch ev.Type {
			case informer.EventBookmark:
				caughtUp = ev.InitialEventsEnd
			case informer.EventDeleted:
				o := ev.Object
				require.True(t, o.ValueUnknown, "a deletion before the marker carries the key only: %+v", o)
				require.Equal(t, obj{}, o.Value)
				require.Equal(t, ev.Version, strconv.FormatInt(o.ModRevision, 10))
				require.False(t, deleted[o.Key], "deleted twice: %s", o.Key)
				deleted[o.Key] = true
			default:
				t.Fatalf("unexpected %v event before the marker: %v", ev.Type, ev.Err)
			}
		case <-timeout:
			t.Fatal("no caught-up marker within 20s")
		}
	}
	require.Len(t, deleted, 121)
	for i := range 121 {
		require.True(t, deleted[w.key(fmt.Sprintf("k%03d", i))], "k%03d", i)
	}
	require.Zero(t, reads.n.Load(), "previous values read during the catch-up")

	// After the marker: the last state, read from etcd.
	_, err = w.update(ctx, "k150")
	require.NoError(t, err)
	dv, err := w.del(ctx, "k150")
	require.NoError(t, err)
	ev := next(t, watch)
	require.Equal(t, informer.EventModified, ev.Type, "%v", ev.Err)
	ev = next(t, watch)
	require.Equal(t, informer.EventDeleted, ev.Type, "%v", ev.Err)
	require.Equal(t, dv, ev.Version)
	require.False(t, ev.Object.ValueUnknown)
	require.Equal(t, obj{Name: "k150", Gen: 2}, ev.Object.Value)
	require.Equal(t, w.key("k150"), ev.Object.Key)
	require.Positive(t, reads.n.Load(), "the deletion after the marker read the previous value")
}
