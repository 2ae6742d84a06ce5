package informer_test

import (
	"context"
	"fmt"

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
