package k8s_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
	"github.com/ginformer/ginformer/source/k8s/k8stest"
)

// TestNotifyCaughtUpEventsApart: on an apiserver that keeps events in an
// etcd of their own (--etcd-servers-overrides=/events#...), whose revision
// is not the watched resource's, the catch-up still marks the moment the
// watch has delivered every change, and a warm restart resumes:
//
//   - "behind": the events' etcd is far behind the resources' (a fresh
//     one), below the watch's version, which was taken for a snapshot of
//     another cluster (ErrVersionTooLarge, a relist at every warm start);
//   - "between": its revision lies between the watch's version and the
//     newest change, which marked the catch-up before the later changes
//     were delivered (stale state reported as synced);
//   - "warm restart": an informer restarted from its snapshot syncs
//     without a list.
func TestNotifyCaughtUpEventsApart(t *testing.T) {
	needEnv(t)
	events := &envtest.Etcd{Path: filepath.Join(os.Getenv(k8stest.AssetsEnv), "etcd")}
	require.NoError(t, events.Start())
	defer func() { require.NoError(t, events.Stop()) }()
	own, err := k8stest.Start(k8stest.Config{APIServerArgs: map[string][]string{
		"etcd-servers-overrides": {"/events#" + events.URL.String()},
	}})
	require.NoError(t, err)
	defer own.Stop()
	ec, err := clientv3.New(clientv3.Config{Endpoints: []string{events.URL.String()}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	require.NoError(t, err)
	defer func() { require.NoError(t, ec.Close()) }()
	// eventsRevisionTo writes to the events' etcd until its revision is at
	// least rev, and returns it.
	eventsRevisionTo := func(ctx context.Context, rev int64) int64 {
		for {
			resp, err := ec.Put(ctx, "/filler", "x")
			require.NoError(t, err)
			if resp.Header.Revision >= rev {
				return resp.Header.Revision
			}
		}
	}
	eventsRevision := func(ctx context.Context) int64 {
		resp, err := ec.Get(ctx, "/filler")
		require.NoError(t, err)
		return resp.Header.Revision
	}

	// catchUp creates a secret, then later changes, and checks that a
	// NotifyCaughtUp watch from the first one's version delivers every
	// change before its marker. setEvents runs after the first later change.
	catchUp := func(t *testing.T, setEvents func(ctx context.Context, first string)) {
		ns := own.Namespace(t)
		ctx := t.Context()
		secrets := own.Client.CoreV1().Secrets(ns)
		put := func(name string) string {
			s, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			require.NoError(t, err)
			return s.ResourceVersion
		}
		from := put("from")
		var want []string
		for i := range 50 {
			name := fmt.Sprint("s", i)
			v := put(name)
			want = append(want, "Added "+name)
			if i == 0 {
				setEvents(ctx, v)
			}
		}
		src, err := k8s.New(secrets, secretItems, k8s.Options{})
		require.NoError(t, err)
		changes, marker, took, w := untilMarker(t, anyWatch(src), from)
		defer w.Stop()
		var got []string
		for _, ev := range changes {
			got = append(got, fmt.Sprintf("%v %s", ev.Type, ev.Object.GetName()))
		}
		require.Equal(t, want, got, "every change before the marker")
		t.Logf("events' etcd at %d; watch from %s, marker at %s after %v", eventsRevision(ctx), from, marker.Version, took)
	}

	t.Run("behind", func(t *testing.T) {
		catchUp(t, func(context.Context, string) {})
	})
	t.Run("between", func(t *testing.T) {
		catchUp(t, func(ctx context.Context, first string) {
			var rev int64
			_, err := fmt.Sscan(first, &rev)
			require.NoError(t, err)
			eventsRevisionTo(ctx, rev)
		})
	})
	t.Run("warm restart", func(t *testing.T) {
		ns := snapshotPods(t, own, own.Client, 10)
		path := filepath.Join(t.TempDir(), "pods.snap")
		_, _, stop := runPodInformer(t, own.Config, ns, path, informer.ListWatchOptions{}, newPodRecorder())
		stop()
		pods := own.Client.CoreV1().Pods(ns)
		p, err := pods.Get(t.Context(), realisticPod(1).Name, metav1.GetOptions{})
		require.NoError(t, err)
		p.Labels["rollout"] = "r2"
		_, err = pods.Update(t.Context(), p, metav1.UpdateOptions{})
		require.NoError(t, err)

		inf, _, _ := runPodInformer(t, own.Config, ns, path, informer.ListWatchOptions{}, newPodRecorder())
		h := inf.Health()
		require.NotEmpty(t, h.RestoredVersion, "restored from the snapshot")
		require.Zero(t, h.Lists, "resumed without a list (last error: %v)", h.LastError)
		requireCacheEqual(t, inf.Lister(), serverPods(t, own.Client, ns, false), "after the warm restart")
	})
}
