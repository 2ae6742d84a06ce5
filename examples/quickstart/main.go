// Command quickstart runs a typed informer with two indexes and two handlers
// against ginformer's in-process versioned source, while a writer goroutine
// creates, updates and deletes objects. It prints changes and index queries
// as they happen, checks at the end that the cache equals the source, prints
// a one-line summary and exits 0 (1 if the check fails).
//
//	go run ./examples/quickstart            # about 10 s
//	go run ./examples/quickstart -duration 3s -quiet
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/memory"
)

// Endpoint is a plain user struct: no interface to implement, no wrapper.
type Endpoint struct {
	Service string
	Name    string
	Region  string
	Status  string // "ready", "draining", "down"
	Weight  int
}

func key(e *Endpoint) (informer.NamespacedKey, error) {
	return informer.NamespacedKey{Namespace: e.Service, Name: e.Name}, nil
}

var (
	regions  = []string{"eu-west", "us-east", "ap-south"}
	statuses = []string{"ready", "ready", "ready", "draining", "down"}
	services = []string{"checkout", "search", "profile"}
)

func main() {
	duration := flag.Duration("duration", 10*time.Second, "how long the writer runs")
	quiet := flag.Bool("quiet", false, "print only the summary")
	flag.Parse()
	if err := run(*duration, *quiet); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(duration time.Duration, quiet bool) error {
	say := func(format string, args ...any) {
		if !quiet {
			fmt.Printf(format+"\n", args...)
		}
	}

	// 1. The source: an embedded, versioned collection with watch history.
	src, err := memory.New(memory.Options[informer.NamespacedKey, *Endpoint]{KeyFunc: key})
	if err != nil {
		return err
	}
	defer src.Close()

	// 2. The informer: a typed cache with two secondary indexes.
	inf, err := informer.NewSharedInformer(informer.Options[informer.NamespacedKey, *Endpoint]{
		Name:    "endpoints",
		Source:  src,
		KeyFunc: key,
		Indexes: []informer.Index[*Endpoint]{
			{Name: "region", Func: func(dst []string, e *Endpoint) ([]string, error) { return append(dst, e.Region), nil }},
			{Name: "status", Func: func(dst []string, e *Endpoint) ([]string, error) { return append(dst, e.Status), nil }},
		},
	})
	if err != nil {
		return err
	}

	// 3. Two handlers: one prints (the first few) changes, one counts them
	//    and coalesces per key if it falls behind.
	var printed, events atomic.Int64
	show := func(format string, args ...any) {
		if n := printed.Add(1); n <= 6 || n%500 == 0 { // the first few, then a sample
			say(format, args...)
		}
	}
	if _, err := inf.AddHandler(informer.HandlerFuncs[informer.NamespacedKey, *Endpoint]{
		AddFunc: func(e *Endpoint, initial bool) { show("  add    %s/%s %s %s", e.Service, e.Name, e.Region, e.Status) },
		UpdateFunc: func(old, e *Endpoint) {
			show("  update %s/%s %s→%s weight %d→%d", e.Service, e.Name, old.Status, e.Status, old.Weight, e.Weight)
		},
		DeleteFunc: func(d informer.Deletion[informer.NamespacedKey, *Endpoint]) { show("  delete %s", d.Key) },
	}, informer.HandlerOptions{Name: "printer"}); err != nil {
		return err
	}
	counter, err := inf.AddHandler(informer.HandlerFuncs[informer.NamespacedKey, *Endpoint]{
		AddFunc:    func(*Endpoint, bool) { events.Add(1) },
		UpdateFunc: func(_, _ *Endpoint) { events.Add(1) },
		DeleteFunc: func(informer.Deletion[informer.NamespacedKey, *Endpoint]) { events.Add(1) },
	}, informer.HandlerOptions{Name: "counter", Coalesce: true})
	if err != nil {
		return err
	}

	// Some objects exist before the informer starts: they arrive as the
	// initial list.
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 30 {
		if _, err := src.Put(newEndpoint(rng, i)); err != nil {
			return err
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	if err := informer.WaitForSync(ctx, inf, counter); err != nil {
		return err
	}
	say("synced: %d endpoints in the cache", inf.Lister().Len())

	// 4. The writer: creates, updates and deletes for the given duration.
	start := time.Now()
	writes := 0
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for time.Since(start) < duration {
		// 300 possible endpoints: most writes create or update one, some
		// delete one.
		i := rng.IntN(300)
		if rng.IntN(100) < 85 {
			_, err = src.Put(newEndpoint(rng, i))
		} else {
			e := newEndpoint(rng, i)
			src.Delete(informer.NamespacedKey{Namespace: e.Service, Name: e.Name})
		}
		if err != nil {
			return err
		}
		writes++
		select {
		case <-tick.C:
			ready, _ := inf.Lister().IndexKeys("status", "ready")
			down, _ := inf.Lister().ByIndex("status", "down")
			say("[%2.0fs] %d endpoints, %d ready, down: %v", time.Since(start).Seconds(), inf.Lister().Len(), count(ready), firstKeys(down, 3))
		default:
		}
		if writes%64 == 0 {
			time.Sleep(time.Millisecond) // a steady stream, not a tight loop
		}
	}

	// 5. Wait for the cache to apply the source's current version (every
	//    write so far), then compare.
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := inf.WaitForVersion(wctx, src.Version()); err != nil {
		return err
	}
	mismatch := compare(src, inf.Lister())
	elapsed := time.Since(start)
	cancel()
	if err := <-done; err != nil {
		return err
	}
	result := "cache equals source"
	if mismatch != "" {
		result = "MISMATCH: " + mismatch
	}
	fmt.Printf("quickstart: %d objects, %d writes, %d handler events, %.0f events/s, %s\n",
		inf.Lister().Len(), writes, events.Load(), float64(events.Load())/elapsed.Seconds(), result)
	if mismatch != "" {
		return fmt.Errorf("final check failed")
	}
	return nil
}

func newEndpoint(rng *rand.Rand, i int) *Endpoint {
	return &Endpoint{
		Service: services[i%len(services)],
		Name:    fmt.Sprintf("ep-%d", i),
		Region:  regions[rng.IntN(len(regions))],
		Status:  statuses[rng.IntN(len(statuses))],
		Weight:  rng.IntN(100),
	}
}

// compare returns "" if the cache holds exactly the source's objects.
func compare(src *memory.Store[informer.NamespacedKey, *Endpoint], cache informer.Lister[informer.NamespacedKey, *Endpoint]) string {
	page, err := src.List(context.Background(), informer.ListOptions{})
	if err != nil {
		return err.Error()
	}
	if len(page.Items) != cache.Len() {
		return fmt.Sprintf("source has %d objects, cache %d", len(page.Items), cache.Len())
	}
	for _, e := range page.Items {
		k, _ := key(e)
		got, ok := cache.Get(k)
		if !ok || *got != *e {
			return fmt.Sprintf("%s differs", k)
		}
	}
	return ""
}

func count[V any](seq func(func(V) bool)) int {
	n := 0
	for range seq {
		n++
	}
	return n
}

func firstKeys(seq func(func(informer.NamespacedKey, *Endpoint) bool), n int) []string {
	var out []string
	for k := range seq {
		out = append(out, k.String())
		if len(out) == n {
			break
		}
	}
	slices.Sort(out)
	return out
}
