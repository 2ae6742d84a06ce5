package etcd_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/shard"
	"github.com/ginformer/ginformer/source/etcd"
)

// fixedSlices is a SliceSource the test sets by hand.
type fixedSlices struct {
	mu      sync.Mutex
	cur     shard.Slice
	changed chan struct{}
}

func newFixedSlices(t *testing.T, shards ...int) *fixedSlices {
	f := &fixedSlices{changed: make(chan struct{})}
	f.set(t, shards...)
	return f
}

func (f *fixedSlices) set(t *testing.T, shards ...int) {
	s, err := shard.NewSet(4, shards...)
	require.NoError(t, err)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cur = shard.Slice{Shards: s, Gen: f.cur.Gen + 1}
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fixedSlices) Hash(key string) uint64 { return shard.HashKey(key) }

func (f *fixedSlices) Slice(context.Context) (shard.Slice, <-chan struct{}, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cur, f.changed, nil
}

func TestShardedSourceSliceChanges(t *testing.T) {
	c := client(t)
	prefix := newPrefix(t)
	w := writer{c: c, prefix: prefix}
	for i := range 200 {
		_, err := w.put(t.Context(), obj{Name: fmt.Sprintf("k%03d", i)})
		require.NoError(t, err)
	}
	base := newSource(t, etcd.Options[obj]{Client: c, Prefix: prefix, StripPrefix: true, Logger: quiet()})
	slices := newFixedSlices(t, 0, 1) // half of the space
	src, err := etcd.NewSharded(etcd.ShardedOptions[obj]{Source: base, Slices: slices})
	require.NoError(t, err)
	_, err = etcd.NewSharded(etcd.ShardedOptions[obj]{Source: base})
	require.ErrorIs(t, err, informer.ErrInvalidOptions)

	// A paged list returns only the slice.
	var got []string
	opts := informer.ListOptions{Limit: 30}
	var version string
	for {
		page, err := src.List(t.Context(), opts)
		require.NoError(t, err)
		for _, o := range page.Items {
			require.True(t, src.InSlice(o.Key), o.Key)
			got = append(got, o.Key)
		}
		version = page.Version
		if page.Continue == "" {
			break
		}
		opts.Continue = page.Continue
	}
	want := 0
	for i := range 200 {
		if k := fmt.Sprintf("k%03d", i); shard.HashKey(k) < 1<<63 {
			want++
		}
	}
	require.Len(t, got, want)
	received, delivered := src.Counts()
	require.Equal(t, uint64(200), received)
	require.Equal(t, uint64(want), delivered)

	// A watch delivers only the slice, then ends with ErrExpired when the
	// slice changes.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	wt, err := src.Watch(ctx, informer.WatchOptions{Version: version})
	require.NoError(t, err)
	for i := range 20 {
		_, err := w.put(ctx, obj{Name: fmt.Sprintf("k%03d", i), Gen: 1})
		require.NoError(t, err)
	}
	inSlice := 0
	for i := range 20 {
		if shard.HashKey(fmt.Sprintf("k%03d", i)) < 1<<63 {
			inSlice++
		}
	}
	for i := 0; i < inSlice; i++ {
		ev := <-wt.Events()
		if ev.Type == informer.EventBookmark { // a liveness probe's answer may come any time
			i--
			continue
		}
		require.Equal(t, informer.EventModified, ev.Type)
		require.Less(t, shard.HashKey(ev.Object.Key), uint64(1<<63))
	}
	slices.set(t, 2, 3)
	for ev := range wt.Events() {
		if ev.Type == informer.EventError {
			require.ErrorIs(t, ev.Err, informer.ErrExpired)
			break
		}
	}
	_, ok := <-wt.Events()
	require.False(t, ok, "the watch ends after its Error event")
	wt.Stop()

	// A plain watch after a slice change, with no list in between, is refused.
	_, err = src.Watch(ctx, informer.WatchOptions{Version: version})
	require.ErrorIs(t, err, informer.ErrExpired)

	// A list continued across a slice change is refused.
	page, err := src.List(ctx, informer.ListOptions{Limit: 30})
	require.NoError(t, err)
	require.NotEmpty(t, page.Continue)
	slices.set(t, 0)
	_, err = src.List(ctx, informer.ListOptions{Continue: page.Continue})
	require.ErrorIs(t, err, informer.ErrExpired)

	// A streaming list takes the current slice.
	wt, err = src.Watch(ctx, informer.WatchOptions{SendInitialEvents: true})
	require.NoError(t, err)
	n := 0
	for ev := range wt.Events() {
		if ev.Type == informer.EventBookmark && ev.InitialEventsEnd {
			break
		}
		require.Equal(t, informer.EventAdded, ev.Type)
		require.Less(t, shard.HashKey(ev.Object.Key), uint64(1<<62))
		n++
	}
	require.Positive(t, n)
	wt.Stop()
	for range wt.Events() {
	}
}

// A Sharded source forwards the optional interfaces an informer looks for
// on its source to the underlying source: WaitReachable (the reflector's
// recovery after an outage) and ObjectVersion (a relist delivers only what
// changed), as it does CompareVersions and LivenessBound.
func TestShardedForwardsOptionalInterfaces(t *testing.T) {
	base := newSource(t, etcd.Options[obj]{Client: client(t), Prefix: newPrefix(t), Logger: quiet()})
	sh, err := etcd.NewSharded(etcd.ShardedOptions[obj]{Source: base, Slices: newFixedSlices(t, 0, 1)})
	require.NoError(t, err)
	var src informer.Source[*etcd.Object[obj]] = sh

	rw, ok := src.(informer.ReachabilityWaiter)
	require.True(t, ok, "a Sharded source is a ReachabilityWaiter")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	require.NoError(t, rw.WaitReachable(ctx), "the shared member answers")

	ov, ok := src.(informer.ObjectVersioner[*etcd.Object[obj]])
	require.True(t, ok, "a Sharded source is an ObjectVersioner")
	for _, o := range []*etcd.Object[obj]{{Key: "k", ModRevision: 42}, {Key: "k"}, nil} {
		require.Equal(t, base.ObjectVersion(o), ov.ObjectVersion(o), "%+v", o)
	}
	require.Equal(t, "42", ov.ObjectVersion(&etcd.Object[obj]{Key: "k", ModRevision: 42}))
}
