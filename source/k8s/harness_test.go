package k8s_test

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/ginformer/ginformer/source/k8s"
	"github.com/ginformer/ginformer/source/sourcetest"
)

// cmItems is the items accessor of ConfigMap lists.
func cmItems(l *corev1.ConfigMapList) []corev1.ConfigMap { return l.Items }

// cmSource returns a typed source of the ConfigMaps of ns.
func cmSource(t testing.TB, ns string, opts k8s.Options) *k8s.Source[*corev1.ConfigMap] {
	t.Helper()
	src, err := k8s.New(env.Client.CoreV1().ConfigMaps(ns), cmItems, opts)
	require.NoError(t, err)
	return src
}

func gen(cm *corev1.ConfigMap) int {
	n, _ := strconv.Atoi(cm.Data["gen"])
	return n
}

func compareVersions(a, b string) int {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	if err1 != nil || err2 != nil {
		panic(fmt.Sprintf("bad versions %q %q", a, b))
	}
	return cmp.Compare(x, y)
}

// cmWriter writes ConfigMaps of one namespace. A delete's version is not in
// the API's answer (a Status), so the writer watches the namespace and
// takes it from the DELETED event.
type cmWriter struct {
	c typedcorev1.ConfigMapInterface

	mu      sync.Mutex
	deleted map[string][]string // name → versions of deletions not yet claimed
	changed chan struct{}       // closed and replaced on every deletion
}

func newWriter(t testing.TB, ns string) *cmWriter {
	t.Helper()
	w := &cmWriter{c: env.Client.CoreV1().ConfigMaps(ns), deleted: map[string][]string{}, changed: make(chan struct{})}
	l, err := w.c.List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	kw, err := w.c.Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); kw.Stop(); wg.Wait() })
	wg.Go(func() {
		for ev := range kw.ResultChan() {
			if ev.Type != watch.Deleted {
				continue
			}
			cm := ev.Object.(*corev1.ConfigMap)
			w.mu.Lock()
			w.deleted[cm.Name] = append(w.deleted[cm.Name], cm.ResourceVersion)
			close(w.changed)
			w.changed = make(chan struct{})
			w.mu.Unlock()
		}
	})
	return w
}

func (w *cmWriter) create(ctx context.Context, name string) (string, error) {
	cm, err := w.c.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Data:       map[string]string{"gen": "1"},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return cm.ResourceVersion, nil
}

func (w *cmWriter) update(ctx context.Context, name string) (string, error) {
	cm, err := w.c.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	cm.Data["gen"] = strconv.Itoa(gen(cm) + 1)
	cm, err = w.c.Update(ctx, cm, metav1.UpdateOptions{})
	if err != nil {
		return "", err
	}
	return cm.ResourceVersion, nil
}

func (w *cmWriter) del(ctx context.Context, name string) (string, error) {
	if err := w.c.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return "", err
	}
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		w.mu.Lock()
		if vs := w.deleted[name]; len(vs) > 0 {
			w.deleted[name] = vs[1:]
			w.mu.Unlock()
			return vs[0], nil
		}
		changed := w.changed
		w.mu.Unlock()
		select {
		case <-changed:
		case <-timeout.C:
			return "", fmt.Errorf("delete %s: no DELETED event", name)
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// harness builds a conformance harness over the ConfigMaps of a fresh
// namespace.
func harness(t *testing.T, opts k8s.Options) sourcetest.Harness[*corev1.ConfigMap] {
	e := needEnv(t)
	ns := e.Namespace(t)
	w := newWriter(t, ns)
	src := cmSource(t, ns, opts)
	return sourcetest.Harness[*corev1.ConfigMap]{
		Source:          src,
		Create:          w.create,
		Update:          w.update,
		Delete:          w.del,
		Name:            func(cm *corev1.ConfigMap) string { return cm.Name },
		Generation:      gen,
		Compact:         e.Compact,
		CompareVersions: compareVersions,
		// The apiserver's watch cache holds a watch from a future
		// resourceVersion until it is reached.
		WatchFutureWaits: true,
		// A source that decodes itself ends a streaming list's stream at
		// the marker (the rest of the response would be gzipped).
		StreamingListEndsAtMarker: src.Decoding(),
		// ConfigMaps are not in the watch cache here: their watches get
		// no bookmarks, and the source refuses NotifyCaughtUp with
		// ErrRelistRequested (catchup_test.go covers cached Secrets).
		DisableNotifyCaughtUp: true,
	}
}
