package bench

import (
	"strconv"
	"sync"
	"time"
)

// floorWorkloads: what the machine itself costs for the primitives every
// path above is built from (one value: the Go runtime, no library).
func floorWorkloads(cfg Config) []Workload {
	const n = 100_000
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "ns-" + strconv.Itoa(i%10) + "/pod-" + strconv.Itoa(i)
	}
	one := func(name, unit string, f func() float64) Workload {
		return Workload{Floor: true, Metrics: []Metric{{Group: "Floor", Name: name, Unit: unit}},
			Run: func(Side) []float64 { return []float64{f()} }}
	}
	type obj [2]int // a small object: 16 bytes
	return []Workload{
		one("map[string]*T insert, growing from empty, 100k", "ns/op", func() float64 {
			ns, _ := loop(cfg.MinTime, nil, func() int {
				m := map[string]*obj{}
				o := &obj{}
				for _, k := range keys {
					m[k] = o
				}
				return n
			})
			return ns
		}),
		one("map[string]*T insert, presized, 100k", "ns/op", func() float64 {
			ns, _ := loop(cfg.MinTime, nil, func() int {
				m := make(map[string]*obj, n)
				o := &obj{}
				for _, k := range keys {
					m[k] = o
				}
				return n
			})
			return ns
		}),
		one("sync.Mutex lock+unlock, uncontended", "ns/op", func() float64 {
			var mu sync.Mutex
			ns, _ := loop(cfg.MinTime, nil, func() int {
				for range 100_000 {
					mu.Lock()
					//lint:ignore SA2001 the floor is an empty critical section
					mu.Unlock()
				}
				return 100_000
			})
			return ns
		}),
		one("channel handoff between 2 goroutines, unbuffered", "ns/item", func() float64 { return chanHandoff(cfg.MinTime, 0) }),
		one("channel handoff between 2 goroutines, cap 1024", "ns/item", func() float64 { return chanHandoff(cfg.MinTime, 1024) }),
		one("channel ping-pong round trip", "ns/op", func() float64 {
			ping, pong := make(chan int), make(chan int)
			go func() {
				for v := range ping {
					pong <- v
				}
				close(pong)
			}()
			ns, _ := loop(cfg.MinTime, nil, func() int {
				for i := range 10_000 {
					ping <- i
					<-pong
				}
				return 10_000
			})
			close(ping)
			<-pong
			return ns
		}),
		one("time.Now", "ns/op", func() float64 {
			var sink int64
			ns, _ := loop(cfg.MinTime, nil, func() int {
				for range 10_000 {
					sink += time.Now().UnixNano()
				}
				return 10_000
			})
			_ = sink
			return ns
		}),
	}
}

func chanHandoff(min time.Duration, capacity int) float64 {
	ch := make(chan int, capacity)
	done := make(chan struct{})
	go func() {
		for range ch {
		}
		close(done)
	}()
	ns, _ := loop(min, nil, func() int {
		for i := range 100_000 {
			ch <- i
		}
		return 100_000
	})
	close(ch)
	<-done
	return ns
}
