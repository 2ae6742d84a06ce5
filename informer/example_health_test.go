package informer_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/memory"
)

// Health is what a readiness probe or a debug page reads; a handler may
// remove itself, and Done says when its goroutine has exited.
func ExampleSharedInformer_Health() {
	src, _ := memory.New(memory.Options[string, *Service]{KeyFunc: serviceKey})
	defer src.Close()
	_, _ = src.Put(&Service{"checkout", "eu-west"})

	inf, _ := informer.NewSharedInformer(informer.Options[string, *Service]{Name: "services", Source: src, KeyFunc: serviceKey})
	var reg *informer.Registration[string, *Service]
	reg, _ = inf.AddHandler(informer.HandlerFuncs[string, *Service]{
		AddFunc: func(s *Service, _ bool) {
			fmt.Println("first add:", s.Name)
			reg.Remove() // returns at once, even from inside the handler
		},
	}, informer.HandlerOptions{Name: "once"})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- inf.Run(ctx) }()
	<-reg.Done() // the handler has run once and removed itself

	_ = informer.WaitForSync(ctx, inf)
	h := inf.Health()
	fmt.Printf("%s: running=%v synced=%v objects=%d handlers=%d error=%v\n",
		h.Name, h.Running, h.Synced, h.Objects, len(h.Handlers), h.LastError)

	cancel()
	<-done
	// Output:
	// first add: checkout
	// services: running=true synced=true objects=1 handlers=0 error=<nil>
}

// StaleFor tells a badge or a probe how stale the cache may be once the
// source has been down for longer than its liveness bound (here 5 s, as
// the etcd source declares by default).
func ExampleHealth_StaleFor() {
	now := time.Date(2026, 11, 28, 20, 0, 0, 0, time.UTC)
	h := informer.Health{
		Synced:        true,
		LivenessBound: 5 * time.Second,
		LastEventAt:   now.Add(-52 * time.Second), // the last answer: a bookmark
		FailingSince:  now.Add(-3 * time.Second),  // the watch failed 3 s ago
	}
	_, ok := h.StaleFor(now)
	fmt.Println("down 3s: stale:", ok)

	h.FailingSince = now.Add(-50 * time.Second)
	stale, ok := h.StaleFor(now)
	fmt.Println("down 50s: stale:", ok, "up to", stale)
	// Output:
	// down 3s: stale: false
	// down 50s: stale: true up to 52s
}
