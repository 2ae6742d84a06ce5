package bench

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ginformer/ginformer/informer"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// Indexer workloads: client-go's cache.NewIndexer(MetaNamespaceKeyFunc,
// {namespace, labels}) against ginformer's Indexer with NamespacedKey and the
// same two index functions.

type giIndexer = informer.Indexer[informer.NamespacedKey, *corev1.Pod]

func newGIIndexer() *giIndexer {
	s, err := informer.NewIndexer(informer.IndexerOptions[informer.NamespacedKey, *corev1.Pod]{
		KeyFunc: giKey, Indexes: giIndexes(),
	})
	if err != nil {
		panic(err)
	}
	return s
}

func newCGIndexer() cache.Indexer {
	return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cgIndexers())
}

// filled returns both indexers holding pods.
func filledCG(pods []*corev1.Pod) cache.Indexer {
	s := newCGIndexer()
	for _, p := range pods {
		_ = s.Add(p)
	}
	return s
}

func filledGI(pods []*corev1.Pod) *giIndexer {
	s := newGIIndexer()
	for _, p := range pods {
		_ = s.Add(p)
	}
	return s
}

// bump returns copies of pods with a new resourceVersion; with move, the
// tier label changes (the object moves between index values).
func bump(pods []*corev1.Pod, rv int, move bool) []*corev1.Pod {
	out := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		q := p.DeepCopy()
		q.ResourceVersion = strconv.Itoa(rv)
		if move {
			q.Labels[tierLabel] = "tier-" + strconv.Itoa((i+1)%10)
		}
		out[i] = q
	}
	return out
}

func indexerWorkloads(cfg Config, n int) []Workload {
	var ws []Workload
	{
		pods := NewPods(Small, n, 1)
		same := bump(pods, 2, false)
		moved := bump(pods, 3, true)
		var cg cache.Indexer
		var gi *giIndexer
		// Add: a fresh indexer per repetition, N adds.
		ws = append(ws, Workload{
			Metrics: []Metric{
				{Group: "Indexer", Name: "Add N=" + kfmt(n), Unit: "ns/obj", Target: Target{Better, 1}},
				{Group: "Indexer", Name: "Add N=" + kfmt(n), Unit: "allocs/obj"},
			},
			Run: func(s Side) []float64 {
				ns, al := loop(cfg.MinTime, func() { cg, gi = newCGIndexer(), newGIIndexer() }, func() int {
					if s == Ginformer {
						for _, p := range pods {
							_ = gi.Add(p)
						}
					} else {
						for _, p := range pods {
							_ = cg.Add(p)
						}
					}
					return n
				})
				cg, gi = nil, nil
				return []float64{ns, al}
			},
		})
		for _, u := range []struct {
			name string
			objs []*corev1.Pod
		}{{"Update (same labels)", same}, {"Update (tier label moves)", moved}} {
			ws = append(ws, Workload{
				Metrics: []Metric{
					{Group: "Indexer", Name: u.name + " N=" + kfmt(n), Unit: "ns/op", Target: Target{Better, 5}, Chart: true},
					{Group: "Indexer", Name: u.name + " N=" + kfmt(n), Unit: "allocs/op"},
				},
				Run: func(s Side) []float64 {
					if s == Ginformer {
						gi = filledGI(pods)
					} else {
						cg = filledCG(pods)
					}
					flip := false
					ns, al := loop(cfg.MinTime, nil, func() int {
						// Alternate between the new and the original state so
						// every update changes something.
						src := u.objs
						if flip {
							src = pods
						}
						flip = !flip
						if s == Ginformer {
							for _, p := range src {
								_ = gi.Update(p)
							}
						} else {
							for _, p := range src {
								_ = cg.Update(p)
							}
						}
						return n
					})
					cg, gi = nil, nil
					return []float64{ns, al}
				},
			})
		}
		ws = append(ws, Workload{
			Metrics: []Metric{
				{Group: "Indexer", Name: "Delete N=" + kfmt(n), Unit: "ns/obj", Target: Target{Better, 1}},
				{Group: "Indexer", Name: "Delete N=" + kfmt(n), Unit: "allocs/obj"},
			},
			Run: func(s Side) []float64 {
				ns, al := loop(cfg.MinTime, func() {
					if s == Ginformer {
						gi = filledGI(pods)
					} else {
						cg = filledCG(pods)
					}
				}, func() int {
					if s == Ginformer {
						for _, p := range pods {
							_ = gi.Delete(p)
						}
					} else {
						for _, p := range pods {
							_ = cg.Delete(p)
						}
					}
					return n
				})
				cg, gi = nil, nil
				return []float64{ns, al}
			},
		})
	}
	return ws
}

// queryWorkloads: ByIndex and List on 100k objects.
func queryWorkloads(cfg Config) []Workload {
	n := cfg.n(100_000, 100_000)
	pods := NewPods(Small, n, 1)
	var cg cache.Indexer
	var gi *giIndexer
	setup := func(s Side) {
		if s == Ginformer {
			if gi == nil {
				gi = filledGI(pods)
			}
		} else if cg == nil {
			cg = filledCG(pods)
		}
	}
	var ws []Workload
	byLabel := giIndexes()[1] // the labels index, as declared on gi
	for _, q := range []struct {
		match        int
		index, value string
	}{
		{1, labelsIndex, podNameLabel + "=pod-7"},
		{100, labelsIndex, appLabel + "=app-0"},
		{n / 10, labelsIndex, tierLabel + "=tier-7"},
	} {
		name := fmt.Sprintf("ByIndex %s of %s", kfmt(q.match), kfmt(n))
		ws = append(ws, Workload{
			Metrics: []Metric{
				{Group: "Query", Name: name, Unit: "ns/op", Target: Target{Better, 5}, Chart: true},
				{Group: "Query", Name: name, Unit: "allocs/op", Target: Target{GinformerAtMost, 0}},
			},
			Run: func(s Side) []float64 {
				setup(s)
				var ref informer.IndexRef[informer.NamespacedKey, *corev1.Pod]
				if s == Ginformer {
					// A hot-path caller resolves the index once: its queries
					// then allocate nothing (ByIndex also returns an error,
					// which costs 2 small allocations per call).
					var err error
					if ref, err = gi.IndexRef(byLabel); err != nil {
						panic(err)
					}
				}
				var sink int
				ns, al := loop(cfg.MinTime, nil, func() int {
					for range 10 {
						if s == Ginformer {
							for _, p := range ref.ByValue(q.value) {
								sink += len(p.Name)
							}
						} else {
							objs, err := cg.ByIndex(q.index, q.value)
							if err != nil {
								panic(err)
							}
							for _, o := range objs {
								sink += len(o.(*corev1.Pod).Name)
							}
						}
					}
					return 10
				})
				if sink == 0 {
					panic("ByIndex matched nothing")
				}
				return []float64{ns, al}
			},
		})
	}
	ws = append(ws, Workload{
		Metrics: []Metric{
			{Group: "Query", Name: "List of " + kfmt(n), Unit: "µs/op", Target: Target{Better, 1}},
			{Group: "Query", Name: "List of " + kfmt(n), Unit: "allocs/op"},
		},
		Run: func(s Side) []float64 {
			setup(s)
			var sink int
			ns, al := loop(cfg.MinTime, nil, func() int {
				if s == Ginformer {
					sink += len(gi.List())
				} else {
					sink += len(cg.List())
				}
				return 1
			})
			_ = sink
			return []float64{ns / 1e3, al}
		},
	})
	return ws
}

// giByIndexCount ranges over a ByIndex result, as a caller would.
func giByIndexCount(gi *giIndexer, index, value string) int {
	seq, err := gi.ByIndex(index, value)
	if err != nil {
		panic(err)
	}
	sink := 0
	for _, p := range seq {
		sink += len(p.Name)
	}
	return sink
}

// listersWorkload: writes per second on a 10k store while 10 goroutines
// list one namespace (1k objects) in a loop.
func listersWorkload(cfg Config) Workload {
	n := cfg.n(10_000, 10_000)
	dur := cfg.window()
	pods := NewPods(Small, n, 1)
	upd := bump(pods, 2, false)
	return Workload{
		Metrics: []Metric{
			{Group: "Contention", Name: "writes/s, 10 goroutines listing a namespace, N=" + kfmt(n), Unit: "writes/s", HigherBetter: true, Target: Target{Better, 1000}, Chart: true},
			{Group: "Contention", Name: "namespace lists/s by the 10 listers, N=" + kfmt(n), Unit: "lists/s", HigherBetter: true},
		},
		Run: func(s Side) []float64 {
			var list func() int
			var write func(p *corev1.Pod)
			if s == Ginformer {
				gi := filledGI(pods)
				list = func() int { return giByIndexCount(gi, nsIndex, "ns-3") }
				write = func(p *corev1.Pod) { _ = gi.Update(p) }
			} else {
				cg := filledCG(pods)
				list = func() int {
					objs, _ := cg.ByIndex(cache.NamespaceIndex, "ns-3")
					sink := 0
					for _, o := range objs {
						sink += len(o.(*corev1.Pod).Name)
					}
					return sink
				}
				write = func(p *corev1.Pod) { _ = cg.Update(p) }
			}
			var stop atomic.Bool
			var lists atomic.Int64
			var wg sync.WaitGroup
			for range 10 {
				wg.Go(func() {
					for !stop.Load() {
						list()
						lists.Add(1)
					}
				})
			}
			writes := 0
			t0 := time.Now()
			for time.Since(t0) < dur {
				if writes%2 == 0 {
					write(upd[writes%n])
				} else {
					write(pods[writes%n])
				}
				writes++
			}
			el := time.Since(t0).Seconds()
			stop.Store(true)
			l := lists.Load()
			wg.Wait()
			return []float64{float64(writes) / el, float64(l) / el}
		},
	}
}

func newGIIndexerNoIndex() *giIndexer {
	s, err := informer.NewIndexer(informer.IndexerOptions[informer.NamespacedKey, *corev1.Pod]{KeyFunc: giKey})
	if err != nil {
		panic(err)
	}
	return s
}

func newCGIndexerNoIndex() cache.Indexer {
	return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
}
