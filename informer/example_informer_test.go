package informer_test

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/memory"
)

type Service struct {
	Name   string
	Region string
}

func serviceKey(s *Service) (string, error) { return s.Name, nil }

// A typed informer over the in-process source: a region index, a handler,
// and a query once the cache has synced.
func ExampleNewSharedInformer() {
	src, _ := memory.New(memory.Options[string, *Service]{KeyFunc: serviceKey})
	defer src.Close()
	for _, s := range []*Service{{"checkout", "eu-west"}, {"search", "us-east"}, {"profile", "eu-west"}} {
		_, _ = src.Put(s)
	}

	byRegion := informer.NewIndex("region", func(dst []string, s *Service) ([]string, error) {
		return append(dst, s.Region), nil
	})
	inf, err := informer.NewSharedInformer(informer.Options[string, *Service]{
		Source:  src,
		KeyFunc: serviceKey,
		Indexes: []informer.Index[*Service]{byRegion},
	})
	if err != nil {
		panic(err)
	}
	region, err := inf.Lister().IndexRef(byRegion) // once; the queries cannot fail
	if err != nil {
		panic(err)
	}
	var mu sync.Mutex
	var added []string
	reg, _ := inf.AddHandler(informer.HandlerFuncs[string, *Service]{
		AddFunc: func(s *Service, initial bool) {
			mu.Lock()
			added = append(added, fmt.Sprintf("%s (initial: %v)", s.Name, initial))
			mu.Unlock()
		},
	}, informer.HandlerOptions{Name: "printer"})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- inf.Run(ctx) }()
	_ = informer.WaitForSync(ctx, inf, reg) // the cache and the handler have the first list

	mu.Lock()
	slices.Sort(added)
	fmt.Println(added)
	mu.Unlock()
	fmt.Println(slices.Sorted(region.Keys("eu-west")))

	cancel()
	<-done // Run returns once every goroutine it started has exited
	// Output:
	// [checkout (initial: true) profile (initial: true) search (initial: true)]
	// [checkout profile]
}

// A group shares one informer per name and type, and stops them one by one.
func ExampleNewGroup() {
	src, _ := memory.New(memory.Options[string, *Service]{KeyFunc: serviceKey})
	defer src.Close()
	_, _ = src.Put(&Service{"checkout", "eu-west"})

	g := informer.NewGroup()
	opts := informer.Options[string, *Service]{Name: "services", Source: src, KeyFunc: serviceKey}
	a, _ := informer.InformerFor(g, opts)
	b, _ := informer.InformerFor(g, opts)
	fmt.Println("shared:", a == b)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- g.Run(ctx) }()
	_ = g.WaitForSync(ctx)
	fmt.Println("cached:", a.Lister().Len())
	fmt.Println("stopped:", g.Stop("services"))

	cancel()
	<-done
	// Output:
	// shared: true
	// cached: 1
	// stopped: true
}

// A one-off source from two functions, and a Reflector keeping a DeltaFIFO
// in step with it.
func ExampleNewReflector() {
	src := informer.SourceFuncs[string]{
		ListFunc: func(ctx context.Context, opts informer.ListOptions) (informer.ListPage[string], error) {
			return informer.ListPage[string]{Items: []string{"a", "b"}, Version: "7"}, nil
		},
		WatchFunc: func(ctx context.Context, opts informer.WatchOptions) (informer.Watcher[string], error) {
			w := informer.NewWatchStream[string](ctx, 10)
			go func() {
				defer w.Close()
				w.Send(informer.Event[string]{Type: informer.EventAdded, Object: "c", Version: "8"})
				<-w.Done() // a real source would keep sending until stopped
			}()
			return w, nil
		},
	}
	fifo, _ := informer.NewDeltaFIFO(informer.DeltaFIFOOptions[string, string]{
		KeyFunc: func(s string) (string, error) { return s, nil },
	})
	r, _ := informer.NewReflector(informer.ReflectorOptions[string]{Source: src, Store: fifo})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx) }()
	for range 3 {
		_ = fifo.Pop(ctx, func(key string, ds informer.Deltas[string], _ bool) error {
			d, _ := ds.Newest()
			fmt.Println(key, d.Type)
			return nil
		})
	}
	cancel()
	<-done
	fmt.Println("version:", r.LastSyncVersion())
	// Output:
	// a Replaced
	// b Replaced
	// c Added
	// version: 8
}

// A source's goroutine feeds a WatchStream; the consumer ranges over Events.
func ExampleNewWatchStream() {
	w := informer.NewWatchStream[string](context.Background(), 2)
	go func() {
		defer w.Close() // the sender closes the channel
		for i, obj := range []string{"x", "y"} {
			if !w.Send(informer.Event[string]{Type: informer.EventAdded, Object: obj, Version: fmt.Sprint(i + 1)}) {
				return // stopped by the consumer
			}
		}
	}()
	for ev := range w.Events() {
		fmt.Println(ev.Type, ev.Object, ev.Version)
	}
	// Output:
	// Added x 1
	// Added y 2
}
