package workqueue_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/memory"
	"github.com/ginformer/ginformer/workqueue"
)

// The queue's contract by hand: deduplication, one worker per key (a key
// re-added while in progress comes back after Done), shutdown.
func ExampleNew() {
	q, err := workqueue.New[string](workqueue.Options{Name: "example"})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	q.Add("a")
	q.Add("b")
	q.Add("a") // already queued: nothing
	fmt.Println("queued:", q.Len())

	a, _ := q.Get(ctx)
	q.Add("a") // in progress: queued again at Done, not now
	b, _ := q.Get(ctx)
	fmt.Println("got:", a, b, "queued:", q.Len())
	q.Done(b)
	q.Done(a)
	again, _ := q.Get(ctx)
	fmt.Println("got again:", again)
	q.Done(again)

	q.AddRateLimited("c") // a failure: retried after 5 ms (the default base)
	fmt.Println("retries of c:", q.NumRequeues("c"))
	q.Forget("c") // a success: the next failure starts from the base again

	q.ShutDown()
	_, ok := q.Get(ctx)
	fmt.Println("after shutdown:", ok)
	// Output:
	// queued: 2
	// got: a b queued: 0
	// got again: a
	// retries of c: 1
	// after shutdown: false
}

type Deployment struct {
	Namespace, Name string
	Replicas        int
}

func deploymentKey(d *Deployment) (informer.NamespacedKey, error) {
	return informer.NamespacedKey{Namespace: d.Namespace, Name: d.Name}, nil
}

// An informer feeds a controller in one line (Handler); the controller
// reconciles each key with two workers, reading the informer's cache.
func ExampleNewController() {
	src, _ := memory.New(memory.Options[informer.NamespacedKey, *Deployment]{KeyFunc: deploymentKey})
	defer src.Close()
	for _, d := range []*Deployment{{"shop", "cart", 2}, {"shop", "checkout", 3}, {"web", "frontend", 5}} {
		_, _ = src.Put(d)
	}
	inf, _ := informer.NewSharedInformer(informer.Options[informer.NamespacedKey, *Deployment]{
		Source: src, KeyFunc: deploymentKey,
	})

	var mu sync.Mutex
	var done sync.WaitGroup
	done.Add(3)
	var seen []string
	reconcile := func(ctx context.Context, key informer.NamespacedKey) error {
		d, ok := inf.Lister().Get(key)
		if !ok {
			return nil // deleted: clean up whatever the controller owns
		}
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s wants %d replicas", key, d.Replicas))
		mu.Unlock()
		done.Done()
		return nil // an error would retry the key with backoff
	}
	c, err := workqueue.NewController(reconcile, workqueue.ControllerOptions{
		Queue:   workqueue.Options{Name: "deployments"},
		Workers: 2,
	})
	if err != nil {
		panic(err)
	}
	reg, _ := inf.AddHandler(workqueue.Handler(c.Queue(), deploymentKey), informer.HandlerOptions{Name: "deployments"})

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = inf.Run(ctx) })
	_ = informer.WaitForSync(ctx, inf, reg) // reconcile reads a complete cache
	wg.Go(func() { _ = c.Run(ctx) })

	done.Wait()
	cancel()
	wg.Wait() // both Run calls return once their goroutines have exited
	slices.Sort(seen)
	for _, s := range seen {
		fmt.Println(s)
	}
	// Output:
	// shop/cart wants 2 replicas
	// shop/checkout wants 3 replicas
	// web/frontend wants 5 replicas
}

// budgetMetrics prints the retries the budget delays; NoopMetrics covers
// the rest.
type budgetMetrics struct{ workqueue.NoopMetrics }

func (budgetMetrics) RetryBudgetDelay(queue string, d time.Duration) {
	// The next token comes 100 ms after the burst; the key's own backoff
	// (5 ms, less jitter) covers the first few of those.
	fmt.Printf("%s: a retry waits for the budget, 90 to 100 ms beyond its backoff: %v\n", queue, d > 90*time.Millisecond && d < 100*time.Millisecond)
}

// The overall retry budget, on top of each key's backoff, is on by default
// with client-go's figures (10 retries a second after a burst of 100); here
// it is tuned to 10 a second after a burst of 2, to show it at work. Three
// keys fail at once: two retry after their backoff (5 ms), the third waits
// for the next token, 100 ms later. RetryBudget{Disable: true} turns the
// budget off.
func ExampleRetryBudget() {
	q, err := workqueue.New[string](workqueue.Options{
		Name:        "pods",
		RetryBudget: workqueue.RetryBudget{PerSecond: 10, Burst: 2},
		Metrics:     budgetMetrics{},
	})
	if err != nil {
		panic(err)
	}
	defer q.ShutDown()
	for _, k := range []string{"a", "b", "c"} {
		q.AddRateLimited(k)
	}
	// Output:
	// pods: a retry waits for the budget, 90 to 100 ms beyond its backoff: true
}
