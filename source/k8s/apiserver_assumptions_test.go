package k8s_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/ginformer/ginformer/source/k8s"
)

// TestApiserverAssumptions checks, against the real kube-apiserver, each
// behaviour of the apiserver that the caught-up marker of a NotifyCaughtUp
// watch (catchup.go) relies on although the API does not promise it: the
// "current: N" of the too-large error, the watch cache's 3 s wait and its
// Retry-After, the bookmark of a 3 s watch, the revision of a consistent
// list of one name, and the paths the probes take. Each failure names the
// assumption, as docs/k8s.md's "Upgrade checklist" lists them; run it first
// against a new apiserver or client-go (scripts/clientgo-next.sh does).
// The reflection on client-go's fields is pinned by TestTypedClientLayout
// and TestClientPathURL (clientgo_layout_test.go).
//
// On the shared test apiserver, Secrets are served from the watch cache
// and ConfigMaps from etcd (main_test.go).
func TestApiserverAssumptions(t *testing.T) {
	e := needEnv(t)
	secretsOf := func(t *testing.T, ns string) *k8s.Source[*corev1.Secret] {
		src, err := k8s.New(e.Client.CoreV1().Secrets(ns), secretItems, k8s.Options{})
		require.NoError(t, err)
		return src
	}
	putSecret := func(t *testing.T, ns, name string) uint64 {
		s, err := e.Client.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		require.NoError(t, err)
		return rvOf(t, s.ResourceVersion)
	}
	putConfigMap := func(t *testing.T, ns, name string) uint64 {
		cm, err := e.Client.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		require.NoError(t, err)
		return rvOf(t, cm.ResourceVersion)
	}

	t.Run("WatchCacheTooLarge", func(t *testing.T) {
		t.Parallel()
		ns := e.Namespace(t)
		last := putSecret(t, ns, "a")
		start := time.Now()
		r := k8s.ProbeResource(t.Context(), secretsOf(t, ns), strconv.FormatUint(last+k8s.ProbeAhead, 10))
		took := time.Since(start)
		t.Logf("cached resource: %v after %v", r.Err, took)
		if apierrors.IsNotFound(r.Err) {
			broken(t, "too-large error before the name", "a GET of a name no object has, at a resourceVersion the server has not reached, "+
				"answered NotFound (%v): the version is no longer checked before the name, and the resource probe learns nothing", r.Err)
		}
		if !apierrors.HasStatusCause(r.Err, metav1.CauseTypeResourceVersionTooLarge) {
			broken(t, "too-large error before the name", "the resource probe's answer has no %s cause: %v", metav1.CauseTypeResourceVersionTooLarge, r.Err)
		}
		if !r.Known {
			broken(t, "current: N in the too-large error", "readProbe found no \"current: N\" in %q "+
				"(storage.NewTooLargeResourceVersionError's message): the resource probe reports nothing", r.Err.Error())
		}
		if r.Current < last {
			broken(t, "current: N in the too-large error", "\"current: %d\" is older than the resource's last write %d: "+
				"N is no longer the watch cache's resourceVersion", r.Current, last)
		}
		if !r.Cached {
			broken(t, "Retry-After tells a cached resource", "the watch cache's too-large answer suggests no client delay "+
				"(Retry-After 1 expected): catchup.go takes the resource for an uncached one and refuses every NotifyCaughtUp watch of it (%v)", r.Err)
		}
		if took < time.Second || took >= k8s.ProbeTimeout {
			broken(t, "the watch cache waits 3 s", "the watch cache answered a resourceVersion it has not reached after %v "+
				"(watch_cache.go waitUntilFreshLocked, blockTimeout 3 s expected; the probe gives up at %v): "+
				"catch-up watches rely on the cache following etcd for about that long", took, k8s.ProbeTimeout)
		}
	})

	t.Run("UncachedTooLarge", func(t *testing.T) {
		t.Parallel()
		ns := e.Namespace(t)
		last := putConfigMap(t, ns, "a")
		src, err := k8s.New(e.Client.CoreV1().ConfigMaps(ns), cmItems, k8s.Options{})
		require.NoError(t, err)
		start := time.Now()
		r := k8s.ProbeResource(t.Context(), src, strconv.FormatUint(last+k8s.ProbeAhead, 10))
		t.Logf("uncached resource: %v after %v", r.Err, time.Since(start))
		if !r.Known {
			broken(t, "current: N in the too-large error", "from etcd (an uncached resource), readProbe found no \"current: N\" in %v", r.Err)
		}
		if r.Cached {
			broken(t, "Retry-After tells a cached resource", "the too-large answer of a resource served from etcd "+
				"(--watch-cache-sizes=configmaps#0) suggests a client delay (Retry-After 0 expected): catchup.go takes it "+
				"for a cached one and waits for bookmarks that never come (%v)", r.Err)
		}
		if r.Current < last {
			broken(t, "current: N in the too-large error", "\"current: %d\" from etcd is older than the resource's last write %d", r.Current, last)
		}
	})

	t.Run("RevisionProbe", func(t *testing.T) {
		t.Parallel()
		ns := e.Namespace(t)
		last := putSecret(t, ns, "a")
		start := time.Now()
		r := k8s.ProbeRevision(t.Context(), secretsOf(t, ns))
		t.Logf("revision probe: %d after %v (last write %d)", r.Current, time.Since(start), last)
		if !r.Known {
			broken(t, "a consistent list of one name", "the consistent list of one name no object has failed: %v", r.Err)
		}
		if r.Current < last {
			broken(t, "a consistent list of one name", "its resourceVersion %d is older than the resource's last write %d: "+
				"a list with no resourceVersion is no longer a consistent read", r.Current, last)
		}
	})

	t.Run("BookmarkOfThreeSecondWatch", func(t *testing.T) {
		t.Parallel()
		ns := e.Namespace(t)
		last := putSecret(t, ns, "a")
		// The cluster moves on (a ConfigMap, not in the Secrets' watch
		// cache), and the watch cache follows etcd while a resource probe
		// waits: as in a catch-up watch from the resource's last event.
		// Whether the cache has moved past that event by the watch's one
		// bookmark time depends on when the probe reached it, so, as a
		// NotifyCaughtUp stream does, up to catchUpWatches watches are
		// opened, each beside a probe; one of them must get a bookmark.
		putConfigMap(t, ns, "moved-on")
		src := secretsOf(t, ns)
		timeout := int64(k8s.CatchUpTimeout / time.Second)
		start := time.Now()
		for n := 1; n <= k8s.CatchUpWatches; n++ {
			if bookmark, ok := watchForBookmark(t, e.Client.CoreV1().Secrets(ns), src, last, timeout); ok {
				t.Logf("bookmark at %d in watch %d, %v after the first opened (last write %d)", bookmark, n, time.Since(start), last)
				if bookmark <= last {
					broken(t, "a bookmark within a 3 s watch", "the bookmark's resourceVersion %d is not newer than the watch's %d", bookmark, last)
				}
				return
			}
		}
		broken(t, "a bookmark within a 3 s watch", "%d watches with timeoutSeconds=%d from the resource's last event ended (after %v) "+
			"without a bookmark, while the cluster had moved on and the watch cache followed etcd (a resource probe waiting beside "+
			"each): cache_watcher.go's bookmark time (2 s before the deadline) or the cache's progress requests changed, and every "+
			"NotifyCaughtUp stream of an idle resource ends unmarked", k8s.CatchUpWatches, timeout, time.Since(start))
	})

	t.Run("ProbePathsWithoutNamespace", func(t *testing.T) {
		t.Parallel()
		ns := e.Namespace(t)
		last := putSecret(t, ns, "a")
		// All namespaces: the resource probe's object path needs one (the
		// path without is NotFound, then "default" is asked).
		all := secretsOf(t, "")
		r := k8s.ProbeResource(t.Context(), all, strconv.FormatUint(last+k8s.ProbeAhead, 10))
		if !r.Known || !r.Cached {
			broken(t, "probe paths", "the resource probe of Secrets in all namespaces learnt nothing "+
				"(the object path without a namespace is expected NotFound, then the one in \"default\" answers): %v", r.Err)
		}
		// A cluster-scoped resource: the revision probe's list in
		// "default" is NotFound, then the list without a namespace answers.
		nsSrc, err := k8s.New(e.Client.CoreV1().Namespaces(), func(l *corev1.NamespaceList) []corev1.Namespace { return l.Items }, k8s.Options{})
		require.NoError(t, err)
		r = k8s.ProbeRevision(t.Context(), nsSrc)
		if !r.Known || r.Current < last {
			broken(t, "probe paths", "the revision probe of Namespaces (cluster-scoped) read %d, known %v, after write %d "+
				"(the list under namespaces/default is expected NotFound, then the cluster-wide one answers): %v", r.Current, r.Known, last, r.Err)
		}
	})
}

// watchForBookmark opens a watch of secrets from version with
// timeoutSeconds, beside a resource probe of src, and returns the version
// of its first bookmark; ok is false when the watch ended without one.
func watchForBookmark(t *testing.T, secrets typedcorev1.SecretInterface, src *k8s.Source[*corev1.Secret], version uint64, timeout int64) (bookmark uint64, ok bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), k8s.ProbeTimeout)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	wg.Go(func() { k8s.ProbeResource(ctx, src, strconv.FormatUint(version+k8s.ProbeAhead, 10)) })
	w, err := secrets.Watch(ctx, metav1.ListOptions{
		ResourceVersion: strconv.FormatUint(version, 10), AllowWatchBookmarks: true, TimeoutSeconds: &timeout})
	require.NoError(t, err)
	defer w.Stop()
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Error:
			t.Fatalf("watch: %v", apierrors.FromObject(ev.Object))
		case watch.Bookmark:
			return rvOf(t, ev.Object.(*corev1.Secret).ResourceVersion), true
		}
	}
	return 0, false
}

// broken fails t: the apiserver no longer behaves as assumption says.
func broken(t *testing.T, assumption, format string, args ...any) {
	t.Helper()
	t.Fatalf("apiserver assumption %q no longer holds (see docs/k8s.md, Upgrade checklist): %s", assumption, fmt.Sprintf(format, args...))
}

// rvOf parses a resourceVersion.
func rvOf(t *testing.T, rv string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(rv, 10, 64)
	require.NoError(t, err, "resourceVersion %q", rv)
	return v
}
