package k8s_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/metadata"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
)

// The caught-up marker of a plain watch (WatchOptions.NotifyCaughtUp),
// against a real apiserver: Secrets are served from its watch cache,
// ConfigMaps are not (main_test.go).

func secretItems(l *corev1.SecretList) []corev1.Secret { return l.Items }

var secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// catchUpSources returns a source of the Secrets of ns of each kind the
// marker must work with: decoding, through the typed client's own Watch,
// dynamic, metadata.
func catchUpSources(t *testing.T, ns string) map[string]func(ctx context.Context, o informer.WatchOptions) (informer.Watcher[k8s.Object], error) {
	t.Helper()
	typed := func(opts k8s.Options) *k8s.Source[*corev1.Secret] {
		src, err := k8s.New(env.Client.CoreV1().Secrets(ns), secretItems, opts)
		require.NoError(t, err)
		return src
	}
	dyn, err := dynamic.NewForConfig(env.Config)
	require.NoError(t, err)
	dsrc, err := k8s.NewDynamic(dyn.Resource(secretsGVR).Namespace(ns), k8s.Options{})
	require.NoError(t, err)
	meta, err := metadata.NewForConfig(env.Config)
	require.NoError(t, err)
	msrc, err := k8s.NewMetadata(meta.Resource(secretsGVR).Namespace(ns), k8s.Options{})
	require.NoError(t, err)
	decoding, plain := typed(k8s.Options{}), typed(k8s.Options{DisableDecoding: true})
	require.True(t, decoding.Decoding())
	require.False(t, plain.Decoding())
	return map[string]func(ctx context.Context, o informer.WatchOptions) (informer.Watcher[k8s.Object], error){
		"decoding": anyWatch(decoding), "client's watch": anyWatch(plain), "dynamic": anyWatch(dsrc), "metadata": anyWatch(msrc),
	}
}

// anyWatch adapts a source's Watch to Object events.
func anyWatch[T k8s.Object](src informer.Source[T]) func(ctx context.Context, o informer.WatchOptions) (informer.Watcher[k8s.Object], error) {
	return func(ctx context.Context, o informer.WatchOptions) (informer.Watcher[k8s.Object], error) {
		w, err := src.Watch(ctx, o)
		if err != nil {
			return nil, err
		}
		out := informer.NewWatchStream[k8s.Object](ctx, 0)
		go func() {
			defer out.Close()
			defer w.Stop()
			for ev := range w.Events() {
				e := informer.Event[k8s.Object]{Type: ev.Type, Version: ev.Version, InitialEventsEnd: ev.InitialEventsEnd, Err: ev.Err}
				if ev.Type != informer.EventBookmark && ev.Type != informer.EventError {
					e.Object = ev.Object
				}
				if !out.Send(e) {
					return
				}
			}
		}()
		return out, nil
	}
}

// untilMarker collects the events of a NotifyCaughtUp watch until its
// marker. It returns the changes, the marker, how long it took, and the
// stream, still open.
func untilMarker(t *testing.T, watch func(ctx context.Context, o informer.WatchOptions) (informer.Watcher[k8s.Object], error), from string) ([]informer.Event[k8s.Object], informer.Event[k8s.Object], time.Duration, informer.Watcher[k8s.Object]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitFor)
	t.Cleanup(cancel)
	start := time.Now()
	w, err := watch(ctx, informer.WatchOptions{Version: from, NotifyCaughtUp: true, Timeout: waitFor})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	var changes []informer.Event[k8s.Object]
	for ev := range w.Events() {
		require.NotEqual(t, informer.EventError, ev.Type, "%v", ev.Err)
		switch {
		case ev.InitialEventsEnd:
			require.Equal(t, informer.EventBookmark, ev.Type)
			return changes, ev, time.Since(start), w
		case ev.Type != informer.EventBookmark:
			changes = append(changes, ev)
		}
	}
	t.Fatal("the stream closed before the marker")
	return nil, informer.Event[k8s.Object]{}, 0, nil
}

// nextChange returns the next event of w other than a plain bookmark,
// and fails on a second marker.
func nextChange(t *testing.T, w informer.Watcher[k8s.Object]) informer.Event[k8s.Object] {
	t.Helper()
	for ev := range w.Events() {
		require.False(t, ev.InitialEventsEnd, "a second marker")
		require.NotEqual(t, informer.EventError, ev.Type, "%v", ev.Err)
		if ev.Type != informer.EventBookmark {
			return ev
		}
	}
	t.Fatal("the stream closed")
	return informer.Event[k8s.Object]{}
}

func atLeast(t *testing.T, a, b string) {
	t.Helper()
	require.GreaterOrEqual(t, compareVersions(a, b), 0, "%s older than %s", a, b)
}

// TestNotifyCaughtUp: a watch from a version delivers every change made
// since, in order, then exactly one marker at a version at least as new,
// then goes on; with nothing changed, the marker alone. For each kind of
// client.
func TestNotifyCaughtUp(t *testing.T) {
	e := needEnv(t)
	for _, kind := range []string{"decoding", "client's watch", "dynamic", "metadata"} {
		t.Run(kind, func(t *testing.T) {
			ns := e.Namespace(t)
			ctx := t.Context()
			secrets := e.Client.CoreV1().Secrets(ns)
			put := func(name string) *corev1.Secret {
				s, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
				require.NoError(t, err)
				return s
			}
			for i := range 3 {
				put(fmt.Sprint("s", i))
			}
			from := put("s3").ResourceVersion
			// Changes while "down": a create, an update, a delete.
			created := put("s4")
			s1, err := secrets.Get(ctx, "s1", metav1.GetOptions{})
			require.NoError(t, err)
			s1.StringData = map[string]string{"gen": "2"}
			updated, err := secrets.Update(ctx, s1, metav1.UpdateOptions{})
			require.NoError(t, err)
			require.NoError(t, secrets.Delete(ctx, "s2", metav1.DeleteOptions{}))
			last := put("s5").ResourceVersion

			watch := catchUpSources(t, ns)[kind]
			changes, marker, took, w := untilMarker(t, watch, from)
			var got []string
			for _, ev := range changes {
				got = append(got, fmt.Sprintf("%v %s", ev.Type, ev.Object.GetName()))
				require.Equal(t, ev.Version, ev.Object.GetResourceVersion())
			}
			require.Equal(t, []string{"Added s4", "Modified s1", "Deleted s2", "Added s5"}, got)
			require.Equal(t, created.ResourceVersion, changes[0].Version)
			require.Equal(t, updated.ResourceVersion, changes[1].Version)
			atLeast(t, marker.Version, last)
			t.Logf("marker at %s after %v", marker.Version, took)
			// Then the stream goes on.
			later := put("later")
			ev := nextChange(t, w)
			require.Equal(t, later.Name, ev.Object.GetName())
			require.Equal(t, later.ResourceVersion, ev.Version)
			w.Stop()

			// Nothing changed since: the marker alone, at a version at
			// least the watch's.
			changes, marker, took, w = untilMarker(t, watch, later.ResourceVersion)
			require.Empty(t, changes)
			atLeast(t, marker.Version, later.ResourceVersion)
			t.Logf("nothing changed: marker at %s after %v", marker.Version, took)
			w.Stop()
		})
	}
}

// TestNotifyCaughtUpExpired: a version older than the watch cache's
// window fails as any watch does, with ErrExpired. The Widgets' watch
// cache starts when their CRD is installed: every earlier version is older
// than its window.
func TestNotifyCaughtUpExpired(t *testing.T) {
	e := needEnv(t)
	installWidgetCRD(t)
	ns := e.Namespace(t)
	decoding, err := k8s.NewForConfig[Widget](e.Config, widgetGVR, ns, k8s.Options{})
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(e.Config)
	require.NoError(t, err)
	dsrc, err := k8s.NewDynamic(dyn.Resource(widgetGVR).Namespace(ns), k8s.Options{})
	require.NoError(t, err)
	meta, err := metadata.NewForConfig(e.Config)
	require.NoError(t, err)
	msrc, err := k8s.NewMetadata(meta.Resource(widgetGVR).Namespace(ns), k8s.Options{})
	require.NoError(t, err)
	for name, watch := range map[string]func(ctx context.Context, o informer.WatchOptions) (informer.Watcher[k8s.Object], error){
		"decoding": anyWatch(decoding), "dynamic": anyWatch(dsrc), "metadata": anyWatch(msrc),
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), waitFor)
			defer cancel()
			w, err := watch(ctx, informer.WatchOptions{Version: "2", NotifyCaughtUp: true})
			if err == nil {
				ev, ok := <-w.Events()
				w.Stop()
				require.True(t, ok, "the stream closed without an error")
				require.Equal(t, informer.EventError, ev.Type, "%v at %s", ev.Type, ev.Version)
				err = ev.Err
			}
			require.ErrorIs(t, err, informer.ErrExpired)
			require.NotErrorIs(t, err, informer.ErrRelistRequested)
		})
	}
}

// TestNotifyCaughtUpUncached: a resource the apiserver does not cache
// (ConfigMaps here) gets no bookmarks: with changes since the version, the
// watch ends asking for a relist, without waiting for its timeout.
func TestNotifyCaughtUpUncached(t *testing.T) {
	e := needEnv(t)
	ns := e.Namespace(t)
	w := newWriter(t, ns)
	ctx := t.Context()
	from, err := w.create(ctx, "a")
	require.NoError(t, err)
	_, err = w.create(ctx, "b")
	require.NoError(t, err)
	src := cmSource(t, ns, k8s.Options{})

	wctx, cancel := context.WithTimeout(ctx, waitFor)
	defer cancel()
	start := time.Now()
	watch, err := src.Watch(wctx, informer.WatchOptions{Version: from, NotifyCaughtUp: true})
	if err == nil { // refused after some events rather than at once
		defer watch.Stop()
		var last informer.Event[*corev1.ConfigMap]
		for ev := range watch.Events() {
			require.False(t, ev.InitialEventsEnd, "a marker")
			last = ev
		}
		require.Equal(t, informer.EventError, last.Type)
		err = last.Err
	}
	require.ErrorIs(t, err, informer.ErrRelistRequested)
	require.ErrorIs(t, err, informer.ErrExpired)
	require.Less(t, time.Since(start), 2*time.Second, "refused before its 3 s timeout")
}

// TestNotifyCaughtUpRefused: sources that cannot mark the catch-up say
// so: errors.ErrUnsupported without bookmarks or a client the probe can
// address; the sharded source asks for a relist of its slice.
func TestNotifyCaughtUpRefused(t *testing.T) {
	e := needEnv(t)
	ns := e.Namespace(t)
	opts := informer.WatchOptions{Version: "10", NotifyCaughtUp: true}
	noBookmarks, err := k8s.New(e.Client.CoreV1().Secrets(ns), secretItems, k8s.Options{DisableBookmarks: true})
	require.NoError(t, err)
	_, err = noBookmarks.Watch(t.Context(), opts)
	require.ErrorIs(t, err, errors.ErrUnsupported)

	fakeSrc, err := k8s.New(fake.NewClientset().CoreV1().Secrets(ns), secretItems, k8s.Options{})
	require.NoError(t, err)
	_, err = fakeSrc.Watch(t.Context(), opts)
	require.ErrorIs(t, err, errors.ErrUnsupported)

	src, err := k8s.New(e.Client.CoreV1().Secrets(ns), secretItems, k8s.Options{})
	require.NoError(t, err)
	_, err = src.Watch(t.Context(), informer.WatchOptions{Version: "abc", NotifyCaughtUp: true})
	require.ErrorIs(t, err, informer.ErrInvalidOptions)

	set, err := k8s.Split(0, 2)
	require.NoError(t, err)
	sharded, err := k8s.NewSharded(k8s.ShardedOptions[*corev1.Secret]{Source: src, Slices: k8s.NewStaticSlices(set)})
	require.NoError(t, err)
	_, err = sharded.Watch(t.Context(), opts)
	require.ErrorIs(t, err, informer.ErrRelistRequested)
	require.ErrorIs(t, err, informer.ErrExpired)
}

// TestNotifyCaughtUpLive: with the cluster written to meanwhile (other
// resources, as in any live cluster), the version a probe reports is never
// reached by the watched resource's own events: the marker is the watch
// cache's bookmark, newer than every change delivered.
func TestNotifyCaughtUpLive(t *testing.T) {
	e := needEnv(t)
	ns, elsewhere := e.Namespace(t), e.Namespace(t)
	ctx := t.Context()
	secrets := e.Client.CoreV1().Secrets(ns)
	first, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	last, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	// A writer of another resource, until the test ends.
	wctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { stop(); <-done })
	go func() {
		defer close(done)
		cms := e.Client.CoreV1().ConfigMaps(elsewhere)
		for i := 0; wctx.Err() == nil; i++ {
			_, _ = cms.Create(wctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("w", i)}}, metav1.CreateOptions{})
			select {
			case <-wctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	time.Sleep(100 * time.Millisecond)

	src, err := k8s.New(e.Client.CoreV1().Secrets(ns), secretItems, k8s.Options{})
	require.NoError(t, err)
	changes, marker, took, w := untilMarker(t, anyWatch(src), first.ResourceVersion)
	defer w.Stop()
	require.Len(t, changes, 1)
	require.Equal(t, last.ResourceVersion, changes[0].Version)
	require.Positive(t, compareVersions(marker.Version, last.ResourceVersion), "a bookmark newer than the last change")
	t.Logf("marker at %s (last change %s) after %v", marker.Version, last.ResourceVersion, took)
}

// TestNotifyCaughtUpTooLarge: a version the cluster has not reached (a
// snapshot of another cluster at the same address) fails with
// ErrVersionTooLarge: the informer relists.
func TestNotifyCaughtUpTooLarge(t *testing.T) {
	e := needEnv(t)
	ns := e.Namespace(t)
	src, err := k8s.New(e.Client.CoreV1().Secrets(ns), secretItems, k8s.Options{})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), waitFor)
	defer cancel()
	w, err := src.Watch(ctx, informer.WatchOptions{Version: "900000000", NotifyCaughtUp: true})
	if err == nil {
		defer w.Stop()
		ev, ok := <-w.Events()
		require.True(t, ok, "the stream closed without an error")
		require.Equal(t, informer.EventError, ev.Type)
		err = ev.Err
	}
	require.ErrorIs(t, err, informer.ErrVersionTooLarge)
}
