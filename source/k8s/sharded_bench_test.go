package k8s_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/k8s"
)

// shardBenchObjects is the size of the sharded benchmark's collection:
// 20k ConfigMaps of about 1 KiB by default (creating them takes about 25 s
// on 2 cores); GINFORMER_SHARD_BENCH_OBJECTS sets another (100k took
// 3m40s).
func shardBenchObjects() int {
	if v, err := strconv.Atoi(os.Getenv("GINFORMER_SHARD_BENCH_OBJECTS")); err == nil && v > 0 {
		return v
	}
	return 20_000
}

// shardBenchPayload makes each ConfigMap about 1 KiB.
var shardBenchPayload = strings.Repeat("0123456789abcdef", 64)

var (
	shardBenchOnce sync.Once
	shardBenchNS   string
	shardBenchErr  error
)

// shardBenchSetup fills a namespace of the gated control plane once.
func shardBenchSetup(b *testing.B) (string, int) {
	needEnv(b)
	n := shardBenchObjects()
	shardBenchOnce.Do(func() {
		gatedOnce.Do(func() {
			gatedEnv, gatedErr = startGated()
		})
		if gatedErr != nil {
			shardBenchErr = gatedErr
			return
		}
		shardBenchNS = "shardbench"
		c := gatedEnv.Client
		if _, err := c.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: shardBenchNS}}, metav1.CreateOptions{}); err != nil {
			shardBenchErr = err
			return
		}
		start := time.Now()
		var wg sync.WaitGroup
		var failed atomic.Pointer[error]
		for w := range 16 {
			wg.Go(func() {
				for i := w; i < n; i += 16 {
					_, err := c.CoreV1().ConfigMaps(shardBenchNS).Create(context.Background(), &corev1.ConfigMap{
						ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%06d", i)},
						Data:       map[string]string{"n": "0", "payload": shardBenchPayload},
					}, metav1.CreateOptions{})
					if err != nil {
						failed.CompareAndSwap(nil, &err)
						return
					}
				}
			})
		}
		wg.Wait()
		if err := failed.Load(); err != nil {
			shardBenchErr = *err
			return
		}
		b.Logf("created %d ConfigMaps in %v", n, time.Since(start))
	})
	if shardBenchErr != nil {
		b.Fatal(shardBenchErr)
	}
	return shardBenchNS, n
}

// BenchmarkShardedReplicas runs 1, 2 and 4 replicas over one collection,
// with the apiserver filtering (ShardedListAndWatch) or the client
// (DisableServerFilter, same server), and reports per replica: the heap
// the replicas retain once synced (process heap growth / replicas), the
// bytes allocated to get there, the objects received by the list, and the
// watch events received for 1000 updates. One iteration is enough
// (-benchtime 1x).
func BenchmarkShardedReplicas(b *testing.B) {
	ns, objects := shardBenchSetup(b)
	const updates = 1000
	var gen atomic.Int64
	gen.Store(time.Now().UnixNano())
	for _, mode := range []string{"server", "client"} {
		for _, n := range []int{1, 2, 4} {
			b.Run(fmt.Sprintf("%s/replicas=%d", mode, n), func(b *testing.B) {
				var heap, alloc, listed, events, syncDur float64
				for b.Loop() {
					runtime.GC()
					var m0 runtime.MemStats
					runtime.ReadMemStats(&m0)
					start := time.Now()
					srcs, stop := startBenchReplicas(b, ns, n, mode == "client")
					syncDur += time.Since(start).Seconds()
					runtime.GC()
					var m1 runtime.MemStats
					runtime.ReadMemStats(&m1)
					heap += float64(m1.HeapAlloc-m0.HeapAlloc) / float64(n)
					alloc += float64(m1.TotalAlloc-m0.TotalAlloc) / float64(n)
					var recv0, deliv0 uint64
					for _, s := range srcs {
						r, d := s.Counts()
						recv0 += r
						deliv0 += d
					}
					if deliv0 != uint64(objects) {
						b.Fatalf("replicas delivered %d objects, want %d", deliv0, objects)
					}
					listed += float64(recv0) / float64(n)
					// Watch traffic: updates through the apiserver, until
					// every one is delivered by its replica.
					benchUpdate(b, ns, objects, updates, &gen)
					deadline := time.Now().Add(time.Minute)
					tick := time.NewTicker(10 * time.Millisecond)
					for {
						var recv, deliv uint64
						for _, s := range srcs {
							r, d := s.Counts()
							recv += r
							deliv += d
						}
						if deliv-deliv0 >= updates {
							events += float64(recv-recv0) / float64(n)
							break
						}
						if time.Now().After(deadline) {
							b.Fatalf("delivered %d of %d updates", deliv-deliv0, updates)
						}
						<-tick.C
					}
					tick.Stop()
					stop()
				}
				it := float64(b.N)
				b.ReportMetric(heap/it/(1<<20), "heapMB/replica")
				b.ReportMetric(alloc/it/(1<<20), "allocMB/replica")
				b.ReportMetric(listed/it, "listed/replica")
				b.ReportMetric(events/it, "events/replica")
				b.ReportMetric(syncDur/it*1000, "sync-ms")
			})
		}
	}
}

// startBenchReplicas starts n sharded informers (own clients, Split(i, n))
// and returns once all have synced.
func startBenchReplicas(b *testing.B, ns string, n int, clientOnly bool) ([]*k8s.Sharded[*corev1.ConfigMap], func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var srcs []*k8s.Sharded[*corev1.ConfigMap]
	var infs []*cmInformer
	for i := range n {
		client, err := kubernetes.NewForConfig(rest.CopyConfig(gatedEnv.Config))
		if err != nil {
			b.Fatal(err)
		}
		base, err := k8s.New(client.CoreV1().ConfigMaps(ns), cmItems, k8s.Options{})
		if err != nil {
			b.Fatal(err)
		}
		set, err := k8s.Split(i, n)
		if err != nil {
			b.Fatal(err)
		}
		src, err := k8s.NewSharded(k8s.ShardedOptions[*corev1.ConfigMap]{Source: base, Slices: k8s.NewStaticSlices(set), DisableServerFilter: clientOnly})
		if err != nil {
			b.Fatal(err)
		}
		inf, err := informer.NewSharedInformer(informer.Options[informer.NamespacedKey, *corev1.ConfigMap]{Source: src, KeyFunc: k8s.Key[*corev1.ConfigMap]})
		if err != nil {
			b.Fatal(err)
		}
		srcs, infs = append(srcs, src), append(infs, inf)
		wg.Go(func() { _ = inf.Run(ctx) })
	}
	for _, inf := range infs {
		if err := informer.WaitForSync(ctx, inf); err != nil {
			b.Fatal(err)
		}
	}
	return srcs, func() { cancel(); wg.Wait() }
}

// benchUpdate updates updates ConfigMaps spread over the collection with 8
// writers.
func benchUpdate(b *testing.B, ns string, objects, updates int, gen *atomic.Int64) {
	c := gatedEnv.Client.CoreV1().ConfigMaps(ns)
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < updates; i += 8 {
				cm := &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%06d", i*objects/updates)},
					Data:       map[string]string{"n": strconv.FormatInt(gen.Add(1), 10), "payload": shardBenchPayload},
				}
				if _, err := c.Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
}
