package etcd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// svc is the benchmark value: a service record of about 0.9 KB of JSON
// (what a registry or a controller keeps in etcd), decoded into maps,
// slices and nested structs like a real one.
type svc struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace"`
	UID         string            `json:"uid"`
	Generation  int64             `json:"generation"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	Spec        svcSpec           `json:"spec"`
	Status      svcStatus         `json:"status"`
}

type svcSpec struct {
	Image    string    `json:"image"`
	Replicas int       `json:"replicas"`
	Ports    []svcPort `json:"ports"`
	Env      []svcEnv  `json:"env"`
	CPU      string    `json:"cpu"`
	Memory   string    `json:"memory"`
}

type svcPort struct {
	Name     string `json:"name"`
	Port     int    `json:"port"`
	Protocol string `json:"protocol"`
}

type svcEnv struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type svcStatus struct {
	Phase         string    `json:"phase"`
	ReadyReplicas int       `json:"readyReplicas"`
	Conditions    []svcCond `json:"conditions"`
}

type svcCond struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Since   string `json:"since"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// newSvc returns the i-th benchmark value at generation gen.
func newSvc(i int, gen int64) svc {
	ns := fmt.Sprintf("team-%02d", i%40)
	name := fmt.Sprintf("svc-%07d", i)
	return svc{
		Name: name, Namespace: ns, UID: fmt.Sprintf("6f1c2a9e-%04x-4b7d-9c1e-%012x", i%65536, i), Generation: gen,
		Labels: map[string]string{
			"app": name, "team": ns, "tier": []string{"frontend", "backend", "data"}[i%3],
			"region": []string{"eu-west-1", "us-east-2", "ap-south-1"}[i%3],
		},
		Annotations: map[string]string{
			"deploy.example.com/revision": fmt.Sprint(gen),
			"deploy.example.com/change":   "release pipeline",
		},
		Spec: svcSpec{
			Image: fmt.Sprintf("registry.example.com/%s/%s:v1.%d.%d", ns, name, i%17, gen), Replicas: 1 + i%5,
			Ports: []svcPort{{"http", 8080, "TCP"}, {"grpc", 9090, "TCP"}, {"metrics", 9100, "TCP"}},
			Env: []svcEnv{
				{"LOG_LEVEL", "info"}, {"DB_HOST", "db." + ns + ".svc.cluster.local"},
				{"UPSTREAM", "https://api.example.com/v1"},
			},
			CPU: "500m", Memory: "512Mi",
		},
		Status: svcStatus{
			Phase: "Running", ReadyReplicas: 1 + i%5,
			Conditions: []svcCond{
				{"Available", "True", "2026-11-20T10:00:00Z", "MinimumReplicasAvailable", "Deployment has minimum availability."},
			},
		},
	}
}

// svcKey is the key of the i-th value under prefix.
func svcKey(prefix string, i int) string { return fmt.Sprintf("%ssvc-%07d", prefix, i) }

// loadSvcs writes values [from, to) at generation gen under prefix, 128 per
// transaction, and returns the revision of the last write.
func loadSvcs(tb testing.TB, c *clientv3.Client, prefix string, from, to int, gen int64) int64 {
	tb.Helper()
	ctx := context.Background()
	var rev int64
	for i := from; i < to; i += 128 {
		ops := make([]clientv3.Op, 0, 128)
		for j := i; j < min(i+128, to); j++ {
			v, _ := json.Marshal(newSvc(j, gen))
			ops = append(ops, clientv3.OpPut(svcKey(prefix, j), string(v)))
		}
		resp, err := c.Txn(ctx).Then(ops...).Commit()
		require.NoError(tb, err)
		rev = resp.Header.Revision
	}
	return rev
}

// processCPU returns the process's user+system CPU time (every goroutine,
// the embedded etcd's and the garbage collector's included).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// heapAfterGC is the live heap after two collections.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// heapPeak samples the heap every millisecond until stop: the peak of the
// bytes in heap objects (live and not yet collected, what GOGC lets grow)
// and of the live heap as marked by the last collection.
type heapPeak struct {
	stopc       chan struct{}
	done        chan struct{}
	objs, live  uint64
	samples     []metrics.Sample
	sampleMutex sync.Mutex
}

func startHeapPeak() *heapPeak {
	h := &heapPeak{stopc: make(chan struct{}), done: make(chan struct{}), samples: []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"},
	}}
	h.sample()
	go func() {
		defer close(h.done)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-h.stopc:
				return
			case <-t.C:
				h.sample()
			}
		}
	}()
	return h
}

func (h *heapPeak) sample() {
	h.sampleMutex.Lock()
	defer h.sampleMutex.Unlock()
	metrics.Read(h.samples)
	h.objs = max(h.objs, h.samples[0].Value.Uint64())
	h.live = max(h.live, h.samples[1].Value.Uint64())
}

// stop ends sampling and returns the peaks.
func (h *heapPeak) stop() (objs, live uint64) {
	h.sample()
	close(h.stopc)
	<-h.done
	return h.objs, h.live
}

// quantile returns the q-quantile of xs (sorted in place).
func quantile(xs []time.Duration, q float64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[min(len(xs)-1, int(q*float64(len(xs))))]
}

// kfmt prints 100000 as 100k and 1000000 as 1M.
func kfmt(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}
