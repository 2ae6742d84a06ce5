package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd"
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
)

// BenchmarkInformerSync100k: one op is a new informer listing 100k keys
// from the embedded etcd until HasSynced (compare with
// source/etcd's BenchmarkSync100k/mirror.Syncer).
func BenchmarkInformerSync100k(b *testing.B) {
	const n = 100_000
	s := etcdtest.New(b, etcdtest.Config{})
	c := s.NewTestClient(b)
	ctx := context.Background()
	for i := 0; i < n; i += 128 {
		ops := make([]clientv3.Op, 0, 128)
		for j := i; j < min(i+128, n); j++ {
			v, _ := json.Marshal(val{Gen: j})
			ops = append(ops, clientv3.OpPut(fmt.Sprintf("/it/k%06d", j), string(v)))
		}
		_, err := c.Txn(ctx).Then(ops...).Commit()
		require.NoError(b, err)
	}
	src, err := etcd.New(etcd.Options[val]{Client: c, Prefix: "/it/"})
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		inf, err := informer.NewSharedInformer(informer.Options[string, obj]{Source: src, KeyFunc: etcd.KeyFunc[val]})
		require.NoError(b, err)
		rctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { _ = inf.Run(rctx) })
		require.NoError(b, informer.WaitForSync(ctx, inf))
		require.Equal(b, n, inf.Lister().Len())
		cancel()
		wg.Wait()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "keys/s")
}
