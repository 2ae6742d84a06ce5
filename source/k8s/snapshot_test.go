package k8s_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
	"github.com/ginformer/ginformer/source/k8s/k8stest/slim"
)

// snapshotPods creates n realistic pods in a fresh namespace, written by
// two managers (so they have managedFields), and returns the namespace.
func snapshotPods(t *testing.T, e interface {
	Namespace(testing.TB) string
}, cs kubernetes.Interface, n int) string {
	t.Helper()
	ns := e.Namespace(t)
	ctx := t.Context()
	_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	pods := cs.CoreV1().Pods(ns)
	t.Cleanup(func() {
		_ = pods.DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: ptrTo(int64(0))}, metav1.ListOptions{})
	})
	parallelDo(t, n, 8, func(i int) error {
		p, err := pods.Create(ctx, realisticPod(i), metav1.CreateOptions{FieldManager: "kube-controller-manager"})
		if err != nil {
			return err
		}
		p.Status = runningStatus(p, i, 0)
		_, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{FieldManager: "kubelet"})
		return err
	})
	return ns
}

// roundTrip lists src and checks that every object comes back from its
// snapshot codec equal to itself, and to want's object of its name when
// want is given (the server's, as client-go decodes it). It returns the
// codec's Format.
func roundTrip[T k8s.Object](t *testing.T, src informer.Source[T], want map[string]T) string {
	t.Helper()
	ss, ok := src.(informer.SnapshotSource[T])
	require.True(t, ok, "%T is no SnapshotSource", src)
	codec := ss.SnapshotCodec()
	require.NotNil(t, codec)
	page, err := src.List(t.Context(), informer.ListOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, page.Items)
	if want != nil {
		require.Len(t, page.Items, len(want))
	}
	var buf []byte
	for _, obj := range page.Items {
		start := len(buf)
		buf, err = codec.AppendEncode(buf, obj)
		require.NoError(t, err)
		enc := buf[start:]
		got, err := codec.Decode(enc)
		require.NoError(t, err)
		clear(enc) // Decode keeps nothing of its input
		if !sameObject(obj, got) {
			t.Fatalf("%s: %s differs once decoded (-cached +decoded):\n%s", codec.Format(), obj.GetName(), diff.Diff(obj, got))
		}
		if w, ok := want[obj.GetName()]; want != nil {
			require.True(t, ok, obj.GetName())
			if !sameObject(w, got) {
				t.Fatalf("%s: %s differs from the server's (-server +decoded):\n%s", codec.Format(), obj.GetName(), diff.Diff(w, got))
			}
		}
	}
	t.Logf("%s: %d objects, %d bytes each", codec.Format(), len(page.Items), len(buf)/len(page.Items))
	return codec.Format()
}

// TestSnapshotCodec: every kind of source's objects come back from its
// snapshot codec equal to what it cached, and pods equal client-go's typed
// List (managedFields dropped, or kept with KeepManagedFields): protobuf
// for the generated types through typed clients, JSON for the others.
func TestSnapshotCodec(t *testing.T) {
	e := needEnv(t)
	const n = 12
	ns := snapshotPods(t, e, e.Client, n)
	jsonCS, _, _ := loggedClient(t, e.Config, true)
	podItems := func(l *corev1.PodList) []corev1.Pod { return l.Items }
	typed := func(cs kubernetes.Interface, opts k8s.Options) *k8s.Source[*corev1.Pod] {
		src, err := k8s.New(cs.CoreV1().Pods(ns), podItems, opts)
		require.NoError(t, err)
		return src
	}
	truth := map[bool]map[string]*corev1.Pod{false: serverPods(t, e.Client, ns, false), true: serverPods(t, e.Client, ns, true)}
	for name, c := range map[string]struct {
		src  *k8s.Source[*corev1.Pod]
		keep bool
	}{
		"decoding":                     {src: typed(e.Client, k8s.Options{})},
		"decoding, KeepManagedFields":  {src: typed(e.Client, k8s.Options{KeepManagedFields: true}), keep: true},
		"decoding, no string sharing":  {src: typed(e.Client, k8s.Options{DisableStringSharing: true})},
		"decoding JSON from the wire":  {src: typed(jsonCS, k8s.Options{})},
		"client-go's decoding":         {src: typed(e.Client, k8s.Options{DisableDecoding: true})},
		"client-go's decoding, kept":   {src: typed(e.Client, k8s.Options{DisableDecoding: true, KeepManagedFields: true}), keep: true},
		"NewForConfig of a built-in":   {src: must(k8s.NewForConfig[corev1.Pod](e.Config, schema.GroupVersionResource{Version: "v1", Resource: "pods"}, ns, k8s.Options{}))},
		"NewForConfig, KeepManaged...": {src: must(k8s.NewForConfig[corev1.Pod](e.Config, schema.GroupVersionResource{Version: "v1", Resource: "pods"}, ns, k8s.Options{KeepManagedFields: true})), keep: true},
	} {
		t.Run(name, func(t *testing.T) {
			format := roundTrip(t, c.src, truth[c.keep])
			require.Equal(t, "k8s/k8s.io/api/core/v1.Pod/protobuf/1", format)
		})
	}
	t.Run("projection", func(t *testing.T) {
		src, err := k8s.NewProjection[slim.Pod](e.Client.CoreV1().Pods(ns), k8s.Options{})
		require.NoError(t, err)
		require.Contains(t, roundTrip[*slim.Pod](t, src, nil), "/json/1")
	})
	dyn, err := dynamic.NewForConfig(e.Config)
	require.NoError(t, err)
	podsGVR := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	t.Run("dynamic", func(t *testing.T) {
		src, err := k8s.NewDynamic(dyn.Resource(podsGVR).Namespace(ns), k8s.Options{})
		require.NoError(t, err)
		require.Equal(t, "k8s/k8s.io/apimachinery/pkg/apis/meta/v1/unstructured.Unstructured/json/1",
			roundTrip[*unstructured.Unstructured](t, src, nil))
	})
	t.Run("metadata", func(t *testing.T) {
		meta, err := metadata.NewForConfig(e.Config)
		require.NoError(t, err)
		src, err := k8s.NewMetadata(meta.Resource(podsGVR).Namespace(ns), k8s.Options{})
		require.NoError(t, err)
		require.Contains(t, roundTrip[*metav1.PartialObjectMetadata](t, src, nil), "PartialObjectMetadata/json/1")
	})
	t.Run("custom resource", func(t *testing.T) {
		installWidgetCRD(t)
		wc := dyn.Resource(widgetGVR).Namespace(ns)
		for i := range 5 {
			_, err := wc.Create(t.Context(), toUnstructured(t, newWidget(i)), metav1.CreateOptions{})
			require.NoError(t, err)
		}
		src, err := k8s.NewForConfig[Widget](e.Config, widgetGVR, ns, k8s.Options{})
		require.NoError(t, err)
		require.Contains(t, roundTrip[*Widget](t, src, nil), "Widget/json/1")
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestSnapshotIdentity: the identity names the server, the cluster (its
// kube-system namespace's uid), the resource, the namespace, the selectors
// and whether managedFields are kept; it is stable, and the same for the
// same source built twice.
func TestSnapshotIdentity(t *testing.T) {
	e := needEnv(t)
	ctx := t.Context()
	ns1, ns2 := e.Namespace(t), e.Namespace(t)
	id := func(src interface {
		SnapshotIdentity(context.Context) (string, error)
	}) string {
		t.Helper()
		s, err := src.SnapshotIdentity(ctx)
		require.NoError(t, err)
		return s
	}
	secrets := func(cs kubernetes.Interface, ns string, opts k8s.Options) string {
		src, err := k8s.New(cs.CoreV1().Secrets(ns), secretItems, opts)
		require.NoError(t, err)
		return id(src)
	}
	base := secrets(e.Client, ns1, k8s.Options{LabelSelector: "a=1,b in (x,y)"})
	t.Log(base)
	kubeSystem, err := e.Client.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	require.NoError(t, err)
	require.Contains(t, base, "kube-system namespace uid "+string(kubeSystem.UID))
	require.Contains(t, base, strings.TrimSuffix(e.Config.Host, "/")+"/api/v1/namespaces/"+ns1+"/secrets")

	// The same source built again, and the selector written otherwise.
	require.Equal(t, base, secrets(e.Client, ns1, k8s.Options{LabelSelector: "b in (y,x), a=1"}))
	require.Equal(t, base, secrets(e.Client, ns1, k8s.Options{LabelSelector: "a=1,b in (x,y)", DisableDecoding: true,
		DisableStringSharing: true, WatchBuffer: 7}), "options that do not change what is cached")
	// What changes what is cached.
	differs := map[string]string{
		"namespace":         secrets(e.Client, ns2, k8s.Options{LabelSelector: "a=1,b in (x,y)"}),
		"all namespaces":    secrets(e.Client, "", k8s.Options{LabelSelector: "a=1,b in (x,y)"}),
		"label selector":    secrets(e.Client, ns1, k8s.Options{LabelSelector: "a=1"}),
		"field selector":    secrets(e.Client, ns1, k8s.Options{LabelSelector: "a=1,b in (x,y)", FieldSelector: "type=Opaque"}),
		"KeepManagedFields": secrets(e.Client, ns1, k8s.Options{LabelSelector: "a=1,b in (x,y)", KeepManagedFields: true}),
	}
	cm, err := k8s.New(e.Client.CoreV1().ConfigMaps(ns1), cmItems, k8s.Options{LabelSelector: "a=1,b in (x,y)"})
	require.NoError(t, err)
	differs["resource"] = id(cm)
	dyn, err := dynamic.NewForConfig(e.Config)
	require.NoError(t, err)
	dsrc, err := k8s.NewDynamic(dyn.Resource(secretsGVR).Namespace(ns1), k8s.Options{LabelSelector: "a=1,b in (x,y)"})
	require.NoError(t, err)
	differs["object type"] = id(dsrc)
	require.Contains(t, differs["object type"], "/api/v1/namespaces/"+ns1+"/secrets", "the dynamic client's resource")
	meta, err := metadata.NewForConfig(e.Config)
	require.NoError(t, err)
	msrc, err := k8s.NewMetadata(meta.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}), k8s.Options{})
	require.NoError(t, err)
	differs["metadata"] = id(msrc)
	require.Contains(t, differs["metadata"], "/apis/apps/v1/deployments", "the metadata client's resource")
	seen := map[string]string{base: "base"}
	for what, s := range differs {
		if other, dup := seen[s]; dup {
			t.Fatalf("%s: the same identity as %s:\n%s", what, other, s)
		}
		seen[s] = what
	}

	// A sharded source: the unsharded identity and the field, not the slice.
	src, err := k8s.New(e.Client.CoreV1().Secrets(ns1), secretItems, k8s.Options{LabelSelector: "a=1,b in (x,y)"})
	require.NoError(t, err)
	var sharded []string
	for i := range 2 {
		set, err := k8s.Split(i, 2)
		require.NoError(t, err)
		sh, err := k8s.NewSharded(k8s.ShardedOptions[*corev1.Secret]{Source: src, Slices: k8s.NewStaticSlices(set)})
		require.NoError(t, err)
		sharded = append(sharded, id(sh))
		require.NotNil(t, sh.SnapshotCodec())
	}
	require.Equal(t, sharded[0], sharded[1], "the slice is not part of it")
	require.Equal(t, base+"\nsharded by: object.metadata.uid", sharded[0])

	// Credentials that may not read kube-system: the cluster is unknown.
	nobody := rest.CopyConfig(e.Config)
	nobody.Impersonate = rest.ImpersonationConfig{UserName: "nobody"}
	cs, err := kubernetes.NewForConfig(nobody)
	require.NoError(t, err)
	restricted := secrets(cs, ns1, k8s.Options{LabelSelector: "a=1,b in (x,y)"})
	require.Contains(t, restricted, "cluster: unknown (namespace kube-system: Forbidden)")

	// A client the source cannot see through: its type.
	fakeSrc, err := k8s.New(fake.NewClientset().CoreV1().Secrets(ns1), secretItems, k8s.Options{})
	require.NoError(t, err)
	require.Contains(t, id(fakeSrc), "client: *fake.")
}

// TestSnapshotSeedsKnown: objects decoded from a snapshot count as
// delivered, so that a relist after the restart (a list, or a streaming
// list) decodes only what changed while the program was down: an
// unchanged object is handed on as the very object the snapshot restored.
func TestSnapshotSeedsKnown(t *testing.T) {
	e := needEnv(t)
	ns := e.Namespace(t)
	ctx := t.Context()
	secrets := e.Client.CoreV1().Secrets(ns)
	for i := range 20 {
		_, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("s", i)},
			StringData: map[string]string{"gen": "1"}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	newSource := func() *k8s.Source[*corev1.Secret] {
		src, err := k8s.New(secrets, secretItems, k8s.Options{})
		require.NoError(t, err)
		require.True(t, src.Decoding())
		return src
	}
	// The first run: its cache, encoded.
	before, err := newSource().List(ctx, informer.ListOptions{})
	require.NoError(t, err)
	codec := newSource().SnapshotCodec() // the encoding does not depend on the source
	var encoded [][]byte
	for _, s := range before.Items {
		b, err := codec.AppendEncode(nil, s)
		require.NoError(t, err)
		encoded = append(encoded, b)
	}
	// While down: two updates, a deletion, a creation.
	for _, name := range []string{"s3", "s7"} {
		s, err := secrets.Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		s.StringData = map[string]string{"gen": "2"}
		_, err = secrets.Update(ctx, s, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	require.NoError(t, secrets.Delete(ctx, "s5", metav1.DeleteOptions{}))
	_, err = secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	changed := map[string]bool{"s3": true, "s7": true, "new": true}

	for _, streaming := range []bool{false, true} {
		t.Run(fmt.Sprint("streaming=", streaming), func(t *testing.T) {
			// The restart: a new source, restored from the snapshot.
			src := newSource()
			restored := map[string]*corev1.Secret{}
			for _, b := range encoded {
				s, err := src.SnapshotCodec().Decode(b)
				require.NoError(t, err)
				restored[s.Name] = s
			}
			var relisted []*corev1.Secret
			if streaming {
				w, err := src.Watch(ctx, informer.WatchOptions{SendInitialEvents: true})
				require.NoError(t, err)
				for ev := range w.Events() {
					require.NotEqual(t, informer.EventError, ev.Type, "%v", ev.Err)
					if ev.InitialEventsEnd {
						break
					}
					if ev.Type == informer.EventAdded {
						relisted = append(relisted, ev.Object)
					}
				}
				w.Stop()
			} else {
				page, err := src.List(ctx, informer.ListOptions{})
				require.NoError(t, err)
				relisted = page.Items
			}
			require.Len(t, relisted, 20)
			for _, s := range relisted {
				r, wasRestored := restored[s.Name]
				switch {
				case changed[s.Name]:
					require.NotSame(t, r, s, "%s changed: decoded", s.Name)
					require.Equal(t, "2", gen2(s), s.Name)
				default:
					require.True(t, wasRestored, s.Name)
					require.Same(t, r, s, "%s unchanged: the restored object, not decoded again", s.Name)
				}
				require.NotEqual(t, "s5", s.Name, "deleted while down")
			}
		})
	}
}

// gen2 is the generation a secret of TestSnapshotSeedsKnown was written
// at: "2" once updated, "" when created without data.
func gen2(s *corev1.Secret) string {
	if g := string(s.Data["gen"]); g != "1" {
		return "2"
	}
	return "1"
}
