package etcd_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/shard"
	"github.com/ginformer/ginformer/source/etcd"
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
)

// rangeCounter counts the range reads of a prefix that reach etcd through
// a client: Range requests with a range end, and RangeStream calls.
type rangeCounter struct {
	prefix string
	n      atomic.Int64
}

func (c *rangeCounter) dialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			if r, ok := req.(*pb.RangeRequest); ok && len(r.RangeEnd) > 0 && strings.HasPrefix(string(r.Key), c.prefix) {
				c.n.Add(1)
			}
			return invoker(ctx, method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			if strings.HasSuffix(method, "/RangeStream") {
				c.n.Add(1)
			}
			return streamer(ctx, desc, cc, method, opts...)
		}),
	}
}

// counted is an informer source over an etcd source (plain or sharded)
// that counts the lists and streaming lists asked of it, and forwards the
// optional interfaces the informer looks for.
type counted struct {
	src interface {
		informer.Source[*etcd.Object[obj]]
		informer.SnapshotSource[*etcd.Object[obj]]
		informer.VersionComparer
	}
	lists, streams, resumes atomic.Int64
}

func (c *counted) List(ctx context.Context, opts informer.ListOptions) (informer.ListPage[*etcd.Object[obj]], error) {
	c.lists.Add(1)
	return c.src.List(ctx, opts)
}

func (c *counted) Watch(ctx context.Context, opts informer.WatchOptions) (informer.Watcher[*etcd.Object[obj]], error) {
	if opts.SendInitialEvents {
		c.streams.Add(1)
	}
	if opts.NotifyCaughtUp {
		c.resumes.Add(1)
	}
	return c.src.Watch(ctx, opts)
}

func (c *counted) SnapshotIdentity(ctx context.Context) (string, error) {
	return c.src.SnapshotIdentity(ctx)
}

func (c *counted) SnapshotCodec() informer.Codec[*etcd.Object[obj]] { return c.src.SnapshotCodec() }

func (c *counted) CompareVersions(a, b string) (int, error) { return c.src.CompareVersions(a, b) }

func (c *counted) ObjectVersion(o *etcd.Object[obj]) string {
	return strconv.FormatInt(o.ModRevision, 10)
}

// deliveries records what a handler is given.
type deliveries struct {
	mu      sync.Mutex
	present map[string]int // key → Add and Update calls
	initial int            // Add calls with initial set
	other   []string       // anything else, in order
}

func (d *deliveries) handler() informer.HandlerFuncs[string, *etcd.Object[obj]] {
	d.present = map[string]int{}
	return informer.HandlerFuncs[string, *etcd.Object[obj]]{
		AddFunc: func(o *etcd.Object[obj], initial bool) {
			d.mu.Lock()
			defer d.mu.Unlock()
			d.present[o.Key]++
			if initial {
				d.initial++
			} else {
				d.other = append(d.other, "add "+o.Key)
			}
		},
		UpdateFunc: func(_, o *etcd.Object[obj]) {
			d.mu.Lock()
			defer d.mu.Unlock()
			d.present[o.Key]++
			d.other = append(d.other, "update "+o.Key)
		},
		DeleteFunc: func(del informer.Deletion[string, *etcd.Object[obj]]) {
			d.mu.Lock()
			defer d.mu.Unlock()
			d.other = append(d.other, "delete "+del.Key)
		},
	}
}

func (d *deliveries) get() (present map[string]int, initial int, other []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.present), d.initial, slices.Clone(d.other)
}

// warmRun is one run of a program: its own client, source and informer,
// with a snapshot file.
type warmRun struct {
	src    *counted
	ranges *rangeCounter
	inf    *informer.SharedInformer[string, *etcd.Object[obj]]
	reg    *informer.Registration[string, *etcd.Object[obj]]
	seen   *deliveries
	errs   atomic.Int64
	cancel context.CancelFunc
	done   chan error
	start  time.Time
}

// startWarm starts a program over prefix of the member at endpoint;
// sharded, when set, makes its source a Sharded one over that slice.
func startWarm(t *testing.T, endpoint, prefix, path string, sharded []int) *warmRun {
	t.Helper()
	return startWarmWith(t, endpoint, prefix, path, sharded, informer.ListWatchOptions{})
}

// startWarmWith is startWarm with the informer's list and watch options.
func startWarmWith(t *testing.T, endpoint, prefix, path string, sharded []int, lw informer.ListWatchOptions) *warmRun {
	t.Helper()
	r := &warmRun{ranges: &rangeCounter{prefix: prefix}, seen: &deliveries{}, done: make(chan error, 1), start: time.Now()}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 2 * time.Second,
		Logger: zap.NewNop(), DialOptions: r.ranges.dialOptions()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	base := newSource(t, etcd.Options[obj]{Client: c, Prefix: prefix, Logger: quiet()})
	r.src = &counted{src: base}
	if sharded != nil {
		s, err := etcd.NewSharded(etcd.ShardedOptions[obj]{Source: base, Slices: newFixedSlices(t, sharded...)})
		require.NoError(t, err)
		r.src = &counted{src: s}
	}
	r.inf, err = informer.NewSharedInformer(informer.Options[string, *etcd.Object[obj]]{
		Source:       r.src,
		KeyFunc:      etcd.KeyFunc[obj],
		ListWatch:    lw,
		Logger:       logr.FromSlogHandler(slog.DiscardHandler),
		ErrorHandler: func(_ context.Context, err error) { r.errs.Add(1); t.Logf("informer error: %v", err) },
		Snapshot:     informer.SnapshotOptions[*etcd.Object[obj]]{Store: informer.NewSnapshotFile(path), Interval: -1},
	})
	require.NoError(t, err)
	r.reg, err = r.inf.AddHandler(r.seen.handler(), informer.HandlerOptions{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- r.inf.Run(ctx) }()
	t.Cleanup(r.stop)
	return r
}

// waitSynced waits for the informer and its handler and returns the time
// from the start of the run.
func (r *warmRun) waitSynced(t *testing.T) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	require.NoError(t, informer.WaitForSync(ctx, r.inf, r.reg))
	return time.Since(r.start)
}

// stop stops the program; its informer writes its snapshot as it stops.
func (r *warmRun) stop() {
	r.cancel()
	if _, ok := <-r.done; ok { // Run returned
		close(r.done) // a second stop returns at once
	}
}

// cache returns the informer's cache.
func (r *warmRun) cache() map[string]etcd.Object[obj] {
	m := map[string]etcd.Object[obj]{}
	for k, o := range r.inf.Lister().All() {
		m[k] = *o
	}
	return m
}

// etcdState reads the prefix as objects, keeping only the keys in keep
// (nil: all).
func prefixState(t *testing.T, c *clientv3.Client, prefix string, keep func(string) bool) map[string]etcd.Object[obj] {
	t.Helper()
	m := map[string]etcd.Object[obj]{}
	for k, o := range stateAt(t, writer{c: c, prefix: prefix}, "0") {
		if keep == nil || keep(k) {
			m[k] = *o
		}
	}
	return m
}

// TestWarmRestart: a program with a snapshot stops; while it is down, keys
// are updated, deleted and created; restarted, it resumes from its
// snapshot: it syncs with the cache equal to etcd, without a single range
// read of the prefix (no list, no streaming list), its handler gets the
// caught-up state as initial adds and never a deleted key; then it follows
// changes as usual.
func TestWarmRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snapshot")
	w := writer{c: client(t), prefix: newPrefix(t)}
	ctx := t.Context()
	w.seed(t, 500, "k%03d", 1)

	first := startWarm(t, srv.Endpoint(), w.prefix, path, nil)
	cold := first.waitSynced(t)
	v, err := w.update(ctx, "k000")
	require.NoError(t, err)
	require.NoError(t, first.inf.WaitForVersion(ctx, v))
	first.stop()
	h := first.inf.Health()
	require.Equal(t, v, h.SnapshotVersion, "written as it stopped")
	t.Logf("cold start: synced in %v; snapshot of %d bytes at %s", cold, h.SnapshotBytes, v)

	// Down: updates, deletions (of updated keys too), creations, a key
	// created and deleted again, writes elsewhere.
	deleted := map[string]bool{}
	for i := range 100 {
		name := fmt.Sprintf("k%03d", i)
		switch i % 4 {
		case 0, 1:
			_, err = w.update(ctx, name)
		case 2:
			_, err = w.update(ctx, name)
			require.NoError(t, err)
			_, err = w.del(ctx, name)
			deleted[w.key(name)] = true
		case 3:
			_, err = w.del(ctx, name)
			deleted[w.key(name)] = true
		}
		require.NoError(t, err)
	}
	w.seed(t, 30, "new%02d", 1)
	_, err = w.create(ctx, "ephemeral")
	require.NoError(t, err)
	_, err = w.del(ctx, "ephemeral")
	require.NoError(t, err)
	deleted[w.key("ephemeral")] = true
	_, err = writer{c: w.c, prefix: newPrefix(t)}.create(ctx, "elsewhere")
	require.NoError(t, err)

	second := startWarm(t, srv.Endpoint(), w.prefix, path, nil)
	warm := second.waitSynced(t)
	t.Logf("warm start: synced in %v (cold: %v)", warm, cold)
	want := prefixState(t, w.c, w.prefix, nil)
	require.Len(t, want, 500-50+30)
	require.Equal(t, want, second.cache(), "the cache is etcd's")
	assert.Zero(t, second.src.lists.Load(), "no list")
	assert.Zero(t, second.src.streams.Load(), "no streaming list")
	assert.Positive(t, second.src.resumes.Load(), "a watch from the snapshot")
	assert.Zero(t, second.ranges.n.Load(), "no range read of the prefix reached etcd")
	assert.Zero(t, second.errs.Load(), "no error")

	present, initial, other := second.seen.get()
	assert.Equal(t, len(want), initial, "the caught-up state as initial adds")
	assert.Empty(t, other, "nothing else")
	for k := range deleted {
		assert.Zero(t, present[k], "%s, deleted while down, delivered as present", k)
	}
	for k := range want {
		assert.Equal(t, 1, present[k], k)
	}

	// Then as usual.
	_, err = w.update(ctx, "k001")
	require.NoError(t, err)
	v, err = w.del(ctx, "k005")
	require.NoError(t, err)
	require.NoError(t, second.inf.WaitForVersion(ctx, v))
	require.Eventually(t, func() bool { _, _, other := second.seen.get(); return len(other) == 2 }, 10*time.Second, time.Millisecond)
	_, _, other = second.seen.get()
	assert.Equal(t, []string{"update " + w.key("k001"), "delete " + w.key("k005")}, other)
}

// TestWarmRestartCompacted: compacted while the program was down, its
// snapshot's revision cannot be resumed from: it relists, syncs with the
// cache equal to etcd, and its handler never sees a key deleted meanwhile.
func TestWarmRestartCompacted(t *testing.T) {
	s := etcdtest.New(t, etcdtest.Config{})
	path := filepath.Join(t.TempDir(), "snapshot")
	w := writer{c: s.NewTestClient(t), prefix: "/compacted/"}
	ctx := t.Context()
	w.seed(t, 50, "k%02d", 1)
	first := startWarm(t, s.Endpoint(), w.prefix, path, nil)
	first.waitSynced(t)
	first.stop()

	_, err := w.update(ctx, "k01")
	require.NoError(t, err)
	_, err = w.del(ctx, "k02")
	require.NoError(t, err)
	_, err = etcdtest.Compact(ctx, w.c)
	require.NoError(t, err)

	second := startWarm(t, s.Endpoint(), w.prefix, path, nil)
	second.waitSynced(t)
	require.Equal(t, prefixState(t, w.c, w.prefix, nil), second.cache())
	assert.Positive(t, second.src.resumes.Load(), "tried to resume")
	assert.Positive(t, second.src.lists.Load()+second.src.streams.Load(), "then relisted")
	present, initial, other := second.seen.get()
	assert.Equal(t, 49, initial)
	assert.Empty(t, other)
	assert.Zero(t, present[w.key("k02")])
}

// TestWarmRestartSharded: a sharded program restarts with another slice:
// it restores its snapshot, relists at once, quietly, and ends with the
// keys of its new slice, the handler given exactly those.
func TestWarmRestartSharded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snapshot")
	w := writer{c: client(t), prefix: newPrefix(t)}
	ctx := t.Context()
	w.seed(t, 200, "k%03d", 1)
	first := startWarm(t, srv.Endpoint(), w.prefix, path, []int{0, 1})
	first.waitSynced(t)
	first.stop()
	_, err := w.del(ctx, "k000")
	require.NoError(t, err)

	second := startWarm(t, srv.Endpoint(), w.prefix, path, []int{1, 2})
	second.waitSynced(t)
	slice, _, err := newFixedSlices(t, 1, 2).Slice(ctx)
	require.NoError(t, err)
	inSlice := func(k string) bool { return slice.Shards.Contains(shard.HashKey(k)) }
	want := prefixState(t, w.c, w.prefix, inSlice)
	require.Equal(t, want, second.cache())
	assert.Positive(t, second.src.lists.Load()+second.src.streams.Load(), "relisted")
	assert.Zero(t, second.errs.Load(), "quietly")
	present, initial, other := second.seen.get()
	assert.Equal(t, len(want), initial)
	assert.Empty(t, other)
	for k := range present {
		assert.True(t, inSlice(k), "%s is not in the slice", k)
	}
	assert.Zero(t, present[w.key("k000")])
}
