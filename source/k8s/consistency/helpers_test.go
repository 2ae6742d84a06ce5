package consistency_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
	"github.com/ginformer/ginformer/source/k8s/consistency"
)

// cmSlim is a projection of ConfigMap: its metadata and data only.
type cmSlim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Data              map[string]string `json:"data,omitempty" protobuf:"bytes,2,rep,name=data"`
}

func (c *cmSlim) DeepCopyObject() runtime.Object { d := *c; return &d }

// cmItems is the items accessor of ConfigMap lists.
func cmItems(l *corev1.ConfigMapList) []corev1.ConfigMap { return l.Items }

// newInformer returns an informer over src, not running.
func newInformer[T k8s.Object](t testing.TB, src informer.Source[T]) *informer.SharedInformer[informer.NamespacedKey, T] {
	t.Helper()
	inf, err := informer.NewSharedInformer(informer.Options[informer.NamespacedKey, T]{Source: src, KeyFunc: k8s.Key[T]})
	require.NoError(t, err)
	return inf
}

// run runs inf until t ends and waits for its first list.
func run[T any](t testing.TB, inf *informer.SharedInformer[informer.NamespacedKey, T]) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = inf.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
	defer scancel()
	require.NoError(t, informer.WaitForSync(sctx, inf))
}

// cmFixture is a namespace of its own, a client of its ConfigMaps, a running
// informer of them and a writer over both.
type cmFixture struct {
	ns     string
	client typedcorev1.ConfigMapInterface
	inf    *informer.SharedInformer[informer.NamespacedKey, *corev1.ConfigMap]
	w      *consistency.Writer[*corev1.ConfigMap, *corev1.ConfigMap]
}

func newCMFixture(t testing.TB, opts consistency.Options) *cmFixture {
	t.Helper()
	e := needEnv(t)
	f := &cmFixture{ns: e.Namespace(t)}
	f.client = e.Client.CoreV1().ConfigMaps(f.ns)
	src, err := k8s.New(f.client, cmItems, k8s.Options{})
	require.NoError(t, err)
	f.inf = newInformer(t, src)
	f.w, err = consistency.NewWriter[*corev1.ConfigMap](f.client, f.inf, opts)
	require.NoError(t, err)
	t.Cleanup(f.w.Close)
	run(t, f.inf)
	return f
}

func (f *cmFixture) key(name string) informer.NamespacedKey {
	return informer.NamespacedKey{Namespace: f.ns, Name: name}
}

// cm returns a ConfigMap named name whose data "gen" is gen.
func cm(name string, gen int) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Data:       map[string]string{"gen": strconv.Itoa(gen)},
	}
}

func gen(data map[string]string) int {
	n, _ := strconv.Atoi(data["gen"])
	return n
}

// recorder is a consistency.Metrics that keeps the results observed.
type recorder struct {
	mu      sync.Mutex
	results map[string]int // op/result → count
}

func (r *recorder) ReadWaited(writer, op, result string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.results == nil {
		r.results = map[string]int{}
	}
	r.results[op+"/"+result]++
}

func (r *recorder) count(opResult string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.results[opResult]
}
