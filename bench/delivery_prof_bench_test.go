package bench

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ginformer/ginformer/informer"
	corev1 "k8s.io/api/core/v1"
)

// BenchmarkDeliveryProfile runs the "Informer events" burst (or, with
// latency=1, the single-event ping-pong of "Informer latency") on one side
// with the compare command's workload, and CPU-profiles only that phase (not
// the sync before it) into the file named by $DELIVERY_PROFILE, if set. It
// reports events/s, CPU per event and the p50/p99 watch→handler latency.
//
//	cd bench && DELIVERY_PROFILE=/tmp/burst.prof go test -run '^$' \
//	  -bench 'DeliveryProfile/ginformer/events/handlers=1$' -benchtime 1x
func BenchmarkDeliveryProfile(b *testing.B) {
	n := 10_000
	tmpl := NewPods(Full, n, 1)
	ps := pool(10_000, n)
	for _, s := range []Side{ClientGo, Ginformer} {
		for _, mode := range []string{"events", "latency"} {
			for _, handlers := range []int{1, 10} {
				b.Run(fmt.Sprintf("%s/%s/handlers=%d", s, mode, handlers), func(b *testing.B) {
					m := 200_000
					if mode == "latency" {
						m = 20_000
					}
					var lat []float64
					var el time.Duration
					var cpu int64
					for it := range b.N {
						h := syncedHarness(s, harnessOptions{handlers: handlers}, tmpl)
						stamps := h.recordNext(m, n)
						runtime_GC()
						stop := startProfile(b, it)
						c0 := cpuTime()
						t0 := time.Now()
						for i := range m {
							stamps[i] = since()
							h.send(ps[i%len(ps)])
							if mode == "latency" {
								h.waitAll(int64(n + i + 1))
							}
						}
						h.waitAll(int64(n + m))
						el += time.Since(t0)
						cpu += cpuTime() - c0
						stop()
						h.stop()
						lat = append(lat, h.latencies()...)
					}
					slices.Sort(lat)
					ev := float64(m * b.N)
					b.ReportMetric(ev/el.Seconds(), "events/s")
					b.ReportMetric(float64(cpu)/ev, "cpu-ns/event")
					b.ReportMetric(pct(lat, 0.50), "p50-ns")
					b.ReportMetric(pct(lat, 0.99), "p99-ns")
					if os.Getenv("DELIVERY_PCTS") != "" {
						for _, q := range []float64{0.5, 0.8, 0.9, 0.95, 0.97, 0.98, 0.99, 0.995, 0.999} {
							b.Logf("p%g %.1fµs", q*100, pct(lat, q)/1e3)
						}
					}
				})
			}
		}
	}
}

// startProfile starts a CPU profile of iteration it into $DELIVERY_PROFILE
// (suffixed with "."+it after the first), if set, and returns the function
// that stops it. Merge several with go tool pprof -proto.
func startProfile(b *testing.B, it int) func() {
	path := os.Getenv("DELIVERY_PROFILE")
	if path == "" {
		return func() {}
	}
	if it > 0 {
		path += "." + strconv.Itoa(it)
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// BenchmarkDeliveryFloor measures the floor under the "Informer events"
// burst on ginformer's side: the bench's sender and a Reflector on the same
// WatchStream (buffered as the workloads'), the reflector applying each event to a store that
// only counts it. Whatever the informer does per event comes on top of this
// rendezvous.
//
//	cd bench && go test -run '^$' -bench DeliveryFloor -benchtime 200000x
func BenchmarkDeliveryFloor(b *testing.B) {
	ps := pool(10_000, 10_000)
	w, stop := floorReflector(b, &countingStore{})
	defer stop()
	b.ResetTimer()
	c0 := cpuTime()
	for i := range b.N {
		p := ps[i%len(ps)]
		_ = since() // as the events workload stamps each send
		if !w.Send(informer.Event[*corev1.Pod]{Type: informer.EventModified, Object: p, Version: p.ResourceVersion}) {
			b.Fatal("watch stopped")
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/event")
}

// floorReflector runs a Reflector from an empty list into st and returns its
// watch stream (watchBuffer events, as the workloads') and a function that stops it
// and waits for it.
func floorReflector(b *testing.B, st informer.ReflectorStore[*corev1.Pod]) (*informer.WatchStream[*corev1.Pod], func()) {
	ws := make(chan *informer.WatchStream[*corev1.Pod], 1)
	src := informer.SourceFuncs[*corev1.Pod]{
		ListFunc: func(context.Context, informer.ListOptions) (informer.ListPage[*corev1.Pod], error) {
			return informer.ListPage[*corev1.Pod]{Version: "1"}, nil
		},
		WatchFunc: func(ctx context.Context, _ informer.WatchOptions) (informer.Watcher[*corev1.Pod], error) {
			w := informer.NewWatchStream[*corev1.Pod](ctx, watchBuffer)
			ws <- w
			return w, nil
		},
	}
	r, err := informer.NewReflector(informer.ReflectorOptions[*corev1.Pod]{Source: src, Store: st})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	return <-ws, func() { cancel(); <-done }
}

// countingStore is a ReflectorStore that only counts what it is given.
type countingStore struct{ n atomic.Int64 }

func (s *countingStore) Add(*corev1.Pod) error               { s.n.Add(1); return nil }
func (s *countingStore) Update(*corev1.Pod) error            { s.n.Add(1); return nil }
func (s *countingStore) Delete(*corev1.Pod) error            { s.n.Add(1); return nil }
func (s *countingStore) Replace([]*corev1.Pod, string) error { return nil }
func (s *countingStore) Resync() error                       { return nil }

// BenchmarkDeliveryFloorLatency is the ping-pong of "Informer latency"
// (one event in flight) reduced to the workload's own hand-offs: the sender
// stamps and sends one event on the WatchStream, the reflector
// hands it to a store that records the latency and wakes the sender, which
// waits for that before the next send. The two goroutine hops it measures
// (sender → reflector → sender) are part of every sample of the real
// workload, on both sides.
//
//	cd bench && go test -run '^$' -bench DeliveryFloorLatency -benchtime 20000x
func BenchmarkDeliveryFloorLatency(b *testing.B) {
	ps := pool(10_000, 10_000)
	st := &stampingStore{stamps: make([]int64, b.N), lat: make([]float64, 0, b.N), c: &counter{}}
	st.c.work.byNode = make(map[string]int)
	w, stop := floorReflector(b, st)
	defer stop()
	ctx := context.Background()
	runtime_GC()
	b.ResetTimer()
	for i := range b.N {
		p := ps[i%len(ps)]
		st.stamps[i] = since()
		if !w.Send(informer.Event[*corev1.Pod]{Type: informer.EventModified, Object: p, Version: p.ResourceVersion}) {
			b.Fatal("watch stopped")
		}
		if err := st.c.wait(ctx, int64(i+1)); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	slices.Sort(st.lat)
	b.ReportMetric(pct(st.lat, 0.50), "p50-ns")
	b.ReportMetric(pct(st.lat, 0.99), "p99-ns")
}

// stampingStore records, for each Update, the time since the sender's stamp,
// then counts it on c (waking a sender waiting for it).
type stampingStore struct {
	countingStore
	stamps []int64
	lat    []float64
	c      *counter
}

func (s *stampingStore) Update(p *corev1.Pod) error {
	k := len(s.lat)
	if k < len(s.stamps) {
		s.lat = append(s.lat, float64(since()-s.stamps[k]))
	}
	s.c.hit(p, true)
	return nil
}
