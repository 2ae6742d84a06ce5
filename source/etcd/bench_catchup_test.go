package etcd_test

import (
	"context"
	"fmt"
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
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
)

// BenchmarkWarmCatchUp: the catch-up of a restored informer over keys
// deleted while it was down. Setup, once per size: N keys of [svc] values
// (0.9 KB) are written, their revision v noted, then every key is deleted,
// in transactions of 128. One op is what the reflector of an informer
// restored at v does first: a watch from v with NotifyCaughtUp, read until
// the caught-up marker (sub-benchmark catchup: the deletions carry the key
// only, no previous value is read). For comparison, sub-benchmark
// plainwatch reads the same deletions on a watch without NotifyCaughtUp,
// until the N-th: the source reads every previous value there, as a
// catch-up did before it stopped reading them (it waits for no marker,
// which costs a catch-up about 0.1 s). Metrics, per op:
//
//	ns/op         from Watch to the marker (plainwatch: to the N-th deletion)
//	deleted/op    Deleted events delivered (N)
//	prevreads/op  previous-value reads the source sent to etcd
//	txns/op       transactions that carried them
//
// go test -run '^$' -bench WarmCatchUp -benchtime 3x . runs it (a few
// minutes: writing the 100k keys and deleting them, and plainwatch).
func BenchmarkWarmCatchUp(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("deletions=%dk", n/1000), func(b *testing.B) { benchCatchUp(b, n) })
	}
}

func benchCatchUp(b *testing.B, n int) {
	s := etcdtest.New(b, etcdtest.Config{})
	c := s.NewTestClient(b)
	const prefix = "/bench/catchup/"
	v := loadSvcs(b, c, prefix, 0, n, 1)
	ctx := context.Background()
	for i := 0; i < n; i += 128 {
		ops := make([]clientv3.Op, 0, 128)
		for j := i; j < min(i+128, n); j++ {
			ops = append(ops, clientv3.OpDelete(svcKey(prefix, j)))
		}
		_, err := c.Txn(ctx).Then(ops...).Commit()
		require.NoError(b, err)
	}

	var reads, txns atomic.Int64
	count := grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if t, ok := req.(*pb.TxnRequest); ok {
			txns.Add(1)
			for _, op := range t.Success {
				if op.GetRequestRange() != nil {
					reads.Add(1)
				}
			}
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	})
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{s.Endpoint()}, DialTimeout: 2 * time.Second,
		Logger: zap.NewNop(), DialOptions: []grpc.DialOption{count}})
	require.NoError(b, err)
	b.Cleanup(func() { _ = cli.Close() })
	src, err := etcd.New(etcd.Options[svc]{Client: cli, Prefix: prefix})
	require.NoError(b, err)

	for _, caughtUp := range []bool{true, false} {
		name := "catchup"
		if !caughtUp {
			name = "plainwatch"
		}
		b.Run(name, func(b *testing.B) {
			reads.Store(0)
			txns.Store(0)
			deleted := 0
			for b.Loop() {
				w, err := src.Watch(ctx, informer.WatchOptions{Version: formatRev(v), NotifyCaughtUp: caughtUp})
				require.NoError(b, err)
				n0 := deleted
				for ev := range w.Events() {
					require.NotEqual(b, informer.EventError, ev.Type, "%v", ev.Err)
					if ev.Type == informer.EventDeleted {
						deleted++
					}
					if ev.InitialEventsEnd || !caughtUp && deleted-n0 == n {
						break
					}
				}
				w.Stop()
			}
			ops := float64(b.N)
			b.ReportMetric(float64(deleted)/ops, "deleted/op")
			b.ReportMetric(float64(reads.Load())/ops, "prevreads/op")
			b.ReportMetric(float64(txns.Load())/ops, "txns/op")
		})
	}
}

func formatRev(rev int64) string { return fmt.Sprint(rev) }
