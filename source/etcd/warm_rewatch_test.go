package etcd_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
)

// oneMemberSeeded starts a one-member etcd process cluster, writes n keys
// under prefix, and returns the cluster, its member, a writer of prefix
// and a path for a snapshot.
func oneMemberSeeded(t *testing.T, prefix string, n int) (*etcdtest.Cluster, *etcdtest.Member, writer, string) {
	t.Helper()
	c := etcdtest.StartCluster(t, 1)
	m := c.Members()[0]
	cli, err := etcdtest.NewClient(m.ClientURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() })
	w := writer{c: cli, prefix: prefix}
	w.seed(t, n, "k%03d", 1)
	return c, m, w, filepath.Join(t.TempDir(), "snapshot")
}

// TestWarmRestartRewatchesWithoutRelist: a program restarted from its
// snapshot over a real etcd (a member process) keeps its cache without a
// single list past the restore: its watches end every 1–2 s
// (MinWatchTimeout 1 s) and are re-opened from the last revision, and after
// the member is down for 3 s and back, the watch is re-opened too; every
// write is cached, the cache equals etcd, and no range read of the prefix
// reaches etcd. Before 166634b the first watch end after the catch-up
// relisted the whole prefix, and so did the outage.
func TestWarmRestartRewatchesWithoutRelist(t *testing.T) {
	c, m, w, path := oneMemberSeeded(t, "/rewatch/", 200)
	cli := w.c
	ctx := t.Context()
	// A short catch-up bound too (StreamingListTimeout): before 166634b its
	// timer, left running after the marker, failed the next watch.
	lw := informer.ListWatchOptions{MinWatchTimeout: time.Second, StreamingListTimeout: 2 * time.Second}

	first := startWarmWith(t, m.ClientURL, w.prefix, path, nil, lw)
	first.waitSynced(t)
	first.stop()
	_, err := w.update(ctx, "k000")
	require.NoError(t, err)
	_, err = w.del(ctx, "k001")
	require.NoError(t, err)

	second := startWarmWith(t, m.ClientURL, w.prefix, path, nil, lw)
	second.waitSynced(t)
	require.Positive(t, second.src.resumes.Load(), "resumed from the snapshot")
	noList := func(when string) {
		t.Helper()
		h := second.inf.Health()
		require.Zero(t, h.Lists, "%s: Health().Lists (watch restarts %d, last error %v)", when, h.WatchRestarts, h.LastError)
		require.Zero(t, second.src.lists.Load()+second.src.streams.Load(), "%s: lists asked of the source", when)
		require.Zero(t, second.ranges.n.Load(), "%s: range reads of the prefix", when)
	}
	noList("synced")

	// Several watch ends.
	restarts := func() int64 { return second.inf.Health().WatchRestarts }
	for i := range 3 {
		before := restarts()
		require.Eventually(t, func() bool { return restarts() > before }, 10*time.Second, 20*time.Millisecond,
			"watch end %d: the watch ends within 2×MinWatchTimeout and is re-opened", i+1)
		v, err := w.update(ctx, "k002")
		require.NoError(t, err)
		require.NoError(t, second.inf.WaitForVersion(ctx, v))
		noList("after a watch end")
	}

	// An outage.
	m.Kill()
	time.Sleep(3 * time.Second) // the outage simulated, not a synchronisation
	c.Restart(m)
	c.WaitLeader(30 * time.Second)
	before := restarts()
	v, err := w.update(ctx, "k003")
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	require.NoError(t, second.inf.WaitForVersion(wctx, v), "the write after the outage is cached")
	noList("after the outage")
	require.Eventually(t, func() bool { return restarts() > before+1 }, 10*time.Second, 20*time.Millisecond,
		"two more watch ends")
	noList("after the outage and two watch ends")
	assert.Equal(t, prefixState(t, cli, w.prefix, nil), second.cache(), "the cache is etcd's")
	_, _, other := second.seen.get()
	assert.NotContains(t, other, "delete "+w.key("k001"), "deleted while down: never delivered")
}
