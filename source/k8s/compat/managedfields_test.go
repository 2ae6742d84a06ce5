package compat_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ginformer/ginformer/source/k8s/compat"
	"github.com/ginformer/ginformer/source/k8s/k8stest"
)

// TestClientGoObjects: what a compat informer caches is what client-go's
// would: objects keep their managedFields (from a server-side apply and
// from a plain create), equal to the server's; no two cached objects share
// a map or a slice a caller could write through; DropManagedFields drops
// them. And through controller-runtime's cache (the specs of its
// pkg/cache that compare the object read from the cache with the one
// created): structured, unstructured and metadata-only objects carry their
// managedFields, and UnsafeDisableDeepCopy hands out the cached object
// itself.
func TestClientGoObjects(t *testing.T) {
	env, err := k8stest.Start(k8stest.Config{})
	if errors.Is(err, k8stest.ErrNoAssets) {
		t.Skip(err)
	}
	require.NoError(t, err)
	defer env.Stop()
	ns := env.Namespace(t)
	ctx := t.Context()
	cms := env.Client.CoreV1().ConfigMaps(ns)
	apply := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"applied","labels":{"app":"web"}},"data":{"k":"v"}}`)
	_, err = cms.Patch(ctx, "applied", types.ApplyPatchType, apply, metav1.PatchOptions{FieldManager: "applier"})
	require.NoError(t, err)
	_, err = cms.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "created", Labels: map[string]string{"app": "web"}},
		Data:       map[string]string{"k": "v"},
	}, metav1.CreateOptions{FieldManager: "creator"})
	require.NoError(t, err)
	server := map[string]*corev1.ConfigMap{}
	for _, name := range []string{"applied", "created"} {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		require.NotEmpty(t, cm.ManagedFields, "the server recorded %s's managers", name)
		server[name] = cm
	}
	lw := toolscache.NewListWatchFromClient(env.Client.CoreV1().RESTClient(), "configmaps", ns, fields.Everything())

	cached := func(t *testing.T, inf toolscache.SharedIndexInformer) map[string]*corev1.ConfigMap {
		t.Helper()
		run(t, inf)
		waitSynced(t, inf)
		out := map[string]*corev1.ConfigMap{}
		for name := range server {
			obj, ok, err := inf.GetStore().GetByKey(ns + "/" + name)
			require.NoError(t, err)
			require.True(t, ok, name)
			out[name] = obj.(*corev1.ConfigMap)
		}
		return out
	}

	t.Run("kept by default", func(t *testing.T) {
		got := cached(t, compat.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, toolscache.Indexers{}))
		for name, want := range server {
			require.Equal(t, want.ManagedFields, got[name].ManagedFields, name)
		}
		a, b := got["applied"], got["created"]
		requireDisjointMaps(t, a.Labels, b.Labels, "labels")
		requireDisjointMaps(t, a.Data, b.Data, "data")
		requireDisjointSlices(t, a.ManagedFields, b.ManagedFields, "managedFields")
		for _, ma := range a.ManagedFields {
			for _, mb := range b.ManagedFields {
				requireDisjointSlices(t, ma.FieldsV1.GetRawBytes(), mb.FieldsV1.GetRawBytes(), "managedFields' fieldsV1")
			}
		}
	})

	t.Run("DropManagedFields", func(t *testing.T) {
		inf, err := compat.New(compat.Options{ListerWatcher: lw, ExampleObject: &corev1.ConfigMap{}, DropManagedFields: true})
		require.NoError(t, err)
		for name, cm := range cached(t, inf) {
			require.Nil(t, cm.ManagedFields, name)
			require.Equal(t, server[name].Data, cm.Data, name)
		}
	})

	t.Run("controller-runtime cache", func(t *testing.T) {
		for _, unsafeNoCopy := range []bool{false, true} {
			c, err := crcache.New(env.Config, crcache.Options{
				NewInformer:                  compat.NewSharedIndexInformer,
				DefaultNamespaces:            map[string]crcache.Config{ns: {}},
				DefaultUnsafeDisableDeepCopy: &unsafeNoCopy,
			})
			require.NoError(t, err)
			cctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- c.Start(cctx) }()
			t.Cleanup(func() { cancel(); <-done })
			require.True(t, c.WaitForCacheSync(ctx))
			for name, want := range server {
				key := client.ObjectKey{Namespace: ns, Name: name}
				typed := &corev1.ConfigMap{}
				require.NoError(t, c.Get(ctx, key, typed))
				require.Equal(t, want.ManagedFields, typed.ManagedFields, "structured %s", name)

				u := &unstructured.Unstructured{}
				u.SetAPIVersion("v1")
				u.SetKind("ConfigMap")
				require.NoError(t, c.Get(ctx, key, u))
				require.Len(t, u.GetManagedFields(), len(want.ManagedFields), "unstructured %s", name)
				require.Equal(t, want.ManagedFields[0].Manager, u.GetManagedFields()[0].Manager, "unstructured %s", name)

				m := &metav1.PartialObjectMetadata{}
				m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
				require.NoError(t, c.Get(ctx, key, m))
				require.Equal(t, want.ManagedFields, m.ManagedFields, "metadata %s", name)
			}
			// With UnsafeDisableDeepCopy a read is (a shallow copy of) the
			// cached object itself, so two reads share its maps; else each
			// read is a deep copy.
			key := client.ObjectKey{Namespace: ns, Name: "applied"}
			r1, r2 := &corev1.ConfigMap{}, &corev1.ConfigMap{}
			require.NoError(t, c.Get(ctx, key, r1))
			require.NoError(t, c.Get(ctx, key, r2))
			same := reflect.ValueOf(r1.Labels).UnsafePointer() == reflect.ValueOf(r2.Labels).UnsafePointer()
			require.Equal(t, unsafeNoCopy, same, "UnsafeDisableDeepCopy %v: reads share the cached object's maps", unsafeNoCopy)
		}
	})
}

// requireDisjointMaps fails if a and b are the same map.
func requireDisjointMaps[M ~map[K]V, K comparable, V any](t *testing.T, a, b M, what string) {
	t.Helper()
	if a == nil || b == nil {
		return
	}
	require.NotEqual(t, reflect.ValueOf(a).UnsafePointer(), reflect.ValueOf(b).UnsafePointer(), "two objects share their %s map", what)
}

// requireDisjointSlices fails if the backing arrays of a and b overlap.
func requireDisjointSlices[S ~[]E, E any](t *testing.T, a, b S, what string) {
	t.Helper()
	if cap(a) == 0 || cap(b) == 0 {
		return
	}
	size := unsafe.Sizeof(a[:1][0])
	a0, b0 := uintptr(unsafe.Pointer(unsafe.SliceData(a))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	aEnd, bEnd := a0+uintptr(cap(a))*size, b0+uintptr(cap(b))*size
	require.False(t, a0 < bEnd && b0 < aEnd, "two objects share their %s", what)
}
