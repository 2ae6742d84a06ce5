package etcd_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd"
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
)

// BenchmarkListPages: a plain paged list (the reflector's path when
// streaming lists are off or unavailable) of 10k services (~1 KB each) in
// pages of 500, through Source.List. Each page is read on a connection of
// the source's own (dialled per page, to an endpoint that has not failed
// lately), not on the client's shared one; this measures what that costs.
// One op is the whole list; ns/key is per key listed.
func BenchmarkListPages(b *testing.B) {
	const n, page = 10_000, 500
	s := etcdtest.New(b, etcdtest.Config{})
	c := s.NewTestClient(b)
	const prefix = "/bench/list/"
	loadSvcs(b, c, prefix, 0, n, 1)
	src, err := etcd.New(etcd.Options[svc]{Client: c, Prefix: prefix})
	require.NoError(b, err)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		opts := informer.ListOptions{Limit: page}
		got := 0
		for {
			p, err := src.List(ctx, opts)
			require.NoError(b, err)
			got += len(p.Items)
			if p.Continue == "" {
				break
			}
			opts.Continue = p.Continue
		}
		require.Equal(b, n, got)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/key")
}
