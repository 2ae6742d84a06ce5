package bench

import (
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"testing"
	"time"
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
						h := newHarness(s, harnessOptions{handlers: handlers})
						h.setList(tmpl, "1")
						h.start()
						h.waitAll(int64(n))
						h.nextWatch()
						stamps := make([]int64, m)
						for _, c := range h.counters {
							c.record(stamps, int64(n))
						}
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
