package k8s_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
)

// ---- A custom resource without a generated clientset ----

// Widget is the Go type of the custom resource widgets.ginformer.test/v1,
// written by hand as a user of NewForConfig would.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetSpec   `json:"spec"`
	Status            WidgetStatus `json:"status,omitempty"`
}

type WidgetSpec struct {
	Size   int64             `json:"size"`
	Color  string            `json:"color,omitempty"`
	Tags   []string          `json:"tags,omitempty"`
	Limits map[string]string `json:"limits,omitempty"`
	Memory resource.Quantity `json:"memory"`
	Ratio  float64           `json:"ratio,omitempty"`
	Nested *WidgetNested     `json:"nested,omitempty"`
}

type WidgetNested struct {
	Enabled bool   `json:"enabled"`
	Owner   string `json:"owner,omitempty"`
}

type WidgetStatus struct {
	Phase    string `json:"phase,omitempty"`
	Replicas int32  `json:"replicas,omitempty"`
}

func (w *Widget) DeepCopyObject() runtime.Object { return w.DeepCopy() }

func (w *Widget) DeepCopy() *Widget {
	if w == nil {
		return nil
	}
	c := *w
	w.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	c.Spec.Tags = slices.Clone(w.Spec.Tags)
	c.Spec.Limits = maps.Clone(w.Spec.Limits)
	c.Spec.Memory = w.Spec.Memory.DeepCopy()
	if w.Spec.Nested != nil {
		n := *w.Spec.Nested
		c.Spec.Nested = &n
	}
	return &c
}

var widgetGVR = schema.GroupVersionResource{Group: "ginformer.test", Version: "v1", Resource: "widgets"}

type widgetInformer = informer.SharedInformer[informer.NamespacedKey, *Widget]

var (
	widgetCRDOnce sync.Once
	widgetCRDErr  error
)

// installWidgetCRD installs the Widget CRD once per process and waits until
// it is served.
func installWidgetCRD(t *testing.T) {
	t.Helper()
	widgetCRDOnce.Do(func() { widgetCRDErr = createWidgetCRD(env.Config) })
	require.NoError(t, widgetCRDErr)
}

func createWidgetCRD(cfg *rest.Config) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := apiextclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	str := apiextv1.JSONSchemaProps{Type: "string"}
	crd := &apiextv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: widgetGVR.Resource + "." + widgetGVR.Group},
		Spec: apiextv1.CustomResourceDefinitionSpec{
			Group: widgetGVR.Group,
			Scope: apiextv1.NamespaceScoped,
			Names: apiextv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextv1.CustomResourceSubresources{Status: &apiextv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextv1.JSONSchemaProps{
							"size":   {Type: "integer"},
							"color":  str,
							"tags":   {Type: "array", Items: &apiextv1.JSONSchemaPropsOrArray{Schema: &str}},
							"limits": {Type: "object", AdditionalProperties: &apiextv1.JSONSchemaPropsOrBool{Allows: true, Schema: &str}},
							"memory": {XIntOrString: true, AnyOf: []apiextv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}}},
							"ratio":  {Type: "number"},
							"nested": {Type: "object", Properties: map[string]apiextv1.JSONSchemaProps{
								"enabled": {Type: "boolean"},
								"owner":   str,
							}},
						}},
						"status": {Type: "object", Properties: map[string]apiextv1.JSONSchemaProps{
							"phase":    str,
							"replicas": {Type: "integer"},
						}},
					},
				}},
			}},
		},
	}
	_, err = cs.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	// Established, then served: a list answers.
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for {
		got, err := cs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		established := false
		for _, c := range got.Status.Conditions {
			if c.Type == apiextv1.Established && c.Status == apiextv1.ConditionTrue {
				established = true
			}
		}
		if established {
			if _, err := dyn.Resource(widgetGVR).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1}); err == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CRD %s not served: %w", crd.Name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func newWidget(i int) *Widget {
	return &Widget{
		TypeMeta:   metav1.TypeMeta{APIVersion: widgetGVR.GroupVersion().String(), Kind: "Widget"},
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w-%03d", i), Labels: map[string]string{"app": "widgets", "shard": fmt.Sprint(i % 4)}, Annotations: map[string]string{"note": "n" + fmt.Sprint(i)}},
		Spec: WidgetSpec{
			Size:   int64(i),
			Color:  []string{"red", "green", "blue"}[i%3],
			Tags:   []string{"a", "b" + fmt.Sprint(i%5)},
			Limits: map[string]string{"cpu": "1", "team": []string{"x", "y"}[i%2]},
			Memory: resource.MustParse(fmt.Sprintf("%dMi", 64*(1+i%8))),
			Ratio:  float64(i%7) + 0.5,
			Nested: &WidgetNested{Enabled: i%2 == 0, Owner: "o" + fmt.Sprint(i%3)},
		},
	}
}

func toUnstructured(t testing.TB, w *Widget) *unstructured.Unstructured {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(w)
	require.NoError(t, err)
	return &unstructured.Unstructured{Object: m}
}

func fromUnstructured(t testing.TB, u *unstructured.Unstructured) *Widget {
	var w Widget
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &w))
	w.TypeMeta = metav1.TypeMeta{}
	return &w
}

// parallelDo runs fn(0..n-1) on workers goroutines and fails t on the
// first error.
func parallelDo(t testing.TB, n, workers int, fn func(i int) error) {
	t.Helper()
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%d: %w", i, err))
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
}

// serverWidgets lists the widgets of ns through the dynamic client (JSON,
// client-go's unstructured decoding), apiVersion and kind cleared.
func serverWidgets(t testing.TB, wc dynamic.ResourceInterface, keepManagedFields bool) map[string]*Widget {
	l, err := wc.List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	out := map[string]*Widget{}
	for i := range l.Items {
		w := fromUnstructured(t, &l.Items[i])
		if !keepManagedFields {
			w.ManagedFields = nil
		}
		out[w.Name] = w
	}
	return out
}

// requireCacheEqual checks that the cache holds exactly want, by name.
func requireCacheEqual[T k8s.Object](t testing.TB, l informer.Lister[informer.NamespacedKey, T], want map[string]T, what string) {
	t.Helper()
	require.Equal(t, len(want), l.Len(), "%s: cache size", what)
	for _, got := range l.List() {
		w, ok := want[got.GetName()]
		require.True(t, ok, "%s: %s in the cache, not on the server", what, got.GetName())
		if !sameObject(w, got) {
			t.Fatalf("%s: %s differs from the server's (-server +cache):\n%s", what, got.GetName(), diff.Diff(w, got))
		}
	}
}

// sameObject is apiequality.Semantic.DeepEqual, with a fast path for the
// generated types of k8s.io/api (reflection is slow under the race
// detector): equal protobuf encodings (deterministic, maps sorted).
func sameObject(a, b any) bool {
	type marshaler interface{ Marshal() ([]byte, error) }
	if ma, ok := a.(marshaler); ok {
		x, err1 := ma.Marshal()
		y, err2 := b.(marshaler).Marshal()
		if err1 == nil && err2 == nil && bytes.Equal(x, y) {
			return true
		}
	}
	return apiequality.Semantic.DeepEqual(a, b)
}

// TestNewForConfigCustomResource: a custom resource decoded from JSON
// straight into its Go type, through a REST client built from a
// rest.Config: the cache equals the server's objects (managedFields
// dropped by default, kept with KeepManagedFields), and updates and
// deletes arrive in order.
func TestNewForConfigCustomResource(t *testing.T) {
	e := needEnv(t)
	installWidgetCRD(t)
	ns := e.Namespace(t)
	dyn, err := dynamic.NewForConfig(e.Config)
	require.NoError(t, err)
	wc := dyn.Resource(widgetGVR).Namespace(ns)
	t.Cleanup(func() {
		_ = wc.DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{})
	})

	const n = 200
	objs := make([]*unstructured.Unstructured, n)
	for i := range objs {
		objs[i] = toUnstructured(t, newWidget(i))
	}
	parallelDo(t, n, 8, func(i int) error {
		created, err := wc.Create(t.Context(), objs[i], metav1.CreateOptions{FieldManager: "widget-maker"})
		if err != nil || i%2 != 0 {
			return err
		}
		// A second manager, through the status subresource.
		created.Object["status"] = map[string]any{"phase": "Ready", "replicas": int64(i % 5)}
		_, err = wc.UpdateStatus(t.Context(), created, metav1.UpdateOptions{FieldManager: "widget-controller"})
		return err
	})

	src, err := k8s.NewForConfig[Widget](e.Config, widgetGVR, ns, k8s.Options{})
	require.NoError(t, err)
	require.True(t, src.Decoding())
	keepSrc, err := k8s.NewForConfig[Widget](e.Config, widgetGVR, ns, k8s.Options{KeepManagedFields: true})
	require.NoError(t, err)
	pagedSrc, err := k8s.NewForConfig[Widget](e.Config, widgetGVR, ns, k8s.Options{DisableStringSharing: true})
	require.NoError(t, err)

	inf, _ := startInformer[*Widget](t, src, informer.ListWatchOptions{})
	keepInf, _ := startInformer[*Widget](t, keepSrc, informer.ListWatchOptions{})
	pagedInf, _ := startInformer[*Widget](t, pagedSrc, informer.ListWatchOptions{DisableStreamingList: true, PageSize: 37})

	server := serverWidgets(t, wc, false)
	require.Len(t, server, n)
	require.NotEmpty(t, serverWidgets(t, wc, true)["w-000"].ManagedFields)
	requireCacheEqual(t, inf.Lister(), server, "default")
	requireCacheEqual(t, pagedInf.Lister(), server, "paged")
	requireCacheEqual(t, keepInf.Lister(), serverWidgets(t, wc, true), "KeepManagedFields")
	got, ok := keepInf.Lister().Get(informer.NamespacedKey{Namespace: ns, Name: "w-000"})
	require.True(t, ok)
	require.Len(t, got.ManagedFields, 2, "both managers")

	// Updates and deletes, seen by a handler in order per key.
	type seen struct {
		typ  string
		size int64
		rv   string
	}
	const marker = "w-199"
	var (
		mu           sync.Mutex
		events       = map[string][]seen{}
		unknownState bool
		sawFinal     = make(chan struct{})
	)
	_, err = inf.AddHandler(informer.HandlerFuncs[informer.NamespacedKey, *Widget]{
		UpdateFunc: func(_, w *Widget) {
			mu.Lock()
			defer mu.Unlock()
			events[w.Name] = append(events[w.Name], seen{"update", w.Spec.Size, w.ResourceVersion})
			if w.Name == marker && w.Spec.Color == "marker" {
				close(sawFinal)
			}
		},
		DeleteFunc: func(d informer.Deletion[informer.NamespacedKey, *Widget]) {
			mu.Lock()
			defer mu.Unlock()
			unknownState = unknownState || d.FinalStateUnknown
			events[d.Key.Name] = append(events[d.Key.Name], seen{"delete", d.Object.Spec.Size, d.Object.ResourceVersion})
		},
	}, informer.HandlerOptions{})
	require.NoError(t, err)

	const updated, rounds = 5, 5
	latest := map[int]*unstructured.Unstructured{}
	for j := range updated {
		u, err := wc.Get(t.Context(), fmt.Sprintf("w-%03d", j), metav1.GetOptions{})
		require.NoError(t, err)
		latest[j] = u
	}
	for k := range rounds {
		for j := range updated {
			u := latest[j]
			require.NoError(t, unstructured.SetNestedField(u.Object, int64(1000+k), "spec", "size"))
			latest[j], err = wc.Update(t.Context(), u, metav1.UpdateOptions{FieldManager: "widget-maker"})
			require.NoError(t, err)
		}
	}
	deleted := []string{"w-000", "w-001"}
	for i := 10; i < 30; i++ {
		deleted = append(deleted, fmt.Sprintf("w-%03d", i))
	}
	for _, name := range deleted {
		require.NoError(t, wc.Delete(t.Context(), name, metav1.DeleteOptions{}))
	}
	m, err := wc.Get(t.Context(), marker, metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(m.Object, "marker", "spec", "color"))
	m, err = wc.Update(t.Context(), m, metav1.UpdateOptions{FieldManager: "widget-maker"})
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(t.Context(), waitFor)
	defer cancel()
	for _, i := range []*widgetInformer{inf, keepInf, pagedInf} {
		require.NoError(t, i.WaitForVersion(ctx, m.GetResourceVersion()))
	}
	select {
	case <-sawFinal:
	case <-ctx.Done():
		t.Fatal("the handler did not see the last update")
	}
	server = serverWidgets(t, wc, false)
	require.Len(t, server, n-len(deleted))
	requireCacheEqual(t, inf.Lister(), server, "default, after writes")
	requireCacheEqual(t, pagedInf.Lister(), server, "paged, after writes")
	requireCacheEqual(t, keepInf.Lister(), serverWidgets(t, wc, true), "KeepManagedFields, after writes")

	mu.Lock()
	defer mu.Unlock()
	require.False(t, unknownState, "a deletion with FinalStateUnknown: a relist merged the changes")
	for j := range updated {
		name := fmt.Sprintf("w-%03d", j)
		var want []seen
		for k := range rounds {
			want = append(want, seen{"update", int64(1000 + k), ""})
		}
		if slices.Contains(deleted, name) {
			want = append(want, seen{"delete", int64(1000 + rounds - 1), ""})
		}
		got := events[name]
		require.Len(t, got, len(want), "%s: %v", name, got)
		for k := range got {
			require.Equal(t, want[k].typ, got[k].typ, "%s event %d", name, k)
			require.Equal(t, want[k].size, got[k].size, "%s event %d", name, k)
			if k > 0 {
				c, err := src.CompareVersions(got[k-1].rv, got[k].rv)
				require.NoError(t, err)
				require.LessOrEqual(t, c, 0, "%s: versions go backwards: %v", name, got)
			}
		}
	}
	for _, name := range deleted[2:] {
		i, err := strconv.Atoi(strings.TrimPrefix(name, "w-"))
		require.NoError(t, err)
		require.Len(t, events[name], 1, name)
		require.Equal(t, "delete", events[name][0].typ, name)
		require.Equal(t, int64(i), events[name][0].size, name)
	}
	require.Zero(t, src.DecodeErrors()+keepSrc.DecodeErrors()+pagedSrc.DecodeErrors())
}

// comparing is a hooked source that still orders versions, so that
// WaitForVersion waits for a version or any later one.
type comparing[T any] struct {
	*hooked[T]
	cmp informer.VersionComparer
}

func (c comparing[T]) CompareVersions(a, b string) (int, error) { return c.cmp.CompareVersions(a, b) }

// TestNewForConfigErrors: invalid arguments are refused; the server's
// errors (a Status, in JSON for a custom resource and in protobuf for a
// built-in one) arrive decoded.
func TestNewForConfigErrors(t *testing.T) {
	cfg := &rest.Config{Host: "http://127.0.0.1:1"}
	for name, f := range map[string]func() error{
		"nil config": func() error {
			_, err := k8s.NewForConfig[Widget](nil, widgetGVR, "", k8s.Options{})
			return err
		},
		"no resource": func() error {
			_, err := k8s.NewForConfig[Widget](cfg, schema.GroupVersionResource{Group: "g", Version: "v1"}, "", k8s.Options{})
			return err
		},
		"no version": func() error {
			_, err := k8s.NewForConfig[Widget](cfg, schema.GroupVersionResource{Group: "g", Resource: "widgets"}, "", k8s.Options{})
			return err
		},
		"unstructured": func() error {
			_, err := k8s.NewForConfig[unstructured.Unstructured](cfg, widgetGVR, "", k8s.Options{})
			return err
		},
		"bad selector": func() error {
			_, err := k8s.NewForConfig[Widget](cfg, widgetGVR, "", k8s.Options{LabelSelector: "a in (("})
			return err
		},
		"bad host": func() error {
			_, err := k8s.NewForConfig[Widget](&rest.Config{Host: "http://[::1"}, widgetGVR, "", k8s.Options{})
			return err
		},
	} {
		require.ErrorIs(t, f(), informer.ErrInvalidOptions, name)
	}

	e := needEnv(t)
	ctx := t.Context()
	missing, err := k8s.NewForConfig[Widget](e.Config, schema.GroupVersionResource{Group: "ginformer.test", Version: "v1", Resource: "nothings"}, "", k8s.Options{})
	require.NoError(t, err)
	_, err = missing.List(ctx, informer.ListOptions{})
	require.True(t, apierrors.IsNotFound(err), "%v", err)
	_, err = missing.Watch(ctx, informer.WatchOptions{Version: "1"})
	require.True(t, apierrors.IsNotFound(err), "%v", err)

	pods, err := k8s.NewForConfig[corev1.Pod](e.Config, schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "default", k8s.Options{})
	require.NoError(t, err)
	_, err = pods.List(ctx, informer.ListOptions{Continue: "not-a-token"})
	var status apierrors.APIStatus
	require.ErrorAs(t, err, &status)
	require.EqualValues(t, http.StatusBadRequest, status.Status().Code, "%v", err)
	require.Contains(t, status.Status().Message, "continue", "the server's message, decoded from protobuf")
}

// TestDecodingOff: a client that is not a generated typed client (a fake
// clientset), and DisableDecoding, go through the client's own List and
// Watch.
func TestDecodingOff(t *testing.T) {
	podItems := func(l *corev1.PodList) []corev1.Pod { return l.Items }
	src, err := k8s.New(fake.NewClientset().CoreV1().Pods("default"), podItems, k8s.Options{})
	require.NoError(t, err)
	require.False(t, src.Decoding(), "fake clientset")

	cs, err := kubernetes.NewForConfig(&rest.Config{Host: "http://127.0.0.1:1"})
	require.NoError(t, err)
	src, err = k8s.New(cs.CoreV1().Pods("default"), podItems, k8s.Options{})
	require.NoError(t, err)
	require.True(t, src.Decoding(), "a clientset")
	src, err = k8s.New(cs.CoreV1().Pods("default"), podItems, k8s.Options{DisableDecoding: true})
	require.NoError(t, err)
	require.False(t, src.Decoding(), "DisableDecoding")

	// Through the fake: lists and watches still work, managedFields dropped.
	fc := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}})
	src, err = k8s.New(fc.CoreV1().Pods("default"), podItems, k8s.Options{})
	require.NoError(t, err)
	require.False(t, src.Decoding())
	page, err := src.List(t.Context(), informer.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.Nil(t, page.Items[0].ManagedFields)
}

// ---- Built-in types: the decoding path against client-go's own ----
