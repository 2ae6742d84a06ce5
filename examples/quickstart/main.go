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
	"time"

	"github.com/ginformer/ginformer/examples/demo"
	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/memory"
)

// Endpoint is a plain user struct: no interface to implement, no wrapper.
type Endpoint = demo.Endpoint

func key(e *Endpoint) (informer.NamespacedKey, error) {
	return informer.NamespacedKey{Namespace: e.Service, Name: e.Name}, nil
}

func main() {
	d := demo.Flags()
	flag.Parse()
	demo.Exit(run(d))
}

func run(d *demo.Demo) error {
	// 1. The source: an embedded, versioned collection with watch history.
	src, err := memory.New(memory.Options[informer.NamespacedKey, *Endpoint]{KeyFunc: key})
	if err != nil {
		return err
	}
	defer src.Close()

	// 2. The informer: a typed cache with two secondary indexes, each
	//    declared once, then bound to the cache for its queries.
	byRegion := informer.NewIndex("region", func(dst []string, e *Endpoint) ([]string, error) { return append(dst, e.Region), nil })
	byStatus := informer.NewIndex("status", func(dst []string, e *Endpoint) ([]string, error) { return append(dst, e.Status), nil })
	inf, err := informer.NewSharedInformer(informer.Options[informer.NamespacedKey, *Endpoint]{
		Name:    "endpoints",
		Source:  src,
		KeyFunc: key,
		Indexes: []informer.Index[*Endpoint]{byRegion, byStatus},
	})
	if err != nil {
		return err
	}
	status, err := inf.Lister().IndexRef(byStatus) // fails only if byStatus is not declared on inf
	if err != nil {
		return err
	}

	// 3. Two handlers: one prints (the first few) changes, one counts them
	//    and coalesces per key if it falls behind.
	if _, err := inf.AddHandler(informer.HandlerFuncs[informer.NamespacedKey, *Endpoint]{
		AddFunc: func(e *Endpoint, initial bool) {
			d.Sample("  add    %s/%s %s %s", e.Service, e.Name, e.Region, e.Status)
		},
		UpdateFunc: func(old, e *Endpoint) {
			d.Sample("  update %s/%s %s→%s weight %d→%d", e.Service, e.Name, old.Status, e.Status, old.Weight, e.Weight)
		},
		DeleteFunc: func(del informer.Deletion[informer.NamespacedKey, *Endpoint]) { d.Sample("  delete %s", del.Key) },
	}, informer.HandlerOptions{Name: "printer"}); err != nil {
		return err
	}
	counter, err := inf.AddHandler(demo.Counter[informer.NamespacedKey, *Endpoint](d),
		informer.HandlerOptions{Name: "counter", Coalesce: true})
	if err != nil {
		return err
	}

	// Some objects exist before the informer starts: they arrive as the
	// initial list.
	rng := demo.NewRand()
	put := func(e Endpoint) error {
		_, err := src.Put(&e)
		return err
	}
	for i := range 30 {
		if err := put(demo.NewEndpoint(rng, i)); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop, err := demo.Start(ctx, d, inf, counter)
	if err != nil {
		return err
	}

	// 4. The writer: creates, updates and deletes for the given duration.
	start, n := time.Now(), 0
	writes, err := d.Write(func() error {
		if n++; n%64 == 0 {
			time.Sleep(time.Millisecond) // a steady stream, not a tight loop
		}
		// 300 possible endpoints: most writes create or update one, some
		// delete one.
		i := rng.IntN(300)
		if rng.IntN(100) < 85 {
			return put(demo.NewEndpoint(rng, i))
		}
		src.Delete(informer.NamespacedKey{Namespace: demo.ServiceOf(i), Name: fmt.Sprintf("ep-%d", i)})
		return nil
	}, func(elapsed time.Duration) {
		d.Say("[%2.0fs] %d endpoints, %d ready, down: %v", elapsed.Seconds(), inf.Lister().Len(),
			demo.Count(status.Keys("ready")), demo.First(status.Keys("down"), 3))
	})
	if err != nil {
		return err
	}

	// 5. Wait for the cache to apply the source's current version (every
	//    write so far), then compare.
	if err := demo.WaitForVersion(ctx, inf, src.Version()); err != nil {
		return err
	}
	mismatch := compare(src, inf.Lister())
	elapsed := time.Since(start)
	if err := stop(); err != nil {
		return err
	}
	return d.Finish(inf.Lister().Len(), writes, elapsed, mismatch, "cache equals source")
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
