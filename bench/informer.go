package bench

import (
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// syncWorkload: from Run to HasSynced and to the handler having received
// every initial add, for n small pods; peak heap during the sync and the
// live heap after it, both above the heap measured before the list response
// was built (so they include the decoded list, as in production).
func syncWorkload(cfg Config, n int) Workload {
	var tmpl []*corev1.Pod
	name := "N=" + kfmt(n)
	return Workload{
		Metrics: []Metric{
			{Group: "Informer sync", Name: "time to handler synced " + name, Unit: "ms", Target: Target{Better, 4}, Chart: true},
			{Group: "Informer sync", Name: "time to informer HasSynced " + name, Unit: "ms"},
			{Group: "Informer sync", Name: "peak heap during sync " + name, Unit: "MB", Target: Target{RatioAtMost, 0.5}, Chart: true},
			{Group: "Informer sync", Name: "retained heap after sync " + name, Unit: "B/obj"},
		},
		Run: func(s Side) []float64 {
			if tmpl == nil {
				tmpl = NewPods(Small, n, 1)
			}
			h := newHarness(s, 1, nil)
			base := heapAfterGC()
			h.setList(tmpl, "1")
			sm := startSampler()
			t0 := time.Now()
			h.start()
			<-h.synced
			t1 := time.Since(t0)
			h.waitAll(int64(n))
			t2 := time.Since(t0)
			peak := sm.Stop()
			retained := heapAfterGC()
			h.stop()
			return []float64{
				ms(t2), ms(t1),
				(float64(peak) - float64(base)) / 1e6,
				(float64(retained) - float64(base)) / float64(n),
			}
		},
	}
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// pool returns m small pods with a new resourceVersion each, cycling over
// the keys of a collection of n, Generation set to their index (for latency
// recording).
func pool(m, n int) []*corev1.Pod {
	ps := make([]*corev1.Pod, m)
	for i := range ps {
		ps[i] = NewPod(Small, i%n, 2+i)
		ps[i].Generation = int64(i)
	}
	return ps
}

// eventsWorkload: after syncing n pods, m Modified events back to back on
// the unbuffered watch; events/s until every handler has seen all of them.
func eventsWorkload(cfg Config, handlers int) Workload {
	n := cfg.n(10_000, 10_000)
	m := cfg.n(200_000, 50_000)
	var ps []*corev1.Pod
	var tmpl []*corev1.Pod
	name := fmt.Sprintf("events/s to %d handler(s), N=%s", handlers, kfmt(n))
	return Workload{
		Metrics: []Metric{
			{Group: "Informer events", Name: name, Unit: "events/s", HigherBetter: true, Target: Target{Better, 5}, Chart: true},
			{Group: "Informer events", Name: fmt.Sprintf("allocs per event, %d handler(s)", handlers), Unit: "allocs/event"},
		},
		Run: func(s Side) []float64 {
			if ps == nil {
				tmpl = NewPods(Small, n, 1)
				ps = pool(min(m, 10_000), n)
			}
			h := newHarness(s, handlers, nil)
			h.setList(tmpl, "1")
			h.start()
			h.waitAll(int64(n))
			h.nextWatch()
			runtime_GC()
			a0 := allocs()
			t0 := time.Now()
			for i := range m {
				h.send(ps[i%len(ps)])
			}
			h.waitAll(int64(n + m))
			el := time.Since(t0)
			al := allocs() - a0
			h.stop()
			return []float64{float64(m) / el.Seconds(), float64(al) / float64(m)}
		},
	}
}

// latencyWorkload: watch send → handler start, p50 and p99 over every
// handler callback. rate 0: ping-pong (one event in flight); else rate
// events/s offered as bursts of rate/1000 every millisecond.
func latencyWorkload(cfg Config, handlers, rate int) Workload {
	n := cfg.n(10_000, 10_000)
	k := cfg.n(20_000, 5_000)
	mode := "single event in flight"
	if rate > 0 {
		mode = fmt.Sprintf("%s events/s offered", kfmt(rate))
	}
	name := fmt.Sprintf("watch→handler, %s, %d handler(s)", mode, handlers)
	p99 := Metric{Group: "Informer latency", Name: name + " p99", Unit: "µs"}
	if rate == 0 && handlers == 1 {
		p99.Target = Target{RatioAtMost, 0.25}
		p99.Chart = true
	}
	var tmpl, ps []*corev1.Pod
	return Workload{
		Metrics: []Metric{{Group: "Informer latency", Name: name + " p50", Unit: "µs"}, p99},
		Run: func(s Side) []float64 {
			if ps == nil {
				tmpl = NewPods(Small, n, 1)
				ps = pool(k, n)
			}
			sends := make([]atomic.Int64, k)
			h := newHarness(s, handlers, sends)
			h.setList(tmpl, "1")
			h.start()
			h.waitAll(int64(n))
			for _, c := range h.counters {
				c.lat = make([]float64, 0, k)
			}
			h.nextWatch()
			runtime_GC()
			if rate == 0 {
				for i, p := range ps {
					sends[i].Store(since())
					h.send(p)
					h.waitAll(int64(n + i + 1))
				}
			} else {
				pace(rate, k, func(j int) {
					sends[j].Store(since())
					h.send(ps[j])
				})
				h.waitAll(int64(n + k))
			}
			h.stop()
			var all []float64
			for _, c := range h.counters {
				all = append(all, c.lat...)
			}
			slices.Sort(all)
			return []float64{pct(all, 0.50) / 1e3, pct(all, 0.99) / 1e3}
		},
	}
}

func pct(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(int(q*float64(len(sorted))), len(sorted)-1)]
}

// relistWorkload: an informer synced with n pods (steady state: live heap
// after GC), then the watch fails with "version expired" and both reflectors
// relist n fresh copies (new resourceVersion); peak heap from the moment the
// new list response exists until every handler has seen the n updates.
func relistWorkload(cfg Config) Workload {
	n := cfg.n(100_000, 20_000)
	var tmpl, tmpl2 []*corev1.Pod
	name := "N=" + kfmt(n)
	return Workload{
		Metrics: []Metric{
			{Group: "Relist", Name: "peak heap during relist / steady state, " + name, Unit: "×", Target: Target{GinformerAtMost, 1.2}, Chart: false},
			{Group: "Relist", Name: "steady-state heap (objects + informer), " + name, Unit: "MB"},
			{Group: "Relist", Name: "peak heap during relist, " + name, Unit: "MB"},
		},
		Run: func(s Side) []float64 {
			if tmpl == nil {
				tmpl = NewPods(Small, n, 1)
				tmpl2 = NewPods(Small, n, 2)
			}
			h := newHarness(s, 1, nil)
			base := heapAfterGC()
			h.setList(tmpl, "1")
			h.start()
			h.waitAll(int64(n))
			h.nextWatch()
			steady := float64(heapAfterGC()) - float64(base)
			sm := startSampler()
			h.setList(tmpl2, "2")
			h.expire()
			h.waitAll(int64(2 * n))
			peak := float64(sm.Stop()) - float64(base)
			h.stop()
			return []float64{peak / steady, steady / 1e6, peak / 1e6}
		},
	}
}
