package bench

import (
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ginformer/ginformer/informer"
	corev1 "k8s.io/api/core/v1"
)

// readWriteWorkload: an informer holding n full pods on n/40 nodes, with a
// node index; 8 goroutines query ByIndex(node) (about 40 matches, ranging
// over every match) in a loop while one writer sends Modified events back to
// back through the informer's watch for a fixed time. The events cycle over
// 10,000 pods spread over all nodes, and the writer sends them faster than
// the informer applies them (the reflector queues an event in less time than
// the processing loop takes to index, store and notify it), so the queue
// grows and the informer's batches reach their limit (BatchSize, 1000 keys
// by default): the case where a reader could wait for a whole batch. The
// query latency (p50, p99, p99.9) is what a controller's lister call waits
// while the informer applies events; writes/s counts events until the
// handler (one, working) has received all of them, so both sides are
// measured to the point where the cache holds every write.
//
// Two variants share the pods: readers that query back to back, and busy
// readers that spend 40 µs of CPU between queries (a controller doing
// work with what it read). With busy readers the 8 readers and the writer
// oversubscribe the 2 cores, so a reader that blocks on the store's lock
// is parked and waits for the scheduler to run it again.
func readWriteWorkloads(cfg Config) []Workload {
	var d rwPods
	return []Workload{readWriteWorkload(cfg, &d, 0), readWriteWorkload(cfg, &d, 40*time.Microsecond)}
}

// rwPods are the read-under-writes workloads' pods, built once for both.
type rwPods struct{ tmpl, ps []*corev1.Pod }

func readWriteWorkload(cfg Config, d *rwPods, work time.Duration) Workload {
	n := cfg.n(100_000, 100_000)
	dur := cfg.window()
	const readers = 8
	what := fmt.Sprintf("%d readers ByIndex(node) (~%d matches)", readers, podsPerNode)
	if work > 0 {
		what += fmt.Sprintf(" spending %v of CPU between queries", work)
	}
	name := fmt.Sprintf("%s + 1 writer at full rate, N=%s (%s)", what, kfmt(n), ShapeDesc(Full))
	return Workload{
		Metrics: []Metric{
			{Group: "Read under writes", Name: "query p50, " + name, Unit: "µs"},
			{Group: "Read under writes", Name: "query p99, " + name, Unit: "µs", Target: Target{GinformerAtMost, 100}, Chart: false},
			{Group: "Read under writes", Name: "query p99.9, " + name, Unit: "µs"},
			{Group: "Read under writes", Name: "queries/s, " + name, Unit: "queries/s", HigherBetter: true},
			{Group: "Read under writes", Name: "writes/s applied, " + name, Unit: "writes/s", HigherBetter: true, Target: Target{Better, 3}, Chart: true},
		},
		Run: func(s Side) []float64 {
			if d.tmpl == nil {
				d.tmpl = NewPods(Full, n, 1)
				d.ps = spreadPool(min(n, 10_000), n)
			}
			tmpl, ps := d.tmpl, d.ps
			h := syncedHarness(s, harnessOptions{handlers: 1, nodeIndex: true}, tmpl)
			query := h.nodeQuery()
			nodes := make([]string, max(n/podsPerNode, 1))
			for i := range nodes {
				nodes[i] = "node-" + strconv.Itoa(i)
			}
			runtime_GC()

			var stop atomic.Bool
			var wg sync.WaitGroup
			hists := make([]latHist, readers)
			counts := make([]int64, readers)
			for r := range readers {
				wg.Go(func() {
					hist := &hists[r]
					i := r * 7
					for !stop.Load() {
						node := nodes[i%len(nodes)]
						i++
						t0 := since()
						if query(node) == 0 {
							panic("ByIndex(node) matched nothing")
						}
						hist.add(since() - t0)
						counts[r]++
						for w, e := int64(work), since(); w > 0 && since()-e < w; {
						}
					}
				})
			}
			t0 := time.Now()
			m := 0
			for time.Since(t0) < dur {
				for range 64 {
					h.send(ps[m%len(ps)])
					m++
				}
			}
			h.waitAll(int64(n + m))
			el := time.Since(t0).Seconds()
			stop.Store(true)
			wg.Wait()
			h.stop()
			var all latHist
			var q int64
			for r := range readers {
				all.merge(&hists[r])
				q += counts[r]
			}
			return []float64{all.quantile(0.50) / 1e3, all.quantile(0.99) / 1e3, all.quantile(0.999) / 1e3, float64(q) / el, float64(m) / el}
		},
	}
}

// nodeQuery returns a function that ranges over ByIndex(node, value) of the
// harness's informer, as a caller would, and returns a sum over the matches.
func (h *harness) nodeQuery() func(node string) int {
	if h.side == ClientGo {
		idx := h.cgInf.GetIndexer()
		return func(node string) int {
			objs, err := idx.ByIndex(nodeIndex, node)
			if err != nil {
				panic(err)
			}
			sink := 0
			for _, o := range objs {
				sink += len(o.(*corev1.Pod).Name)
			}
			return sink
		}
	}
	ref, err := h.giInf.Lister().IndexRef(giNodeIndex())
	if err != nil {
		panic(err)
	}
	return func(node string) int { return giSum(ref, node) }
}

func giSum(ref informer.IndexRef[informer.NamespacedKey, *corev1.Pod], node string) int {
	sink := 0
	for _, p := range ref.ByValue(node) {
		sink += len(p.Name)
	}
	return sink
}

// latHist is a log-scale histogram of durations in ns: buckets 2% wide from
// 1 ns to about an hour, so quantiles are within 2% without keeping every
// sample (a reader makes millions of queries).
type latHist struct {
	counts [histBuckets]int64
	n      int64
}

const (
	histBuckets = 1400
	histGrowth  = 1.02
)

var histLogGrowth = math.Log(histGrowth)

func (h *latHist) add(ns int64) {
	b := 0
	if ns > 1 {
		b = min(int(math.Log(float64(ns))/histLogGrowth), histBuckets-1)
	}
	h.counts[b]++
	h.n++
}

func (h *latHist) merge(o *latHist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
}

// quantile returns the upper bound of the bucket holding quantile q, in ns.
func (h *latHist) quantile(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	want := int64(math.Ceil(q * float64(h.n)))
	var seen int64
	for i, c := range h.counts {
		seen += c
		if seen >= want {
			return math.Pow(histGrowth, float64(i+1))
		}
	}
	return math.Pow(histGrowth, histBuckets)
}

// spreadPool returns m full pods with a new resourceVersion each, whose keys
// are spread evenly over a collection of n (so that the writes touch every
// node's bucket, not only the first nodes').
func spreadPool(m, n int) []*corev1.Pod {
	stride := max(n/m, 1)
	ps := make([]*corev1.Pod, m)
	for i := range ps {
		ps[i] = NewPod(Full, (i*stride)%n, 2+i)
	}
	return ps
}
