package k8s_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"mime"
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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/intstr"
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

// wireLog records the media types of the responses to lists and watches
// of pods.
type wireLog struct {
	mu    sync.Mutex
	types map[string]int
}

func (l *wireLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil && req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/pods") {
			mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
			l.mu.Lock()
			l.types[mt]++
			l.mu.Unlock()
		}
		return resp, err
	})
}

func (l *wireLog) seen() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Sorted(maps.Keys(l.types))
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// loggedClient is a clientset of cfg (copied) whose pod lists and watches
// are logged; json forces JSON.
func loggedClient(t testing.TB, cfg *rest.Config, json bool) (kubernetes.Interface, *rest.Config, *wireLog) {
	c := rest.CopyConfig(cfg)
	if json {
		c.ContentType = runtime.ContentTypeJSON
		c.AcceptContentTypes = runtime.ContentTypeJSON
	}
	log := &wireLog{types: map[string]int{}}
	c.Wrap(log.wrap)
	cs, err := kubernetes.NewForConfig(c)
	require.NoError(t, err)
	return cs, c, log
}

func ptrTo[T any](v T) *T { return &v }

// realisticPod is pod i of a Deployment, as a ReplicaSet controller
// creates it: several containers, probes, volumes, tolerations.
func realisticPod(i int) *corev1.Pod {
	rs := fmt.Sprintf("shop-api-%d-7f9c6d5b4", i/10)
	ctrl := true
	probe := func(path string, port int32) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(port), Scheme: corev1.URISchemeHTTP}},
			InitialDelaySeconds: 5, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
	}
	container := func(name, image string, port int32, cpu, mem string, env []corev1.EnvVar) corev1.Container {
		return corev1.Container{
			Name: name, Image: image,
			Ports: []corev1.ContainerPort{{Name: "http-" + name, ContainerPort: port, Protocol: corev1.ProtocolTCP}},
			Env:   env,
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(mem)},
			},
			VolumeMounts:             []corev1.VolumeMount{{Name: "config", MountPath: "/etc/" + name, ReadOnly: true}},
			ReadinessProbe:           probe("/readyz", port),
			LivenessProbe:            probe("/healthz", port),
			TerminationMessagePath:   "/dev/termination-log",
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			ImagePullPolicy:          corev1.PullIfNotPresent,
		}
	}
	fieldRef := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
	}
	initC := container("init", "registry.example.com/shop/migrate:v3", 8081, "10m", "32Mi", nil)
	initC.ReadinessProbe, initC.LivenessProbe = nil, nil
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%05d", rs, i),
			Labels: map[string]string{
				"app": "shop-api", "component": []string{"api", "worker", "frontend"}[i%3], "version": fmt.Sprintf("v1.%d", i%4),
				"pod-template-hash": "7f9c6d5b4", "team": "payments", "instance": fmt.Sprint(i),
			},
			Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9090",
				"kubectl.kubernetes.io/default-container": "app"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs,
				UID: types.UID(fmt.Sprintf("0000-%d", i/10)), Controller: &ctrl, BlockOwnerDeletion: &ctrl}},
		},
		Spec: corev1.PodSpec{
			NodeName:                      fmt.Sprintf("node-%d", i%17),
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptrTo(int64(30)),
			DNSPolicy:                     corev1.DNSClusterFirst,
			ServiceAccountName:            "default",
			AutomountServiceAccountToken:  ptrTo(false),
			SchedulerName:                 "default-scheduler",
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo(int64(300))},
			},
			Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "shop-api-config"}, DefaultMode: ptrTo(int32(420))}}}},
			InitContainers: []corev1.Container{initC},
			Containers: []corev1.Container{
				container("app", fmt.Sprintf("registry.example.com/shop/api:v1.%d", i%4), 8080, "500m", "512Mi", []corev1.EnvVar{
					{Name: "LOG_LEVEL", Value: "info"}, {Name: "POD_NAME", ValueFrom: fieldRef("metadata.name")},
				}),
				container("proxy", "docker.io/istio/proxyv2:1.27.3", 15090, "100m", "128Mi", []corev1.EnvVar{
					{Name: "NODE_NAME", ValueFrom: fieldRef("spec.nodeName")},
				}),
				container("logs", "docker.io/fluent/fluent-bit:4.0.3", 2020, "50m", "64Mi", nil),
			},
		},
	}
}

// runningStatus is the status a kubelet reports for p, running.
func runningStatus(p *corev1.Pod, i int, seq int) corev1.PodStatus {
	t := metav1.NewTime(time.Unix(1_780_000_000+int64(seq), 0))
	ip := fmt.Sprintf("10.1.%d.%d", i/250, i%250)
	st := corev1.PodStatus{
		Phase:      corev1.PodRunning,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: t, Message: fmt.Sprint("probe ", seq)}, {Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: t}},
		HostIP:     "192.168.0.17", HostIPs: []corev1.HostIP{{IP: "192.168.0.17"}},
		PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
		StartTime: &t, QOSClass: corev1.PodQOSBurstable,
	}
	for k, c := range p.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Ready: true, Image: c.Image, ImageID: c.Image + "@sha256:0123456789abcdef",
			State:        corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}},
			ContainerID:  fmt.Sprintf("containerd://%d-%d", i, k),
			RestartCount: int32(seq),
			Started:      ptrTo(true),
		})
	}
	return st
}

// serverPods is client-go's own typed List of the pods of ns.
func serverPods(t testing.TB, cs kubernetes.Interface, ns string, keepManagedFields bool) map[string]*corev1.Pod {
	l, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	out := map[string]*corev1.Pod{}
	for i := range l.Items {
		p := &l.Items[i]
		p.TypeMeta = metav1.TypeMeta{}
		if !keepManagedFields {
			p.ManagedFields = nil
		}
		out[p.Name] = p
	}
	return out
}

// TestDecodingMatchesClientGo: pods decoded by the source (protobuf and
// JSON, streaming and paged lists, managedFields dropped or kept) equal
// what client-go's typed List decodes, after the initial sync and after
// updates and deletes.
func TestDecodingMatchesClientGo(t *testing.T) {
	e := needEnv(t)
	ns := e.Namespace(t)
	ctx := t.Context()
	_, err := e.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	pods := e.Client.CoreV1().Pods(ns)
	t.Cleanup(func() {
		_ = pods.DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: ptrTo(int64(0))}, metav1.ListOptions{})
	})

	const n = 300
	parallelDo(t, n, 16, func(i int) error {
		p, err := pods.Create(ctx, realisticPod(i), metav1.CreateOptions{FieldManager: "kube-controller-manager"})
		if err != nil {
			return err
		}
		p.Status = runningStatus(p, i, 0)
		_, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{FieldManager: "kubelet"})
		return err
	})

	protoCS, protoCfg, protoLog := loggedClient(t, e.Config, false)
	jsonCS, _, jsonLog := loggedClient(t, e.Config, true)
	podItems := func(l *corev1.PodList) []corev1.Pod { return l.Items }
	type podCase struct {
		name   string
		src    *k8s.Source[*corev1.Pod]
		hook   *hooked[*corev1.Pod]
		lw     informer.ListWatchOptions
		truth  kubernetes.Interface
		keepMF bool
		inf    *informer.SharedInformer[informer.NamespacedKey, *corev1.Pod]
	}
	newCase := func(name string, cs kubernetes.Interface, lw informer.ListWatchOptions, opts k8s.Options) *podCase {
		src, err := k8s.New(cs.CoreV1().Pods(ns), podItems, opts)
		require.NoError(t, err)
		require.True(t, src.Decoding(), name)
		return &podCase{name: name, src: src, lw: lw, truth: cs, keepMF: opts.KeepManagedFields}
	}
	cases := []*podCase{
		newCase("protobuf, streaming list", protoCS, informer.ListWatchOptions{}, k8s.Options{}),
		newCase("protobuf, paged lists", protoCS, informer.ListWatchOptions{DisableStreamingList: true, PageSize: 64}, k8s.Options{}),
		newCase("JSON, streaming list", jsonCS, informer.ListWatchOptions{}, k8s.Options{}),
		newCase("JSON, paged lists (k8s.Options), KeepManagedFields", jsonCS, informer.ListWatchOptions{PageSize: 64}, k8s.Options{DisableStreamingList: true, KeepManagedFields: true}),
	}
	// NewForConfig of a built-in type: protobuf, as the clientset.
	viaCfg, err := k8s.NewForConfig[corev1.Pod](protoCfg, schema.GroupVersionResource{Version: "v1", Resource: "pods"}, ns, k8s.Options{KeepManagedFields: true})
	require.NoError(t, err)
	require.True(t, viaCfg.Decoding())
	cases = append(cases, &podCase{name: "protobuf, NewForConfig, KeepManagedFields", src: viaCfg, truth: protoCS, keepMF: true})
	for _, c := range cases {
		c.hook = &hooked[*corev1.Pod]{Source: c.src}
		c.inf, _ = startInformer[*corev1.Pod](t, comparing[*corev1.Pod]{c.hook, c.src}, c.lw)
	}
	check := func(when string) {
		t.Helper()
		truth := map[kubernetes.Interface]map[bool]map[string]*corev1.Pod{}
		for _, c := range cases {
			if truth[c.truth] == nil {
				truth[c.truth] = map[bool]map[string]*corev1.Pod{}
			}
			if truth[c.truth][c.keepMF] == nil {
				truth[c.truth][c.keepMF] = serverPods(t, c.truth, ns, c.keepMF)
			}
			want := truth[c.truth][c.keepMF]
			requireCacheEqual(t, c.inf.Lister(), want, c.name+", "+when)
			if c.keepMF {
				for _, p := range want {
					require.Len(t, p.ManagedFields, 2, "kube-controller-manager and kubelet")
				}
			}
			require.Zero(t, c.src.DecodeErrors(), c.name)
		}
		// The same objects whatever the wire format.
		for name, p := range truth[protoCS][true] {
			if j := truth[jsonCS][true][name]; !sameObject(p, j) {
				t.Fatalf("%s: protobuf and JSON differ:\n%s", name, diff.Diff(p, j))
			}
		}
	}
	check("after sync")
	for _, c := range cases {
		streamed := !c.lw.DisableStreamingList && !strings.Contains(c.name, "k8s.Options")
		if streamed {
			require.Zero(t, c.hook.lists.Load(), "%s: synced from a streaming list", c.name)
		} else {
			require.NotZero(t, c.hook.lists.Load(), "%s: synced from lists", c.name)
		}
	}
	require.Equal(t, []string{"application/vnd.kubernetes.protobuf"}, protoLog.seen(), "the typed clients' protobuf")
	require.Equal(t, []string{"application/json"}, jsonLog.seen(), "JSON forced in the rest.Config")

	// Updates (spec labels by one manager, status by another) and deletes.
	parallelDo(t, 60, 8, func(j int) error {
		i := j * 5 // pods 0, 5, …, 295
		name := realisticPod(i).Name
		if j%3 == 0 {
			return pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptrTo(int64(0))})
		}
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Labels["rollout"] = fmt.Sprint("r", j)
		delete(p.Labels, "version")
		if p, err = pods.Update(ctx, p, metav1.UpdateOptions{FieldManager: "kube-controller-manager"}); err != nil {
			return err
		}
		p.Status = runningStatus(p, i, 1+j%4)
		_, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{FieldManager: "kubelet"})
		return err
	})
	last, err := pods.Get(ctx, realisticPod(1).Name, metav1.GetOptions{})
	require.NoError(t, err)
	last.Annotations["last"] = "write"
	last, err = pods.Update(ctx, last, metav1.UpdateOptions{FieldManager: "kube-controller-manager"})
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, waitFor)
	defer cancel()
	for _, c := range cases {
		require.NoError(t, c.inf.WaitForVersion(wctx, last.ResourceVersion), c.name)
	}
	check("after updates and deletes")
	require.Len(t, serverPods(t, protoCS, ns, false), n-20)
	require.Equal(t, []string{"application/vnd.kubernetes.protobuf"}, protoLog.seen())
	require.Equal(t, []string{"application/json"}, jsonLog.seen())
}
