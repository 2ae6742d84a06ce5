package k8s_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
)

// requestLog counts the requests for pods an informer sends, by kind. The
// catch-up's revision probe, a list of one name no object has, is counted
// apart from lists.
type requestLog struct {
	lists, streamingLists, watches, gets, probes atomic.Int32
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		q := req.URL.Query()
		switch {
		case req.Method != http.MethodGet || !strings.Contains(req.URL.Path, "/pods"):
		case q.Get("watch") == "true" && q.Get("sendInitialEvents") == "true":
			l.streamingLists.Add(1)
		case q.Get("watch") == "true":
			l.watches.Add(1)
		case strings.HasPrefix(q.Get("fieldSelector"), "metadata.name=Ginformer-Caught-Up-Probe"):
			l.probes.Add(1)
		case strings.HasSuffix(req.URL.Path, "/pods"):
			l.lists.Add(1)
		default:
			l.gets.Add(1)
		}
		return rt.RoundTrip(req)
	})
}

// podRecorder records what a handler receives.
type podRecorder struct {
	mu      sync.Mutex
	initial map[string]bool // names added as initial
	present map[string]bool // names ever handed on as present (add, update)
	deleted map[string]bool
}

func newPodRecorder() *podRecorder {
	return &podRecorder{initial: map[string]bool{}, present: map[string]bool{}, deleted: map[string]bool{}}
}

func (r *podRecorder) handler() informer.HandlerFuncs[informer.NamespacedKey, *corev1.Pod] {
	return informer.HandlerFuncs[informer.NamespacedKey, *corev1.Pod]{
		AddFunc: func(p *corev1.Pod, initial bool) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.present[p.Name] = true
			if initial {
				r.initial[p.Name] = true
			}
		},
		UpdateFunc: func(_, p *corev1.Pod) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.present[p.Name] = true
		},
		DeleteFunc: func(d informer.Deletion[informer.NamespacedKey, *corev1.Pod]) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.deleted[d.Key.Name] = true
		},
	}
}

// runPodInformer runs an informer of the pods of ns through cfg, with a
// snapshot at path and the list and watch options lw, until it has synced;
// stop stops it and waits for Run (which writes the snapshot). Each error
// the informer reports is passed to onError.
func runPodInformer(t *testing.T, cfg *rest.Config, ns, path string, lw informer.ListWatchOptions, rec *podRecorder, onError ...func(error)) (inf *informer.SharedInformer[informer.NamespacedKey, *corev1.Pod], took time.Duration, stop func()) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	src, err := k8s.New(cs.CoreV1().Pods(ns), func(l *corev1.PodList) []corev1.Pod { return l.Items }, k8s.Options{})
	require.NoError(t, err)
	require.True(t, src.Decoding())
	errs := make(chan error, 100)
	inf, err = informer.NewSharedInformer(informer.Options[informer.NamespacedKey, *corev1.Pod]{
		Source:    src,
		KeyFunc:   k8s.Key[*corev1.Pod],
		Snapshot:  informer.SnapshotOptions[*corev1.Pod]{Store: informer.NewSnapshotFile(path)},
		ListWatch: lw,
		ErrorHandler: func(_ context.Context, err error) {
			for _, f := range onError {
				f(err)
			}
			select {
			case errs <- err:
			default:
			}
		},
	})
	require.NoError(t, err)
	reg, err := inf.AddHandler(rec.handler(), informer.HandlerOptions{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- inf.Run(ctx) }()
	wctx, wcancel := context.WithTimeout(ctx, waitFor)
	defer wcancel()
	require.NoError(t, informer.WaitForSync(wctx, inf, reg), "sync")
	took = time.Since(start)
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		<-done
		close(errs)
		for err := range errs {
			t.Logf("informer error: %v", err)
		}
	}
	t.Cleanup(stop)
	return inf, took, stop
}

// TestWarmRestartPods: an informer over pods stops, leaving a snapshot;
// pods are changed, deleted and created while it is down; a new informer
// restarts from the snapshot without a list or a streaming list, syncs to
// the server's state, and its handler never sees a deleted pod as present
// and gets the caught-up state as initial adds.
func TestWarmRestartPods(t *testing.T) {
	e := needEnv(t)
	const n = 40
	ns := snapshotPods(t, e, e.Client, n)
	path := filepath.Join(t.TempDir(), "pods.snap")
	ctx := t.Context()

	first := newPodRecorder()
	inf, cold, stop := runPodInformer(t, e.Config, ns, path, informer.ListWatchOptions{}, first)
	require.Equal(t, n, inf.Lister().Len())
	stop()
	require.NotEmpty(t, inf.Health().SnapshotVersion, "a snapshot written at stop")

	// While down.
	pods := e.Client.CoreV1().Pods(ns)
	for _, i := range []int{1, 2, 3} {
		p, err := pods.Get(ctx, realisticPod(i).Name, metav1.GetOptions{})
		require.NoError(t, err)
		p.Labels["rollout"] = "r2"
		_, err = pods.Update(ctx, p, metav1.UpdateOptions{FieldManager: "kube-controller-manager"})
		require.NoError(t, err)
	}
	gone := map[string]bool{}
	for _, i := range []int{4, 5} {
		name := realisticPod(i).Name
		require.NoError(t, pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptrTo(int64(0))}))
		gone[name] = true
	}
	_, err := pods.Create(ctx, realisticPod(n), metav1.CreateOptions{FieldManager: "kube-controller-manager"})
	require.NoError(t, err)
	// Deleted with a grace period of 0, the pods are gone at once.
	require.Len(t, serverPods(t, e.Client, ns, false), n-1)

	reqs := &requestLog{}
	cfg := rest.CopyConfig(e.Config)
	cfg.Wrap(reqs.wrap)
	second := newPodRecorder()
	inf, warm, _ := runPodInformer(t, cfg, ns, path, informer.ListWatchOptions{}, second)
	h := inf.Health()
	require.NotEmpty(t, h.RestoredVersion, "restored from the snapshot")
	require.False(t, h.Restored, "caught up")
	requireCacheEqual(t, inf.Lister(), serverPods(t, e.Client, ns, false), "after the warm restart")
	require.Zero(t, reqs.lists.Load(), "no list")
	require.Zero(t, reqs.streamingLists.Load(), "no streaming list")
	require.NotZero(t, reqs.watches.Load(), "a watch")

	second.mu.Lock()
	defer second.mu.Unlock()
	for name := range gone {
		require.False(t, second.present[name], "%s, deleted while down, handed on as present", name)
	}
	require.Len(t, second.initial, n-1, "the caught-up state as initial adds")
	t.Logf("cold start %v; warm restart %v (watches %d, gets %d, revision probes %d)", cold, warm, reqs.watches.Load(), reqs.gets.Load(), reqs.probes.Load())

	// The restarted informer goes on: a later write arrives.
	p, err := pods.Get(ctx, realisticPod(7).Name, metav1.GetOptions{})
	require.NoError(t, err)
	p.Labels["after"] = "restart"
	p, err = pods.Update(ctx, p, metav1.UpdateOptions{})
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, waitFor)
	defer cancel()
	require.NoError(t, inf.WaitForVersion(wctx, p.ResourceVersion))
	got, ok := inf.Lister().Get(informer.NamespacedKey{Namespace: ns, Name: p.Name})
	require.True(t, ok)
	require.Equal(t, "restart", got.Labels["after"])
}
