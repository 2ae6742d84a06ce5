package etcd_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd/etcdtest"
)

// TestWarmStartWhileEtcdDown: a program restarted from its snapshot while
// its etcd is down (killed: connections refused; frozen with SIGSTOP:
// connections accepted, nothing answered) does not hang silently: the
// restored cache is served at once, not synced, and Health says it is
// unconfirmed. A run stopped meanwhile returns at once and reports no
// error. Once etcd is back, the informer confirms the snapshot's identity
// and catches up without a list. Before, Run blocked in the source's
// SnapshotIdentity, with an empty cache and nothing logged, until etcd
// answered, and stopping it reported an error.
func TestWarmStartWhileEtcdDown(t *testing.T) {
	for _, tt := range []struct {
		name       string
		down, back func(*etcdtest.Cluster, *etcdtest.Member)
	}{
		{"killed", func(_ *etcdtest.Cluster, m *etcdtest.Member) { m.Kill() },
			func(c *etcdtest.Cluster, m *etcdtest.Member) { c.Restart(m) }},
		{"frozen", func(_ *etcdtest.Cluster, m *etcdtest.Member) { require.NoError(t, m.Signal(syscall.SIGSTOP)) },
			func(_ *etcdtest.Cluster, m *etcdtest.Member) { require.NoError(t, m.Signal(syscall.SIGCONT)) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, m, w, path := oneMemberSeeded(t, "/down/", 100)
			cli := w.c
			ctx := t.Context()

			first := startWarm(t, m.ClientURL, w.prefix, path, nil)
			first.waitSynced(t)
			first.stop()
			restored := first.cache()
			_, err := w.update(ctx, "k000")
			require.NoError(t, err)

			tt.down(c, m)
			served := func(r *warmRun) {
				t.Helper()
				assert.Eventually(t, func() bool { return r.inf.Health().Start == informer.StartVerifying }, 20*time.Second, 10*time.Millisecond,
					"the restored cache is served, unconfirmed")
				h := r.inf.Health()
				require.Equal(t, informer.StartVerifying, h.Start, "start reason: %s", h.StartReason)
				assert.True(t, h.Restored)
				assert.False(t, h.Synced)
				assert.Equal(t, restored, r.cache())
			}

			// A run stopped while etcd is down: at once, and quietly.
			early := startWarm(t, m.ClientURL, w.prefix, path, nil)
			served(early)
			stopped := time.Now()
			early.stop()
			assert.Less(t, time.Since(stopped), 10*time.Second, "Run returns once stopped")
			assert.Zero(t, early.errs.Load(), "stopping is no error")

			second := startWarm(t, m.ClientURL, w.prefix, path, nil)
			served(second)
			tt.back(c, m)
			c.WaitLeader(30 * time.Second)
			wctx, cancel := context.WithTimeout(ctx, 60*time.Second) // past the backoff of the attempts made while down
			defer cancel()
			require.NoError(t, informer.WaitForSync(wctx, second.inf, second.reg))
			h := second.inf.Health()
			assert.Equal(t, informer.StartResumed, h.Start, "confirmed and caught up: %s", h.StartReason)
			assert.Zero(t, h.Lists)
			assert.Zero(t, second.ranges.n.Load(), "no range read of the prefix")
			assert.Equal(t, prefixState(t, cli, w.prefix, nil), second.cache())
		})
	}
}
