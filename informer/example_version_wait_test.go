package informer_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/memory"
)

// Read your writes: write to the source, wait for the cache to apply the
// version the write returned, then read the cache.
func ExampleSharedInformer_WaitForVersion() {
	src, _ := memory.New(memory.Options[string, *Service]{KeyFunc: serviceKey})
	defer src.Close()
	inf, _ := informer.NewSharedInformer(informer.Options[string, *Service]{Source: src, KeyFunc: serviceKey})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- inf.Run(ctx) }()

	version, _ := src.Put(&Service{"checkout", "eu-west"})
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := inf.WaitForVersion(wctx, version); err != nil {
		fmt.Println(err) // the informer stopped, or the timeout passed
	} else {
		s, _ := inf.Lister().Get("checkout") // the cache has the write
		fmt.Println("cached:", s.Region)
	}

	cancel()
	<-done
	err := inf.WaitForVersion(context.Background(), "1000")
	fmt.Println(err)
	// Output:
	// cached: eu-west
	// informer "informer": wait for version "1000": informer stopped; its cache is at version "2": informer: closed
}
