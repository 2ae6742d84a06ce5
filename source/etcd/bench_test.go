package etcd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/mirror"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd"
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
)

// benchKeys is the size of the synced prefix.
const benchKeys = 100_000

// Load writes n JSON objects under prefix, 128 per transaction.
func load(b testing.TB, c *clientv3.Client, prefix string, n int) {
	ctx := context.Background()
	for i := 0; i < n; i += 128 {
		ops := make([]clientv3.Op, 0, 128)
		for j := i; j < min(i+128, n); j++ {
			v, _ := json.Marshal(obj{Name: fmt.Sprintf("k%06d", j), Gen: 1, Tier: "gold"})
			ops = append(ops, clientv3.OpPut(fmt.Sprintf("%sk%06d", prefix, j), string(v)))
		}
		_, err := c.Txn(ctx).Then(ops...).Commit()
		require.NoError(b, err)
	}
}

// BenchmarkSync100k: one op is a full list of 100k keys at one revision,
// by etcd's mirror.Syncer (raw key-values, 1000 per page) and by the source
// (decoded objects, 500 per page: the reflector's default).
func BenchmarkSync100k(b *testing.B) {
	s := etcdtest.New(b, etcdtest.Config{})
	c := s.NewTestClient(b)
	const prefix = "/bench/sync/"
	load(b, c, prefix, benchKeys)
	ctx := context.Background()

	b.Run("mirror.Syncer", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n := 0
			rc, errc := mirror.NewSyncer(c, prefix, 0).SyncBase(ctx)
			for resp := range rc {
				n += len(resp.Kvs)
			}
			require.NoError(b, <-errc)
			require.Equal(b, benchKeys, n)
		}
		b.ReportMetric(float64(benchKeys)*float64(b.N)/b.Elapsed().Seconds(), "keys/s")
	})
	b.Run("source", func(b *testing.B) {
		src := newSource(b, etcd.Options[obj]{Client: c, Prefix: prefix})
		b.ReportAllocs()
		for b.Loop() {
			n := 0
			opts := informer.ListOptions{Limit: 500}
			for {
				page, err := src.List(ctx, opts)
				require.NoError(b, err)
				n += len(page.Items)
				if page.Continue == "" {
					break
				}
				opts.Continue = page.Continue
			}
			require.Equal(b, benchKeys, n)
		}
		b.ReportMetric(float64(benchKeys)*float64(b.N)/b.Elapsed().Seconds(), "keys/s")
	})
}

// BenchmarkWatchEvents: events per second from etcd writes (128 puts per
// transaction) to the consumer, through mirror.Syncer's update channel and
// through the source's watch (decoded objects). One op is one event.
func BenchmarkWatchEvents(b *testing.B) {
	s := etcdtest.New(b, etcdtest.Config{})
	c := s.NewTestClient(b)
	ctx := context.Background()
	run := func(b *testing.B, prefix string, receive func(rev int64, n int) int) {
		resp, err := c.Get(ctx, "probe")
		require.NoError(b, err)
		b.ReportAllocs()
		b.ResetTimer()
		done := make(chan int, 1)
		go func() { done <- receive(resp.Header.Revision, b.N) }()
		load(b, c, prefix, b.N)
		select {
		case got := <-done:
			require.Equal(b, b.N, got)
		case <-time.After(time.Minute):
			b.Fatal("events missing")
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	}
	b.Run("mirror.Syncer", func(b *testing.B) {
		prefix := fmt.Sprintf("/bench/watch/mirror/%d/", prefixN.Add(1))
		run(b, prefix, func(rev int64, n int) int {
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			got := 0
			for resp := range mirror.NewSyncer(c, prefix, rev).SyncUpdates(wctx) {
				got += len(resp.Events)
				if got >= n {
					break
				}
			}
			return got
		})
	})
	b.Run("source", func(b *testing.B) {
		prefix := fmt.Sprintf("/bench/watch/source/%d/", prefixN.Add(1))
		src := newSource(b, etcd.Options[obj]{Client: c, Prefix: prefix})
		run(b, prefix, func(rev int64, n int) int {
			w, err := src.Watch(ctx, informer.WatchOptions{Version: fmt.Sprint(rev)})
			if err != nil {
				return -1
			}
			defer w.Stop()
			got := 0
			for ev := range w.Events() {
				if ev.Type == informer.EventAdded || ev.Type == informer.EventModified {
					got++
				}
				if got >= n {
					break
				}
			}
			return got
		})
	})
}
