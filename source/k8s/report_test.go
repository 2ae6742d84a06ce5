package k8s_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
)

// strictCM reads ConfigMaps whose values are numbers: a ConfigMap with any
// other value does not decode into it.
type strictCM struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Data              map[string]json.Number `json:"data,omitempty"`
}

func (c *strictCM) DeepCopyObject() runtime.Object {
	out := *c
	c.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Data = maps.Clone(c.Data)
	return &out
}

// errorRecorder is an informer.Metrics that counts errors by class.
type errorRecorder struct {
	informer.NoopMetrics
	mu      sync.Mutex
	classes map[informer.ErrorClass]int64
}

func (m *errorRecorder) Error(_ string, class informer.ErrorClass) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.classes[class]++
}

func (m *errorRecorder) count(class informer.ErrorClass) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.classes[class]
}

// An object that does not decode, listed and then watched, reaches the
// informer: its metrics under class decode, Health's last error and
// counts. The source still counts it, and the informer goes on serving.
func TestInformerSeesObjectsThatDoNotDecode(t *testing.T) {
	e := needEnv(t)
	ns := e.Namespace(t)
	cms := e.Client.CoreV1().ConfigMaps(ns)
	ctx := t.Context()
	create := func(name string, data map[string]string) {
		t.Helper()
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	create("good", map[string]string{"n": "1"})
	create("bad", map[string]string{"n": "one"})
	src, err := k8s.NewForConfig[strictCM](e.Config, schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, ns,
		k8s.Options{Logger: logr.FromSlogHandler(slog.DiscardHandler)})
	require.NoError(t, err)
	rec := &errorRecorder{classes: map[informer.ErrorClass]int64{}}
	inf, err := informer.NewSharedInformer(informer.Options[informer.NamespacedKey, *strictCM]{
		Name: "strict", Source: src, KeyFunc: k8s.Key[*strictCM], Metrics: rec,
		Logger: logr.FromSlogHandler(slog.DiscardHandler),
	})
	require.NoError(t, err)
	rctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = inf.Run(rctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	wctx, wcancel := context.WithTimeout(ctx, waitFor)
	defer wcancel()
	require.NoError(t, informer.WaitForSync(wctx, inf))

	require.Positive(t, rec.count(informer.ErrorClassDecode))
	h := inf.Health()
	require.Positive(t, h.Errors[informer.ErrorClassDecode])
	require.ErrorIs(t, h.LastError, informer.ErrDecode)
	_, found := inf.Lister().Get(informer.NamespacedKey{Namespace: ns, Name: "bad"})
	require.False(t, found)
	got, found := inf.Lister().Get(informer.NamespacedKey{Namespace: ns, Name: "good"})
	require.True(t, found)
	require.Equal(t, json.Number("1"), got.Data["n"])

	// In the watch: another bad object is reported, a good one is cached.
	listed, decoded := rec.count(informer.ErrorClassDecode), src.DecodeErrors()
	require.Positive(t, decoded)
	create("bad2", map[string]string{"n": "two"})
	create("good2", map[string]string{"n": "2"})
	require.Eventually(t, func() bool {
		_, ok := inf.Lister().Get(informer.NamespacedKey{Namespace: ns, Name: "good2"})
		return ok && rec.count(informer.ErrorClassDecode) > listed
	}, waitFor, 5*time.Millisecond, "good2 cached, bad2 reported")
	require.Greater(t, src.DecodeErrors(), decoded)
	require.Greater(t, inf.Health().Errors[informer.ErrorClassDecode], h.Errors[informer.ErrorClassDecode])
}
