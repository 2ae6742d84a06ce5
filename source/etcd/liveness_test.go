package etcd_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/etcd"
)

// The source's liveness bound is LivenessInterval + LivenessTimeout (their
// defaults: 2 s + 3 s), none when the check is off; a Sharded source has
// its source's. The client is never dialled.
func TestLivenessBound(t *testing.T) {
	cli := clientv3.NewCtxClient(context.Background())
	t.Cleanup(func() { _ = cli.Close() })
	for _, tc := range []struct {
		name              string
		interval, timeout time.Duration
		want              time.Duration
	}{
		{"defaults", 0, 0, 5 * time.Second},
		{"set", 500 * time.Millisecond, time.Second, 1500 * time.Millisecond},
		{"interval only", 10 * time.Second, 0, 13 * time.Second},
		{"check off", 0, -1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := etcd.New(etcd.Options[obj]{Client: cli, LivenessInterval: tc.interval, LivenessTimeout: tc.timeout})
			require.NoError(t, err)
			assert.Equal(t, tc.want, src.LivenessBound())
			sh, err := etcd.NewSharded(etcd.ShardedOptions[obj]{Source: src, Slices: staticSlices{}})
			require.NoError(t, err)
			assert.Equal(t, tc.want, sh.LivenessBound())

			inf, err := informer.NewSharedInformer(informer.Options[string, *etcd.Object[obj]]{Source: src, KeyFunc: etcd.KeyFunc[obj]})
			require.NoError(t, err)
			assert.Equal(t, tc.want, inf.Health().LivenessBound)
		})
	}
}
