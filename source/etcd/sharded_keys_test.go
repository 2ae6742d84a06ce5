package etcd_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/shard"
	"github.com/ginformer/ginformer/source/etcd"
)

// countingCodec is the JSON codec counting the values it decodes (without
// DecodeInto, so every value goes through Decode).
type countingCodec struct{ n *atomic.Int64 }

func (c countingCodec) Decode(data []byte) (obj, error) {
	c.n.Add(1)
	return etcd.JSONCodec[obj]{}.Decode(data)
}

func (countingCodec) Encode(v obj) ([]byte, error) { return etcd.JSONCodec[obj]{}.Encode(v) }

// The sharded source filters by key before decoding: values of other
// slices are never decoded (bad ones are not even reported), and their
// deletions give no event, in lists, streaming lists and watches alike.
func TestShardedSourceFiltersBeforeDecoding(t *testing.T) {
	c := client(t)
	prefix := newPrefix(t)
	w := writer{c: c, prefix: prefix}
	in := func(k string) bool { return shard.HashKey(k) < 1<<63 } // shards 0 and 1 of 4
	var inKeys, outKeys []string
	for i := 0; len(inKeys) < 50 || len(outKeys) < 50; i++ {
		k := fmt.Sprintf("k%03d", i)
		if in(k) {
			inKeys = append(inKeys, k)
			_, err := w.put(t.Context(), obj{Name: k})
			require.NoError(t, err)
		} else {
			outKeys = append(outKeys, k)
			_, err := w.putRaw(t.Context(), k, "not json") // would be a bad value
			require.NoError(t, err)
		}
	}
	var decoded atomic.Int64
	var reported atomic.Int64
	base := newSource(t, etcd.Options[obj]{Client: c, Prefix: prefix, StripPrefix: true, Logger: quiet(),
		Codec:        countingCodec{n: &decoded},
		ErrorHandler: func(context.Context, error) { reported.Add(1) },
	})
	src, err := etcd.NewSharded(etcd.ShardedOptions[obj]{Source: base, Slices: newFixedSlices(t, 0, 1)})
	require.NoError(t, err)

	page, err := src.List(t.Context(), informer.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Items, len(inKeys))
	require.Equal(t, int64(len(inKeys)), decoded.Load(), "list: only the slice's values are decoded")

	decoded.Store(0)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	wt, err := src.Watch(ctx, informer.WatchOptions{SendInitialEvents: true})
	require.NoError(t, err)
	n := 0
	for ev := range wt.Events() {
		if ev.Type == informer.EventBookmark && ev.InitialEventsEnd {
			break
		}
		require.Equal(t, informer.EventAdded, ev.Type)
		n++
	}
	require.Equal(t, len(inKeys), n)
	require.Equal(t, int64(len(inKeys)), decoded.Load(), "streaming list: only the slice's values are decoded")

	// Watch: bad puts and deletions out of the slice give nothing; the
	// slice's changes arrive, each decoded once.
	decoded.Store(0)
	for _, k := range outKeys[:10] {
		_, err := w.putRaw(ctx, k, "still not json")
		require.NoError(t, err)
		_, err = w.del(ctx, k)
		require.NoError(t, err)
	}
	for _, k := range inKeys[:10] {
		_, err := w.put(ctx, obj{Name: k, Gen: 1})
		require.NoError(t, err)
	}
	_, err = w.del(ctx, inKeys[10])
	require.NoError(t, err)
	for i := 0; i < 11; i++ {
		ev := <-wt.Events()
		if ev.Type == informer.EventBookmark { // a liveness probe's answer may come any time
			i--
			continue
		}
		if i < 10 {
			require.Equal(t, informer.EventModified, ev.Type)
			require.Equal(t, inKeys[i], ev.Object.Key)
		} else {
			require.Equal(t, informer.EventDeleted, ev.Type)
			require.Equal(t, inKeys[10], ev.Object.Key)
			require.False(t, ev.Object.ValueUnknown, "the deletion carries the previous value")
		}
	}
	wt.Stop()
	for range wt.Events() {
	}
	// 10 puts, and the deleted key's previous value.
	require.Equal(t, int64(11), decoded.Load())
	require.Zero(t, reported.Load(), "bad values of other slices are never decoded, so never reported")
	require.Zero(t, base.DecodeErrors())
	received, delivered := src.Counts()
	t.Logf("received %d key-values, delivered %d objects", received, delivered)
	require.Equal(t, uint64(2*(len(inKeys)+len(outKeys))+20+11), received)
	require.Equal(t, uint64(2*len(inKeys)+11), delivered)
}
