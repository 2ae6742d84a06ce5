package k8s_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
	"github.com/ginformer/ginformer/source/k8s/k8stest"
)

// The benchmarks use their own control plane with the default settings
// (watch cache on), started on first use and stopped by TestMain.
var (
	benchOnce sync.Once
	benchEnv  *k8stest.Env
	benchNS   string
)

const benchObjects = 10_000

// benchSetup starts the control plane and fills a namespace with 10k
// ConfigMaps, once per process.
func benchSetup(b *testing.B) (*k8stest.Env, string) {
	needEnv(b)
	benchOnce.Do(func() {
		e, err := k8stest.Start(k8stest.Config{})
		if err != nil {
			b.Fatal(err)
		}
		benchEnv = e
		benchNS = "bench"
		if _, err := e.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNS}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		c := e.Client.CoreV1().ConfigMaps(benchNS)
		var wg sync.WaitGroup
		for w := range 16 {
			wg.Go(func() {
				for i := w; i < benchObjects; i += 16 {
					_, err := c.Create(context.Background(), &corev1.ConfigMap{
						ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%05d", i), Labels: map[string]string{"app": "bench"}},
						Data:       map[string]string{"n": "0", "payload": "0123456789abcdef0123456789abcdef"},
					}, metav1.CreateOptions{})
					if err != nil {
						panic(err)
					}
				}
			})
		}
		wg.Wait()
	})
	if benchEnv == nil {
		b.Skip("control plane failed to start")
	}
	return benchEnv, benchNS
}

// counter counts handler calls and signals when a target is reached.
type counter struct {
	n      atomic.Int64
	target atomic.Int64
	done   chan struct{}
	once   sync.Once
}

func newCounter() *counter { c := &counter{done: make(chan struct{})}; c.target.Store(-1); return c }

func (c *counter) hit() {
	if n := c.n.Add(1); n == c.target.Load() {
		c.once.Do(func() { close(c.done) })
	}
}

// runGinformer starts a ginformer informer of the namespace's ConfigMaps
// and returns once it has synced.
func runGinformer(b *testing.B, e *k8stest.Env, ns string, cnt *counter) (stop func()) {
	src, err := k8s.New(e.Client.CoreV1().ConfigMaps(ns), cmItems, k8s.Options{})
	if err != nil {
		b.Fatal(err)
	}
	inf, err := informer.NewSharedInformer(informer.Options[informer.NamespacedKey, *corev1.ConfigMap]{Source: src, KeyFunc: k8s.Key[*corev1.ConfigMap]})
	if err != nil {
		b.Fatal(err)
	}
	if cnt != nil {
		_, _ = inf.AddHandler(informer.HandlerFuncs[informer.NamespacedKey, *corev1.ConfigMap]{
			UpdateFunc: func(_, _ *corev1.ConfigMap) { cnt.hit() },
		}, informer.HandlerOptions{})
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = inf.Run(ctx) })
	if err := informer.WaitForSync(ctx, inf); err != nil || inf.Lister().Len() != benchObjects {
		b.Fatalf("ginformer: synced %d objects: %v", inf.Lister().Len(), err)
	}
	return func() { cancel(); wg.Wait() }
}

// runClientGo starts client-go's shared index informer of the same
// ConfigMaps (namespace index, as informer factories add) and returns once
// it has synced.
func runClientGo(b *testing.B, e *k8stest.Env, ns string, cnt *counter) (stop func()) {
	c := e.Client.CoreV1().ConfigMaps(ns)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.List(ctx, o)
		},
		WatchFuncWithContext: c.Watch,
	}
	inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if cnt != nil {
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, _ any) { cnt.hit() }})
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { inf.RunWithContext(ctx) })
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) || len(inf.GetStore().ListKeys()) != benchObjects {
		b.Fatal("client-go: not synced")
	}
	return func() { cancel(); wg.Wait() }
}

// BenchmarkSync10k: time from start to synced for 10k ConfigMaps from a
// real apiserver (watch cache on), one informer per iteration.
func BenchmarkSync10k(b *testing.B) {
	e, ns := benchSetup(b)
	for _, impl := range []struct {
		name string
		run  func(*testing.B, *k8stest.Env, string, *counter) func()
	}{{"ginformer", runGinformer}, {"client-go", runClientGo}} {
		b.Run(impl.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				stop := impl.run(b, e, ns, nil)
				b.StopTimer()
				stop()
				b.StartTimer()
			}
			b.ReportMetric(float64(benchObjects)*float64(b.N)/b.Elapsed().Seconds(), "objects/s")
		})
	}
}

// BenchmarkUpdates: both informers watch the same 10k ConfigMaps while
// b.N updates go through the apiserver (16 writers); each reports the
// events/s it delivered to a handler, from the first write to its last
// event. The apiserver's write rate bounds both.
func BenchmarkUpdates(b *testing.B) {
	e, ns := benchSetup(b)
	gc, cc := newCounter(), newCounter()
	stopG := runGinformer(b, e, ns, gc)
	defer stopG()
	stopC := runClientGo(b, e, ns, cc)
	defer stopC()
	gc.target.Store(int64(b.N))
	cc.target.Store(int64(b.N))
	c := e.Client.CoreV1().ConfigMaps(ns)
	var gen atomic.Int64
	gen.Store(time.Now().UnixNano()) // every update changes the object, across runs too
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 16 {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				cm := &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%05d", i%benchObjects), Labels: map[string]string{"app": "bench"}},
					Data:       map[string]string{"n": strconv.FormatInt(gen.Add(1), 10), "payload": "0123456789abcdef0123456789abcdef"},
				}
				if _, err := c.Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
					panic(err)
				}
			}
		})
	}
	wg.Wait()
	writes := time.Since(start)
	var gDur, cDur time.Duration
	gDone, cDone := gc.done, cc.done
	for range 2 {
		select {
		case <-gDone:
			gDur, gDone = time.Since(start), nil
		case <-cDone:
			cDur, cDone = time.Since(start), nil
		case <-time.After(2 * time.Minute):
			b.Fatalf("events missing: ginformer %d, client-go %d of %d", gc.n.Load(), cc.n.Load(), b.N)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/writes.Seconds(), "writes/s")
	b.ReportMetric(float64(b.N)/gDur.Seconds(), "ginformer-events/s")
	b.ReportMetric(float64(b.N)/cDur.Seconds(), "client-go-events/s")
}
