package compat_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
	"github.com/ginformer/ginformer/source/k8s/compat"
	"github.com/ginformer/ginformer/source/k8s/k8stest"
)

// runAnnotation is set by the test's transform to the number of the
// informer run that received the object from the ListerWatcher: a cached
// object that still carries an earlier run's number was restored from the
// snapshot (the relist dropped the server's copy as unchanged).
const runAnnotation = "test.ginformer/run"

// stamped is one call a stampRecorder received.
type stamped struct {
	op      string // add, update, delete
	name    string
	initial bool
	run     string // the object's runAnnotation
}

// stampRecorder is a cache.ResourceEventHandler that records every call.
type stampRecorder struct {
	ch chan stamped
}

func newStampRecorder() *stampRecorder { return &stampRecorder{ch: make(chan stamped, 1000)} }

func (r *stampRecorder) record(op string, obj any, initial bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	p := obj.(*corev1.Pod)
	r.ch <- stamped{op: op, name: p.Name, initial: initial, run: p.Annotations[runAnnotation]}
}

func (r *stampRecorder) OnAdd(obj any, initial bool) { r.record("add", obj, initial) }
func (r *stampRecorder) OnUpdate(_, obj any)         { r.record("update", obj, false) }
func (r *stampRecorder) OnDelete(obj any)            { r.record("delete", obj, false) }

// next returns the next call, failing after a wait.
func (r *stampRecorder) next(t *testing.T) stamped {
	t.Helper()
	select {
	case e := <-r.ch:
		return e
	case <-time.After(wait):
		t.Fatal("no event")
		return stamped{}
	}
}

// watchErrors collects what a watch error handler receives.
type watchErrors struct {
	mu   sync.Mutex
	errs []error
}

func (w *watchErrors) handle(_ *cache.Reflector, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.errs = append(w.errs, err)
}

// snapshotErrors returns the errors received that wrap informer.ErrSnapshot.
func (w *watchErrors) snapshotErrors() []error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []error
	for _, err := range w.errs {
		if errors.Is(err, informer.ErrSnapshot) {
			out = append(out, err)
		}
	}
	return out
}

// snapshotRun is one run of a compat informer with a snapshot.
type snapshotRun struct {
	inf  *compat.Informer
	rec  *stampRecorder
	errs *watchErrors
	stop func()
}

// startSnapshotInformer runs a compat informer over lw with a snapshot at
// path, whose transform stamps objects with runN, until it has synced.
func startSnapshotInformer(t *testing.T, lw cache.ListerWatcher, path, identity string, runN int, lwOpts informer.ListWatchOptions, logger *logr.Logger) snapshotRun {
	t.Helper()
	inf, err := compat.New(compat.Options{
		ListerWatcher: lw,
		ExampleObject: &corev1.Pod{},
		ListWatch:     lwOpts,
		Logger:        logger,
		Snapshot: informer.SnapshotOptions[k8s.Object]{
			Store:    informer.NewSnapshotFile(path),
			Identity: identity,
			Interval: -1, // only when the informer stops
		},
	})
	require.NoError(t, err)
	stamp := fmt.Sprint(runN)
	require.NoError(t, inf.SetTransform(func(obj any) (any, error) {
		if p, ok := obj.(*corev1.Pod); ok {
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			p.Annotations[runAnnotation] = stamp
		}
		return obj, nil
	}))
	errs := &watchErrors{}
	require.NoError(t, inf.SetWatchErrorHandler(errs.handle))
	rec := newStampRecorder()
	_, err = inf.AddEventHandler(rec)
	require.NoError(t, err)
	stop := run(t, inf)
	waitSynced(t, inf)
	return snapshotRun{inf: inf, rec: rec, errs: errs, stop: stop}
}

// waitWatchCache waits until a list at resourceVersion 0 (the watch
// cache, which serves an informer's first list and relists) is at rv or
// later.
func waitWatchCache(t *testing.T, pods interface {
	List(context.Context, metav1.ListOptions) (*corev1.PodList, error)
}, rv string) {
	t.Helper()
	want, err := strconv.ParseUint(rv, 10, 64)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		l, err := pods.List(t.Context(), metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false
		}
		got, err := strconv.ParseUint(l.ResourceVersion, 10, 64)
		return err == nil && got >= want
	}, 30*time.Second, 10*time.Millisecond, "the watch cache reaches %s", rv)
}

// simplePod is a pod the apiserver accepts.
func simplePod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "shop"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example.com/shop:v1"}}},
	}
}

// TestWarmRestartCompatAPIServer: a compat informer with a snapshot syncs
// and stops (the snapshot is written); pods change, are deleted and are
// created while it is down; a new compat informer restores the snapshot,
// relists (a ListerWatcher cannot resume), and syncs to the server's state.
// The objects that did not change are the restored ones (the relist
// dropped them), handlers get the synced state as initial adds, a pod
// deleted while down never reaches a handler, and later changes arrive.
// Once with plain lists, once with streaming lists.
func TestWarmRestartCompatAPIServer(t *testing.T) {
	env, err := k8stest.Start(k8stest.Config{})
	if errors.Is(err, k8stest.ErrNoAssets) {
		t.Skip(err)
	}
	require.NoError(t, err)
	defer env.Stop()
	ksys, err := env.Client.CoreV1().Namespaces().Get(t.Context(), metav1.NamespaceSystem, metav1.GetOptions{})
	require.NoError(t, err)

	for _, tc := range []struct {
		name      string
		streaming bool
	}{{"list", false}, {"streaming list", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			ns := env.Namespace(t)
			pods := env.Client.CoreV1().Pods(ns)
			const n = 20
			name := func(i int) string { return fmt.Sprintf("pod-%02d", i) }
			for i := range n {
				_, err := pods.Create(ctx, simplePod(name(i)), metav1.CreateOptions{})
				require.NoError(t, err)
			}
			// What a program would name: the cluster, the resource, the
			// namespace and the selectors (none here).
			identity := fmt.Sprintf("cluster %s; pods in %s; all", ksys.UID, ns)
			path := filepath.Join(t.TempDir(), "pods.snap")
			lw := cache.NewListWatchFromClient(env.Client.CoreV1().RESTClient(), "pods", ns, fields.Everything())
			lwOpts := informer.ListWatchOptions{DisableStreamingList: !tc.streaming}

			// The informer's first list reads "any" state (resourceVersion
			// 0, the watch cache), which may lag the last create: wait
			// until it has caught up, so that every pod is in the list.
			created, err := pods.List(ctx, metav1.ListOptions{})
			require.NoError(t, err)
			waitWatchCache(t, pods, created.ResourceVersion)
			first := startSnapshotInformer(t, lw, path, identity, 1, lwOpts, nil)
			require.Len(t, first.inf.GetStore().ListKeys(), n)
			for range n {
				e := first.rec.next(t)
				require.Equal(t, stamped{op: "add", name: e.name, initial: true, run: "1"}, e)
			}
			first.stop()
			st, err := os.Stat(path)
			require.NoError(t, err, "a snapshot written at stop")
			require.Positive(t, st.Size())
			require.Empty(t, first.errs.snapshotErrors())

			// While down: 1-3 change, 4-5 are deleted, n is created.
			changed := map[string]bool{name(n): true}
			for _, i := range []int{1, 2, 3} {
				p, err := pods.Get(ctx, name(i), metav1.GetOptions{})
				require.NoError(t, err)
				p.Labels["rollout"] = "r2"
				_, err = pods.Update(ctx, p, metav1.UpdateOptions{})
				require.NoError(t, err)
				changed[name(i)] = true
			}
			gone := map[string]bool{}
			for _, i := range []int{4, 5} {
				require.NoError(t, pods.Delete(ctx, name(i), metav1.DeleteOptions{GracePeriodSeconds: new(int64)}))
				gone[name(i)] = true
			}
			_, err = pods.Create(ctx, simplePod(name(n)), metav1.CreateOptions{})
			require.NoError(t, err)
			server, err := pods.List(ctx, metav1.ListOptions{})
			require.NoError(t, err)
			require.Len(t, server.Items, n-1, "pods deleted with no grace period are gone at once")

			waitWatchCache(t, pods, server.ResourceVersion)
			second := startSnapshotInformer(t, lw, path, identity, 2, lwOpts, nil)
			// The cache is the server's state.
			store := second.inf.GetStore()
			require.Len(t, store.ListKeys(), len(server.Items))
			for _, sp := range server.Items {
				obj, ok, err := store.GetByKey(ns + "/" + sp.Name)
				require.NoError(t, err)
				require.True(t, ok, "%s cached", sp.Name)
				p := obj.(*corev1.Pod)
				require.Equal(t, sp.ResourceVersion, p.ResourceVersion, sp.Name)
				require.Equal(t, sp.Labels, p.Labels, sp.Name)
				want := "1" // restored, and dropped from the relist as unchanged
				if changed[sp.Name] {
					want = "2"
				}
				require.Equal(t, want, p.Annotations[runAnnotation], "%s: from run %s", sp.Name, want)
			}
			// Handlers get the synced state as initial adds, and nothing of
			// the pods deleted while down.
			got := map[string]stamped{}
			for range server.Items {
				e := second.rec.next(t)
				require.Equal(t, "add", e.op, "%+v", e)
				require.True(t, e.initial, "%+v", e)
				require.False(t, gone[e.name], "%s, deleted while down, handed on as present", e.name)
				require.NotContains(t, got, e.name, "added twice")
				got[e.name] = e
			}
			for _, sp := range server.Items {
				require.Contains(t, got, sp.Name)
			}
			// The restarted informer goes on: a later change arrives, and
			// nothing before it.
			p, err := pods.Get(ctx, name(7), metav1.GetOptions{})
			require.NoError(t, err)
			p.Labels["after"] = "restart"
			_, err = pods.Update(ctx, p, metav1.UpdateOptions{})
			require.NoError(t, err)
			require.Equal(t, stamped{op: "update", name: name(7), run: "2"}, second.rec.next(t))
			second.stop()
			require.Empty(t, second.errs.snapshotErrors())
		})
	}
}

// TestWarmRestartCompatFake is TestWarmRestartCompatAPIServer over
// client-go's FakeControllerSource, without an apiserver.
func TestWarmRestartCompatFake(t *testing.T) {
	src := newSource(t)
	const n = 10
	for i := range n {
		src.Add(pod(fmt.Sprintf("p%d", i)))
	}
	path := filepath.Join(t.TempDir(), "pods.snap")
	lwOpts := informer.ListWatchOptions{DisableStreamingList: true}

	first := startSnapshotInformer(t, src, path, "fake pods", 1, lwOpts, nil)
	for range n {
		require.Equal(t, "1", first.rec.next(t).run)
	}
	first.stop()

	src.Modify(pod("p1", "rollout", "r2"))
	src.Delete(pod("p2"))
	src.Add(pod("p10"))

	second := startSnapshotInformer(t, src, path, "fake pods", 2, lwOpts, nil)
	want := map[string]string{"p1": "2", "p10": "2"}
	for i := range n {
		if _, ok := want[fmt.Sprintf("p%d", i)]; !ok && i != 2 {
			want[fmt.Sprintf("p%d", i)] = "1"
		}
	}
	got := map[string]string{}
	for range want {
		e := second.rec.next(t)
		require.Equal(t, "add", e.op)
		require.True(t, e.initial)
		got[e.name] = e.run
	}
	require.Equal(t, want, got, "each pod once, as initial adds; the unchanged ones restored; p2 never")
	require.ElementsMatch(t, keysOf(want), second.inf.GetStore().ListKeys())
	second.stop()
	require.Empty(t, second.errs.snapshotErrors())
}

// keysOf returns the cache keys of the pods named in m (no namespace).
func keysOf(m map[string]string) []string {
	var out []string
	for name := range m {
		out = append(out, name)
	}
	return out
}

// gadget is a type with object metadata that client-go's scheme does not
// know.
type gadget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

func (g *gadget) DeepCopyObject() runtime.Object {
	c := *g
	g.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

// logLines is a funcr sink's output.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, prefix+" "+args)
}

func (l *logLines) contains(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

// TestSnapshotUnknownKindCompat: objects of a type client-go's scheme does
// not know cannot be kept; the write at stop fails, is reported (log), is
// not passed to the watch error handler, and leaves no snapshot; the
// informer works as without one.
func TestSnapshotUnknownKindCompat(t *testing.T) {
	src := newSource(t)
	src.Add(&gadget{ObjectMeta: metav1.ObjectMeta{Name: "g", UID: "uid-g"}})
	path := filepath.Join(t.TempDir(), "gadgets.snap")
	lines := &logLines{}
	logger := funcr.New(lines.add, funcr.Options{})
	inf, err := compat.New(compat.Options{
		ListerWatcher: src,
		Logger:        &logger,
		ListWatch:     informer.ListWatchOptions{DisableStreamingList: true},
		Snapshot:      informer.SnapshotOptions[k8s.Object]{Store: informer.NewSnapshotFile(path), Identity: "gadgets", Interval: -1},
	})
	require.NoError(t, err)
	errs := &watchErrors{}
	require.NoError(t, inf.SetWatchErrorHandler(errs.handle))
	stop := run(t, inf)
	waitSynced(t, inf)
	require.Equal(t, []string{"g"}, inf.GetStore().ListKeys())
	stop()
	_, err = os.Stat(path)
	require.ErrorIs(t, err, fs.ErrNotExist, "no snapshot written")
	require.True(t, lines.contains("not a type of client-go's scheme"), "the failed write is reported")
	errs.mu.Lock()
	defer errs.mu.Unlock()
	require.Empty(t, errs.errs, "nothing for the watch error handler")
}
