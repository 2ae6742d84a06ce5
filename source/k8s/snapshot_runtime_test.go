package k8s_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
)

// listerWatcherCodec returns the snapshot codec of a source made by
// NewFromListerWatcher.
func listerWatcherCodec(t *testing.T) informer.Codec[k8s.Object] {
	t.Helper()
	src, err := k8s.NewFromListerWatcher(&cache.ListWatch{}, k8s.Options{})
	require.NoError(t, err)
	c := src.SnapshotCodec()
	require.NotNil(t, c, "a ListerWatcher source has a snapshot codec")
	return c
}

// lwRoundTrip encodes obj after a prefix, decodes it from a copy that is then
// overwritten (the codec must not keep the caller's bytes), and returns the
// decoded object.
func lwRoundTrip(t *testing.T, c informer.Codec[k8s.Object], obj k8s.Object) k8s.Object {
	t.Helper()
	prefix := []byte("prefix")
	b, err := c.AppendEncode(prefix, obj)
	require.NoError(t, err)
	require.Equal(t, "prefix", string(b[:len(prefix)]), "appends to dst")
	data := append([]byte(nil), b[len(prefix):]...)
	got, err := c.Decode(data)
	require.NoError(t, err)
	for i := range data {
		data[i] = 0xff
	}
	return got
}

// widgetObject is an unstructured custom resource.
func widgetObject() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1",
		"kind":       "Widget",
		"metadata": map[string]any{
			"name": "w1", "namespace": "ns", "resourceVersion": "42", "uid": "u-1",
			"labels": map[string]any{"app": "shop"},
		},
		"spec": map[string]any{
			"replicas": int64(3),
			"ratio":    0.5,
			"tags":     []any{"a", "b"},
			"nested":   map[string]any{"on": true, "none": nil},
		},
	}}
}

// TestListerWatcherSnapshotCodecRoundTrip: each kind of object a
// ListerWatcher yields comes back from the codec as it went in, of the same
// Go type, independent of the bytes it was decoded from.
func TestListerWatcherSnapshotCodecRoundTrip(t *testing.T) {
	c := listerWatcherCodec(t)
	created := metav1.NewTime(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))

	pod := realisticPod(7)
	pod.Namespace, pod.ResourceVersion, pod.UID, pod.CreationTimestamp = "shop", "1234", "uid-7", created
	pod.Status = runningStatus(pod, 7, 2)
	typedPod := pod.DeepCopy()
	typedPod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	replicas := int32(3)
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "shop", ResourceVersion: "9", CreationTimestamp: created},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "shop"}},
			Template: corev1.PodTemplateSpec{Spec: pod.Spec}},
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "shop", ResourceVersion: "5"},
		Data: map[string]string{"k": "v"}, BinaryData: map[string][]byte{"b": {0, 1, 2, 0xff}}}
	meta := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "shop", ResourceVersion: "9", Labels: map[string]string{"app": "shop"}},
	}

	for _, tc := range []struct {
		name string
		obj  k8s.Object
	}{
		{"pod without TypeMeta", pod},
		{"pod with TypeMeta", typedPod},
		{"deployment (a named group)", deploy},
		{"configmap with binary data", cm},
		{"unstructured custom resource", widgetObject()},
		{"partial object metadata", meta},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := lwRoundTrip(t, c, tc.obj)
			require.IsType(t, tc.obj, got)
			if u, ok := tc.obj.(*unstructured.Unstructured); ok {
				require.Equal(t, u.Object, got.(*unstructured.Unstructured).Object)
				return
			}
			require.True(t, apiequality.Semantic.DeepEqual(tc.obj, got), "decoded:\n%#v\nwant:\n%#v", got, tc.obj)
			require.Equal(t, tc.obj.GetObjectKind().GroupVersionKind(), got.GetObjectKind().GroupVersionKind(), "TypeMeta kept as it was")
		})
	}

	t.Run("concurrent", func(t *testing.T) {
		// A fresh codec fills its kind caches from several goroutines at
		// once, as a snapshot's workers do.
		c := listerWatcherCodec(t)
		objs := []k8s.Object{pod, deploy, cm, widgetObject(), meta}
		var wg sync.WaitGroup
		errs := make(chan error, 8*len(objs))
		for range 8 {
			wg.Go(func() {
				for _, obj := range objs {
					b, err := c.AppendEncode(nil, obj)
					if err == nil {
						_, err = c.Decode(b)
					}
					if err != nil {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})

	t.Run("format", func(t *testing.T) {
		f := c.Format()
		require.True(t, strings.HasPrefix(f, "k8s/runtime.Object/"), f)
		require.True(t, strings.HasSuffix(f, "/1"), "the format names its version: %s", f)
		require.Equal(t, f, listerWatcherCodec(t).Format(), "stable across sources")
	})
}

// gadget is a Go type with object metadata that client-go's scheme does
// not know: a custom resource's type registered only in a program's own
// scheme.
type gadget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Size              int `json:"size"`
}

func (g *gadget) DeepCopyObject() runtime.Object {
	c := *g
	g.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

// TestListerWatcherSnapshotCodecRefuses: an object the codec cannot keep
// fails to encode with an error that says why and what to do, and appends
// nothing; a record that is not one fails to decode.
func TestListerWatcherSnapshotCodecRefuses(t *testing.T) {
	c := listerWatcherCodec(t)
	t.Run("unknown kind", func(t *testing.T) {
		g := &gadget{TypeMeta: metav1.TypeMeta{APIVersion: "example.com/v1", Kind: "Gadget"}, ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "ns"}}
		dst := []byte("x")
		out, err := c.AppendEncode(dst, g)
		require.Error(t, err)
		require.Equal(t, "x", string(out), "nothing appended")
		for _, want := range []string{"ns/g", "k8s_test.gadget", "client-go's scheme", "AddToScheme"} {
			require.Contains(t, err.Error(), want)
		}
		require.True(t, runtime.IsNotRegisteredError(errorsUnwrapAll(err)), "wraps the scheme's error: %v", err)
	})
	t.Run("unstructured without kind", func(t *testing.T) {
		u := widgetObject()
		u.SetKind("")
		_, err := c.AppendEncode(nil, u)
		require.ErrorContains(t, err, "ns/w1")
		require.ErrorContains(t, err, "without kind")
	})
	t.Run("nil", func(t *testing.T) {
		_, err := c.AppendEncode(nil, (*corev1.Pod)(nil))
		require.ErrorContains(t, err, "nil object")
	})

	pod, err := c.AppendEncode(nil, realisticPod(1))
	require.NoError(t, err)
	for _, tc := range []struct {
		name, data, want string
	}{
		{"empty", "", "empty record"},
		{"unknown shape", "z{}", "unknown record shape"},
		{"cut short in its kind", "p\x20/v1", "cut short"},
		{"kind unknown to the scheme", "j\x13example.com/v1/Nope{}", "not in client-go's scheme"},
		{"malformed kind", "j\x06v1/Pod{}", "malformed kind"},
		{"kind without metadata", "j\x0b/v1/PodList{}", "no object metadata"},
		{"protobuf cut short", string(pod[:len(pod)/2]), "k8s: snapshot object (/v1/Pod)"},
		{"bad json", "j\x07/v1/Pod{", "k8s: snapshot object (/v1/Pod)"},
		{"bad unstructured", "u{}", "unstructured"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Decode([]byte(tc.data))
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// errorsUnwrapAll returns the innermost error of err's first-wrapped chain.
func errorsUnwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok || u.Unwrap() == nil {
			return err
		}
		err = u.Unwrap()
	}
}

// FuzzListerWatcherSnapshotCodecDecode: no record makes Decode panic.
func FuzzListerWatcherSnapshotCodecDecode(f *testing.F) {
	src, err := k8s.NewFromListerWatcher(&cache.ListWatch{}, k8s.Options{})
	if err != nil {
		f.Fatal(err)
	}
	c := src.SnapshotCodec()
	for _, obj := range []k8s.Object{realisticPod(1), widgetObject(), &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "m"}}} {
		b, err := c.AppendEncode(nil, obj)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("j\x07/v1/Pod{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		obj, err := c.Decode(data)
		if err == nil && obj == nil {
			t.Fatal("nil object without an error")
		}
	})
}

// TestListerWatcherSnapshotIdentity: a ListerWatcher cannot say what it
// lists, so the identity of a source over one names only its Go type (and
// asks no server): two ListerWatchers of different resources share it, and
// SnapshotOptions.Identity must tell them apart.
func TestListerWatcherSnapshotIdentity(t *testing.T) {
	identity := func(lw cache.ListerWatcher) string {
		src, err := k8s.NewFromListerWatcher(lw, k8s.Options{})
		require.NoError(t, err)
		id, err := src.SnapshotIdentity(t.Context())
		require.NoError(t, err)
		return id
	}
	pods := identity(&cache.ListWatch{})
	require.Contains(t, pods, "client: *cache.ListWatch")
	require.NotContains(t, pods, "resource:")
	require.NotContains(t, pods, "cluster:")
	require.Equal(t, pods, identity(&cache.ListWatch{}), "another resource, the same identity")
}
