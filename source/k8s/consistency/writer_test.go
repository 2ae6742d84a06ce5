package consistency_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
	"github.com/ginformer/ginformer/source/k8s/consistency"
)

// Every Get after an update shows that update (or a later one), and every
// List after a create holds the object: no read of the writer's own writes
// is stale.
func TestUpdateThenGet(t *testing.T) {
	m := &recorder{}
	f := newCMFixture(t, consistency.Options{Metrics: m})
	ctx := t.Context()
	obj, err := f.w.Create(ctx, cm("a", 1), metav1.CreateOptions{})
	require.NoError(t, err)
	for i := 2; i <= 20; i++ {
		obj.Data["gen"] = fmt.Sprint(i)
		obj, err = f.w.Update(ctx, obj, metav1.UpdateOptions{})
		require.NoError(t, err)
		got, ok, err := f.w.Get(ctx, f.key("a"))
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, i, gen(got.Data), "Get after update %d", i)
		require.Equal(t, obj.ResourceVersion, got.ResourceVersion)
	}
	patched, err := f.w.Patch(ctx, "a", types.MergePatchType, []byte(`{"data":{"gen":"99"}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	got, _, err := f.w.Get(ctx, f.key("a"))
	require.NoError(t, err)
	require.Equal(t, patched.ResourceVersion, got.ResourceVersion)
	require.Equal(t, 20, m.count("get/ok"))
	requireEmptyRecord(t, f.w)
}

func TestListAfterCreate(t *testing.T) {
	f := newCMFixture(t, consistency.Options{})
	ctx := t.Context()
	for i := range 10 {
		_, err := f.w.Create(ctx, cm(fmt.Sprintf("l-%d", i), 1), metav1.CreateOptions{})
		require.NoError(t, err)
		objs, err := f.w.List(ctx)
		require.NoError(t, err)
		require.Len(t, objs, i+1, "List after create %d", i)
	}
	requireEmptyRecord(t, f.w)
}

// A Get after a delete does not return the deleted object, even when an
// object of the same name is created at once by another client.
func TestDeleteThenRecreated(t *testing.T) {
	f := newCMFixture(t, consistency.Options{})
	ctx := t.Context()
	for i := range 5 {
		old, err := f.w.Create(ctx, cm("d", 1), metav1.CreateOptions{})
		require.NoError(t, err)
		got, ok, err := f.w.Get(ctx, f.key("d"))
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, old.UID, got.UID)

		require.NoError(t, f.w.Delete(ctx, "d", metav1.DeleteOptions{}))
		if i%2 == 0 { // recreated behind the writer's back
			_, err = f.client.Create(ctx, cm("d", 2), metav1.CreateOptions{})
			require.NoError(t, err)
		}
		got, ok, err = f.w.Get(ctx, f.key("d"))
		require.NoError(t, err)
		if ok {
			require.NotEqual(t, old.UID, got.UID, "round %d: Get after delete returned the deleted object", i)
		}
		objs, err := f.w.List(ctx)
		require.NoError(t, err)
		for _, o := range objs {
			require.NotEqual(t, old.UID, o.UID, "round %d: List after delete holds the deleted object", i)
		}
		if i%2 == 0 {
			require.NoError(t, f.client.Delete(ctx, "d", metav1.DeleteOptions{}))
			// The next create through the writer waits for this
			// delete too (its version is later).
		}
	}
	_, deletes := f.w.RecordSize()
	require.Zero(t, deletes)
}

// Deleting an object with a finalizer marks it: Get then returns it marked.
func TestDeleteWithFinalizer(t *testing.T) {
	f := newCMFixture(t, consistency.Options{})
	ctx := t.Context()
	obj := cm("fin", 1)
	obj.Finalizers = []string{"example.com/hold"}
	created, err := f.w.Create(ctx, obj, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = f.client.Patch(context.Background(), "fin", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	require.NoError(t, f.w.Delete(ctx, "fin", metav1.DeleteOptions{}))
	got, ok, err := f.w.Get(ctx, f.key("fin"))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, created.UID, got.UID)
	require.NotNil(t, got.DeletionTimestamp, "Get after delete: not marked")
	// Released, it goes.
	_, err = f.w.Patch(ctx, "fin", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	require.NoError(t, err)
}

// A projection caches what the writer wrote, as the full type does.
func TestProjection(t *testing.T) {
	e := needEnv(t)
	ns := e.Namespace(t)
	client := e.Client.CoreV1().ConfigMaps(ns)
	src, err := k8s.NewProjection[cmSlim](client, k8s.Options{})
	require.NoError(t, err)
	inf := newInformer(t, src)
	w, err := consistency.NewWriter[*corev1.ConfigMap](client, inf, consistency.Options{})
	require.NoError(t, err)
	defer w.Close()
	run(t, inf)
	ctx := t.Context()
	obj, err := w.Create(ctx, cm("p", 1), metav1.CreateOptions{})
	require.NoError(t, err)
	key := informer.NamespacedKey{Namespace: ns, Name: "p"}
	for i := 2; i <= 10; i++ {
		obj.Data["gen"] = fmt.Sprint(i)
		obj, err = w.Update(ctx, obj, metav1.UpdateOptions{})
		require.NoError(t, err)
		got, ok, err := w.Get(ctx, key)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, i, gen(got.Data))
	}
	old := obj.UID
	require.NoError(t, w.Delete(ctx, "p", metav1.DeleteOptions{}))
	_, err = client.Create(ctx, cm("p", 1), metav1.CreateOptions{})
	require.NoError(t, err)
	got, ok, err := w.Get(ctx, key)
	require.NoError(t, err)
	if ok {
		require.NotEqual(t, old, got.UID)
	}
}

// A read whose wait reaches its bound returns the cache's answer and
// ErrStale; NoWait answers at once. The informer does not run, so the cache
// never catches up.
func TestBoundAndNoWait(t *testing.T) {
	e := needEnv(t)
	ns := e.Namespace(t)
	client := e.Client.CoreV1().ConfigMaps(ns)
	src, err := k8s.New(client, cmItems, k8s.Options{})
	require.NoError(t, err)
	inf := newInformer(t, src)
	m := &recorder{}
	w, err := consistency.NewWriter[*corev1.ConfigMap](client, inf, consistency.Options{MaxWait: 50 * time.Millisecond, Metrics: m})
	require.NoError(t, err)
	defer w.Close()
	ctx := t.Context()
	_, err = w.Create(ctx, cm("s", 1), metav1.CreateOptions{})
	require.NoError(t, err)
	key := informer.NamespacedKey{Namespace: ns, Name: "s"}

	got, ok, err := w.Get(ctx, key)
	require.ErrorIs(t, err, consistency.ErrStale)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	// The error names the key, the bound, the version awaited and the
	// cache's.
	require.ErrorContains(t, err, "get "+key.String()+": ")
	require.ErrorContains(t, err, "within 50ms")
	require.ErrorContains(t, err, "has applied no version yet")
	require.False(t, ok)
	require.Nil(t, got)
	_, err = w.List(ctx, consistency.MaxWait(10*time.Millisecond))
	require.ErrorIs(t, err, consistency.ErrStale)

	_, ok, err = w.Get(ctx, key, consistency.NoWait())
	require.NoError(t, err)
	require.False(t, ok)
	objs, err := w.List(ctx, consistency.NoWait())
	require.NoError(t, err)
	require.Empty(t, objs)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, _, err = w.Get(cctx, key, consistency.MaxWait(-1))
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, consistency.ErrStale)

	require.Equal(t, 1, m.count("get/timeout"))
	require.Equal(t, 1, m.count("list/timeout"))
	require.Equal(t, 1, m.count("get/canceled"))
	require.Equal(t, 3, len(m.results), "NoWait reads are not observed: %v", m.results)
}

// Writers on many goroutines, each reading its own writes at once.
func TestConcurrentWriters(t *testing.T) {
	f := newCMFixture(t, consistency.Options{})
	ctx := t.Context()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			name := fmt.Sprintf("c-%d", g)
			obj, err := f.w.Create(ctx, cm(name, 1), metav1.CreateOptions{})
			if err != nil {
				errs <- err
				return
			}
			for i := 2; i <= 10; i++ {
				obj.Data["gen"] = fmt.Sprint(i)
				if obj, err = f.w.Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
					errs <- err
					return
				}
				got, ok, err := f.w.Get(ctx, f.key(name))
				if err != nil || !ok || gen(got.Data) != i {
					errs <- fmt.Errorf("%s: Get after update %d: ok %v, err %v", name, i, ok, err)
					return
				}
				if i%3 == 0 {
					if err := f.w.WaitForWrites(ctx); err != nil {
						errs <- err
						return
					}
				}
			}
			if err := f.w.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				errs <- err
				return
			}
			if _, ok, err := f.w.Get(ctx, f.key(name)); err != nil || ok {
				errs <- fmt.Errorf("%s: Get after delete: ok %v, err %v", name, ok, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	objs, err := f.w.List(ctx)
	require.NoError(t, err)
	require.Empty(t, objs)
	requireEmptyRecord(t, f.w)
}

// Reads after the informer has stopped end with ErrClosed.
func TestInformerStopped(t *testing.T) {
	e := needEnv(t)
	ns := e.Namespace(t)
	client := e.Client.CoreV1().ConfigMaps(ns)
	src, err := k8s.New(client, cmItems, k8s.Options{})
	require.NoError(t, err)
	inf := newInformer(t, src)
	w, err := consistency.NewWriter[*corev1.ConfigMap](client, inf, consistency.Options{MaxWait: -1})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	require.NoError(t, informer.WaitForSync(t.Context(), inf))
	cancel()
	require.NoError(t, <-done)
	_, err = w.Create(t.Context(), cm("x", 1), metav1.CreateOptions{})
	require.NoError(t, err)
	_, _, err = w.Get(t.Context(), informer.NamespacedKey{Namespace: ns, Name: "x"})
	require.ErrorIs(t, err, informer.ErrClosed)
}

// requireEmptyRecord checks that, once the cache has caught up with every
// write, the writer's record holds nothing.
func requireEmptyRecord[C, T k8s.Object](t *testing.T, w *consistency.Writer[C, T]) {
	t.Helper()
	require.NoError(t, w.WaitForWrites(t.Context()))
	versions, deletes := w.RecordSize()
	require.Zero(t, versions, "versions recorded")
	require.Zero(t, deletes, "deletes recorded")
}

// One goroutine deletes and recreates an object through the writer while
// others read it: no read returns an object whose delete had returned
// before the read began, and no read waits for its bound (a wait for a
// delete that a later create replaced in the record still wakes).
func TestRecreateWhileReading(t *testing.T) {
	f := newCMFixture(t, consistency.Options{MaxWait: 30 * time.Second})
	ctx := t.Context()
	var (
		mu      sync.Mutex
		deleted = map[types.UID]bool{}
	)
	isDeleted := func() map[types.UID]bool {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(deleted)
	}
	stop := make(chan struct{})
	errs := make(chan error, 5)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(stop)
		for range 15 {
			obj, err := f.w.Create(ctx, cm("r", 1), metav1.CreateOptions{})
			if err != nil {
				errs <- err
				return
			}
			if err := f.w.Delete(ctx, "r", metav1.DeleteOptions{}); err != nil {
				errs <- err
				return
			}
			mu.Lock()
			deleted[obj.UID] = true
			mu.Unlock()
		}
	})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				before := isDeleted()
				got, ok, err := f.w.Get(ctx, f.key("r"))
				if err != nil {
					errs <- err
					return
				}
				if ok && before[got.UID] {
					errs <- fmt.Errorf("Get returned %s, deleted before the read began", got.UID)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	requireEmptyRecord(t, f.w)
}

// Server-side apply through the writer is read back at once; an apply
// configuration of another type is refused without a request.
func TestApply(t *testing.T) {
	f := newCMFixture(t, consistency.Options{})
	ctx := t.Context()
	for i := 1; i <= 5; i++ {
		ac := corev1ac.ConfigMap("ap", f.ns).WithData(map[string]string{"gen": fmt.Sprint(i)})
		out, err := consistency.Apply(f.w, ctx, ac, metav1.ApplyOptions{FieldManager: "test", Force: true})
		require.NoError(t, err)
		got, ok, err := f.w.Get(ctx, f.key("ap"))
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, i, gen(got.Data))
		require.Equal(t, out.ResourceVersion, got.ResourceVersion)
	}
	_, err := consistency.Apply(f.w, ctx, corev1ac.Secret("ap", f.ns), metav1.ApplyOptions{FieldManager: "test"})
	require.ErrorIs(t, err, errors.ErrUnsupported)
	// ConfigMaps have no status subresource: the server's answer (their
	// generated client has ApplyStatus all the same), nothing recorded.
	_, err = consistency.ApplyStatus(f.w, ctx, corev1ac.ConfigMap("ap", f.ns), metav1.ApplyOptions{FieldManager: "test"})
	require.True(t, apierrors.IsNotFound(err), "ApplyStatus: %v", err)
	requireEmptyRecord(t, f.w)
}

// UpdateStatus and ApplyStatus through the writer of a resource with a
// status subresource (pods) are read back at once.
func TestUpdateStatus(t *testing.T) {
	e := needEnv(t)
	ns := e.Namespace(t)
	client := e.Client.CoreV1().Pods(ns)
	src, err := k8s.New(client, func(l *corev1.PodList) []corev1.Pod { return l.Items }, k8s.Options{})
	require.NoError(t, err)
	inf := newInformer(t, src)
	w, err := consistency.NewWriter[*corev1.Pod](client, inf, consistency.Options{})
	require.NoError(t, err)
	defer w.Close()
	run(t, inf)
	ctx := t.Context()
	pod, err := w.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/c"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	key := informer.NamespacedKey{Namespace: ns, Name: "p"}
	for i := range 5 {
		pod.Status.Message = fmt.Sprint("update ", i)
		pod, err = w.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		require.NoError(t, err)
		got, ok, err := w.Get(ctx, key)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, pod.Status.Message, got.Status.Message)

		ac := corev1ac.Pod("p", ns).WithStatus(corev1ac.PodStatus().WithReason(fmt.Sprint("apply ", i)))
		_, err = consistency.ApplyStatus(w, ctx, ac, metav1.ApplyOptions{FieldManager: "test", Force: true})
		require.NoError(t, err)
		got, _, err = w.Get(ctx, key)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprint("apply ", i), got.Status.Reason)
		pod = got.DeepCopy()
	}
	requireEmptyRecord(t, w)
}

// Deleting with orphan propagation marks the object (the API server adds
// the orphan finalizer; no garbage collector runs here to remove it): Get
// returns it marked, at once.
func TestDeleteOrphan(t *testing.T) {
	f := newCMFixture(t, consistency.Options{})
	ctx := t.Context()
	created, err := f.w.Create(ctx, cm("orphan", 1), metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = f.client.Patch(context.Background(), "orphan", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	orphan := metav1.DeletePropagationOrphan
	require.NoError(t, f.w.Delete(ctx, "orphan", metav1.DeleteOptions{PropagationPolicy: &orphan}))
	got, ok, err := f.w.Get(ctx, f.key("orphan"))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, created.UID, got.UID)
	require.NotNil(t, got.DeletionTimestamp)
	require.Contains(t, got.Finalizers, metav1.FinalizerOrphanDependents)
}
