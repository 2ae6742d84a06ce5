package informer_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-logr/logr"

	"github.com/ginformer/ginformer/informer"
	"github.com/ginformer/ginformer/source/memory"
)

// The cache mutation detector catches a handler that modifies the object it
// is handed (here, when the object's next version replaces it in the cache).
// In a test suite, GINFORMER_CACHE_MUTATION_DETECTOR=true turns it on for
// every informer without code changes.
func ExampleMutationDetectorOptions() {
	src, _ := memory.New(memory.Options[string, *Service]{KeyFunc: serviceKey})
	defer src.Close()
	_, _ = src.Put(&Service{"checkout", "eu-west"})

	mutated := make(chan error, 1)
	inf, err := informer.NewSharedInformer(informer.Options[string, *Service]{
		Source:           src,
		KeyFunc:          serviceKey,
		Name:             "services",
		MutationDetector: informer.MutationDetectorOptions[*Service]{Enabled: true, Interval: time.Hour},
		ErrorHandler: func(_ context.Context, err error) {
			if errors.Is(err, informer.ErrCacheMutated) {
				mutated <- err // a test would call t.Error(err)
			}
		},
		Logger: logr.FromSlogHandler(slog.DiscardHandler), // the example prints the error itself
	})
	if err != nil {
		panic(err)
	}
	reg, _ := inf.AddHandler(informer.HandlerFuncs[string, *Service]{
		AddFunc: func(s *Service, _ bool) { s.Region = "moved" }, // the bug: s is the cache's object
	}, informer.HandlerOptions{})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- inf.Run(ctx) }()
	_ = informer.WaitForSync(ctx, inf, reg)

	_, _ = src.Put(&Service{"checkout", "us-east"}) // the modified object leaves the cache: it is checked
	fmt.Println(<-mutated)

	cancel()
	<-done
	// Output:
	// informer "services": cached object checkout was modified in place (.Region: "eu-west" -> "moved"): informer: cached object modified in place
}
