package etcd_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/source/etcd"
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
)

// A watch whose member is lost moves to a member at or past the revision
// it resumes from, even when a member that is behind answers first: a
// watch there would wait for the member to catch up, then end with
// ErrVersionTooLarge, and the reflector would relist. The member behind is
// stood in for by a single-member etcd of its own at a low revision: to a
// probe it looks like a member catching up after a partition (it has a
// leader and answers, at once, with an older revision), and a watch from a
// revision it has not reached waits, as on such a member. The member at
// the revision is reached through a proxy that delays each new connection,
// so that it answers the probe after the one behind.
func TestFailoverPrefersMemberNotBehind(t *testing.T) {
	good := etcdtest.New(t, etcdtest.Config{})
	behind := etcdtest.New(t, etcdtest.Config{ClusterToken: "behind"})
	addr := strings.TrimPrefix(good.Endpoint(), "http://")
	first, err := etcdtest.NewProxy(addr)
	require.NoError(t, err)
	t.Cleanup(first.Close)
	slow, err := etcdtest.NewProxy(addr)
	require.NoError(t, err)
	t.Cleanup(slow.Close)
	slow.SetDelay(300 * time.Millisecond)

	w := writer{c: good.NewTestClient(t), prefix: "/failover/"}
	ctx := t.Context()
	w.seed(t, 20, "k%02d", 1) // the good member is well past the one behind
	cli, err := etcdtest.NewClient(first.Endpoint())
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() })
	src := newSource(t, etcd.Options[obj]{Client: cli, Prefix: w.prefix, StripPrefix: true,
		LivenessInterval: 500 * time.Millisecond, LivenessTimeout: time.Second})
	watch := watchFrom(t, src) // on first: the client's only endpoint
	v, err := w.update(ctx, "k00")
	require.NoError(t, err)
	require.Equal(t, v, next2(t, watch).Version)

	cli.SetEndpoints(first.Endpoint(), behind.Endpoint(), slow.Endpoint())
	first.SetRefuse(true) // the watch's member is lost
	v, err = w.update(ctx, "k01")
	require.NoError(t, err)
	ev := next2(t, watch)
	require.Equal(t, v, ev.Version, "the write after the loss, through the member at the revision")
	require.Equal(t, "k01", ev.Object.Key)
}
