package bench

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Every informer workload runs handlers that do handlerWork per callback.

// syncWorkload: from Run to HasSynced and to the handler having received
// every initial add, for n pods of shape sh; peak heap during the sync and
// the live heap after it, both above the heap measured before the list
// response was built (so they include the decoded list, as in production),
// and their difference: what the informer held or left as garbage beyond
// what it keeps (the "transient heap above the decoded list").
func syncWorkload(cfg Config, n int, sh Shape) Workload {
	var tmpl []*corev1.Pod
	name := fmt.Sprintf("N=%s (%s)", kfmt(n), ShapeDesc(sh))
	return Workload{
		Metrics: []Metric{
			{Group: "Informer sync", Name: "time to handler synced, " + name, Unit: "ms", Target: Target{Better, 3}, Chart: true},
			{Group: "Informer sync", Name: "time to informer HasSynced, " + name, Unit: "ms"},
			{Group: "Informer sync", Name: "peak heap during sync, " + name, Unit: "MB", Chart: true},
			{Group: "Informer sync", Name: "transient heap during sync (peak minus retained: above the decoded list), " + name, Unit: "MB", Target: Target{RatioAtMost, 0.5}},
			{Group: "Informer sync", Name: "retained heap after sync, " + name, Unit: "B/obj"},
		},
		Run: func(s Side) []float64 {
			if tmpl == nil {
				tmpl = NewPods(sh, n, 1)
			}
			h := newHarness(s, harnessOptions{handlers: 1})
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
				(float64(peak) - float64(retained)) / 1e6,
				(float64(retained) - float64(base)) / float64(n),
			}
		},
	}
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// pool returns m full pods with a new resourceVersion each, cycling over
// the keys of a collection of n.
func pool(m, n int) []*corev1.Pod {
	ps := make([]*corev1.Pod, m)
	for i := range ps {
		ps[i] = NewPod(Full, i%n, 2+i)
	}
	return ps
}

// eventsWorkload: after syncing n pods, m Modified events back to back on
// the watch; events/s until every handler has seen all of them,
// and the send → handler latency of those events (mostly the time they
// waited in queues while the burst went through).
func eventsWorkload(cfg Config, handlers int) Workload {
	n := cfg.n(10_000, 10_000)
	m := cfg.n(200_000, 50_000)
	var ps []*corev1.Pod
	var tmpl []*corev1.Pod
	name := fmt.Sprintf("%d working handler(s), N=%s (%s)", handlers, kfmt(n), ShapeDesc(Full))
	return Workload{
		Metrics: []Metric{
			{Group: "Informer events", Name: "events/s to " + name, Unit: "events/s", HigherBetter: true, Target: Target{Better, 4}, Chart: true},
			{Group: "Informer events", Name: "send→handler p50 during the burst, " + name, Unit: "ms"},
			{Group: "Informer events", Name: "send→handler p99 during the burst, " + name, Unit: "ms"},
			{Group: "Informer events", Name: "CPU per event (whole process, all goroutines), " + name, Unit: "µs/event"},
			{Group: "Informer events", Name: "allocs per event, " + name, Unit: "allocs/event"},
		},
		Run: func(s Side) []float64 {
			if ps == nil {
				tmpl = NewPods(Full, n, 1)
				ps = pool(min(m, 10_000), n)
			}
			h := syncedHarness(s, harnessOptions{handlers: handlers}, tmpl)
			stamps := h.recordNext(m, n)
			runtime_GC()
			a0 := allocs()
			c0 := cpuTime()
			t0 := time.Now()
			for i := range m {
				stamps[i] = since()
				h.send(ps[i%len(ps)])
			}
			h.waitAll(int64(n + m))
			el := time.Since(t0)
			cpu := cpuTime() - c0
			al := allocs() - a0
			h.stop()
			lat := h.latencies()
			return []float64{float64(m) / el.Seconds(), pct(lat, 0.50) / 1e6, pct(lat, 0.99) / 1e6,
				float64(cpu) / float64(m) / 1e3, float64(al) / float64(m)}
		},
	}
}

// latencies returns every handler's latency samples, sorted.
func (h *harness) latencies() []float64 {
	var all []float64
	for _, c := range h.counters {
		all = append(all, c.latencies()...)
	}
	slices.Sort(all)
	return all
}

// latencyWorkload: watch send → handler start, p50 and p99 over every
// handler callback. rate 0: ping-pong (one event in flight); else rate
// events/s offered as bursts of rate/1000 every millisecond, each event's
// latency counted from its burst's arrival (see pace).
func latencyWorkload(cfg Config, handlers, rate int) Workload {
	n := cfg.n(10_000, 10_000)
	k := cfg.n(20_000, 5_000)
	mode := "single event in flight"
	if rate > 0 {
		mode = fmt.Sprintf("%s events/s offered", kfmt(rate))
	}
	name := fmt.Sprintf("watch→handler, %s, %d working handler(s), %s", mode, handlers, ShapeDesc(Full))
	p99 := Metric{Group: "Informer latency", Name: name + ", p99", Unit: "µs"}
	if rate == 0 {
		p99.Target = Target{RatioAtMost, 0.5}
		p99.Chart = handlers == 1
	}
	var tmpl, ps []*corev1.Pod
	return Workload{
		Metrics: []Metric{{Group: "Informer latency", Name: name + ", p50", Unit: "µs"}, p99},
		Run: func(s Side) []float64 {
			if ps == nil {
				tmpl = NewPods(Full, n, 1)
				ps = pool(k, n)
			}
			h := syncedHarness(s, harnessOptions{handlers: handlers}, tmpl)
			stamps := h.recordNext(k, n)
			runtime_GC()
			if rate == 0 {
				for i, p := range ps {
					stamps[i] = since()
					h.send(p)
					h.waitAll(int64(n + i + 1))
				}
			} else {
				pace(rate, k, func(j int, arrived int64) {
					stamps[j] = arrived
					h.send(ps[j])
				})
				h.waitAll(int64(n + k))
			}
			h.stop()
			all := h.latencies()
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

// relistWorkload: an informer synced with n full pods (steady state: live
// heap after GC), then the watch fails with "version expired" and both
// reflectors relist: the same n pods, of which 1% changed (a new
// resourceVersion and a new status), plus one new pod at the end of the
// list (the sentinel: when the handler gets its add, it has been handed
// everything the relist produced before it). The relist is served page by
// page, each page decoded (deep-copied) when the reflector asks for it.
// Update notifications delivered by then, and peak heap from the moment the
// watch expires. A second relist (the same pods, a new sentinel) runs with
// GOGC=5, so that the sampled heap follows the data actually held rather
// than the garbage the collector lets accumulate at GOGC=100.
func relistWorkload(cfg Config) Workload {
	n := cfg.n(100_000, 20_000)
	changed := n / 100
	var tmpl, tmpl2, tmpl3 []*corev1.Pod
	name := fmt.Sprintf("N=%s, %s changed (%s)", kfmt(n), kfmt(changed), ShapeDesc(Full))
	return Workload{
		Metrics: []Metric{
			{Group: "Relist", Name: "update notifications delivered, " + name, Unit: "updates", Target: Target{GinformerAtMost, float64(changed)}},
			{Group: "Relist", Name: "time from the watch expiring to the sentinel's add (reflector backoff included), " + name, Unit: "ms"},
			{Group: "Relist", Name: "peak heap during relist / steady state, sampled every 5 ms, GOGC=100, " + name, Unit: "×"},
			{Group: "Relist", Name: "peak live heap during relist / steady state (data held at once: 2 GCs at every 20th page and every 10,000th callback), " + name, Unit: "×", Target: Target{GinformerAtMost, 1.3}},
			{Group: "Relist", Name: "steady-state heap (objects + informer), " + name, Unit: "MB"},
			{Group: "Relist", Name: "peak heap during relist, sampled every 5 ms, GOGC=100, " + name, Unit: "MB"},
		},
		Run: func(s Side) []float64 {
			if tmpl == nil {
				tmpl = NewPods(Full, n, 1)
				// change 1% of the list, spread over it, at offset off
				change := func(list []*corev1.Pod, off int, rv string) []*corev1.Pod {
					out := slices.Clone(list)
					for i := off; i < n; i += 100 {
						p := list[i].DeepCopy()
						p.ResourceVersion = rv
						p.Status.Conditions[2].LastTransitionTime.Time = p.Status.Conditions[2].LastTransitionTime.Add(time.Minute)
						p.Status.PodIP = "10.244.9." + strconv.Itoa(i%250)
						out[i] = p
					}
					return out
				}
				tmpl2 = change(tmpl, 0, "2")
				tmpl3 = change(tmpl2, 50, "3")
				tmpl3 = append(tmpl3, NewPod(Full, n+1, 3)) // the second relist's sentinel
				tmpl2 = append(tmpl2, NewPod(Full, n, 2))   // the first relist's sentinel
			}
			h := newHarness(s, harnessOptions{handlers: 1})
			base := heapAfterGC()
			h.setList(tmpl, "1")
			h.start()
			h.waitAll(int64(n))
			h.nextWatch()
			steady := float64(heapAfterGC()) - float64(base)
			c := h.counters[0]
			// relist expires the watch, serves list page by page and waits
			// for the sentinel's add. Pages are decoded (deep-copied) when
			// asked for. ginformer's reflector asks for pages of 500;
			// client-go's relists from a known resourceVersion ask for the
			// whole list at once (Limit 0, so that the apiserver serves it
			// from its watch cache), as it does against a real apiserver.
			relist := func(list []*corev1.Pod, rv string) time.Duration {
				seen := c.watch(list[len(list)-1].Name)
				h.setPagedList(list, rv)
				t0 := time.Now()
				h.expire()
				select {
				case <-seen:
				case <-time.After(5 * time.Minute):
					panic(fmt.Sprintf("%v: relist sentinel never added", s))
				}
				el := time.Since(t0)
				h.nextWatch()
				return el
			}
			u0 := c.updates.Load()
			sm := startSampler()
			el := relist(tmpl2, "2")
			peak := float64(sm.Stop()) - float64(base)
			updates := c.updates.Load() - u0

			runtime_GC()
			pr := new(liveProbe)
			h.probe.Store(pr)
			c.probe.Store(pr)
			relist(tmpl3, "3")
			h.probe.Store(nil)
			c.probe.Store(nil)
			live := float64(pr.Peak()) - float64(base)
			h.stop()
			return []float64{float64(updates), ms(el), peak / steady, live / steady, steady / 1e6, peak / 1e6}
		},
	}
}
