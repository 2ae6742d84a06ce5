package k8s_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
)

const waitFor = 20 * time.Second

type cmInformer = informer.SharedInformer[informer.NamespacedKey, *corev1.ConfigMap]

// startInformer runs an informer of ConfigMaps over src until the test
// ends; errs receives the errors it survives.
func startInformer[T k8s.Object](t *testing.T, src informer.Source[T], ro informer.ListWatchOptions) (*informer.SharedInformer[informer.NamespacedKey, T], chan error) {
	t.Helper()
	errs := make(chan error, 1000)
	if ro.Backoff == (informer.Backoff{}) {
		ro.Backoff = informer.Backoff{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond}
	}
	inf, err := informer.NewSharedInformer(informer.Options[informer.NamespacedKey, T]{
		Source:    src,
		KeyFunc:   k8s.Key[T],
		ListWatch: ro,
		ErrorHandler: func(_ context.Context, err error) {
			select {
			case errs <- err:
			default:
			}
		},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = inf.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	wctx, wcancel := context.WithTimeout(ctx, waitFor)
	defer wcancel()
	require.NoError(t, informer.WaitForSync(wctx, inf), "sync")
	return inf, errs
}

// eventually waits until the informer's cache satisfies ok.
func eventually[T any](t *testing.T, l informer.Lister[informer.NamespacedKey, T], ok func(l informer.Lister[informer.NamespacedKey, T]) bool, msg string) {
	t.Helper()
	require.Eventually(t, func() bool { return ok(l) }, waitFor, 5*time.Millisecond, msg)
}

func hasLen[T any](n int) func(informer.Lister[informer.NamespacedKey, T]) bool {
	return func(l informer.Lister[informer.NamespacedKey, T]) bool { return l.Len() == n }
}

func createCMs(t *testing.T, ns, prefix string, n int, labels map[string]string) {
	t.Helper()
	c := env.Client.CoreV1().ConfigMaps(ns)
	for i := range n {
		_, err := c.Create(t.Context(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s%03d", prefix, i), Labels: labels},
			Data:       map[string]string{"gen": "1"},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
}

// hooked wraps a source, counting calls and running before on each.
type hooked[T any] struct {
	informer.Source[T]
	lists, pages, watches, streams atomic.Int32
	beforeWatch                    func(n int32, opts informer.WatchOptions) error
	watchOpts                      func(opts informer.WatchOptions) informer.WatchOptions
}

func (h *hooked[T]) List(ctx context.Context, o informer.ListOptions) (informer.ListPage[T], error) {
	if o.Continue == "" {
		h.lists.Add(1)
	}
	h.pages.Add(1)
	return h.Source.List(ctx, o)
}

func (h *hooked[T]) Watch(ctx context.Context, o informer.WatchOptions) (informer.Watcher[T], error) {
	var n int32
	if o.SendInitialEvents {
		h.streams.Add(1)
	} else {
		n = h.watches.Add(1)
	}
	if h.beforeWatch != nil {
		if err := h.beforeWatch(n, o); err != nil {
			return nil, err
		}
	}
	if h.watchOpts != nil {
		o = h.watchOpts(o)
	}
	return h.Source.Watch(ctx, o)
}

// TestRelistAfterCompaction: the first watch starts from a version that
// etcd compaction has removed; the apiserver answers 410, the informer
// relists and catches up with the writes it missed.
func TestRelistAfterCompaction(t *testing.T) {
	e := needEnv(t)
	ns := e.Namespace(t)
	createCMs(t, ns, "a", 3, nil)
	src := &hooked[*corev1.ConfigMap]{Source: cmSource(t, ns, k8s.Options{})}
	src.beforeWatch = func(n int32, _ informer.WatchOptions) error {
		if n == 1 { // the list is done; its version is about to expire
			createCMs(t, ns, "b", 2, nil)
			return e.Compact(context.Background())
		}
		return nil
	}
	inf, errs := startInformer[*corev1.ConfigMap](t, src, informer.ListWatchOptions{DisableStreamingList: true})
	eventually(t, inf.Lister(), hasLen[*corev1.ConfigMap](5), "the writes made while the version expired")
	require.GreaterOrEqual(t, src.lists.Load(), int32(2), "relisted")
	select {
	case err := <-errs:
		require.ErrorIs(t, err, informer.ErrExpired)
		var st *apierrors.StatusError
		require.ErrorAs(t, err, &st, "the API error is kept")
		require.Equal(t, int32(410), st.ErrStatus.Code)
	case <-time.After(waitFor):
		t.Fatal("no expiry reported")
	}
}

// optsRecorder records the options of every watch request.
type optsRecorder struct {
	k8s.ListerWatcher[*corev1.SecretList]
	mu   sync.Mutex
	seen []metav1.ListOptions
}

func (r *optsRecorder) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	r.mu.Lock()
	r.seen = append(r.seen, o)
	r.mu.Unlock()
	return r.ListerWatcher.Watch(ctx, o)
}

// TestBookmarks: every watch asks for bookmarks (unless disabled), and the
// bookmark that ends a streaming list arrives as a Bookmark event with
// InitialEventsEnd, at a version not older than the objects before it. (The
// periodic bookmarks of the watch cache come about once a minute: too slow
// for a test; the conformance kit's bookmark check needs a hook the API
// does not have.)
func TestBookmarks(t *testing.T) {
	e := needEnv(t)
	ns := e.Namespace(t)
	sec := e.Client.CoreV1().Secrets(ns)
	created, err := sec.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	rec := &optsRecorder{ListerWatcher: sec}
	src, err := k8s.New[corev1.Secret, *corev1.Secret](rec, func(l *corev1.SecretList) []corev1.Secret { return l.Items }, k8s.Options{})
	require.NoError(t, err)
	w, err := src.Watch(t.Context(), informer.WatchOptions{SendInitialEvents: true, Timeout: 5 * time.Second})
	require.NoError(t, err)
	defer w.Stop()
	var added int
	for ev := range w.Events() {
		require.NotEqual(t, informer.EventError, ev.Type, "%v", ev.Err)
		if ev.Type == informer.EventAdded {
			added++
			continue
		}
		require.Equal(t, informer.EventBookmark, ev.Type)
		require.True(t, ev.InitialEventsEnd)
		require.GreaterOrEqual(t, compareVersions(ev.Version, created.ResourceVersion), 0)
		break
	}
	require.Equal(t, 1, added)
	l, err := sec.List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	w2, err := src.Watch(t.Context(), informer.WatchOptions{Version: l.ResourceVersion})
	require.NoError(t, err)
	w2.Stop()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Len(t, rec.seen, 2)
	for _, o := range rec.seen {
		require.True(t, o.AllowWatchBookmarks, "%+v", o)
	}
	require.Equal(t, metav1.ResourceVersionMatchNotOlderThan, rec.seen[0].ResourceVersionMatch)
	require.True(t, *rec.seen[0].SendInitialEvents)
}

// TestPagination: a list with a small page size follows continue tokens;
// every page is at the first page's version.
func TestPagination(t *testing.T) {
	e := needEnv(t)
	ns := e.Namespace(t)
	createCMs(t, ns, "p", 25, nil)
	src := &hooked[*corev1.ConfigMap]{Source: cmSource(t, ns, k8s.Options{})}
	inf, _ := startInformer[*corev1.ConfigMap](t, src, informer.ListWatchOptions{PageSize: 4, DisableStreamingList: true})
	require.Equal(t, 25, inf.Lister().Len())
	require.Equal(t, int32(7), src.pages.Load(), "25 objects in pages of 4")

	page, err := src.List(t.Context(), informer.ListOptions{Limit: 10})
	require.NoError(t, err)
	require.Len(t, page.Items, 10)
	require.NotEmpty(t, page.Continue)
	createCMs(t, ns, "q", 1, nil) // not in the later pages
	rest, err := src.List(t.Context(), informer.ListOptions{Limit: 100, Continue: page.Continue})
	require.NoError(t, err)
	require.Len(t, rest.Items, 15)
	require.Equal(t, page.Version, rest.Version)
}

// TestStreamingList: the informer syncs from a streaming list, without a
// single list call, both from etcd (ConfigMaps) and from the watch cache
// (Secrets).
func TestStreamingList(t *testing.T) {
	e := needEnv(t)
	ns := e.Namespace(t)
	createCMs(t, ns, "s", 5, nil)
	src := &hooked[*corev1.ConfigMap]{Source: cmSource(t, ns, k8s.Options{})}
	inf, _ := startInformer[*corev1.ConfigMap](t, src, informer.ListWatchOptions{})
	require.Equal(t, 5, inf.Lister().Len())
	require.Zero(t, src.lists.Load(), "synced without a list")
	require.Equal(t, int32(1), src.streams.Load())
	createCMs(t, ns, "t", 1, nil)
	eventually(t, inf.Lister(), hasLen[*corev1.ConfigMap](6), "a change after the initial events")

	sec := e.Client.CoreV1().Secrets(ns)
	for i := range 3 {
		_, err := sec.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s%d", i)}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	ssrc, err := k8s.New(sec, func(l *corev1.SecretList) []corev1.Secret { return l.Items }, k8s.Options{})
	require.NoError(t, err)
	hs := &hooked[*corev1.Secret]{Source: ssrc}
	sinf, _ := startInformer[*corev1.Secret](t, hs, informer.ListWatchOptions{})
	require.Equal(t, 3, sinf.Lister().Len())
	require.Zero(t, hs.lists.Load(), "synced without a list")
}

// refusingWatcher answers streaming lists as a server with WatchList off
// does: 422 Invalid on the sendInitialEvents field.
type refusingWatcher struct {
	k8s.ListerWatcher[*corev1.ConfigMapList]
}

func (r refusingWatcher) Watch(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	if o.SendInitialEvents != nil {
		return nil, apierrors.NewInvalid(schema.GroupKind{Kind: "ListOptions"}, "", field.ErrorList{
			field.Forbidden(field.NewPath("sendInitialEvents"), "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"),
		})
	}
	return r.ListerWatcher.Watch(ctx, o)
}

// TestStreamingListFallback: a server refusing streaming lists gives
// errors.ErrUnsupported and the informer lists instead; a server ignoring
// the request (never sending the end marker) is abandoned after
// StreamingListTimeout for a list.
func TestStreamingListFallback(t *testing.T) {
	e := needEnv(t)
	ns := e.Namespace(t)
	createCMs(t, ns, "f", 4, nil)
	t.Run("refused", func(t *testing.T) {
		s, err := k8s.New[corev1.ConfigMap, *corev1.ConfigMap](refusingWatcher{e.Client.CoreV1().ConfigMaps(ns)}, cmItems, k8s.Options{})
		require.NoError(t, err)
		_, err = s.Watch(t.Context(), informer.WatchOptions{SendInitialEvents: true})
		require.ErrorIs(t, err, errors.ErrUnsupported)
		src := &hooked[*corev1.ConfigMap]{Source: s}
		inf, _ := startInformer[*corev1.ConfigMap](t, src, informer.ListWatchOptions{})
		require.Equal(t, 4, inf.Lister().Len())
		require.Equal(t, int32(1), src.lists.Load())
	})
	t.Run("ignored", func(t *testing.T) {
		src := &hooked[*corev1.ConfigMap]{Source: cmSource(t, ns, k8s.Options{})}
		src.watchOpts = func(o informer.WatchOptions) informer.WatchOptions {
			if o.SendInitialEvents { // an old server: a plain watch from "now"
				l, err := env.Client.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
				require.NoError(t, err)
				o = informer.WatchOptions{Version: l.ResourceVersion, Timeout: o.Timeout}
			}
			return o
		}
		inf, _ := startInformer[*corev1.ConfigMap](t, src, informer.ListWatchOptions{StreamingListTimeout: 300 * time.Millisecond})
		require.Equal(t, 4, inf.Lister().Len())
		require.Equal(t, int32(1), src.lists.Load())
	})
}

// TestSelectors: label and field selectors restrict lists and watches.
func TestSelectors(t *testing.T) {
	e := needEnv(t)
	ns := e.Namespace(t)
	createCMs(t, ns, "web", 3, map[string]string{"app": "web"})
	createCMs(t, ns, "db", 2, map[string]string{"app": "db"})
	byLabel, _ := startInformer[*corev1.ConfigMap](t, cmSource(t, ns, k8s.Options{LabelSelector: "app=web"}), informer.ListWatchOptions{})
	byField, _ := startInformer[*corev1.ConfigMap](t, cmSource(t, ns, k8s.Options{FieldSelector: "metadata.name=db001"}), informer.ListWatchOptions{DisableStreamingList: true})
	require.Equal(t, 3, byLabel.Lister().Len())
	require.Equal(t, 1, byField.Lister().Len())
	createCMs(t, ns, "web-late", 1, map[string]string{"app": "web"})
	createCMs(t, ns, "db-late", 1, map[string]string{"app": "db"})
	eventually(t, byLabel.Lister(), hasLen[*corev1.ConfigMap](4), "a matching object created later")
	for _, cm := range byLabel.Lister().List() {
		require.Equal(t, "web", cm.Labels["app"])
	}
	// Relabelling out of the selection is a deletion for the watch.
	c := e.Client.CoreV1().ConfigMaps(ns)
	cm, err := c.Get(t.Context(), "web000", metav1.GetOptions{})
	require.NoError(t, err)
	cm.Labels["app"] = "other"
	_, err = c.Update(t.Context(), cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	eventually(t, byLabel.Lister(), hasLen[*corev1.ConfigMap](3), "an object leaving the selection")
	require.Equal(t, 1, byField.Lister().Len())
}

// TestDynamicAndMetadata: the dynamic and metadata sources serve any
// resource as *unstructured.Unstructured and *metav1.PartialObjectMetadata.
func TestDynamicAndMetadata(t *testing.T) {
	e := needEnv(t)
	ns := e.Namespace(t)
	createCMs(t, ns, "d", 3, map[string]string{"app": "x"})
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	dyn, err := dynamic.NewForConfig(e.Config)
	require.NoError(t, err)
	dsrc, err := k8s.NewDynamic(dyn.Resource(gvr).Namespace(ns), k8s.Options{})
	require.NoError(t, err)
	dinf, _ := startInformer[*unstructured.Unstructured](t, dsrc, informer.ListWatchOptions{})
	u, ok := dinf.Lister().Get(informer.NamespacedKey{Namespace: ns, Name: "d001"})
	require.True(t, ok)
	v, _, _ := unstructured.NestedString(u.Object, "data", "gen")
	require.Equal(t, "1", v)

	md, err := metadata.NewForConfig(e.Config)
	require.NoError(t, err)
	msrc, err := k8s.NewMetadata(md.Resource(gvr).Namespace(ns), k8s.Options{LabelSelector: "app=x"})
	require.NoError(t, err)
	minf, _ := startInformer[*metav1.PartialObjectMetadata](t, msrc, informer.ListWatchOptions{})
	require.Equal(t, 3, minf.Lister().Len())
	createCMs(t, ns, "e", 1, map[string]string{"app": "x"})
	eventually(t, minf.Lister(), hasLen[*metav1.PartialObjectMetadata](4), "a metadata watch event")
	eventually(t, dinf.Lister(), hasLen[*unstructured.Unstructured](4), "a dynamic watch event")
}

// TestVersionTooLarge: a list not older than a future version fails with
// ErrVersionTooLarge.
func TestVersionTooLarge(t *testing.T) {
	e := needEnv(t)
	ns := e.Namespace(t)
	src := cmSource(t, ns, k8s.Options{})
	_, err := src.List(t.Context(), informer.ListOptions{Mode: informer.ReadNotOlderThan, Version: "999999999"})
	require.ErrorIs(t, err, informer.ErrVersionTooLarge)
}
